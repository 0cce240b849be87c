"""The strength-matched control of the fair I-STAR test (docs/finetune.md, "The strength-matched control"): a second
loss on the same points that does not target their isotropy (isoflow.istar.MeanDirectionLoss), against an
independent computation and for what its gradient leaves alone; its weight set every epoch to pull as hard as
another run did (isoflow.finetune.train.match_pull), on a tiny model; the run's records, resume, refusals and the
workflow's plan."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import test_finetune
import torch
from conftest import sh
from test_finetune import polarity_run

from isoflow.finetune import train as train_module
from isoflow.istar import MeanDirectionLoss, penalty_layers, penalty_points
from isoflow.istar_settings import POINT_RECIPES
from isoflow.metrics import isoscore


def _states(seed=0, layers=4, batch=3, tokens=6, dim=8):
    gen = torch.Generator().manual_seed(seed)
    states = tuple(torch.randn(batch, tokens, dim, generator=gen) * (1 + k) + k for k in range(layers))
    mask = torch.ones(batch, tokens, dtype=torch.long)
    mask[0, 4:] = 0
    mask[2, 5:] = 0
    return states, mask


def test_the_loss_is_one_minus_the_cosine_of_each_layers_mean_with_its_seeded_direction():
    """Against numpy: the directions are seed 0's standard normal draws normalised, the same for every instance; the
    loss the weight times the mean over layers of 1 − cos(mean, direction); weight 0 is a zero."""
    states, mask = _states()
    layers = penalty_layers("tokens-all-layers-rms-centred-skip-first", states, mask)
    loss = MeanDirectionLoss(2.5)
    value = float(loss(layers))
    gen = torch.Generator().manual_seed(0)
    u = torch.randn(3, 8, generator=gen, dtype=torch.float64).numpy()
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    means = np.stack([x.double().numpy().mean(axis=0) for x in layers])
    cos = (means * u).sum(axis=1) / np.linalg.norm(means, axis=1)
    assert value == pytest.approx(2.5 * (1 - cos).mean(), rel=1e-6)
    assert MeanDirectionLoss(1.0)(layers).item() == pytest.approx(value / 2.5, rel=1e-6)  # the same directions
    assert float(MeanDirectionLoss(0.0)(layers)) == 0.0
    with pytest.raises(ValueError, match=r"drawn for \(3, 8\)"):
        loss(layers[:2])


def test_its_gradient_moves_every_point_of_a_layer_alike_and_leaves_the_centred_points_as_they_were():
    """With respect to a layer's points, the gradient is one vector for all of them, orthogonal to the layer's mean:
    a step along it leaves the centred points (what IsoScore* of the -rms-centred recipes reads) exactly where they
    were, so their IsoScore does not move; the mean's length moves only at second order."""
    states, mask = _states(1)
    layers = [x.detach().double().requires_grad_(True) for x in penalty_layers("tokens-all-layers", states, mask)]
    MeanDirectionLoss(1.0)(layers).backward()
    for x in layers:
        g = x.grad
        assert torch.allclose(g, g[:1].expand_as(g), atol=0, rtol=0)  # the same vector for every point
        mean = x.detach().mean(dim=0)
        assert float(g[0] @ mean) == pytest.approx(0.0, abs=1e-12)
        stepped = x.detach() - 0.1 * g
        centred = lambda y: y - y.mean(dim=0, keepdim=True)  # noqa: E731
        assert torch.allclose(centred(stepped), centred(x.detach()), atol=1e-12)
        assert isoscore(stepped) == pytest.approx(isoscore(x.detach()), abs=1e-9)
        assert float(stepped.mean(dim=0).norm()) == pytest.approx(float(mean.norm()), rel=1e-3)


@pytest.mark.parametrize("recipe", list(POINT_RECIPES))
def test_the_layers_are_the_penalty_points_before_their_centring(recipe):
    """penalty_points is penalty_layers' points, centred per layer where the recipe says so, then pooled: exactly."""
    states, mask = _states(2)
    pooled = torch.randn(3, 8)
    layers = penalty_layers(recipe, states, mask, pooled)
    if "-rms-centred" in recipe:
        layers = [x - x.mean(dim=0, keepdim=True) for x in layers]
    assert torch.equal(torch.cat(layers), penalty_points(recipe, states, mask, pooled))


def test_the_weight_is_set_so_that_the_pull_is_the_target(polarity_small, tiny_bert):
    """The pull is linear in the weight: after match_pull, the pull measured again at the new weight is the target
    (times meandir_weight), on a real forward and backward pass of a tiny model."""
    from isoflow.datasets import read_task
    from isoflow.finetune.data import examples_of
    from isoflow.finetune.model import ClassificationHead, SentenceEncoder
    from isoflow.models.local import load_hf

    encoder = SentenceEncoder.from_transformer(*load_hf(tiny_bert))
    torch.manual_seed(0)
    head = ClassificationHead(encoder.dim, 2)
    train = examples_of(read_task(polarity_small / "tasks/polarity-120"))
    s = train_module.FinetuneSettings("polarity-120", "tiny", reg="meandir", meandir_weight=0.5, pull_batches=3)
    reg = train_module.regulariser(s)
    before = train_module.pull_at(encoder, head, reg, train, s, "cpu")
    row = train_module.match_pull(reg, before, 0, [0.8, 1.2], s)
    assert row["pull_target"] == pytest.approx(0.4) and reg.weight == row["next_reg_weight"]
    assert reg.weight == pytest.approx(0.5 * 0.8 / before * 0.5)
    assert train_module.pull_at(encoder, head, reg, train, s, "cpu") == pytest.approx(0.4, rel=1e-5)
    with pytest.raises(ValueError, match="has no gradient at epoch 1"):
        train_module.match_pull(reg, 0.0, 1, [0.8, 1.2], s)


def _matched_folder(tmp_path, pulls, seed=0):
    folder = tmp_path / "matched/istar1"
    folder.mkdir(parents=True)
    pd.DataFrame({"epoch": range(len(pulls)), "pull": pulls}).to_parquet(folder / f"seed{seed}.parquet")
    return folder


polarity_small = test_finetune.polarity_small  # the fixture: 120 polarity sentences as a prepared task

CONTROL = dict(reg="meandir", meandir_weight=1.0, epochs=2, batch_size=25, max_heldout=20, shrinkage_points=1000)


def test_a_control_run_pulls_as_hard_as_the_matched_run_at_the_start_of_every_epoch(
    polarity_small,
    tmp_path,
    tiny_bert,
):
    """Each epoch's row: the pull at the weight in force, the target the next epoch's weight was set to (the matched
    run's pull at that epoch), that weight; the record names the file it read (sha256) and the pulls; the run's
    folder is meandir1; the penalty trained on is the control's at that weight."""
    folder = _matched_folder(tmp_path, [0.3, 0.5, 0.9])
    parquet, record = polarity_run(polarity_small, tmp_path, tiny_bert, matched_pull_from=str(folder), **CONTROL)
    assert parquet.parent.name == "meandir1"
    df = pd.read_parquet(parquet)
    assert df["pull_target"].tolist()[:2] == [0.3, 0.5] and np.isnan(df["pull_target"].iloc[2])
    assert (df["pull"] > 0).all() and (df["meandir_weight"] == 1.0).all() and (df["istar_lambda"] == 0).all()
    # epoch 0's pull was measured at the initial weight (1): the weight set is the target over it
    assert df["next_reg_weight"].iloc[0] == pytest.approx(0.3 / df["pull"].iloc[0], rel=1e-12)
    info = json.loads(record.read_text())
    assert info["matched_pull"]["pulls"] == [0.3, 0.5] and len(info["matched_pull"]["sha256"]) == 64
    assert info["settings"]["matched_pull_from"] == str(folder) and info["settings"]["reg"] == "meandir"
    steps = pd.read_parquet(parquet.with_name("seed0.steps.parquet"))
    assert steps["penalty"].gt(0).all()


@pytest.mark.slow
def test_a_stopped_control_run_resumes_with_its_matched_weight(polarity_small, tmp_path, tiny_bert):
    """Stopped in its second epoch, the control run resumes with the weight matched after the first (saved with its
    state) and writes what a run never stopped writes, bit for bit."""
    folder = _matched_folder(tmp_path, [0.3, 0.5])
    settings = {**CONTROL, "matched_pull_from": str(folder)}
    whole, _ = polarity_run(polarity_small, tmp_path / "whole", tiny_bert, **settings)

    def stop_in_epoch_2(epoch, step, loss):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        polarity_run(polarity_small, tmp_path / "parts", tiny_bert, callback=stop_in_epoch_2, **settings)
    parts, record = polarity_run(polarity_small, tmp_path / "parts", tiny_bert, **settings)
    pd.testing.assert_frame_equal(pd.read_parquet(whole), pd.read_parquet(parts), check_exact=True)
    assert json.loads(record.read_text())["resumed"]["after_epoch"] == 1


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(reg="meandir", meandir_weight=1.0, matched_pull_from="{missing}"), "no such run to match the pull of"),
        (dict(reg="meandir", meandir_weight=1.0, matched_pull_from="{short}"), "needs a positive 'pull' at epochs"),
        (
            dict(reg="istar", meandir_weight=0.0, istar_lambda=1.0, matched_pull_from="{short}"),
            "matched_pull_from sets the mean-direction control",
        ),
        (dict(reg="meandir", meandir_weight=1.0, istar_lambda=1.0), "istar_lambda must be 0 with reg=meandir"),
    ],
)
def test_bad_control_settings_fail_before_training(polarity_small, tmp_path, tiny_bert, settings, message):
    short = _matched_folder(tmp_path, [0.3, float("nan")])
    given = {
        k: v.format(missing=tmp_path / "none", short=short) if isinstance(v, str) else v for k, v in settings.items()
    }
    with pytest.raises(ValueError, match=message):
        polarity_run(polarity_small, tmp_path, tiny_bert, **{**CONTROL, **given})
    assert not list(tmp_path.rglob("seed0.json"))


def test_one_run_has_one_regulariser_the_control_too(capsys):
    from isoflow.cli import main

    assert main(["finetune", "--task", "t", "--model", "m", "--istar-lambda", "1", "--meandir-weight", "1"]) == 2
    assert "--istar-lambda and --meandir-weight name two regularisers" in capsys.readouterr().err


@pytest.mark.slow
def test_the_control_config_plans_both_arms_with_the_matched_pulls_as_inputs(plan_checkout):
    """config/finetune-smollm2-fair-control.yaml: 6 seeds of λ = 0 and of the control; each control run reads the
    fair sweep's +λ* run of its seed (an input of its job) and is given --matched-pull-from, the λ = 0 runs neither it
    nor istar_pull (a setting of I-STAR's weight alone)."""
    plan = sh(
        ["snakemake", "-n", "-p", "finetune_runs", "--configfile", "config/finetune-smollm2-fair-control.yaml"],
        plan_checkout,
    ).stdout
    runs = [line for line in plan.splitlines() if "isoflow finetune " in line]
    control = [line for line in runs if "--meandir-weight 1 " in line]
    plain = [line for line in runs if "--istar-lambda 0 " in line]
    assert len(control) == len(plain) == 6 and len(runs) == 12
    matched = "docs/results/finetune-smollm2-fair/runs/glue/sst2/smollm2-135m/istar1"
    assert all(f"--matched-pull-from {matched} " in line and "--istar-pull" not in line for line in control)
    assert all("--matched-pull-from" not in line for line in plain)
    assert all(f"{matched}/seed{s}.parquet" in plan for s in range(6))
