"""Principal components of a layer's points: how they order by position and by frequency (every layer), and the
2-D / 3-D views of chosen layers (Cai et al.'s cluster, "Swiss roll", frequency and symbol/word pictures).

A component's sign is arbitrary, so its ordering is reported as |ρ|, Spearman's rank correlation of the points'
coordinates on it with their position in the sentence (0 = the first analysed token) and with the log frequency of
their type in the analysed sample. An ordering is not a roll: "Swiss roll" is said only of a view that shows one."""

from __future__ import annotations

import numpy as np
import torch

from ..metrics import sample_rows
from . import PCS
from .composition import is_symbol


def principal_axes(x: torch.Tensor, n: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(the centred points' coordinates on the first ``n`` principal axes, those axes (n, dim), each axis' share of
    the total variance), float64, from the dim × dim covariance."""
    x64 = x.to(torch.float64)
    x64 = x64 - x64.mean(dim=0, keepdim=True)
    values, vectors = torch.linalg.eigh(x64.T @ x64 / max(x64.shape[0] - 1, 1))
    order = torch.argsort(values, descending=True)[:n]
    axes = vectors[:, order].T
    return x64 @ axes.T, axes, values[order] / values.sum().clamp_min(torch.finfo(torch.float64).tiny)


def orderings(points: torch.Tensor, positions: np.ndarray | None, log_frequency: np.ndarray) -> dict[str, float]:
    """Per principal component 1-3: its share of the variance and |ρ| with position (NaN without positions) and with
    log frequency."""
    from scipy.stats import spearmanr  # here: scipy.stats takes 0.7 s to import, which every layer job would pay first

    _, axes, shares = principal_axes(points)
    # Identical points (a token's state at the input layer, a causal LM's sentence-initial states) must tie in the
    # ranks: projected one by one, a product's summation order (it follows the thread count) can split them by 1e-16
    # and turn a tie into an order. So each distinct point is projected once.
    x64 = points.to(torch.float64)
    distinct, inverse = torch.unique(x64, dim=0, return_inverse=True)
    coords = ((distinct - x64.mean(dim=0, keepdim=True)) @ axes.T)[inverse].cpu().numpy()
    row: dict[str, float] = {}
    for i, pc in enumerate(PCS[: coords.shape[1]]):
        row[f"{pc}_variance"] = float(shares[i])
        for what, values in (("position", positions), ("log_frequency", log_frequency)):
            usable = values is not None and np.ptp(values) > 0 and np.ptp(coords[:, i]) > 0
            row[f"{pc}_rho_{what}"] = abs(float(spearmanr(coords[:, i], values)[0])) if usable else float("nan")
    return row


def pca_view(
    points: torch.Tensor,
    clusters: torch.Tensor,
    types: np.ndarray,
    frequency: np.ndarray,
    positions: np.ndarray | None = None,
    *,
    max_points: int = 5000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Three principal components of (a seeded sample of) the points, with cluster, type, type frequency, whether the
    type is a symbol and the point's position in its sentence: the data of the 2-D and 3-D views (Cai et al.'s
    cluster, "Swiss roll", frequency and symbol/word pictures)."""
    n = points.shape[0]
    idx = sample_rows(n, max_points, seed + 1)
    idx = torch.arange(n) if idx is None else idx.cpu()
    x = points[idx.to(points.device)].to(torch.float64)
    x = x - x.mean(dim=0, keepdim=True)
    pcs = principal_axes(x)[0].cpu().numpy()
    chosen = np.asarray(types)[idx.numpy()]
    view = {
        "pc1": pcs[:, 0],
        "pc2": pcs[:, 1],
        "pc3": pcs[:, 2],
        "cluster": clusters.cpu().numpy()[idx.numpy()],
        "type": chosen,
        "frequency": np.asarray(frequency)[idx.numpy()],
        "symbol": np.array([is_symbol(t) for t in chosen]),
    }
    if positions is not None:
        view["position"] = np.asarray(positions)[idx.numpy()]
    return view
