"""The optimisation loop on small real data, its determinism, its records, bad input, and the analysis."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import assert_one_record_schema
from IsoScore.IsoScore import IsoScore
from scipy.stats import t as student
from sklearn.metrics import silhouette_score

from isoflow.cli import main
from isoflow.datasets import prepare, read_task
from isoflow.datasets.table import build_task, write_task
from isoflow.embed import encode, load_embeddings
from isoflow.optimize import OptimizationError, Settings, optimize, run_optimize, trajectory_path
from isoflow.optimize.figures import log_normalised_isoscore
from isoflow.optimize.report import (
    LABEL_CENTRED,
    analyze,
    correlations,
    label_centred_summary,
    load_trajectories,
    seed_spread,
)


@pytest.fixture(scope="module")
def small(tmp_path_factory, shared_mirror):
    """Real data, small: 300 polarity sentences (MiniLM), WNLI pairs (MiniLM), 300 supersense nouns (GloVe)."""
    data = tmp_path_factory.mktemp("data")
    full = read_task(prepare("polarity", data_dir=data, mirror=shared_mirror, progress=False))
    texts, labels = full.items["text"].tolist(), full.examples["label"].tolist()  # negatives first, then positives
    write_task(
        build_task("polarity-300", texts[:150] + texts[-150:], labels[:150] + labels[-150:]),
        data / "tasks/polarity-300",
    )
    prepare("glue/wnli", data_dir=data, mirror=shared_mirror, progress=False)
    prepare("supersense", data_dir=data, mirror=shared_mirror, vocab="glove-50d", n_words=300, progress=False)
    encode("minilm", "polarity-300", data_dir=data, progress=False, device="cpu")
    encode("minilm", "glue/wnli", data_dir=data, progress=False, device="cpu")
    encode("glove-50d", "supersense", data_dir=data, progress=False)
    return data


def load(data, task, model):
    return read_task(data / "tasks" / task), load_embeddings(data / "embeddings" / model / task)[0]


@pytest.mark.slow
def test_loop_records_and_trends(small):
    task, emb = load(small, "polarity-300", "minilm")
    traj = optimize(task, emb, Settings("polarity-300", "minilm", seed=0, steps=40), progress=False)
    rec = traj.records
    assert len(rec["loss"]) == 41  # step 0 (pretrained) + 40 updates
    # Step 0 is measured on the untouched embeddings: check against the references.
    y = task.examples["label"].to_numpy()
    assert rec["silhouette"][0] == pytest.approx(silhouette_score(emb, y), abs=1e-5)
    assert rec["isoscore"][0] == pytest.approx(float(IsoScore(emb)), abs=1e-5)
    # The paper's finding, in miniature: isotropy falls and clusterability rises; the loss falls.
    assert rec["isoscore"][-1] < 0.5 * rec["isoscore"][0]
    assert rec["silhouette"][-1] > rec["silhouette"][0] + 0.1
    assert rec["loss"][-1] < rec["loss"][0] and rec["accuracy"][-1] > 0.9
    assert traj.info["n_params"] == 300 * 384 + 384 * 2 + 2


def test_pairs_and_multilabel(small):
    task, emb = load(small, "glue/wnli", "minilm")
    traj = optimize(task, emb, Settings("glue/wnli", "minilm", seed=0, steps=3), progress=False)
    reps = np.concatenate([emb[task.examples["a"]], emb[task.examples["b"]]], axis=1)  # [u; v]
    assert traj.records["silhouette"][0] == pytest.approx(silhouette_score(reps, task.examples["label"]), abs=1e-5)
    assert traj.info["pair"] and traj.info["n_params"] == 925 * 384 + 768 * 2 + 2
    ss, semb = load(small, "supersense", "glove-50d")
    traj = optimize(ss, semb, Settings("supersense", "glove-50d", seed=0, steps=20), progress=False)
    sets = [tuple(x) for x in ss.examples["labels"]]
    codes = pd.factorize(pd.Series(sets))[0]
    assert traj.info["n_clusters"] == len(set(sets)) and traj.info["multilabel"]
    assert traj.records["silhouette"][0] == pytest.approx(silhouette_score(semb, codes), abs=1e-5)
    assert traj.records["loss"][-1] < traj.records["loss"][0]


def test_same_seed_same_trajectory_on_cpu(small):
    task, emb = load(small, "polarity-300", "minilm")
    runs = [
        optimize(task, emb, Settings("p", "m", seed=s, steps=15, sample_cap=200), progress=False) for s in (3, 3, 4)
    ]
    for col in ("loss", "accuracy", "silhouette", "isoscore"):
        np.testing.assert_array_equal(runs[0].records[col], runs[1].records[col])
    assert not np.array_equal(runs[0].records["loss"], runs[2].records["loss"])


def test_sampling_above_cap(small):
    # 300 rows with a cap of 200: a fresh sample per state; the sampled silhouette is a genuine subset's score.
    task, emb = load(small, "polarity-300", "minilm")
    traj = optimize(task, emb, Settings("p", "m", seed=0, steps=5, sample_cap=200), progress=False)
    full = optimize(task, emb, Settings("p", "m", seed=0, steps=5), progress=False)
    assert np.all(np.abs(traj.records["silhouette"] - full.records["silhouette"]) < 0.05)
    assert not np.array_equal(traj.records["silhouette"], full.records["silhouette"])
    np.testing.assert_array_equal(traj.records["loss"], full.records["loss"])  # sampling does not touch training


def test_extra_metrics_every_k(small):
    task, emb = load(small, "supersense", "glove-50d")
    traj = optimize(
        task,
        emb,
        Settings("s", "g", seed=0, steps=6, extra_every=3, extra_metrics=("cosine_anisotropy",)),
        progress=False,
    )
    col = traj.records["cosine_anisotropy"]
    assert np.isfinite(col[[0, 3, 6]]).all() and np.isnan(col[[1, 2, 4, 5]]).all()


def test_the_table_s_spectrum_and_uniformity_along_the_trajectory(small):
    """By default the extra metrics include effective rank (RankMe) and uniformity: at update 0 they are the
    pretrained table's own, as isoflow.metrics computes them; later they move with the table."""
    from isoflow.metrics import effective_rank, uniformity

    task, emb = load(small, "supersense", "glove-50d")
    traj = optimize(task, emb, Settings("s", "g", seed=0, steps=4, extra_every=2), progress=False)
    rank, unif = traj.records["effective_rank"], traj.records["uniformity"]
    assert len(rank) == 5  # updates 0..4
    assert rank[0] == pytest.approx(effective_rank(emb), rel=1e-9)
    assert unif[0] == pytest.approx(uniformity(emb), rel=1e-9)
    assert rank[4] != rank[0] and np.isfinite(unif[[0, 2, 4]]).all() and np.isnan(unif[[1, 3]]).all()


def test_a_non_linear_head_is_trained_and_recorded_apart(small, tmp_path):
    """--head mlp: hidden layers as wide as the input (GELU) before the output layer; the run goes one folder deeper
    than the paper's linear head, which it never replaces."""
    parquet, meta = run_optimize(
        "polarity-300",
        "minilm",
        0,
        steps=15,
        data_dir=small,
        results=tmp_path,
        device="cpu",
        progress=False,
        head="mlp",
        head_layers=2,
    )
    assert parquet == tmp_path / "optimize/runs/polarity-300/minilm/mlp2/seed0.parquet"
    info = json.loads(meta.read_text())
    d = 384
    assert info["settings"]["head"] == "mlp" and info["n_params"] == 300 * d + 2 * (d * d + d) + (d * 2 + 2)
    rec = pd.read_parquet(parquet)
    assert rec["loss"].iloc[-1] < rec["loss"].iloc[0] and rec["silhouette"].iloc[-1] > rec["silhouette"].iloc[0]
    # The last hidden layer's output, what the final linear layer separates, is measured at every state: recomputed
    # here from the table and the trained head at the last state would need the weights; at step 0 (the initial head,
    # seeded) it is the initial head applied to the pretrained table.
    assert rec["silhouette_hidden"].notna().all() and rec["isoscore_hidden"].between(0, 1).all()
    from isoflow.metrics import isoscore, silhouette
    from isoflow.optimize.loop import classifier

    task, emb = load(small, "polarity-300", "minilm")
    torch.manual_seed(0)
    head = classifier(d, 2, Settings("polarity-300", "minilm", 0, 15, head="mlp", head_layers=2))
    with torch.no_grad():
        hidden = head[:-1](torch.from_numpy(emb))
    labels = task.examples["label"].to_numpy()
    assert rec["silhouette_hidden"].iloc[0] == pytest.approx(silhouette(hidden, labels), abs=1e-6)
    assert rec["isoscore_hidden"].iloc[0] == pytest.approx(isoscore(hidden), abs=1e-6)
    linear, _ = run_optimize(
        "polarity-300", "minilm", 0, steps=2, data_dir=small, results=tmp_path, device="cpu", progress=False
    )
    assert linear == tmp_path / "optimize/runs/polarity-300/minilm/seed0.parquet" and parquet.is_file()


def test_the_hidden_output_is_measured_on_its_schedule_without_changing_the_run(small, tmp_path):
    """--hidden-updates K: the hidden output before training, at the last update and at K updates log-spaced from the
    first (NaN in between), the same values as when measured at every update (the default); measuring never changes
    the training (the other columns are equal)."""

    def run(k, out):
        parquet, _ = run_optimize(
            "polarity-300",
            "minilm",
            0,
            steps=10,
            data_dir=small,
            results=tmp_path / out,
            device="cpu",
            progress=False,
            head="mlp",
            hidden_updates=k,
        )
        return pd.read_parquet(parquet)

    each, sparse = run(0, "each"), run(4, "sparse")
    assert each["silhouette_hidden"].notna().all()
    measured = sparse["silhouette_hidden"].notna().to_numpy()
    assert list(np.flatnonzero(measured)) == [0, 1, 2, 5, 10]  # 10 ** (0, 1/3, 2/3, 1) = 1, 2.15, 4.64, 10
    assert sparse["isoscore_hidden"].notna().to_numpy().tolist() == measured.tolist()
    for col in ("silhouette_hidden", "isoscore_hidden"):
        assert sparse[col][measured].to_numpy() == pytest.approx(each[col][measured].to_numpy(), abs=1e-12)
    table = ["loss", "accuracy", "silhouette", "isoscore", "isoscore_star"]
    assert np.array_equal(sparse[table].to_numpy(), each[table].to_numpy())


def test_hidden_steps_are_log_spaced_and_keep_the_first_and_last():
    from isoflow.optimize.settings import hidden_steps

    assert hidden_steps(5, 0) == {0, 1, 2, 3, 4, 5}
    assert hidden_steps(1000, 3) == {0, 1, 32, 1000}  # sqrt(1000) = 31.6
    assert hidden_steps(7, 1) == {0, 1, 7}
    many = sorted(hidden_steps(250, 50))
    assert many[:11] == list(range(11)) and many[-1] == 250 and len(many) == 40  # rounding merges the first few


def test_bad_input(small):
    task, emb = load(small, "polarity-300", "minilm")
    one = build_task("one", ["a", "b"], ["x", "x"])
    with pytest.raises(OptimizationError, match="a single label"):
        optimize(one, emb[:2], Settings("one", "m", 0, 2), progress=False)
    with pytest.raises(OptimizationError, match="300 rows but the task has 2 items"):
        optimize(one, emb, Settings("one", "m", 0, 2), progress=False)
    pairs, pemb = load(small, "glue/wnli", "minilm")
    broken = pairs.examples.copy()
    broken.loc[0, "b"] = 10_000
    pairs.examples = broken
    with pytest.raises(OptimizationError, match="a pair points to a missing sentence"):
        optimize(pairs, pemb, Settings("w", "m", 0, 2), progress=False)
    with pytest.raises(OptimizationError, match=r"loss.* became NaN/inf at step \d+"):
        optimize(task, emb, Settings("p", "m", 0, 60, lr=1e37), progress=False)  # Adam steps of ~lr overflow float32


def test_run_writes_complete_records_only(small, tmp_path):
    parquet, meta = run_optimize(
        "polarity-300", "minilm", 1, steps=5, data_dir=small, results=tmp_path, device="cpu", progress=False
    )
    assert parquet == trajectory_path("polarity-300", "minilm", 1, tmp_path).with_suffix(".parquet")
    df = pd.read_parquet(parquet)
    assert list(df.columns) == [
        "task",
        "model",
        "seed",
        "step",
        "loss",
        "accuracy",
        "silhouette",
        "isoscore",
        "isoscore_star",
        "istar_penalty",
    ]
    info = json.loads(meta.read_text())
    assert_one_record_schema(info, "optimize")
    assert info["complete"] and info["settings"]["lr"] == 1e-3 and info["settings"]["betas"] == [0.9, 0.999]
    assert info["versions"]["torch"] == torch.__version__ and info["device"] == "cpu"
    # A diverging run leaves nothing behind.
    with pytest.raises(OptimizationError):
        run_optimize("polarity-300", "minilm", 2, steps=60, data_dir=small, results=tmp_path, progress=False, lr=1e37)
    assert not trajectory_path("polarity-300", "minilm", 2, tmp_path).with_suffix(".parquet").exists()
    with pytest.raises(FileNotFoundError, match="run `isoflow encode --model mpnet"):
        run_optimize("polarity-300", "mpnet", 0, steps=2, data_dir=small, results=tmp_path)
    with pytest.raises(ValueError, match="unknown model 'bert' .*known: minilm, mpnet"):
        run_optimize("polarity-300", "bert", 0, steps=2, data_dir=small, results=tmp_path)
    with pytest.raises(ValueError, match="unknown task 'imdb' .*known: polarity, snli"):
        run_optimize("imdb", "minilm", 0, steps=2, data_dir=small, results=tmp_path)
    with pytest.raises(ValueError, match="CUDA is not available|unknown device"):
        run_optimize(
            "polarity-300",
            "minilm",
            0,
            steps=2,
            data_dir=small,
            results=tmp_path,
            device="cuda:7" if not torch.cuda.is_available() else "tpu",
        )


INTERRUPT_AT_STEP = """
import importlib, signal, sys
run_module = importlib.import_module("isoflow.optimize.run")  # the module (the package exports a function `run`)

MODE, STEP = sys.argv[1], int(sys.argv[2])
# Python's own SIGINT handler, as an interactive shell starts it: a process started from a background job inherits
# SIGINT ignored (POSIX shells ignore it in asynchronous commands), and Python then installs no handler at all.
signal.signal(signal.SIGINT, signal.default_int_handler)


def swallowed_interrupt():
    # What CPython does with a KeyboardInterrupt raised inside a finaliser (__del__, a weakref callback): the SIGINT
    # handler runs, its exception is caught and dropped. Called here explicitly, so the drop happens at this step on
    # every machine (a real finaliser runs whenever the garbage collector decides).
    try:
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
    except KeyboardInterrupt:
        pass


def at_step(step, values):
    if step == STEP:
        if MODE == "plain":
            signal.raise_signal(signal.SIGINT)
        else:
            swallowed_interrupt()


original = run_module.optimize
run_module.optimize = lambda *a, **k: original(*a, **{**k, "callback": at_step})
if sys.argv[3] == "cli":
    from isoflow.cli import main
    raise SystemExit(main(sys.argv[4:]))
from isoflow.optimize import run_optimize
run_optimize("polarity-300", "minilm", 0, steps=int(sys.argv[4]), data_dir=sys.argv[5], results=sys.argv[6],
progress=False) """


def interrupt_at(step: int, mode: str, *args: str):
    return subprocess.run(
        [sys.executable, "-c", INTERRUPT_AT_STEP, mode, str(step), *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["plain", "swallowed"])
def test_interrupted_run_leaves_no_record(small, tmp_path, mode):
    """Ctrl-C at update 3 (deterministic: raised by a hook at that step, not by a timer): one clear line, rc 130, no
    record -- also when the KeyboardInterrupt is dropped on the way, as Python drops one raised in a finaliser."""
    argv = [
        "optimize",
        "--task",
        "polarity-300",
        "--model",
        "minilm",
        "--steps",
        "1000",
        "--data-dir",
        str(small),
        "--results",
        str(tmp_path),
        "--device",
        "cpu",
        "--quiet",
    ]
    p = interrupt_at(3, mode, "cli", *argv)
    assert p.returncode == 130, p.stderr
    assert p.stderr.strip().splitlines() == [
        "isoflow optimize: interrupted; nothing was written (outputs appear only once complete)"
    ]
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("*.json"))


@pytest.mark.slow
def test_dropped_interrupt_is_lost_without_the_cli_handler(small, tmp_path):
    """The control for the test above: through the library alone (Python's default SIGINT handler), an interrupt
    dropped on the way is forgotten and the run completes. The CLI's remembering handler is what stops it."""
    p = interrupt_at(3, "swallowed", "library", "6", str(small), str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert trajectory_path("polarity-300", "minilm", 0, tmp_path).with_suffix(".json").is_file()


@pytest.mark.slow
def test_analysis_outputs(small, tmp_path, capsys):
    for seed in (0, 1):
        run_optimize(
            "polarity-300", "minilm", seed, steps=20, data_dir=small, results=tmp_path, device="cpu", progress=False
        )
        run_optimize(
            "glue/wnli", "minilm", seed, steps=10, data_dir=small, results=tmp_path, device="cpu", progress=False
        )
    traj, info = load_trajectories(tmp_path)
    runs, summary = correlations(traj)
    assert len(runs) == 4 and set(summary["seeds"]) == {2}
    g = traj[(traj.task == "polarity-300") & (traj.step >= 1)]
    mean = g.groupby("step")[["isoscore", "silhouette"]].mean()
    row = summary[summary.task == "polarity-300"].iloc[0]
    assert row["pearson_r"] == pytest.approx(np.corrcoef(mean["isoscore"], mean["silhouette"])[0, 1], abs=1e-12)
    assert row["pearson_r"] < -0.8  # they move in opposite directions
    with_0 = traj[traj.task == "polarity-300"].groupby("step")[["isoscore", "silhouette"]].mean()  # update 0 counted
    assert row["pearson_r_from_0"] == pytest.approx(np.corrcoef(with_0["isoscore"], with_0["silhouette"])[0, 1])
    assert row["delta_r_from_0"] == pytest.approx(row["pearson_r_from_0"] - row["paper_pearson_r"], nan_ok=True)
    per_run = runs[runs.task == "polarity-300"].iloc[0]
    first = traj[(traj.task == "polarity-300") & (traj.seed == per_run.seed)]
    assert per_run["pearson_r_from_0"] == pytest.approx(np.corrcoef(first["isoscore"], first["silhouette"])[0, 1])
    # the seeds' interval of the per-run r on Fisher's z: tanh(mean(z) ± t(0.975, n − 1) · s_z / √n), z = atanh(r)
    z = np.arctanh(runs[runs.task == "polarity-300"]["pearson_r_from_0"].to_numpy())
    half = student.ppf(0.975, len(z) - 1) * z.std(ddof=1) / np.sqrt(len(z))
    assert (row["pearson_r_runs_ci_low_from_0"], row["pearson_r_runs_ci_high_from_0"]) == pytest.approx(
        (np.tanh(z.mean() - half), np.tanh(z.mean() + half)), abs=1e-12
    )
    assert -1 < row["pearson_r_runs_ci_low_from_0"] < row["pearson_r_runs_ci_high_from_0"] < 1
    ln = log_normalised_isoscore(traj)
    assert np.allclose(ln[traj.step.to_numpy() == 0], 0.0)
    written = {p.name for p in analyze(tmp_path)}
    from isoflow.optimize.settings import report_outputs  # what the workflow declares for such a config

    tables, figures = report_outputs(main=True, glue=True, seeds=2, label_centred=False)
    assert {n[: -len(".csv")] for n in written if n.endswith(".csv")} - {"runs"} == set(tables)  # runs: the aggregate
    assert {n[: -len(".png")] for n in written if n.endswith(".png")} == set(figures)
    assert {
        "correlations.csv",
        "correlations.md",
        "correlations.tex",
        "correlations_glue.md",
        "seed_spread.md",
        "table1_sizes.md",
        "table2_sizes_glue.tex",
        "silhouette.png",
        "log_isoscore.pdf",
        "silhouette_vs_isoscore.png",
    } <= written
    sizes = pd.read_csv(tmp_path / "optimize/tables/table1_sizes.csv")
    assert sizes.loc[0, "n_params"] == 300 * 384 + 384 * 2 + 2
    # The workflow's two steps (optimize-aggregate -> optimize-report) give the same tables as `analyze`.
    staged = tmp_path / "staged"
    for argv in (
        ["optimize-aggregate", "--results", str(tmp_path), "--out", str(staged / "agg")],
        [
            "optimize-report",
            "--aggregate",
            str(staged / "agg"),
            "--tables",
            str(staged / "tables"),
            "--figures",
            str(staged / "figures"),
        ],
    ):
        assert main(argv) == 0
    for name in ("correlations.csv", "correlations_glue.csv", "table2_sizes_glue.csv"):
        assert (staged / "tables" / name).read_text() == (tmp_path / "optimize/tables" / name).read_text()
    assert (staged / "figures/silhouette_vs_isoscore.pdf").is_file()
    assert main(["optimize-report", "--aggregate", str(staged / "missing"), "--tables", str(staged / "t2")]) != 0
    assert "run `isoflow optimize-aggregate" in capsys.readouterr().err and not (staged / "t2").exists()
    # Runs of different lengths are not averaged together.
    run_optimize("glue/wnli", "minilm", 2, steps=5, data_dir=small, results=tmp_path, device="cpu", progress=False)
    with pytest.raises(ValueError, match=r"runs of glue/wnli x minilm differ in steps, not only in their seed"):
        load_trajectories(tmp_path)


def test_label_centred_metrics_every_k(small):
    """The bridge to Cai et al.: IsoScore after removing each class's mean, and S_intra within classes, every K."""
    from isoflow.metrics import isoscore

    task, emb = load(small, "polarity-300", "minilm")
    traj = optimize(task, emb, Settings("p", "m", seed=0, steps=6, label_centred_every=3), progress=False)
    rec = traj.records
    assert (
        np.isfinite(rec["isoscore_label_centred"][[0, 3, 6]]).all()
        and np.isnan(rec["isoscore_label_centred"][[1, 2, 4, 5]]).all()
    )
    y = task.examples["label"].to_numpy()
    centred = emb.astype(np.float64).copy()
    for lab in np.unique(y):
        centred[y == lab] -= centred[y == lab].mean(axis=0)
    assert rec["isoscore_label_centred"][0] == pytest.approx(isoscore(centred), abs=1e-6)
    assert rec["isoscore_classified"][0] == pytest.approx(isoscore(emb), abs=1e-6)
    brute = np.mean(
        [
            np.mean((U @ U.T)[~np.eye(len(U), dtype=bool)])
            for U in (emb[y == lab] / np.linalg.norm(emb[y == lab], axis=1, keepdims=True) for lab in np.unique(y))
        ]
    )
    assert rec["s_intra_label"][0] == pytest.approx(brute, abs=1e-6)


def test_label_centred_summary_takes_seed_means_at_the_first_and_last_measured_update():
    nan = np.nan
    rows = []
    for seed, glob, centred, intra in [
        (0, [0.5, nan, 0.3, nan, 0.1], [0.6, nan, 0.5, nan, 0.6], [0.2, nan, 0.3, nan, 0.4]),
        (1, [0.7, nan, 0.5, nan, 0.3], [0.8, nan, 0.6, nan, 0.4], [0.4, nan, 0.5, nan, 0.6]),
    ]:
        for step in range(5):
            rows.append(
                {
                    "task": "t",
                    "model": "m",
                    "seed": seed,
                    "step": step,
                    "isoscore_classified": glob[step],
                    "isoscore_label_centred": centred[step],
                    "s_intra_label": intra[step],
                }
            )
    table = label_centred_summary(pd.DataFrame(rows))
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["seeds"], row["first_step"], row["last_step"]) == (2, 0, 4)
    assert (row["isoscore_classified_start"], row["isoscore_classified_end"]) == pytest.approx((0.6, 0.2))
    assert (row["isoscore_label_centred_start"], row["isoscore_label_centred_end"]) == pytest.approx((0.7, 0.5))
    assert (row["s_intra_label_start"], row["s_intra_label_end"]) == pytest.approx((0.3, 0.5))
    assert row["isoscore_classified_ratio"] == pytest.approx(1 / 3)
    assert row["isoscore_label_centred_ratio"] == pytest.approx(5 / 7)
    # Runs made without the option give no table (the workflow then declares none).
    assert label_centred_summary(pd.DataFrame(rows).drop(columns=list(LABEL_CENTRED))).empty


def test_seed_spread_is_the_std_over_seeds_per_update_beside_the_papers_bounds():
    """A hand case: the std over seeds (ddof = 1) at each update 1..N (step 0 left out), its max and mean per metric
    and over both; the paper's bounds (max < 0.0054, mean < 0.0008) only on its main tasks; one seed: no row."""
    rows = []

    def add(task, seeds_values):  # seeds_values: {seed: [(isoscore, silhouette) at steps 0, 1, 2, 3]}
        for seed, values in seeds_values.items():
            for step, (iso, sil) in enumerate(values):
                rows.append(
                    {"task": task, "model": "minilm", "seed": seed, "step": step, "isoscore": iso, "silhouette": sil}
                )

    # polarity: IsoScore spread 0, 0.1, sqrt(0.0003) at updates 1..3; silhouette 0.004 at each; step 0 spread 1.0.
    add(
        "polarity",
        {
            s: [
                (float(s), 0.0),
                (0.5, 0.1 + 0.004 * s),
                (0.1 * (s + 1), 0.2 + 0.004 * s),
                ((0.0, 0.0, 0.03)[s], 0.004 * s),
            ]
            for s in range(3)
        },
    )
    # snli: within the paper's bounds (IsoScore 0.001, silhouette 0.0001 at every update).
    add("snli", {s: [(0.9, 0.0)] + [(0.5 + 0.001 * s, 0.1 + 0.0001 * s)] * 3 for s in range(2)})
    add("glue/rte", {s: [(0.9, 0.0)] + [(0.5 + 0.01 * s, 0.1)] * 3 for s in range(2)})
    add("glue/wnli", {0: [(0.9, 0.0)] * 4})
    table = seed_spread(pd.DataFrame(rows)).set_index("task")
    assert list(table.index) == ["glue/rte", "polarity", "snli"]
    pol = table.loc["polarity"]
    assert (pol["seeds"], pol["steps"]) == (3, 3)
    assert pol["isoscore_max_std"] == pytest.approx(0.1) and pol["isoscore_max_at"] == 2
    assert pol["isoscore_mean_std"] == pytest.approx((0 + 0.1 + 0.0003**0.5) / 3)
    assert (pol["silhouette_max_std"], pol["silhouette_mean_std"]) == pytest.approx((0.004, 0.004))
    assert pol["max_std_over_seeds"] == pytest.approx(0.1)
    assert pol["mean_std_over_seeds"] == pytest.approx((0 + 0.1 + 0.0003**0.5 + 3 * 0.004) / 6)
    assert (pol["paper_max_std"], pol["paper_mean_std"], pol["paper_seeds"]) == ("< 0.0054", "< 0.0008", 5)
    # ddof = 0 (NumPy's default): the population std, sqrt(2/3) of the sample std for 3 seeds
    assert pol["max_std_over_seeds_ddof0"] == pytest.approx(0.1 * (2 / 3) ** 0.5)
    assert pol["mean_std_over_seeds_ddof0"] == pytest.approx(pol["mean_std_over_seeds"] * (2 / 3) ** 0.5)
    assert not pol["below_paper_bounds"]
    assert pol["updates_at_or_above_paper_max"] == 2  # update 2 (IsoScore 0.1), update 3 (IsoScore 0.017)
    snli = table.loc["snli"]
    assert snli["max_std_over_seeds"] == pytest.approx(0.001 / 2**0.5)
    assert snli["mean_std_over_seeds"] == pytest.approx((0.001 + 0.0001) / 2**0.5 / 2)
    assert snli["below_paper_bounds"] and snli["updates_at_or_above_paper_max"] == 0
    rte = table.loc["glue/rte"]
    assert rte["paper_max_std"] == "" and rte["below_paper_bounds"] is None and np.isnan(rte["paper_seeds"])
    assert rte["isoscore_max_at"] == 1 and rte["updates_at_or_above_paper_max"] is None


def test_several_seeds_in_one_process_write_what_separate_runs_write(small, tmp_path):
    from isoflow.optimize import run_seeds

    grouped = run_seeds(
        "glue/wnli",
        "minilm",
        [0, 1],
        steps=4,
        data_dir=small,
        results=tmp_path / "grouped",
        progress=False,
        device="cpu",
    )
    alone = run_optimize(
        "glue/wnli", "minilm", 1, steps=4, data_dir=small, results=tmp_path / "alone", progress=False, device="cpu"
    )
    assert grouped[1][0].read_bytes() == alone[0].read_bytes()  # the parquet, byte for byte
    a, b = (json.loads(p.read_text()) for p in (grouped[1][1], alone[1]))
    timing = {"setup_seconds", "loop_seconds", "seconds_per_update"}
    assert {k: v for k, v in a.items() if k not in timing} == {k: v for k, v in b.items() if k not in timing}
    with pytest.raises(ValueError, match="must contain {seed}"):
        run_seeds("glue/wnli", "minilm", [0, 1], steps=2, data_dir=small, out=tmp_path / "one", progress=False)
    with pytest.raises(SystemExit):
        main(["optimize", "--task", "glue/wnli", "--model", "minilm", "--seed", "0", "--seeds", "1,2"])


def test_progress_lines_in_a_log(small, capsys):
    # stderr is not a terminal (a Snakemake log): the loop writes a line per tenth with the values of that update.
    task, emb = load(small, "polarity-300", "minilm")
    traj = optimize(task, emb, Settings("polarity-300", "minilm", seed=0, steps=25), progress=None)
    out = [line for line in capsys.readouterr().err.splitlines() if line.startswith("polarity-300 x minilm seed 0")]
    assert len(out) == 1 + 9 and "25/25 upd (100%)" in out[-1]
    # Every line carries the values of the update it counts (25 updates: lines at 3, 6, ..., 24, 25; not at a tenth's
    # nearest multiple of 10).
    for line in out[1:]:
        step = int(line.split(": ")[1].split("/")[0])
        assert (
            f"sil={traj.records['silhouette'][step]:.4f}" in line
            and f"iso={traj.records['isoscore'][step]:.4f}" in line
        ), line
