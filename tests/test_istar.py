"""I-STAR in the optimisation experiment: the loss term, its gradient, the sign convention, λ = 0 = the plain run bit
for bit, the file layout, divergence, bad input, the sweep's table and figures, and the workflow section."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import sh
from scipy.stats import pearsonr, spearmanr
from scipy.stats import t as student

from isoflow.cli import main
from isoflow.datasets import read_task
from isoflow.datasets.table import build_task, write_task
from isoflow.embed import items_digest, load_embeddings, write_embeddings
from isoflow.istar import IStarLoss
from isoflow.metrics import covariance, encode_labels, isoscore, isoscore_star, isoscore_tensor, silhouette_tensor
from isoflow.optimize import OptimizationError, Settings, istar_report, optimize, run_optimize, trajectory_path
from isoflow.records import load_runs


@pytest.fixture(scope="module")
def clusters_task(tmp_path_factory):
    """240 points in 12 dims, two labelled blobs with anisotropic noise: a task the loop trains in milliseconds."""
    data = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    labels = np.array(["a", "b"] * 120)
    emb = (rng.normal(size=(240, 12)) * np.linspace(0.3, 2.0, 12) + np.where(labels == "a", 0.4, -0.4)[:, None]).astype(
        np.float32
    )
    texts = [f"item {i}" for i in range(240)]
    write_task(build_task("blobs", texts, list(labels)), data / "tasks/blobs")
    write_embeddings(
        data / "embeddings/m/blobs",
        emb,
        texts,
        {"model": "m", "task": "blobs", "n_items": 240, "dim": 12, "items_sha256": items_digest(texts)},
        force=False,
    )
    return data


def load(data):
    return read_task(data / "tasks/blobs"), load_embeddings(data / "embeddings/m/blobs")[0]


# ----- the loss term --------------------------------------------------------------------------------------------------


def test_penalty_value_and_gradcheck():
    rng = np.random.default_rng(1)
    X = torch.tensor(rng.normal(size=(15, 4)) * [1.0, 2.0, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    C0 = covariance(rng.normal(size=(200, 4)))
    pen = IStarLoss.from_matrix(2.5, 0.2, C0, 4, dtype="float64")
    expected = 2.5 * (1.0 - float(isoscore_star(X.detach(), C0, 0.2)))  # the public, checked IsoScore*
    assert float(pen.penalty(X)) == pytest.approx(expected, abs=1e-12)
    assert torch.autograd.gradcheck(lambda x: pen.penalty(x), (X,), eps=1e-6, atol=1e-7)
    # ζ = 0: the plain IsoScore, no target needed.
    plain = IStarLoss.from_matrix(1.0, 0.0, None, 4, dtype="float64")
    assert float(plain.penalty(X)) == pytest.approx(1.0 - isoscore(X.detach()), abs=1e-12)


def objective(table: torch.Tensor, head: torch.nn.Linear, y: torch.Tensor, pen: IStarLoss) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(head(table), y) + pen.penalty(table)


def test_loss_gradient_matches_finite_differences():
    """The loop's objective (cross-entropy + λ·(1 − IsoScore*)) differentiated by autograd vs central differences."""
    torch.manual_seed(0)
    table = torch.randn(30, 5, dtype=torch.float64) * torch.tensor([1.0, 0.5, 2.0, 1.0, 0.2], dtype=torch.float64)
    y = torch.arange(30) % 3
    head = torch.nn.Linear(5, 3).double()
    for lam in (-3.0, 4.0):
        pen = IStarLoss.from_points(lam, 0.2, table * 1.5, dtype="float64")
        t = table.clone().requires_grad_(True)
        objective(t, head, y, pen).backward()
        eps = 1e-6
        for i, j in [(0, 0), (3, 2), (17, 4), (29, 1)]:
            plus, minus = table.clone(), table.clone()
            plus[i, j] += eps
            minus[i, j] -= eps
            with torch.no_grad():
                fd = (objective(plus, head, y, pen) - objective(minus, head, y, pen)) / (2 * eps)
            assert float(t.grad[i, j]) == pytest.approx(float(fd), rel=1e-5, abs=1e-8)


def test_sign_convention_one_step():
    """A small gradient step on the penalty alone raises IsoScore* for λ > 0 and lowers it for λ < 0."""
    X = torch.randn(100, 6, dtype=torch.float64) * torch.tensor([3.0, 1.0, 1.0, 0.5, 0.5, 0.2], dtype=torch.float64)
    for lam, direction in ((1.0, 1), (-1.0, -1)):
        pen = IStarLoss.from_points(lam, 0.2, X, dtype="float64")
        x = X.clone().requires_grad_(True)
        pen.penalty(x).backward()
        after = X - 0.02 * X.norm() * x.grad / x.grad.norm()  # a small step down the penalty's gradient
        assert direction * (float(pen.isoscore_star(after)) - float(pen.isoscore_star(X))) > 1e-4


def test_sign_convention_in_the_loop(clusters_task):
    task, emb = load(clusters_task)
    final = {
        lam: optimize(task, emb, Settings("blobs", "m", 0, 40, lr=1e-2, istar_lambda=lam), progress=False).records
        for lam in (-5.0, 0.0, 5.0)
    }
    iso = {lam: r["isoscore"][-1] for lam, r in final.items()}
    star = {lam: r["isoscore_star"][-1] for lam, r in final.items()}
    assert iso[-5.0] < iso[0.0] < iso[5.0] and star[-5.0] < star[0.0] < star[5.0]
    # The recorded penalty is λ·(1 − IsoScore*), and `loss` is the task loss alone.
    r = final[5.0]
    np.testing.assert_allclose(r["istar_penalty"], 5.0 * (1.0 - r["isoscore_star"]), rtol=0, atol=1e-12)
    assert np.all(final[0.0]["istar_penalty"] == 0.0)


def plain_loop(task, emb: np.ndarray, seed: int, steps: int, lr: float) -> dict[str, np.ndarray]:
    """The experiment's loop written out without any I-STAR code: Adam on cross-entropy, silhouette and IsoScore after
    every update (a single-item task with fewer rows than the sample cap: no sampling, no gather)."""
    torch.manual_seed(seed)
    table0 = torch.as_tensor(emb)
    table = torch.nn.Parameter(table0.clone())
    head = torch.nn.Linear(table.shape[1], 2)
    opt = torch.optim.Adam([table, *head.parameters()], lr=lr, betas=(0.9, 0.999))
    y = torch.as_tensor(np.searchsorted(["a", "b"], task.examples["label"].to_numpy()))
    clusters = encode_labels(y)
    out = {k: [] for k in ("loss", "accuracy", "silhouette", "isoscore")}
    for step in range(steps + 1):
        logits = head(table)
        loss = torch.nn.functional.cross_entropy(logits, y)
        with torch.no_grad():
            out["loss"].append(float(loss.double()))
            out["accuracy"].append(float((logits.argmax(1) == y).float().mean().double()))
            out["silhouette"].append(float(silhouette_tensor(table.detach(), clusters)))
            out["isoscore"].append(float(isoscore_tensor(table.detach())))
        if step == steps:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {k: np.array(v) for k, v in out.items()}


def test_lambda_zero_is_the_plain_run_bit_for_bit(clusters_task):
    task, emb = load(clusters_task)
    ref = plain_loop(task, emb, seed=3, steps=25, lr=1e-2)
    for zeta in (0.2, 0.7):  # ζ changes only the recorded IsoScore*, never the run
        rec = optimize(
            task, emb, Settings("blobs", "m", 3, 25, lr=1e-2, istar_lambda=0.0, zeta=zeta), progress=False
        ).records
        for col, values in ref.items():
            np.testing.assert_array_equal(rec[col], values, err_msg=col)
    # ...and a λ ≠ 0 run is a different run.
    other = optimize(task, emb, Settings("blobs", "m", 3, 25, lr=1e-2, istar_lambda=0.5), progress=False).records
    assert not np.array_equal(other["isoscore"], ref["isoscore"])


def test_recorded_isoscore_star_matches_the_public_function(clusters_task):
    task, emb = load(clusters_task)
    rec = optimize(task, emb, Settings("blobs", "m", 0, 3, istar_lambda=1.0, zeta=0.3), progress=False).records
    # At step 0 the table is the pretrained one, whose own covariance is Σ_S. The loop multiplies the float32 table in
    # float32 (sums in float64); the public function's reference covariance is all float64. Within ~1e-7, as
    # isotropy._scatter_matrix bounds it, whichever BLAS multiplies.
    assert rec["isoscore_star"][0] == pytest.approx(float(isoscore_star(emb, covariance(emb), 0.3)), abs=2e-7)
    assert rec["isoscore"][0] == pytest.approx(isoscore(emb), abs=1e-12)
    iso = IStarLoss.from_points(1.0, 0.3, torch.as_tensor(emb), kind="isotropic")
    assert torch.allclose(iso.reference, torch.eye(12, dtype=torch.float64) * torch.trace(covariance(emb)) / 12)


# ----- layout, divergence, bad input ----------------------------------------------------------------------------------


def test_layout_keeps_lambdas_apart(clusters_task, tmp_path):
    plain = run_optimize("blobs", "m", 0, steps=2, data_dir=clusters_task, results=tmp_path, progress=False)
    neg = run_optimize(
        "blobs", "m", 0, steps=2, data_dir=clusters_task, results=tmp_path, progress=False, istar_lambda=-5
    )
    half = run_optimize(
        "blobs", "m", 0, steps=2, data_dir=clusters_task, results=tmp_path, progress=False, istar_lambda=0.5
    )
    base, sweep = (
        tmp_path / "optimize/runs/blobs/m",
        tmp_path / "istar/runs/blobs/m",
    )  # the optimize and istar sections' runs
    assert [p[0] for p in (plain, neg, half)] == [
        base / "seed0.parquet",
        sweep / "istar-5/seed0.parquet",
        sweep / "istar0.5/seed0.parquet",
    ]
    assert trajectory_path("blobs", "m", 0, tmp_path, -5) == sweep / "istar-5/seed0"
    settings = json.loads(neg[1].read_text())["settings"]
    assert settings["istar_lambda"] == -5 and settings["zeta"] == 0.2 and settings["shrinkage"] == "pretrained"
    assert list(pd.read_parquet(neg[0]).columns)[-2:] == ["isoscore_star", "istar_penalty"]
    # The aggregate keeps them apart as rows: same task, model and seed, different λ.
    traj, info = load_runs([plain[1], neg[1], half[1]])
    assert sorted(info["istar_lambda"]) == [-5.0, 0.0, 0.5]


def test_divergence_is_recorded_only_when_asked(clusters_task, tmp_path):
    with pytest.raises(
        OptimizationError, match=r"loss.* became NaN/inf at step \d+ \(diverged\); no trajectory was written"
    ):
        run_optimize(
            "blobs", "m", 1, steps=60, data_dir=clusters_task, results=tmp_path, progress=False, istar_lambda=3, lr=1e37
        )
    assert not list(tmp_path.rglob("*.json"))
    parquet, record = run_optimize(
        "blobs",
        "m",
        1,
        steps=60,
        data_dir=clusters_task,
        results=tmp_path,
        progress=False,
        istar_lambda=3,
        lr=1e37,
        keep_diverged=True,
    )
    info = json.loads(record.read_text())
    assert (
        info["diverged"]
        and info["complete"]
        and info["diverged_at"] == len(pd.read_parquet(parquet))
        and info["diverged_unit"] == "step"
    )
    ok = run_optimize(
        "blobs", "m", 0, steps=60, data_dir=clusters_task, results=tmp_path, progress=False, istar_lambda=3, lr=1e-3
    )
    with pytest.raises(ValueError, match="differ in lr"):  # another setting: not a seed of the diverged run
        load_runs([record, ok[1]])


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(istar_lambda=float("nan")), "lambda must be a finite number"),
        (dict(istar_lambda=float("inf")), "lambda must be a finite number"),
        (dict(zeta=1.5), "zeta must be at most 1; got 1.5"),
        (dict(zeta=-0.1), "zeta must be at least 0; got -0.1"),
        (dict(shrinkage="identity"), "shrinkage must be one of pretrained, isotropic; got 'identity'"),
    ],
)
def test_bad_istar_settings_fail_before_any_work(bad, message):
    with pytest.raises(ValueError, match=message):
        Settings("t", "m", 0, 5, **bad)


def test_shrinkage_of_the_wrong_shape_fails_before_any_work(clusters_task):
    task, emb = load(clusters_task)
    with pytest.raises(ValueError, match=r"C0 must have shape \(12, 12\)"):
        optimize(task, emb, Settings("blobs", "m", 0, 5, istar_lambda=1.0), shrinkage_matrix=np.eye(5), progress=False)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--istar-lambda", "nan"], "--istar-lambda: must be a finite number"),
        (["--istar", "-1"], "--istar is now --istar-lambda"),
        (["--zeta", "1.5"], "--zeta: must be at most 1; got 1.5"),
        (["--istar-shrinkage", "identity"], "invalid choice: 'identity'"),
    ],
)
def test_cli_refuses_bad_istar_options(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "--task", "t", "--model", "m", *argv])
    assert exc.value.code == 2 and re.search(message, capsys.readouterr().err)


# ----- the sweep's table and figures ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_sweep_table_and_figures(clusters_task, tmp_path, monkeypatch):
    drawn = {}  # each silhouette-against-IsoScore figure on one scale: its panels (tasks) are compared

    def recording(*args, one_scale=False, **kwargs):
        drawn[args[5].name] = one_scale
        return lambda_curves_figure(*args, one_scale=one_scale, **kwargs)

    lambda_curves_figure = istar_report.lambda_curves_figure
    monkeypatch.setattr(istar_report, "lambda_curves_figure", recording)
    records = []
    for lam in (-5.0, 0.0, 5.0):
        for seed in (0, 1):
            records.append(
                run_optimize(
                    "blobs",
                    "m",
                    seed,
                    steps=30,
                    data_dir=clusters_task,
                    results=tmp_path,
                    progress=False,
                    istar_lambda=lam,
                    lr=1e-2,
                )[1]
            )
    records.append(
        run_optimize(
            "blobs",
            "m",
            2,
            steps=30,
            data_dir=clusters_task,
            results=tmp_path,
            progress=False,
            istar_lambda=5.0,
            lr=1e37,
            keep_diverged=True,
        )[1]
    )
    with pytest.raises(ValueError, match="differ in lr"):  # the diverged run has another lr: not a seed of the others
        load_runs(records)
    records.pop()
    assert main(["optimize-aggregate", "--out", str(tmp_path / "agg"), *map(str, records)]) == 0
    assert (
        main(
            [
                "istar-report",
                "--aggregate",
                str(tmp_path / "agg"),
                "--tables",
                str(tmp_path / "t"),
                "--figures",
                str(tmp_path / "f"),
            ]
        )
        == 0
    )
    table = pd.read_csv(tmp_path / "t/istar.csv")
    assert list(table.istar_lambda) == [-5.0, 0.0, 5.0] and set(table["seeds"]) == {2} and set(table["diverged"]) == {0}
    assert table["isoscore_mean"].is_monotonic_increasing  # final IsoScore increases with λ
    traj, info = load_runs(records)
    runs = traj[(traj.istar_lambda == 5.0) & (traj.step == 30)]
    assert table.loc[2, "isoscore_mean"] == pytest.approx(runs["isoscore"].mean(), abs=1e-12)
    assert table.loc[2, "accuracy_std"] == pytest.approx(runs["accuracy"].std(), abs=1e-12)
    # paired with the plain run of the same seed at the last update: the difference per seed, a t-interval over seeds
    plain = traj[(traj.istar_lambda == 0.0) & (traj.step == 30)].set_index("seed")
    for column in ("isoscore", "silhouette"):
        d = (runs.set_index("seed")[column] - plain[column]).to_numpy()
        half = student.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        row = table.loc[2]
        assert row["paired_seeds"] == 2 and row[f"{column}_diff"] == pytest.approx(d.mean(), abs=1e-12)
        assert (row[f"{column}_diff_ci_low"], row[f"{column}_diff_ci_high"]) == pytest.approx(
            (d.mean() - half, d.mean() + half), abs=1e-12
        )
    assert table.loc[1, ["paired_seeds", "isoscore_diff"]].isna().all()  # λ = 0 is the plain run itself
    for name in ("istar_performance", "istar_curves", "istar_silhouette_vs_isoscore"):
        assert (tmp_path / f"f/{name}.png").stat().st_size > 5000 and (tmp_path / f"f/{name}.pdf").is_file()
    assert drawn == {"istar_silhouette_vs_isoscore": True}


@pytest.mark.slow
def test_a_sweep_is_compared_with_a_baseline_sweep_of_another_head(clusters_task, tmp_path):
    """istar-report --baseline: the same tasks, models and λ with the linear head beside an mlp head's, row by row
    (istar_heads: this, baseline, difference) and in one figure; the baseline read from its runs.csv as a manifest."""
    for head, folder in (("linear", "lin"), ("mlp", "mlp")):
        for lam in (-1.0, 0.0, 1.0):
            for seed in (0, 1):
                run_optimize(
                    "blobs",
                    "m",
                    seed,
                    steps=8,
                    data_dir=clusters_task,
                    results=tmp_path / folder,
                    progress=False,
                    istar_lambda=lam,
                    head=head,
                    hidden_updates=3,  # the hidden output at updates 0, 1, 3 (8 ** 0.5 = 2.8) and 8
                )
        assert (
            main(["optimize-aggregate", "--results", str(tmp_path / folder), "--out", str(tmp_path / folder / "agg")])
            == 0
        )
    assert (
        main(["optimize-aggregate", "--manifest", str(tmp_path / "lin/agg/runs.csv"), "--out", str(tmp_path / "base")])
        == 0
    )
    argv = ["istar-report", "--aggregate", str(tmp_path / "mlp/agg"), "--baseline", str(tmp_path / "base")]
    assert main([*argv, "--tables", str(tmp_path / "t"), "--figures", str(tmp_path / "f")]) == 0
    heads = pd.read_csv(tmp_path / "t/istar_heads.csv")
    assert (
        list(heads.istar_lambda) == [-1.0, 0.0, 1.0]
        and set(heads["head"]) == {"mlp1"}
        and set(heads["baseline_head"]) == {"linear"}
    )
    lin = istar_report.summary(*load_runs(pd.read_csv(tmp_path / "lin/agg/runs.csv")["record"]))
    assert heads["silhouette_mean_baseline"].to_numpy() == pytest.approx(lin["silhouette_mean"].to_numpy(), abs=1e-12)
    assert heads["silhouette_mean_diff"].to_numpy() == pytest.approx(
        (heads["silhouette_mean"] - heads["silhouette_mean_baseline"]).to_numpy(), abs=1e-12
    )
    assert (tmp_path / "f/istar_heads.png").stat().st_size > 5000
    # The mlp runs measured their last hidden output: its columns, and the caption says what they are.
    caption = (tmp_path / "t/istar_heads.md").read_text().splitlines()[0]
    assert {"silhouette_hidden_mean", "isoscore_hidden_mean"} <= set(heads) and "*_hidden:" in caption
    # ... and the correlation over training on its own seed-mean curves (updates 1..N), recomputed here with SciPy
    traj, info = load_runs(pd.read_csv(tmp_path / "mlp/agg/runs.csv")["record"])
    curve = traj[(traj.istar_lambda == 0.0) & (traj.step >= 1) & traj.isoscore_hidden.notna()]
    curve = curve.groupby("step")[["isoscore_hidden", "silhouette_hidden"]].mean()
    assert list(curve.index) == [1, 3, 8]
    row = heads[heads.istar_lambda == 0.0].iloc[0]
    assert row["pearson_r_hidden"] == pytest.approx(
        pearsonr(curve.isoscore_hidden, curve.silhouette_hidden)[0], abs=1e-9
    )
    assert row["spearman_rho_hidden"] == pytest.approx(
        spearmanr(curve.isoscore_hidden, curve.silhouette_hidden)[0], abs=1e-9
    )
    assert not np.isclose(row["pearson_r_hidden"], row["pearson_r"])  # not the table's correlation under another name
    # the sweep's own table pairs the hidden output too: λ = 1's last hidden silhouette minus λ = 0's, seed by seed
    own = pd.read_csv(tmp_path / "t/istar.csv").set_index("istar_lambda")
    last = traj[traj.step == 8].set_index(["istar_lambda", "seed"])["silhouette_hidden"]
    d = (last[1.0] - last[0.0]).to_numpy()
    assert own.loc[1.0, "silhouette_hidden_diff"] == pytest.approx(d.mean(), abs=1e-12) and len(d) == 2
    assert own.loc[1.0, "silhouette_hidden_diff_ci_high"] - d.mean() == pytest.approx(
        student.ppf(0.975, 1) * d.std(ddof=1) / np.sqrt(2), abs=1e-12
    )
    assert "*_hidden: a non-linear head's last hidden output" in (tmp_path / "t/istar.md").read_text()
    # its figure, drawn only for a sweep that measured it
    assert (tmp_path / "f/istar_hidden.png").stat().st_size > 5000
    assert (
        main(
            [
                "istar-report",
                "--aggregate",
                str(tmp_path / "base"),
                "--figures",
                str(tmp_path / "f_lin"),
                "--tables",
                str(tmp_path / "t_lin"),
            ]
        )
        == 0
    )
    assert not (tmp_path / "f_lin/istar_hidden.png").exists() and (tmp_path / "f_lin/istar_curves.png").is_file()


def test_the_heads_figure_marks_each_curve_s_start_and_end(tmp_path, monkeypatch):
    """Both heads' curves, one colour per λ: an open circle where training starts (step 0), a dot where it ends, and
    a legend that names them, λ written with the tick labels' minus sign."""
    from isoflow.reporting import figures as shared

    drawn = []
    monkeypatch.setattr(istar_report, "save", lambda fig, stem: drawn.append(fig) or [])
    curve = pd.DataFrame(
        {
            "task": "t",
            "model": "m",
            "istar_lambda": [-1.0, -1.0, -1.0, 0.0, 0.0, 0.0],
            "step": [2, 0, 1, 0, 1, 2],  # out of order: the curve is drawn by step
            "isoscore": [0.3, 0.1, 0.2, 0.1, 0.05, 0.01],
            "silhouette": [0.0, 0.5, 0.2, 0.5, 0.6, 0.7],
        }
    )
    istar_report.heads_figure(curve, curve.assign(silhouette=curve.silhouette / 2), "mlp1", "linear", tmp_path / "f")
    (fig,) = drawn
    ax = fig.axes[0]
    starts = [c for c in ax.collections if len(c.get_facecolor()) == 0 or c.get_facecolor()[0][3] == 0]
    ends = [c for c in ax.collections if c not in starts]
    assert len(starts) == len(ends) == 4  # 2 λ × 2 heads
    assert sorted(tuple(c.get_offsets()[0]) for c in starts) == sorted([(0.1, 0.5), (0.1, 0.25)] * 2)
    assert sorted(tuple(c.get_offsets()[0]) for c in ends) == sorted(
        [(0.3, 0.0), (0.3, 0.0), (0.01, 0.7), (0.01, 0.35)]
    )
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["λ = −1", "λ = 0", "mlp1 head", "linear head", "start (step 0)", "end"]
    assert shared.lambda_value(-0.5) == "−0.5" and "-" not in shared.lambda_value(-1, "λ*")


def test_diverged_runs_are_counted_not_averaged(clusters_task, tmp_path):
    ok = [
        run_optimize(
            "blobs",
            "m",
            s,
            steps=5,
            data_dir=clusters_task,
            results=tmp_path,
            progress=False,
            istar_lambda=2.0,
            lr=1e37,
            keep_diverged=True,
        )[1]
        for s in (0, 1)
    ]
    traj, info = load_runs(ok)
    table = istar_report.summary(traj, info)
    assert table.loc[0, "diverged"] == 2 and table.loc[0, "seeds"] == 0 and np.isnan(table.loc[0, "isoscore_mean"])


# ----- the workflow section -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_workflow_istar_section_plans(tmp_path, plan_checkout):
    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    out = sh(["snakemake", "-n", "istar", *where], plan_checkout).stdout
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", out, re.M)}
    # The paper config's sweep: polarity, SNLI and 5 GLUE tasks x MiniLM x 8 lambdas (7 non-zero) x 5 seeds; config.yaml
    # groups the seeds (one job per task, model and lambda), optimize.group_seeds false gives one job per seed.
    assert counts["istar_run"] == 7 * 7 and counts["optimize_run"] == 7
    per_seed = sh(["snakemake", "-n", "istar", *where, "optimize={'group_seeds': False}"], plan_checkout).stdout
    counts_per_seed = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", per_seed, re.M)}
    assert counts_per_seed["istar_run"] == 7 * 7 * 5 and counts_per_seed["optimize_run"] == 7 * 5
    assert counts["istar_aggregate"] == counts["istar_report"] == 1
    bad = sh(
        [
            "snakemake",
            "-n",
            *where,
            "--config",
            "istar={'tasks': ['polarity'], 'models': ['minilm'], 'istar_lambdas': ['x']}",
        ],
        plan_checkout,
        check=False,
    )
    assert bad.returncode != 0 and "istar_lambdas" in bad.stdout + bad.stderr


@pytest.mark.slow
def test_workflow_istar_task_istar_lambdas(tmp_path, plan_checkout):
    """istar.task_istar_lambdas replaces the weights of the tasks it names; a task outside istar.tasks is refused."""
    where = [
        "--config",
        f"data_dir={tmp_path}/data",
        f"results_dir={tmp_path}/results",
        "optimize={'group_seeds': False, 'seeds': [0, 1]}",
    ]
    sweep = "'tasks': ['glue/wnli', 'glue/rte'], 'models': ['minilm'], 'istar_lambdas': [-5, 0, 1, 5]"
    out = sh(
        ["snakemake", "-n", "istar", *where, f"istar={{{sweep}, 'task_istar_lambdas': {{'glue/rte': [0, 3]}}}}"],
        plan_checkout,
    ).stdout
    planned = sorted(re.findall(r"istar/runs/(glue/\w+)/minilm/istar(-?[\d.]+)/seed(\d)\.json", out))
    assert sorted(set(planned)) == sorted(
        [("glue/wnli", lam, s) for lam in ("-5", "1", "5") for s in "01"] + [("glue/rte", "3", s) for s in "01"]
    )
    bad = sh(
        ["snakemake", "-n", "istar", *where, f"istar={{{sweep}, 'task_istar_lambdas': {{'glue/cola': [1]}}}}"],
        plan_checkout,
        check=False,
    )
    assert (
        bad.returncode != 0
        and "istar.task_istar_lambdas names glue/cola, not in istar.tasks" in bad.stdout + bad.stderr
    )


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 1e-5)])
def test_penalty_from_a_known_covariance_matches_autograd(dtype, tol):
    """The loop's penalty (forward from the measured covariance, closed-form backward) = autograd's, value and
    gradient, with and without shrinkage."""
    from isoflow.metrics import covariance_tensor

    X = torch.randn(80, 7, dtype=torch.float64) * torch.linspace(0.2, 3.0, 7, dtype=torch.float64) + 1.5
    for zeta in (0.0, 0.2, 1.0):
        pen = IStarLoss.from_points(-3.0, zeta, X.flip(1), dtype=dtype)
        a = X.clone().requires_grad_(True)
        pen_autograd = IStarLoss.from_points(-3.0, zeta, X.flip(1), dtype="float64").penalty(a)
        pen_autograd.backward()
        b = X.clone().requires_grad_(True)
        fast = pen.penalty_given_covariance(b, covariance_tensor(X))
        fast.backward()
        assert float(fast) == pytest.approx(float(pen_autograd), abs=1e-12)
        scale = float(a.grad.abs().max())
        assert float((a.grad - b.grad).abs().max()) <= tol * scale


@pytest.fixture(scope="module")
def tiny_prenorm_lm_states():
    """A 3-layer Llama (pre-norm, RMSNorm, causal) of width 16 built here, run on a right-padded batch: its hidden
    states (the embedding output, then every layer's) and the attention mask."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=32,
    )  # fmt: skip
    model = LlamaForCausalLM(config).eval()
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] * 6 + [0]])
    ids = torch.randint(1, 40, mask.shape) * mask
    with torch.no_grad():
        states = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    return states, mask


@pytest.mark.parametrize(
    "recipe",
    [
        "tokens-all-layers",
        "tokens-all-layers-skip-first",
        "tokens-all-layers-rms-centred",
        "tokens-all-layers-rms-centred-skip-first",
        "tokens-last-layer",
    ],
)
def test_each_points_recipe_against_a_hand_computation(tiny_prenorm_lm_states, recipe):
    """Every token recipe on a pre-norm causal LM's states, against loops over layers, sentences and positions in
    NumPy float64: which positions are kept, the RMS norm (no gain, eps 1e-6), the centring per layer, the order."""
    from isoflow.istar import penalty_points

    states, mask = tiny_prenorm_lm_states
    layers = states[-1:] if recipe == "tokens-last-layer" else states[1:]
    skip, normed = recipe.endswith("skip-first"), "rms-centred" in recipe
    expected = []
    for h in layers:
        h = h.double().numpy()
        rows = [
            h[b, t]
            for b in range(h.shape[0])
            for t in range(h.shape[1])
            if mask[b, t] and not (skip and t == 0)  # right padding: the first non-padding position is 0
        ]
        if normed:
            rows = [r / np.sqrt(np.mean(r**2) + 1e-6) for r in rows]
            rows = list(np.array(rows) - np.mean(rows, axis=0))
        expected += rows
    got = penalty_points(recipe, states, mask)
    assert got.shape == (len(expected), 16) and got.dtype == torch.float32
    np.testing.assert_allclose(got.double().numpy(), np.array(expected), rtol=1e-5, atol=1e-5)
    if normed:  # every layer's block: rows of RMS ~1 before centring, mean 0 after
        per_layer = got.reshape(len(layers), -1, 16)
        assert per_layer.mean(dim=1).abs().max() < 1e-5


def test_points_recipes_are_the_settings_choices_and_refuse_unknown_ones(tiny_prenorm_lm_states):
    from isoflow.finetune.settings import POINTS, FinetuneSettings
    from isoflow.istar import first_positions_dropped, penalty_points
    from isoflow.istar_settings import POINT_RECIPES

    states, mask = tiny_prenorm_lm_states
    assert POINTS == tuple(POINT_RECIPES) and FinetuneSettings("t", "m", points=POINTS[3]).points == POINTS[3]
    with pytest.raises(ValueError, match="points must be one of tokens-all-layers, "):
        penalty_points("tokens-without-sink", states, mask)
    with pytest.raises(ValueError, match="points"):
        FinetuneSettings("t", "m", points="tokens-without-sink")
    left = torch.tensor([[0, 0, 1, 1, 1]])  # left padding: the first real token is at position 2
    assert first_positions_dropped(left).tolist() == [[0, 0, 0, 1, 1]]
    pooled = torch.randn(3, 16)
    assert penalty_points("pooled", states, mask, pooled) is pooled
