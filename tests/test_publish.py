"""isoflow.publishing (scripts/publish_results.py, redraw_published.py, partial_runs.py), driven by the section
registry: a publication holds exactly what its tables were made from, publishing one leaves the others (and, on
failure, itself) as they were; a section registered with its code is published and redrawn without touching the
scripts."""

import csv
import json
from pathlib import Path

import pytest

from isoflow.publishing import partial as partial_runs
from isoflow.publishing import publish as publish_results
from isoflow.publishing import redraw as redraw_published
from isoflow.publishing.publish import PublishError, main, publish

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _results(root: Path) -> Path:
    """A results directory as the workflow leaves it: each section under its own folder."""
    results = root / "results" / "repro"
    for section, files in {
        "optimize": (
            "tables/correlations.csv",
            "tables/correlations.md",
            "tables/table1_sizes.csv",
            "figures/silhouette.png",
        ),
        "istar": ("tables/istar.csv", "figures/istar_curves.png"),
        "layers": (
            "tables/layers.csv",
            "figures/layers_lid.png",
            "runs/minilm/brown/layers.csv",
            "benchmarks/minilm/brown.tsv",
        ),
    }.items():
        for f in files:
            _write(results / section / f, f)
    runs = []
    for run in ("polarity/minilm/seed0", "polarity/minilm/seed1", "stray/minilm/seed0"):
        base = results / "optimize" / "runs" / run
        _write(base.with_suffix(".json"), "{}")
        _write(base.with_suffix(".parquet"), "p")
        runs.append(f"results/repro/optimize/runs/{run}.json")
    (results / "optimize" / "aggregate").mkdir()
    with open(results / "optimize" / "aggregate" / "runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task", "seed", "record"])
        writer.writerows([["polarity", 0, runs[0]], ["polarity", 1, runs[1]]])  # not the stray run
    return results


def test_a_publication_holds_its_tables_figures_and_exactly_the_listed_runs(tmp_path):
    results = _results(tmp_path)
    other = tmp_path / "docs" / "results" / "finetune"
    _write(other / "keep.txt", "mine")
    dest = tmp_path / "docs" / "results" / "optimize"
    files = {
        p.relative_to(dest).as_posix()
        for p in publish("optimize", results, dest, root=tmp_path, made_by="snakemake optimize")
    }
    assert files == {
        "PUBLISHED.json",
        "tables/correlations.csv",
        "tables/correlations.md",
        "tables/table1_sizes.csv",
        "figures/silhouette.png",
        "runs.csv",
        "runs/polarity/minilm/seed0.json",
        "runs/polarity/minilm/seed0.parquet",
        "runs/polarity/minilm/seed1.json",
        "runs/polarity/minilm/seed1.parquet",
    }
    with open(dest / "runs.csv", newline="") as fh:
        records = [row["record"] for row in csv.DictReader(fh)]
    # relative to the repository, whichever checkout made them
    assert records == [f"docs/results/optimize/runs/polarity/minilm/seed{s}.json" for s in (0, 1)]
    assert (other / "keep.txt").read_text() == "mine"  # another publication is not touched
    made = json.loads((dest / "PUBLISHED.json").read_text())
    assert (
        made["made_by"] == "snakemake optimize" and made["results_dir"] == "results/repro"
    )  # relative to the checkout
    assert made["section"] == "optimize" and made["workflow_checkout"] == {"git_commit": None, "git_dirty": None}

    layers_dest = tmp_path / "docs" / "results" / "layers"
    layers = {p.relative_to(layers_dest).as_posix() for p in publish("layers", results, layers_dest, root=tmp_path)}
    assert layers == {
        "PUBLISHED.json",
        "tables/layers.csv",
        "figures/layers_lid.png",
        "runs/minilm/brown/layers.csv",
    }  # no benchmarks
    assert sorted(p.name for p in dest.parent.iterdir()) == ["finetune", "layers", "optimize"]  # no temp dirs left
    (dest / "README.md").write_text("the discussion of these numbers")
    publish("optimize", results, dest, root=tmp_path)  # an earlier publication (it carries the marker) is replaced
    assert (dest / "runs.csv").is_file()
    assert (dest / "README.md").read_text() == "the discussion of these numbers"  # written by hand: carried over


def test_a_destination_that_is_not_a_publication_is_refused_without_force(tmp_path, capsys):
    results = _results(tmp_path)
    dest = tmp_path / "docs" / "results" / "optimize"
    _write(dest / "notes.txt", "mine")
    assert main(["optimize", str(results), str(dest), "--root", str(tmp_path)]) == 1
    assert "holds files isoflow did not write (notes.txt)" in capsys.readouterr().err
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]


def test_a_missing_run_fails_and_leaves_the_publication_as_it_was(tmp_path, capsys):
    results = _results(tmp_path)
    dest = tmp_path / "docs" / "results" / "optimize"
    publish("optimize", results, dest, root=tmp_path)
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    (results / "optimize" / "runs" / "polarity" / "minilm" / "seed1.parquet").unlink()
    with pytest.raises(PublishError, match="seed1.parquet is missing; rerun the workflow"):
        publish("optimize", results, dest, root=tmp_path)
    assert {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["optimize"]
    assert main(["istar", str(tmp_path / "nothing"), str(tmp_path / "out")]) == 1
    assert "no tables or figures; run `snakemake istar`" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_publication_one_command_measured_is_redrawn_from_its_measurement(tmp_path, monkeypatch):
    """docs/results/istar-points has no section and no runs: `make redraw` draws its table and figure again from
    points_diagnosis.json (the committed one, copied), records the redraw beside the make target that measured it,
    and leaves no publication marker (`make reproduce-istar-points` writes into the folder, it does not replace it)."""
    docs = tmp_path / "docs" / "results"
    measured = ROOT / "docs/results/istar-points/points_diagnosis.json"
    _write(docs / "istar-points" / "points_diagnosis.json", measured.read_text())
    monkeypatch.setattr(redraw_published, "ROOT", tmp_path)
    monkeypatch.setattr(redraw_published, "PUBLISHED", docs)
    monkeypatch.setattr(
        redraw_published, "run_isoflow", lambda *args: __import__("isoflow.cli", fromlist=["main"]).main(list(args))
    )
    assert redraw_published._redrawable(tmp_path) == ["istar-points"]
    assert redraw_published.main([]) == 0
    folder = docs / "istar-points"
    committed = (ROOT / "docs/results/istar-points/tables/points_diagnosis.csv").read_text()
    assert (folder / "tables/points_diagnosis.csv").read_text() == committed
    assert (folder / "figures/points_diagnosis.png").stat().st_size > 10_000
    info = json.loads((folder / "PUBLISHED.json").read_text())
    assert info["made_by"] == "make reproduce-istar-points"
    assert info["redrawn"]["commands"] == [f"isoflow points-diagnosis --report-only --out {folder}"]
    assert not (folder / ".isoflow-output").exists()
    assert (folder / "points_diagnosis.json").read_text() == measured.read_text()


def test_a_registered_toy_section_is_planned_published_and_redrawn(tmp_path, monkeypatch, capsys):
    """Adding a section is one registry entry plus its code: a toy section (its own report command, here the pretrain
    section's) is published and redrawn by the unchanged scripts, and gets its DVC stage and make target from the
    registry."""

    from isoflow import sections
    from isoflow.sections import PUBLICATIONS, SECTIONS, Publication, Section

    def redraw_toy(folder, tmp):
        return [
            [
                "pretrain-report",
                *sorted(str(p.parent) for p in (folder / "runs").glob("*/pretrain.json")),
                "--tables",
                str(folder / "tables"),
                "--figures",
                str(folder / "figures"),
            ]
        ]

    toy = Section(
        "toy",
        "A toy section",
        ("pretrain",),
        ("pretrain-report",),
        run_rules=("toy_run",),
        report_rules=("toy_report",),
        redraw=redraw_toy,
        config_keys=("toy",),
    )
    monkeypatch.setitem(SECTIONS, "toy", toy)
    monkeypatch.setitem(PUBLICATIONS, "toy", Publication("toy", "toy", "config/toy.yaml"))
    # Its results, as its rules would leave them: a run's record (a tiny pretraining record), a table and a figure.
    results = tmp_path / "results"
    run = results / "toy" / "runs" / "m"
    record = {
        "objective": "causal",
        "architecture": "GPT2LMHeadModel",
        "parameters": 10,
        "tokenizer": {"vocabulary": 50},
        "settings": {"layers": 1, "hidden": 8, "steps": 2, "seed": 0},
        "train_tokens": 100,
        "epochs": 1.0,
        "heldout": {"loss": 3.0, "perplexity": 20.1, "accuracy": 0.1},
        "unigram_baseline": {"loss": 3.5, "perplexity": 33.1, "accuracy": 0.05},
        "heldout_targets": 9,
        "seconds": 1.0,
    }
    _write(run / "pretrain.json", json.dumps(record))
    _write(run / "curve.csv", "step,train_loss,heldout_loss,heldout_accuracy\n0,,3.9,0.0\n2,3.2,3.0,0.1\n")
    _write(results / "toy" / "tables" / "pretrain.csv", "stale")
    _write(results / "toy" / "figures" / "pretrain_curves.png", "stale")
    docs = tmp_path / "docs" / "results"
    publish("toy", results, docs / "toy", root=tmp_path)
    assert (docs / "toy" / "runs" / "m" / "pretrain.json").is_file()
    monkeypatch.setattr(redraw_published, "ROOT", tmp_path)
    monkeypatch.setattr(redraw_published, "PUBLISHED", docs)
    monkeypatch.setattr(
        redraw_published, "run_isoflow", lambda *args: __import__("isoflow.cli", fromlist=["main"]).main(list(args))
    )
    assert redraw_published.main(["toy"]) == 0
    with pytest.raises(SystemExit) as refused:  # one without published runs: one line, and nothing redrawn
        redraw_published.main(["toy", "unmade"])
    assert refused.value.code == 2 and "unmade: nothing published under" in capsys.readouterr().err
    assert "heldout_loss" in (docs / "toy" / "tables" / "pretrain.csv").read_text()
    assert (docs / "toy" / "figures" / "pretrain_curves.png").stat().st_size > 10_000
    # Its DVC stage and its make target come from the registry too.
    from isoflow.publishing import dvc_stages

    assert dvc_stages.stages()["toy"]["do"]["cmd"].startswith(
        "snakemake toy_runs --cores all --configfile ${item.config} --allowed-rules toy_runs toy_run"
    )
    assert sections.section("toy") is toy


# ----- a sweep in parts: scripts/partial_runs.py ----------------------------------------------------------------------


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """A checkout whose publication `sweep` (the finetune section under config/sweep.yaml) has two finished runs and
    one in the making in its results directory."""
    from isoflow.sections import PUBLICATIONS, Publication

    monkeypatch.setitem(PUBLICATIONS, "sweep", Publication("sweep", "finetune", "config/sweep.yaml"))
    _write(tmp_path / "config" / "sweep.yaml", "results_dir: results/sweep\n")
    runs = tmp_path / "results" / "sweep" / "finetune" / "runs" / "glue" / "sst2" / "m"
    for run in ("istar-1/seed0", "istar0/seed0"):
        for suffix in (".json", ".parquet"):
            _write((runs / run).with_suffix(suffix), f"{run}{suffix}")
    _write(runs / "istar1" / ".seed0.x1y2.tmp.json", "half-written")
    _write(runs / ".brown.partial" / "states" / "layer0.npy", "a layer analysis' progress")  # resumed, never saved
    return tmp_path, runs


def test_saved_runs_are_the_finished_ones_and_come_back_dated_now_beside_what_is_there(sweep):
    import os
    import time

    root, runs = sweep
    saved = partial_runs.save("sweep", root)
    assert saved == root / "partial-results" / "sweep"
    kept = saved / "finetune" / "runs"
    assert sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file()) == [
        "glue/sst2/m/istar-1/seed0.json",
        "glue/sst2/m/istar-1/seed0.parquet",
        "glue/sst2/m/istar0/seed0.json",
        "glue/sst2/m/istar0/seed0.parquet",
    ]
    info = json.loads((saved / "PARTIAL.json").read_text())
    assert (info["records"], info["files"], info["config"]) == (2, 4, "config/sweep.yaml")
    assert info["from"] == ["results/sweep/finetune/runs"]
    # Another machine: the results are gone but one run made again there; a run of the publication is published.
    shutil_rmtree(root / "results")
    _write(runs / "istar0" / "seed0.json", "made here")
    _write(root / "docs/results/sweep/runs/glue/sst2/m/istar1/seed0.json", "published")
    before = time.time() - 1
    assert partial_runs.restore("sweep", root) == 4  # 3 saved files that are missing + 1 published
    assert (runs / "istar0" / "seed0.json").read_text() == "made here"  # never replaced
    assert (runs / "istar-1" / "seed0.parquet").read_text() == "istar-1/seed0.parquet"
    assert (runs / "istar1" / "seed0.json").read_text() == "published"
    assert all(os.stat(p).st_mtime >= before for p in runs.rglob("*") if p.is_file())
    assert partial_runs.restore("sweep", root) == 0
    partial_runs.discard("sweep", root)
    assert not saved.exists() and (root / "partial-results").is_dir()


def test_restored_runs_share_one_date_so_none_is_older_than_a_run_it_feeds(sweep, monkeypatch):
    """Saved runs can be each other's inputs (the learning-rate runs, the choice read from them, the sweep's runs, in
    that order in the workflow; "chosen.json" sorts before the runs it reads): however slowly the files are copied,
    they come back with one date, so Snakemake takes none as newer than a run made from it."""
    import os
    import shutil

    root, runs = sweep
    _write(runs / "lr-selection" / "lr1e-05" / "seed0.json", "a learning-rate run")
    _write(runs / "lr-selection" / "chosen.json", "the rate chosen from it")
    partial_runs.save("sweep", root)
    shutil_rmtree(root / "results")
    copy, dates = shutil.copyfile, iter(range(1_000_000_000, 2_000_000_000, 1_000_000))

    def slow_copy(src, dst):  # each copy dated a millisecond after the one before, as a copy that takes time would be
        copy(src, dst)
        date = next(dates)
        os.utime(dst, ns=(date, date))

    monkeypatch.setattr(shutil, "copyfile", slow_copy)
    assert partial_runs.restore("sweep", root) == 6
    assert len({os.stat(p).st_mtime_ns for p in runs.rglob("*") if p.is_file()}) == 1


def test_a_second_restore_dates_again_what_a_stopped_one_left(sweep):
    """A resume stopped after its restore (or a dry run) leaves copies dated then; the inputs the next resume builds
    are newer, so those copies, the same bytes as the saved ones, are dated again with the new ones (not run again);
    a file that differs from its saved copy is left as it is."""
    import os

    root, runs = sweep
    partial_runs.save("sweep", root)
    shutil_rmtree(root / "results")
    assert partial_runs.restore("sweep", root) == 4
    old = 1_000_000_000
    for p in runs.rglob("*"):
        if p.is_file():
            os.utime(p, ns=(old, old))
    changed = runs / "istar0" / "seed0.json"
    changed.write_text("made here since")
    os.utime(changed, ns=(old, old))
    (runs / "istar-1" / "seed0.parquet").unlink()
    assert partial_runs.restore("sweep", root) == 1  # only the missing file is copied
    dates = {p.relative_to(runs).as_posix(): os.stat(p).st_mtime_ns for p in runs.rglob("*.*") if p.is_file()}
    assert dates["istar0/seed0.json"] == old and changed.read_text() == "made here since"
    assert len({d for name, d in dates.items() if name != "istar0/seed0.json"}) == 1 > 0
    assert min(d for name, d in dates.items() if name != "istar0/seed0.json") > old


def test_a_rerun_in_parts_puts_back_its_saved_runs_and_none_of_the_published(sweep, capsys, monkeypatch):
    """Runs that measure more than the published ones (a rerun of the layers section with new columns) are saved with
    --rerun: a resume puts back the saved runs only, never a published run the rerun has not made yet; a later save
    without the flag keeps saying so, and a fresh save of another sweep does not."""
    root, runs = sweep
    published = root / "docs/results/sweep/runs/glue/sst2/m"
    _write(published / "istar1" / "seed0.json", "published before the rerun")
    _write(published / "istar0" / "seed0.json", "published before the rerun")
    monkeypatch.setattr(partial_runs, "ROOT", root)
    assert partial_runs.main(["save", "sweep", "--rerun"]) == 0
    assert "a resume puts back none of the published runs" in capsys.readouterr().out
    info = json.loads((root / "partial-results/sweep/PARTIAL.json").read_text())
    assert info["replaces_published"] is True and partial_runs.replaces_published("sweep", root)
    assert partial_runs.sources("sweep", root) == [(root / "partial-results/sweep/finetune/runs", "finetune")]
    shutil_rmtree(root / "results")
    assert partial_runs.restore("sweep", root) == 4
    assert not (runs / "istar1").exists()  # published, not yet rerun: left to run
    assert (runs / "istar0" / "seed0.json").read_text() == "istar0/seed0.json"  # the rerun's, not the published one
    _write(runs / "istar1" / "seed0.json", "rerun on the next machine")
    partial_runs.save("sweep", root)  # no flag: the parts are still a rerun
    assert partial_runs.replaces_published("sweep", root)
    partial_runs.discard("sweep", root)
    partial_runs.save("sweep", root)  # a new set of parts: an ordinary sweep again
    assert "replaces_published" not in json.loads((root / "partial-results/sweep/PARTIAL.json").read_text())
    assert len(partial_runs.sources("sweep", root)) == 2
    with pytest.raises(SystemExit):
        partial_runs.main(["restore", "sweep", "--rerun"])
    assert "--rerun goes with save" in capsys.readouterr().err


def test_a_layer_analysis_stopped_midway_is_carried_without_its_states_and_put_back_where_none_is(sweep, capsys):
    """A real LM's layer analysis outlasts a sitting: a save carries its description and measured layers (kilobytes),
    not its states or tokens (gigabytes, encoded again on the next machine); a restore puts the folder back whole,
    except where the analysis has progress of its own or has finished. Progress without a measured layer stays."""
    root, runs = sweep
    stopped = runs.parent / "layers-like" / ".brown.partial"
    for name in ("what.json", "layer0.pkl", "layer1.pkl", "encoded.npz", "states/layer0.npy"):
        _write(stopped / name, f"stopped {name}")
    _write(runs.parent / "other" / ".brown.partial" / "what.json", "not one layer measured yet")
    saved = partial_runs.save("sweep", root)
    progress = saved / "finetune" / "progress"
    assert sorted(str(p.relative_to(progress)) for p in progress.rglob("*") if p.is_file()) == [
        "glue/sst2/layers-like/.brown.partial/layer0.pkl",
        "glue/sst2/layers-like/.brown.partial/layer1.pkl",
        "glue/sst2/layers-like/.brown.partial/what.json",
    ]
    assert json.loads((saved / "PARTIAL.json").read_text())["progress"] == ["glue/sst2/layers-like/.brown.partial"]
    assert len(list((saved / "finetune" / "runs").rglob("*.json"))) == 2  # the finished runs as before
    shutil_rmtree(root / "results")
    assert partial_runs.restore_progress("sweep", root) == [stopped]
    assert sorted(p.name for p in stopped.iterdir()) == ["layer0.pkl", "layer1.pkl", "what.json"]
    assert (stopped / "layer1.pkl").read_text() == "stopped layer1.pkl"
    assert not (runs.parent / "other").exists()
    assert [p.name for p in stopped.parent.iterdir()] == [".brown.partial"]  # nothing half-copied beside it
    (stopped / "layer1.pkl").write_text("measured here since")  # progress of its own: never replaced
    assert partial_runs.restore_progress("sweep", root) == []
    assert (stopped / "layer1.pkl").read_text() == "measured here since"
    shutil_rmtree(stopped)
    _write(stopped.parent / "brown" / "meta.json", "finished here")  # the analysis finished: nothing to resume
    assert partial_runs.restore_progress("sweep", root) == []
    assert not stopped.exists()


def test_a_section_reusing_another_sections_runs_saves_and_restores_both(tmp_path, monkeypatch):

    from isoflow.sections import PUBLICATIONS, Publication

    monkeypatch.setitem(PUBLICATIONS, "sweep", Publication("sweep", "istar", "config/sweep.yaml"))
    _write(tmp_path / "config" / "sweep.yaml", "results_dir: results/sweep\n")
    results = tmp_path / "results/sweep"
    _write(results / "istar/runs/polarity/minilm/istar1/seed0.json", "an istar run")
    _write(results / "optimize/runs/polarity/minilm/seed0.json", "its lambda = 0 row: an optimize run")
    saved = partial_runs.save("sweep", tmp_path)
    assert json.loads((saved / "PARTIAL.json").read_text())["from"] == [
        "results/sweep/istar/runs",
        "results/sweep/optimize/runs",
    ]
    shutil_rmtree(results)
    # istar's published runs hold optimize's lambda = 0 runs too, at optimize's paths: never put into istar's folder
    _write(tmp_path / "docs/results/sweep/runs/polarity/minilm/seed1.json", "an optimize run")
    assert partial_runs.restore("sweep", tmp_path) == 2
    assert sorted(str(p.relative_to(results)) for p in results.rglob("*") if p.is_file()) == [
        "istar/runs/polarity/minilm/istar1/seed0.json",
        "optimize/runs/polarity/minilm/seed0.json",
    ]


def test_the_pretrained_models_a_sweep_uses_are_saved_with_its_runs_and_come_back_whole(sweep):
    """A model the workflow pretrained (an hour of CPU) travels with the saved runs, so the next machine does not
    train it again; a model the section does not use, or one it does not pretrain, stays behind."""
    import os
    import time

    root, runs = sweep
    _write(
        root / "config" / "sweep.yaml",
        "results_dir: results/sweep\ndata_dir: data/sweep\n"
        "finetune: {models: [plain-bert, minilm]}\npretrain: {models: {plain-bert: {}, plain-gpt2: {}}}\n",
    )
    for name in ("plain-bert", "plain-gpt2"):
        for f in ("model.safetensors", "tokenizer.json"):
            _write(root / "data/sweep/pretrained" / name / f, f"{name} {f}")
    saved = partial_runs.save("sweep", root)
    assert json.loads((saved / "PARTIAL.json").read_text())["inputs"] == ["data/sweep/pretrained/plain-bert"]
    assert sorted(p.name for p in (saved / "inputs/pretrained").iterdir()) == ["plain-bert"]
    assert partial_runs.saved_inputs("sweep", root) == [saved / "inputs/pretrained/plain-bert"]
    # Another machine: no data; the corpus is built first, then the model put back, dated after it.
    shutil_rmtree(root / "data")
    before = time.time() - 1
    assert partial_runs.restore_inputs("sweep", root) == [root / "data/sweep/pretrained/plain-bert"]
    model = root / "data/sweep/pretrained/plain-bert"
    assert (model / "model.safetensors").read_text() == "plain-bert model.safetensors"
    assert all(os.stat(p).st_mtime >= before for p in model.iterdir())
    assert sorted(p.name for p in model.parent.iterdir()) == ["plain-bert"]  # nothing half-copied beside it
    # A model already there (trained on this machine) is never replaced.
    (model / "model.safetensors").write_text("trained here")
    assert partial_runs.restore_inputs("sweep", root) == []
    assert (model / "model.safetensors").read_text() == "trained here"


def test_saving_no_finished_runs_is_one_line_and_writes_nothing(sweep, capsys, monkeypatch):

    root, runs = sweep
    shutil_rmtree(runs.parents[3])
    monkeypatch.setattr(partial_runs, "ROOT", root)
    assert partial_runs.main(["save", "sweep"]) == 1
    assert capsys.readouterr().err == (
        f"error: {runs.parents[2]}: no finished runs to save; run `make resume-sweep` first\n"
    )
    assert not (root / "partial-results").exists()


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def test_a_resume_builds_inputs_restores_runs_publishes_and_drops_the_saved_runs(tmp_path, monkeypatch):

    steps = []
    monkeypatch.setattr(publish_results, "ROOT", tmp_path)
    monkeypatch.setattr(publish_results, "_snakemake", lambda command: steps.append(("snakemake", command[1:])))
    monkeypatch.setattr(partial_runs, "restore", lambda pub, root: steps.append(("restore", pub)) or 3)
    monkeypatch.setattr(publish_results, "publish", lambda pub, *a, **k: steps.append(("publish", pub, k["made_by"])))
    monkeypatch.setattr(partial_runs, "discard", lambda pub, root: steps.append(("discard", pub)))
    _write(tmp_path / "config/reproduce-offline.yaml", "results_dir: results/reproduce-offline\n")
    _write(tmp_path / "partial-results/istar/istar/runs/polarity/minilm/istar1/seed0.json", "{}")
    publish_results.reproduce("istar", resume=True)
    said = "(resumed: 3 files of earlier runs put back by scripts/partial_runs.py restore from "
    said += "partial-results/istar/istar/runs)"
    run = ["istar", "--cores", "2", "--configfile", "config/reproduce-offline.yaml", "--rerun-incomplete"]
    assert steps == [
        ("snakemake", [*run, "--omit-from", "istar_run", "optimize_run"]),  # istar's lambda = 0 rows: optimize's
        ("restore", "istar"),
        ("snakemake", run),
        ("publish", "istar", f"snakemake {' '.join(run)} {said}"),
        ("discard", "istar"),
    ]


def test_a_resume_puts_saved_pretrained_models_back_before_the_inputs_that_need_them(tmp_path, monkeypatch):

    steps = []
    monkeypatch.setattr(publish_results, "ROOT", tmp_path)
    monkeypatch.setattr(publish_results, "_snakemake", lambda command: steps.append(("snakemake", command[1:])))
    monkeypatch.setattr(partial_runs, "restore_inputs", lambda pub, root: steps.append(("restore inputs", pub)) or [])
    monkeypatch.setattr(partial_runs, "restore", lambda pub, root: steps.append(("restore", pub)) or 3)
    monkeypatch.setattr(publish_results, "publish", lambda pub, *a, **k: steps.append(("publish", pub)))
    monkeypatch.setattr(partial_runs, "discard", lambda pub, root: steps.append(("discard", pub)))
    _write(
        tmp_path / "config/finetune-plain.yaml",
        "results_dir: results/finetune-plain\nfinetune: {models: [plain-bert]}\npretrain: {models: {plain-bert: {}}}\n",
    )
    _write(tmp_path / "partial-results/finetune-plain/inputs/pretrained/plain-bert/config.json", "{}")
    publish_results.reproduce("finetune-plain", resume=True)
    run = ["finetune", "--cores", "2", "--configfile", "config/finetune-plain.yaml", "--rerun-incomplete"]
    from isoflow.sections import SECTIONS

    runs = list(SECTIONS["finetune"].run_rules)  # the runs, the baseline, the learning rate's runs and choice
    assert runs[0] == "finetune_run"
    assert steps == [
        ("snakemake", [*run, "--omit-from", "pretrain_model", *runs]),  # the corpus, the task: not the model
        ("restore inputs", "finetune-plain"),
        ("snakemake", [*run, "--omit-from", *runs]),
        ("restore", "finetune-plain"),
        ("snakemake", run),
        ("publish", "finetune-plain"),
        ("discard", "finetune-plain"),
    ]


@pytest.fixture
def series_in_parts(tmp_path, monkeypatch):
    """A checkout whose publication `dyn` (the dynamics section, made in parts by series) measures two pretraining
    runs' 3-checkpoint series: every run of series `a` made, 2 of 6 of `a-seed1`."""
    from isoflow.sections import PUBLICATIONS, Publication

    monkeypatch.setitem(PUBLICATIONS, "dyn", Publication("dyn", "dynamics", "config/dyn.yaml"))
    _write(
        tmp_path / "config" / "dyn.yaml",
        "results_dir: results/dyn\npretrain: {training: {steps: 5, checkpoints: 3}, models: {a: {}, a-seed1: {}}}\n"
        "dynamics: {series: [a, a-seed1], corpora: [notes]}\n",
    )
    parts = partial_runs.parts_of("dyn", tmp_path)
    results = tmp_path / "results" / "dyn"
    for run, target in parts["a"] + parts["a-seed1"][:2]:
        _made(Path(run.path(results)), target)
    return tmp_path, parts


def _made(folder: Path, target: str) -> None:
    """A run's folder as its job leaves it: the file the job is asked for, its published files and a sample."""
    files = ("meta.json", "layers.csv", "pca.parquet") if target == "layers.parquet" else ("cross.json",)
    for name in (target, *files):
        _write(folder / name, f"{folder.name}/{name}")


def test_a_publication_in_parts_saves_whole_series_each_run_as_its_published_files(
    series_in_parts, capsys, monkeypatch
):
    """The dynamics section's publication is made in parts, one series after another (its runs read a checkpoint
    series, which stays on the machine that trained it): a series is saved only whole, each run as its published
    files (no samples, no layers.parquet), and the series begun but not whole is named, not saved."""
    root, parts = series_in_parts
    assert list(parts) == ["a", "a-seed1"]  # the config's series, in order
    revisions = ["step0", "step1", "step5"]  # 5 steps, 3 checkpoints: Pythia's spacing
    assert [run.identity() for run, _ in parts["a"]] == [
        *(f"a/notes/tokens/{r}" for r in revisions),  # the points' default: every token
        "cka/a/notes/step0/step1", "cka/a/notes/step1/step5", "cka/a/notes/step0/step5",
    ]  # fmt: skip
    assert [target for _, target in parts["a"]] == ["layers.parquet"] * 3 + ["cross.parquet"] * 3
    monkeypatch.setattr(partial_runs, "ROOT", root)
    assert partial_runs.main(["save", "dyn"]) == 0
    said = capsys.readouterr().out
    assert "6 run records, 12 files" in said and "not saved, a part is saved whole: a-seed1 (2 of 6 runs)" in said
    saved = root / "partial-results" / "dyn" / "dynamics" / "runs"
    kept = sorted(str(p.relative_to(saved)) for p in saved.rglob("*") if p.is_file())
    assert kept == sorted(
        [*(f"a/notes/tokens/{r}/{f}" for r in revisions for f in ("layers.csv", "meta.json")),
         *(f"cka/a/notes/{a}/{b}/{f}" for a, b in [("step0", "step1"), ("step1", "step5"), ("step0", "step5")]
           for f in ("cross.json", "cross.parquet"))]
    )  # fmt: skip
    info = json.loads((saved.parents[1] / "PARTIAL.json").read_text())
    assert info["parts"] == ["a"] and info["parts_left"] == {"a-seed1": "2 of 6 runs"}
    # a job stopped midway leaves the folder Snakemake made for its outputs, empty: that run is not made, its series
    # not whole (seen: a series saved as whole with two such folders)
    import shutil

    stopped = root / "results" / "dyn" / "dynamics" / "runs" / "cka" / "a" / "notes" / "step1" / "step5"
    shutil.rmtree(stopped)
    stopped.mkdir()
    assert partial_runs.main(["save", "dyn"]) == 1
    refused = capsys.readouterr().err
    assert "no finished runs to save (begun, not whole: a, 5 of 6 runs; a-seed1, 2 of 6 runs)" in refused
    _made(stopped, "cross.parquet")

    shutil.rmtree(root / "results" / "dyn" / "dynamics" / "runs" / "a")  # no series whole: nothing to save
    with pytest.raises(partial_runs.PartialError, match=r"no finished runs to save \(begun, not whole: a, 3 of 6"):
        partial_runs.save("dyn", root)


def test_a_resume_in_parts_makes_only_the_missing_series_then_draws_the_report_from_every_part(
    series_in_parts, monkeypatch
):
    """On the next machine, a resume puts the saved series back, makes every run of the series not saved whole (its
    two made runs too: one pretraining per series) and none of the saved one's, then draws the tables and figures
    from every run's folder with the section's redraw commands, not the workflow's report rule (which would want the
    saved series' checkpoints again); a run no part of the config makes is refused before it enters the tables."""
    import shutil

    root, parts = series_in_parts
    partial_runs.save("dyn", root)
    shutil.rmtree(root / "results")  # a new machine: only the saved parts
    steps = []

    def snakemake(command):
        steps.append(("snakemake", command))
        for target in command[command.index("--rerun-incomplete") + 1 :]:
            _made(root / Path(target).parent, Path(target).name)

    monkeypatch.setattr(publish_results, "ROOT", root)
    monkeypatch.setattr(publish_results, "_snakemake", snakemake)
    monkeypatch.setattr(publish_results, "run_isoflow", lambda *command: steps.append(("report", command)))
    monkeypatch.setattr(publish_results, "publish", lambda pub, *a, **k: steps.append(("publish", k["made_by"])))
    publish_results.reproduce("dyn", resume=True)
    (_, command), (_, report), (_, made_by) = steps
    options = ["--cores", "2", "--configfile", "config/dyn.yaml", "--rerun-incomplete"]
    results = root / "results" / "dyn"
    missing = [f"{Path(run.path(results)).relative_to(root)}/{target}" for run, target in parts["a-seed1"]]
    assert command == ["snakemake", *options, *missing]  # no target `dynamics`, none of a's runs
    every = sorted(run.path(results) for runs in parts.values() for run, _ in runs)
    section = results / "dynamics"
    assert report == ("dynamics-report", *every, "--tables", f"{section}/tables", "--figures", f"{section}/figures")
    assert made_by == (
        f"snakemake {' '.join(options)} <each part's missing runs> (in parts: 12 files of earlier parts put back by "
        "scripts/partial_runs.py restore; made here: a-seed1)"
    )
    _made(section / "runs" / "b" / "notes" / "tokens" / "step0", "layers.parquet")  # no series of this config
    with pytest.raises(PublishError, match="b/notes/tokens/step0: a run dyn's config does not make"):
        publish_results.reproduce("dyn", resume=True)


def test_a_sweep_compared_run_by_run_is_not_resumed_on_another_kind_of_cpu(tmp_path, monkeypatch):
    """A one-commit publication's resume on a machine whose CPU is not the one its saved runs name is refused in one
    line before anything runs, where a run it would make is compared with them (its new runs could not be published
    with them, hours later); on the same kind it goes on. The strength-matched control compares runs seed by seed:
    a seed whose saved runs are on another kind refuses only while that seed still lacks a run, and a seed with no
    saved run, or every run made, leaves this machine free. A publication that compares no runs run by run resumes
    anywhere."""
    from isoflow import records

    steps = []
    monkeypatch.setattr(publish_results, "ROOT", tmp_path)
    monkeypatch.setattr(publish_results, "_snakemake", lambda command: steps.append(command[1:]))
    monkeypatch.setattr(publish_results, "publish", lambda *a, **k: None)
    _write(
        tmp_path / "config/finetune-smollm2-fair-control.yaml",
        "results_dir: results/control\nfinetune: {tasks: [glue/sst2], models: [m], istar_lambdas: [0], "
        "meandir_weights: [1], seeds: [0, 1, 2]}\n",
    )
    runs = tmp_path / "partial-results/finetune-smollm2-fair-control/finetune/runs/glue/sst2/m"
    amd = json.dumps({"machine": {"cpu": "AMD EPYC"}})
    _write(runs / "istar0/seed0.json", amd)  # seed 0: its control run not made yet
    monkeypatch.setattr(records, "machine", lambda: {"cpu": "Intel(R) Xeon(R) Processor"})
    control = "finetune-smollm2-fair-control"
    with pytest.raises(PublishError) as refused:
        publish_results.reproduce(control, resume=True)
    assert str(refused.value) == (
        f"partial-results/{control}/finetune/runs/glue/sst2/m/istar0/seed0.json: made on AMD EPYC, and this machine is "
        f"Intel(R) Xeon(R) Processor; {control} compares the runs of its seed 0 made on one kind of CPU: resume it on "
        "AMD EPYC"
    )
    assert steps == [] and (runs / "istar0/seed0.json").is_file()  # nothing ran, nothing removed
    _write(runs / "meandir1/seed0.json", amd)  # seed 0 whole on AMD: seeds 1 and 2 may be made here
    publish_results.reproduce(control, resume=True)
    assert len(steps) == 2 and steps[-1][0] == "finetune"  # its inputs, then the runs
    _write(runs / "meandir1/seed1.json", amd)  # seed 1 begun on AMD: refused again, naming it
    with pytest.raises(PublishError, match=r"meandir1/seed1.json: made on AMD EPYC, .* its seed 1 made on one kind"):
        publish_results.reproduce(control, resume=True)
    monkeypatch.setattr(records, "machine", lambda: {"cpu": "AMD EPYC"})
    publish_results.reproduce(control, resume=True)
    # one name, two kinds: an AMD EPYC whose kernels use AVX2 sums otherwise than one with AVX-512
    _write(runs / "meandir1/seed1.json", json.dumps({"machine": {"cpu": "AMD EPYC", "cpu_capability": "AVX512"}}))
    monkeypatch.setattr(records, "machine", lambda: {"cpu": "AMD EPYC", "cpu_capability": "AVX2"})
    with pytest.raises(PublishError, match=r"made on AMD EPYC \(AVX512\), and this machine is AMD EPYC \(AVX2\)"):
        publish_results.reproduce(control, resume=True)
    _write(runs / "meandir1/seed1.json", amd)
    # compared as one (the fair sweep's floor: every run against every other): any run on another kind refuses
    floor = "finetune-smollm2-fair-floor"
    _write(tmp_path / f"config/{floor}.yaml", "finetune: {tasks: [glue/sst2], models: [m], istar_lambdas: [0], "
           "seeds: [0, 1]}\n")  # fmt: skip
    _write(tmp_path / f"partial-results/{floor}/finetune/runs/glue/sst2/m/istar0/seed0.json", amd)
    monkeypatch.setattr(records, "machine", lambda: {"cpu": "Intel(R) Xeon(R) Processor"})
    with pytest.raises(PublishError, match=f"{floor} compares runs made on one kind of CPU: resume it on AMD EPYC"):
        publish_results.reproduce(floor, resume=True)
    _write(tmp_path / "config/reproduce-offline.yaml", "results_dir: results/offline\n")
    _write(tmp_path / "partial-results/istar/istar/runs/polarity/m/istar1/seed0.json", '{"machine": {"cpu": "X"}}')
    publish_results.reproduce("istar", resume=True)  # not compared run by run: any machine


def test_a_sweep_compared_run_by_run_is_refused_across_commits_threads_or_a_dirty_tree(tmp_path, monkeypatch):
    """A one-commit publication: runs at two commits, two thread counts or a dirty checkout are refused in one line
    naming what differs; runs at one clean commit and thread count are published."""
    from isoflow.publishing.publish import PublishError, publish
    from isoflow.sections import PUBLICATIONS, Publication

    monkeypatch.setitem(PUBLICATIONS, "fair", Publication("fair", "finetune", "config/fair.yaml", one_commit=True))
    where = tmp_path / "results" / "finetune"
    _write(where / "tables" / "finetune.md", "table")
    _write(where / "figures" / "finetune.png", "figure")
    runs = where / "runs" / "glue" / "sst2" / "m"

    def record(run: str, commit: str, threads: int = 2, dirty: bool = False) -> None:
        code = {"git_commit": commit, "git_dirty": dirty}
        _write(runs / run / "seed0.json", json.dumps({"code": code, "threads": threads}))

    record("istar0", "a" * 40)
    record("istar1", "b" * 40)
    with pytest.raises(PublishError, match=r"made at aaaaaaa x 2 threads, bbbbbbb x 2 threads; this publication"):
        publish("fair", tmp_path / "results", tmp_path / "docs" / "fair", root=tmp_path)
    record("istar1", "a" * 40, threads=1)
    with pytest.raises(PublishError, match="x 1 threads"):
        publish("fair", tmp_path / "results", tmp_path / "docs" / "fair", root=tmp_path)
    record("istar1", "a" * 40, dirty=True)
    with pytest.raises(PublishError, match=r"\(dirty\)"):
        publish("fair", tmp_path / "results", tmp_path / "docs" / "fair", root=tmp_path)
    assert not (tmp_path / "docs").exists()
    record("istar1", "a" * 40)
    published = publish("fair", tmp_path / "results", tmp_path / "docs" / "fair", root=tmp_path)
    assert tmp_path / "docs" / "fair" / "runs" / "glue" / "sst2" / "m" / "istar1" / "seed0.json" in published


def test_a_sweep_compared_run_by_run_is_refused_when_a_run_resumed_another_commit_or_cpus_differ(tmp_path, monkeypatch):
    """A run whose first epochs were made at another commit (its record's ``resumed.code``) counts that commit; runs
    that name their CPU must name one (records that name none, made before they did, are not counted)."""
    from isoflow.publishing.publish import PublishError, check_one_commit

    runs = tmp_path / "runs"
    code = {"git_commit": "a" * 40, "git_dirty": False}

    def record(run: str, **info) -> None:
        _write(runs / "glue/sst2/m" / run / "seed0.json", json.dumps({"code": code, "threads": 2, **info}))

    record("istar0", machine={"cpu": "AMD EPYC"})
    record("istar1", resumed={"after_epoch": 1, "code": {"git_commit": "c" * 40, "git_dirty": False}})
    with pytest.raises(PublishError, match=r"made at aaaaaaa x 2 threads, ccccccc x 2 threads; this publication"):
        check_one_commit(runs)
    record("istar1", resumed={"after_epoch": 1, "code": code})
    check_one_commit(runs)  # resumed at its own commit; one CPU named, one unnamed
    record("meandir1", machine={"cpu": "Intel Xeon"})
    with pytest.raises(
        PublishError, match=r"more than one kind of CPU: 1 on AMD EPYC \(e.g. glue/sst2/m/istar0/seed0.json\); 1 on "
    ):
        check_one_commit(runs)
    # compared seed by seed (the strength-matched control): one kind within a seed, any kind between seeds
    with pytest.raises(PublishError, match=r"the runs of its seed 0 were made on more than one kind of CPU"):
        check_one_commit(runs, cpu_per_seed=True)
    (runs / "glue/sst2/m/meandir1/seed0.json").rename(runs / "glue/sst2/m/meandir1/seed1.json")
    _write(
        runs / "glue/sst2/m/istar0/seed1.json",
        json.dumps({"code": code, "threads": 2, "machine": {"cpu": "Intel Xeon"}}),
    )
    check_one_commit(runs, cpu_per_seed=True)  # seed 0 on AMD, seed 1 on Intel
    record("istar1", machine={"cpu": "AMD EPYC", "cpu_capability": "AVX2"})
    record("istar0", machine={"cpu": "AMD EPYC", "cpu_capability": "AVX512"})
    with pytest.raises(PublishError, match=r"seed 0 were made on more than one kind of CPU: 1 on AMD EPYC \(AVX2\)"):
        check_one_commit(runs, cpu_per_seed=True)  # one name, two instruction sets: two kinds
    with pytest.raises(PublishError, match="more than one kind of CPU"):
        check_one_commit(runs)


def test_a_workflow_refused_for_a_stopped_run_s_lock_says_how_to_unlock_it(tmp_path, monkeypatch):
    """Snakemake failing while its lock is left (a run killed, or a session ended): one error naming the lock and the
    unlock command with the publication's config; a failure with no lock left stays Snakemake's own."""
    import subprocess
    import sys

    monkeypatch.setattr(publish_results, "ROOT", tmp_path)
    failing = [sys.executable, "-c", "raise SystemExit(1)", "--configfile", "config/reproduce-offline.yaml"]
    with pytest.raises(subprocess.CalledProcessError):
        publish_results._snakemake(failing)
    _write(tmp_path / ".snakemake/locks/0.input.lock", "")
    with pytest.raises(publish_results.PublishError) as refused:
        publish_results._snakemake(failing)
    said = str(refused.value)
    assert str(tmp_path / ".snakemake/locks") in said and "\n" not in said
    assert "run `snakemake --unlock --cores 1 --configfile config/reproduce-offline.yaml`, then" in said
