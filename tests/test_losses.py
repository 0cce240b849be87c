"""The public losses for any training loop: IStarLoss against the metric and the IsoScore package, padding masked,
the running reference covariance, dtypes kept, zero weights computing nothing; CosineRegLoss against brute force."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import isoflow
from isoflow.istar import CosineRegLoss, IStarLoss, RunningCovariance, points_of
from isoflow.metrics import covariance, isoscore_star


def _states(seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    states = torch.randn(3, 7, 5, generator=g, dtype=dtype) * torch.tensor([3.0, 1.0, 0.5, 0.2, 0.1], dtype=dtype)
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[0, 5:] = 0
    mask[2, 3:] = 0
    return states, mask


def test_exported_at_the_top():
    assert isoflow.IStarLoss is IStarLoss and isoflow.CosineRegLoss is CosineRegLoss


def test_istar_loss_is_lambda_times_one_minus_isoscore_star():
    states, mask = _states(dtype=torch.float64)
    points = states[mask.bool()]
    reference = covariance(torch.randn(200, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
    loss = IStarLoss(istar_lambda=-3.0, zeta=0.2, reference=reference)
    expected = -3.0 * (1.0 - float(isoscore_star(points, reference, 0.2)))
    assert float(loss(states, mask)) == pytest.approx(expected, abs=1e-12)
    assert float(loss(points)) == pytest.approx(expected, abs=1e-12)  # (n, d) points directly: the same


def test_istar_loss_matches_the_isoscore_package():
    from IsoScore.IsoScore import IsoScore_star

    x = torch.randn(300, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * torch.linspace(
        0.2, 2.0, 6, dtype=torch.float64
    )
    ref = covariance(torch.randn(2000, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64))
    theirs = float(IsoScore_star(x, ref, 0.3))
    assert float(IStarLoss(1.0, 0.3, reference=ref)(x)) == pytest.approx(1.0 - theirs, abs=1e-6)


def test_padding_is_left_out_and_layers_are_stacked():
    states, mask = _states()
    layers = [states, 2 * states]
    points = points_of(layers, mask)
    assert points.shape == (2 * int(mask.sum()), 5)
    assert torch.equal(points[: int(mask.sum())], states[mask.bool()])
    with pytest.raises(ValueError, match="mask has shape"):
        points_of(states, mask[:, :4])


def test_running_reference_is_the_covariance_of_every_point_fed():
    states, mask = _states(dtype=torch.float64)
    loss = IStarLoss(istar_lambda=1.0, zeta=0.5)
    with pytest.raises(ValueError, match="needs a reference covariance"):
        loss(states, mask)
    loss.update_reference(states[:2], mask[:2])
    loss.update_reference(states[2:] + 100.0, mask[2:])  # far from zero: no cancellation
    both = torch.cat([states[:2][mask[:2].bool()], (states[2:] + 100.0)[mask[2:].bool()]])
    assert loss.reference_points == both.shape[0]
    assert torch.allclose(loss.shrinkage(5, "cpu"), covariance(both), atol=1e-9)
    loss.reset_reference()
    assert loss.reference_points == 0


def test_running_covariance_matches_the_direct_one():
    x = torch.randn(1000, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64) + 1e4
    running = RunningCovariance()
    for chunk in x.split(130):
        running.update(chunk)
    assert torch.allclose(running.covariance(), covariance(x), atol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_losses_keep_the_dtype_and_give_gradients(dtype):
    states, mask = _states(dtype=dtype)
    states.requires_grad_(True)
    for loss in (IStarLoss(-1.0, 0.0), CosineRegLoss(2.0)):
        value = loss(states, mask)
        assert value.dtype == dtype
        value.backward()
        assert states.grad is not None and torch.isfinite(states.grad.float()).all()
        states.grad = None


def test_zero_weights_compute_nothing():
    states, mask = _states()
    assert float(IStarLoss(0.0, 0.2)(states, mask)) == 0.0  # no reference needed: nothing is computed
    assert float(CosineRegLoss(0.0)(states, mask)) == 0.0


def test_istar_gradient_is_autograds_in_float64():
    x = torch.randn(20, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64, requires_grad=True)
    ref = torch.diag(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda p: IStarLoss(2.0, 0.3, reference=ref)(p), (x,))
    assert torch.autograd.gradcheck(lambda p: CosineRegLoss(1.5)(p), (x,))


def test_cosreg_is_the_mean_cosine_of_distinct_pairs():
    x = torch.randn(40, 6, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    u = torch.nn.functional.normalize(x, dim=1).numpy()
    cos = u @ u.T
    brute = (cos.sum() - np.trace(cos)) / (40 * 39)
    assert float(CosineRegLoss(3.0)(x)) == pytest.approx(3.0 * brute, abs=1e-12)


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda: IStarLoss(float("inf")), "lambda must be a finite number"),
        (lambda: IStarLoss(1.0, zeta=1.5), r"zeta must be a number in \[0, 1\]"),
        (lambda: CosineRegLoss(float("nan")), "CosReg weight must be a finite number"),
        (lambda: IStarLoss(1.0, 0.2, reference=torch.eye(3))(torch.randn(10, 4)), "reference covariance is"),
    ],
)
def test_bad_input(bad, message):
    with pytest.raises(ValueError, match=message):
        bad()
