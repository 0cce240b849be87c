"""The dynamics section's series: a config's series expanded into one measurement per checkpoint (isoflow.dynamics),
as the workflow plans them (tests/test_workflow.py::test_shipped_configs_plan counts those of
config/training-dynamics.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isoflow.checkpoints import checkpoint_steps, read_series, revision, step_folder, step_of
from isoflow.dynamics import REPORT_FIGURES, SeriesError, checkpoint_pairs, series_checkpoints
from isoflow.dynamics.readings import CLAIMS
from isoflow.dynamics.runs import Comparison, Measurement


def test_a_pretraining_run_is_measured_at_every_checkpoint_it_keeps():
    pretrained = {"plain-bert": {"steps": 4000, "checkpoints": 20}, "plain-gpt2": {"steps": 10, "checkpoints": 4}}
    found = series_checkpoints({"series": ["plain-gpt2", "plain-bert"]}, pretrained)
    assert found[:4] == [
        ("plain-gpt2", "step0"),
        ("plain-gpt2", "step1"),
        ("plain-gpt2", "step2"),
        ("plain-gpt2", "step10"),
    ]
    assert [r for s, r in found if s == "plain-bert"] == [f"step{s}" for s in checkpoint_steps(4000, 20)]
    assert len(found) == 4 + 20 and found[-1] == ("plain-bert", "step4000")


def test_other_models_are_measured_at_the_listed_revisions():
    dynamics = {"series": ["pythia-160m", "plain-gpt2"], "revisions": ["step0", "step1000", "step143000"]}
    found = series_checkpoints(dynamics, {"plain-gpt2": {"steps": 10, "checkpoints": 2}})
    assert found == [
        ("pythia-160m", "step0"), ("pythia-160m", "step1000"), ("pythia-160m", "step143000"),
        ("plain-gpt2", "step0"), ("plain-gpt2", "step10"),
    ]  # fmt: skip
    assert series_checkpoints({}, {}) == []


def test_a_series_that_cannot_be_expanded_is_refused_in_one_line():
    with pytest.raises(SeriesError, match=r"dynamics.series: plain-bert keeps no checkpoint series; set pretrain"):
        series_checkpoints({"series": ["plain-bert"]}, {"plain-bert": {"steps": 100, "checkpoints": 0}})
    with pytest.raises(SeriesError, match=r"pythia-160m is not a pretraining run .* give dynamics.revisions"):
        series_checkpoints({"series": ["pythia-160m"]}, {})


def test_a_checkpoint_reads_back_from_its_place(tmp_path):
    """The series' one spelling: what pretrain writes (step_folder) is what the loader and the plan name (revision),
    and a measurement's folder reads back as its series, corpus, points and revision; a comparison's as its two
    checkpoints; a revision's step as the report reads it."""
    for step in (0, 1, 400):
        step_folder(tmp_path / "checkpoints", step).mkdir(parents=True)
    (tmp_path / "checkpoints" / "notes").mkdir()
    assert read_series(tmp_path) == [(s, tmp_path / "checkpoints" / revision(s)) for s in (0, 1, 400)]
    run = Measurement("plain-gpt2-seed1", "brown", "last-token", revision(400))
    assert run.path("results") == "results/dynamics/runs/plain-gpt2-seed1/brown/last-token/step400"
    assert Measurement.read(run.identity()) == run == Measurement.of_folder(Path("/x") / run.path("results"))
    pair = Comparison("plain-gpt2-seed1", "brown", revision(0), revision(400))
    assert pair.identity() == "cka/plain-gpt2-seed1/brown/step0/step400" and Comparison.read(pair.identity()) == pair
    assert Measurement.read("cka/brown/tokens/step0") is None  # never a series named cka
    assert Measurement.read("plain-gpt2/brown/tokens") is None and Comparison.read(run.identity()) is None
    assert Measurement.pattern("r") == "r/dynamics/runs/{series}/{corpus}/{points}/{revision}"
    assert Measurement.log_pattern() == "logs/dynamics/{series}/{corpus}/{points}/{revision}.log"
    olmo = ("step1000-tokens4B", "stage1-step140000-tokens294B")
    names = ("step400", *olmo, "main", "step5x", "step1-step2")
    assert [step_of(r) for r in names] == [400, 1000, 140000, None, None, None]


# ----- the readings of a shape (docs/verdicts.md, "A shape across training") ---------------------------------------


PHASES = [10.0, 6.0, 9.0, 14.0, 11.0]  # a collapse, an expansion, a compression (Li et al.)


def test_each_shape_and_its_opposite_on_curves_written_for_the_test():
    from isoflow.dynamics.shapes import (
        compression_only,
        dip,
        expansion_only,
        late_fall,
        late_rise,
        peak,
        three_phases,
        three_phases_of_decay,
    )

    assert three_phases(PHASES) and not expansion_only(PHASES)
    decay = [1 / v for v in PHASES]  # α-ReQ moves against RankMe: a rise, a fall, a rise
    assert three_phases_of_decay(decay) and not three_phases(decay) and not compression_only(decay)
    assert compression_only([1.0, 0.8, 0.7, 0.72]) and not three_phases_of_decay([1.0, 0.8, 0.7, 0.72])
    assert not three_phases_of_decay([1.0, 1.03, 0.8, 0.9])  # the first rise is 3 %: below δ
    assert not three_phases([10, 6, 9, 14, 13.5])  # the compression is 3.6 %: below δ, no third phase
    assert not three_phases([10, 9.6, 12, 14, 11])  # the collapse is 4 %: no first phase
    assert expansion_only([10, 12, 14, 13.5]) and not three_phases([10, 12, 14, 13.5])
    assert peak([1.0, 1.5, 2.0, 1.2]) and not dip([1.0, 1.5, 2.0, 1.2])
    assert dip([2.0, 1.0, 2.5]) and not peak([2.0, 1.0, 2.5])
    assert not peak([1.0, 1.04, 1.0]) and not peak([1.0, 2.0])  # a wiggle below δ; no interior point
    steps = [0, 1, 2, 4, 400, 800, 1200, 1600, 2000, 2400, 4000]
    rising = [1, 1, 1, 1, 1, 1, 1, 1, 1.0, 1.2, 1.3]  # from step 2,000 (the first at half) to the last: +30 %
    assert late_rise(rising, steps) and not late_fall(rising, steps)
    assert not late_rise([1, 1, 1, 1, 1, 1, 1, 1, 1.3, 1.3, 1.3], steps)  # it rose before half the steps


def test_the_word_over_the_seeds():
    from isoflow.dynamics.shapes import read_shape
    from isoflow.reporting.verdicts import word_of

    flat = [10.0, 10.1, 10.0, 10.2, 10.1]
    rising = [10.0, 11.0, 12.0, 13.0, 14.0]
    assert read_shape("three phases", [PHASES, PHASES, PHASES]) == "reproduced"
    assert read_shape("three phases", [rising, rising, rising]) == "contradicted"
    assert read_shape("three phases", [flat, flat, rising]) == "not seen (could have detected a change of 5%)"
    assert read_shape("three phases", [PHASES, flat, PHASES]) == "inconclusive (in 2 of 3 seeds)"
    assert read_shape("rise", [rising, rising]) == "reproduced" and read_shape("fall", [rising]) == "contradicted"
    assert read_shape("peak", []) == "untested (no series measured)"
    assert read_shape("peak", [[1.0, float("nan"), 1.0]]) == "untested (a value left empty at a checkpoint)"
    assert read_shape("late rise", [[1.0, 1.0, 1.5]], steps=[0, 5, 10]) == "reproduced"
    assert read_shape("three phases of the decay", [[1 / v for v in PHASES]] * 3) == "reproduced"
    for phrase in (read_shape("three phases", c) for c in ([PHASES], [flat], [rising], [PHASES, flat])):
        word_of(phrase)  # every phrase is the vocabulary's
    with pytest.raises(ValueError, match="give steps"):
        read_shape("late rise", [[1.0, 2.0]])
    with pytest.raises(ValueError, match="unknown shape 'bell'; the shapes: peak, three phases"):
        read_shape("bell", [[1.0, 2.0, 1.0]])


# ----- a series measured and reported, end to end on a tiny model -------------------------------------------------


@pytest.mark.slow
def test_a_series_is_measured_at_each_checkpoint_as_the_layers_section_measures_it(tmp_path, capsys):
    """A tiny causal LM pretrained with a 3-checkpoint series; each checkpoint measured as the workflow's job does
    (`isoflow layers --revision`), equal to the layers section's measurement of the checkpoint's folder itself; then
    the report: every checkpoint × layer a row with its step, and the figure."""
    import pandas as pd
    from test_pretrain import TINY, write_corpus_text

    from isoflow.cli import main
    from isoflow.pretrain import CorpusSettings, PretrainSettings, build_corpus, run_pretrain

    write_corpus_text(tmp_path / "text.txt", n_docs=60)
    corpus = build_corpus(tmp_path / "corpus", sources=[str(tmp_path / "text.txt")], exclude_tasks=[],
                          settings=CorpusSettings(heldout_fraction=0.1), log=lambda line: None)  # fmt: skip
    settings = PretrainSettings(objective="causal", steps=5, checkpoints=3, **TINY)
    model = run_pretrain(corpus, tmp_path / "tiny", settings, device="cpu", progress=False, log=lambda line: None)
    measured = ["--corpus", str(tmp_path / "text.txt"), "--corpus-name", "notes", "--k-lid", "5", "--k-max", "3",
                "--kmeans-samples", "1", "--kmeans-starts", "1", "--device", "cpu", "--quiet"]  # fmt: skip
    # Every token (300 of them) and each sentence's last token (30 sentences), as the workflow's jobs measure them
    points = {"tokens": ["--types", "tokens", "--max-tokens", "300"], "last-token": ["--types", "last-token",
              "--max-tokens", "30"]}  # fmt: skip
    runs = tmp_path / "results" / "dynamics" / "runs"
    revisions = [r for _, r in series_checkpoints({"series": ["tiny"]}, {"tiny": {"steps": 5, "checkpoints": 3}})]
    assert revisions == ["step0", "step1", "step5"]
    folders = []
    for rev in revisions:
        for kind, options in points.items():
            out = Path(Measurement("tiny", "notes", kind, rev).path(tmp_path / "results"))
            argv = ["layers", "--model", str(model), "--revision", rev, "--model-name", f"tiny-{rev}", *measured]
            assert main([*argv, *options, "--out", str(out)]) == 0, capsys.readouterr().err
            folders.append(str(out))
    direct = tmp_path / "direct"
    argv = ["layers", "--model", str(model / "checkpoints" / "step1"), "--model-name", "tiny-step1", *measured]
    assert main([*argv, *points["tokens"], "--out", str(direct)]) == 0
    by_revision = pd.read_parquet(runs / "tiny/notes/tokens/step1/layers.parquet")
    pd.testing.assert_frame_equal(by_revision, pd.read_parquet(direct / "layers.parquet"))
    assert json.loads((runs / "tiny/notes/tokens/step1/meta.json").read_text())["source"]["revision_name"] == "step1"
    last = json.loads((runs / "tiny/notes/last-token/step1/meta.json").read_text())
    assert last["types"] == "last-token" and last["n_points"] == last["sentences_used"] == 30

    # Each checkpoint compared with the next and with the last, as the workflow's job does (`isoflow layers-cross`)
    pairs = checkpoint_pairs([("tiny", r) for r in revisions])
    assert pairs == [("tiny", "step0", "step1"), ("tiny", "step1", "step5"), ("tiny", "step0", "step5")]
    compared = []
    for _, earlier, later in pairs:
        out = Path(Comparison("tiny", "notes", earlier, later).path(tmp_path / "results"))
        argv = ["layers-cross", "--model", str(model), "--revision", earlier, "--model-name", f"tiny-{earlier}",
                "--other", str(model), "--other-revision", later, "--other-name", f"tiny-{later}", "--words", "200",
                "--corpus", str(tmp_path / "text.txt"), "--corpus-name", "notes", "--device", "cpu",
                "--out", str(out)]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        compared.append(str(out))

    section = tmp_path / "results" / "dynamics"
    where = ["--tables", str(section / "tables"), "--figures", str(section / "figures")]
    assert main(["dynamics-report", *folders, *compared, *where]) == 0
    table = pd.read_csv(section / "tables" / "dynamics.csv")
    layers = by_revision.layer.nunique()
    assert len(table) == 2 * 3 * layers and sorted(table.step.unique()) == [0, 1, 5]
    assert list(table.columns[:7]) == ["model", "series", "corpus", "points", "revision", "step", "layer"]
    step1 = table[(table.step == 1) & (table.points == "tokens")].reset_index(drop=True)
    assert step1.isoscore.tolist() == pytest.approx(by_revision.isoscore.tolist())
    cka = pd.read_csv(section / "tables" / "dynamics_cka.csv")
    assert len(cka) == 3 * layers

    # Each layer's CKA to the same layer of the previous and of the last checkpoint, read from the comparisons' rows
    def same_layer(earlier, later):
        folder = Path(Comparison("tiny", "notes", earlier, later).path(tmp_path / "results"))
        cross = pd.read_parquet(folder / "cross.parquet")
        return cross[(cross.subset == "all") & (cross.layer_a == cross.layer_b)].cka.tolist()

    by_step = {step: part.reset_index(drop=True) for step, part in cka.groupby("step")}
    assert by_step[0].cka_to_previous.isna().all() and by_step[5].cka_to_last.isna().all()
    assert by_step[1].cka_to_previous.tolist() == pytest.approx(same_layer("step0", "step1"))
    assert by_step[5].cka_to_previous.tolist() == pytest.approx(same_layer("step1", "step5"))
    assert by_step[0].cka_to_last.tolist() == pytest.approx(same_layer("step0", "step5"))
    assert by_step[1].cka_to_last.tolist() == pytest.approx(same_layer("step1", "step5"))
    assert 0 < cka.cka_to_last.min() and cka.cka_to_last.max() <= 1 + 1e-9
    read = pd.read_csv(section / "tables" / "dynamics_readings.csv")
    assert len(read) == len(CLAIMS) + 3 and set(read.seeds) == {1}  # + Li et al.'s phases on their own points
    # Every reading made, but α-ReQ on Li et al.'s ranks 12-100: the tiny model has fewer dimensions
    untested = read[read.word.str.startswith("untested")]
    assert set(untested.measure) == {"alpha_req_li"} and set(untested.word) == {
        "untested (a value left empty at a checkpoint)"
    }
    for stem in REPORT_FIGURES:
        assert (section / "figures" / f"{stem}.png").stat().st_size > 20_000

    # Published: the tables, the figures and each run's compact record (no samples); redrawn from them, the same tables
    from isoflow.publishing.publish import publish
    from isoflow.sections import SECTIONS

    published = tmp_path / "published"
    files = publish("training-dynamics", tmp_path / "results", published, root=tmp_path)
    kept = {p.name for p in files if p.parts[len(published.parts)] == "runs"}
    assert kept == {"meta.json", "layers.csv", "cross.json", "cross.parquet"}
    one = published / "runs" / Measurement("tiny", "notes", "tokens", "step1").identity()
    assert (one / "layers.csv").is_file() and not (one / "pca.parquet").exists()
    for command in SECTIONS["dynamics"].redraw(published, tmp_path):
        assert main(command) == 0
    for name in ("dynamics", "dynamics_cka", "dynamics_readings"):
        redrawn = (published / "tables" / f"{name}.csv").read_text()
        assert redrawn == (section / "tables" / f"{name}.csv").read_text(), name
    from isoflow.dynamics.report import read_runs

    with pytest.raises(FileNotFoundError, match="not a checkpoint's measurement"):
        read_runs([direct])
    with pytest.raises(ValueError, match="step0 is compared with step5, whose measurement is not among the runs"):
        read_runs([folders[0], compared[2]])


def test_the_anchors_findings_are_read_on_a_series_by_the_rules_written_before():
    """The readings of docs/verdicts.md on a table written for the test: three seeds whose last layer's σ² effective
    rank has three phases, whose middle layer's TwoNN rises then falls, whose anisotropy across layers is a bell at the
    last checkpoint, and whose last layer's mean cosine does not rise late."""
    import pandas as pd

    from isoflow.dynamics.readings import readings

    steps, rows = [0, 1, 2, 4, 8], []
    for seed in range(3):
        for i, step in enumerate(steps):
            for layer in range(3):
                rows.append({
                    "model": "plain-gpt2", "series": f"plain-gpt2-seed{seed}", "corpus": "brown", "points": "tokens",
                    "step": step, "layer": layer,
                    "variance_effective_rank": [10, 6, 9, 14, 11][i] + 0.1 * seed if layer == 2 else 5.0,
                    "effective_rank": 20.0 + i,  # rises throughout: the opposite of three phases
                    "twonn": [5, 8, 12, 9, 6][i] if layer == 1 else 4.0,
                    "pc1_variance": [0.1, 0.6, 0.2][layer],
                    "cosine_anisotropy": 0.3,  # flat: no late rise
                })  # fmt: skip
    table = pd.DataFrame(rows)
    got = readings(table).set_index(["measure", "curve", "points"])["word"]
    untested = "untested (these points not measured: dynamics.points)"
    assert got["variance_effective_rank", "last layer", "the last token of each sequence"] == untested
    assert got["effective_rank", "last layer", "the last token of each sequence"] == untested
    assert got["variance_effective_rank", "last layer", "every token"] == "reproduced"
    assert got["effective_rank", "last layer", "every token"] == "contradicted"
    assert got["twonn", "middle layer", "every token"] == "reproduced"
    assert got["pc1_variance", "last checkpoint", "every token"] == "reproduced"
    assert got["cosine_anisotropy", "last layer", "every token"] == "not seen (could have detected a change of 5%)"
    no_twonn = readings(table.drop(columns="twonn"))
    assert "untested (twonn not in these runs)" in no_twonn.word.tolist()
    # Li et al.'s own points: the last tokens' rows read on their own (here the opposite shape: a rise throughout)
    last = table.assign(points="last-token", variance_effective_rank=table.step + 1.0)
    both = readings(pd.concat([table, last])).set_index(["measure", "curve", "points"])
    assert both.word["variance_effective_rank", "last layer", "the last token of each sequence"] == "contradicted"
    assert both.word["variance_effective_rank", "last layer", "every token"] == "reproduced"
    assert both.seeds["variance_effective_rank", "last layer", "the last token of each sequence"] == 3
    assert both.word["twonn", "middle layer", "every token"] == "reproduced" and len(both) == len(CLAIMS) + 3
    assert both.word["alpha_req_li", "last layer", "every token"] == "untested (alpha_req_li not in these runs)"
