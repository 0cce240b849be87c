"""The anchors' findings read on a measured series, by the rules docs/verdicts.md ("A shape across training") wrote
before any series was measured: one row per claim × model × corpus, its word from :func:`.shapes.read_shape` over
the model's seeds.

* three phases (Li et al. 2025): ``variance_effective_rank`` of the last layer, by step; the same in Garrido et
  al.'s convention (``effective_rank``) beside it; and in α-ReQ as they fit it (``alpha_req_li``), whose phases run
  the other way (a rise, a fall, a rise);
* intrinsic dimension rises, then falls (Razzhigaev et al. 2024): ``twonn`` of the middle layer, by step (a peak);
* anisotropy a bell across layers (Razzhigaev et al. 2024): ``pc1_variance`` (λ_max / Σλ) over the layers, at the
  last checkpoint and at the middle one (a peak);
* late last-layer anisotropy (Godey et al. 2024): ``cosine_anisotropy`` of the last layer, by step (a late rise).

Li et al. read their phases on the last token of each sequence: both conventions are read on their points (the
section's ``last-token`` points: each sentence's last piece) and on every token, in rows of their own; the other
findings, read on every token by their papers, on every token. A row whose points were not measured
(``dynamics.points``) is **untested**, and says so.
"""

from __future__ import annotations

import pandas as pd

from .shapes import read_shape

# (claim, its paper, the measure, which curve, the shape)
CLAIMS = (
    ("three phases of the effective rank (σ²)", "Li et al. 2025", "variance_effective_rank", "last layer",
     "three phases"),
    ("three phases of the effective rank (σ)", "Li et al. 2025", "effective_rank", "last layer", "three phases"),
    ("three phases of α-ReQ (ranks 12-100, 1/k)", "Li et al. 2025", "alpha_req_li", "last layer",
     "three phases of the decay"),
    ("intrinsic dimension rises, then falls", "Razzhigaev et al. 2024", "twonn", "middle layer", "peak"),
    ("anisotropy a bell across layers", "Razzhigaev et al. 2024", "pc1_variance", "last checkpoint", "peak"),
    ("anisotropy a bell across layers", "Razzhigaev et al. 2024", "pc1_variance", "middle checkpoint", "peak"),
    ("late last-layer anisotropy", "Godey et al. 2024", "cosine_anisotropy", "last layer", "late rise"),
)  # fmt: skip
POINTS = {"last-token": "the last token of each sequence", "tokens": "every token"}  # the points, as a row names them


def _curves(part: pd.DataFrame, measure: str, where: str) -> tuple[list[list[float]], list[int] | None]:
    """Each seed's curve of ``measure``: over the steps at one layer, or over the layers at one checkpoint; with the
    steps of a curve over steps."""
    layers = sorted(part.layer.unique())
    steps = sorted(part.step.unique())
    if where in ("last layer", "middle layer"):
        layer = layers[-1] if where == "last layer" else layers[(len(layers) - 1) // 2]
        at = part[part.layer == layer]
        curves = [seed.sort_values("step")[measure].tolist() for _, seed in at.groupby("series")]
        return curves, steps
    step = steps[-1] if where == "last checkpoint" else steps[(len(steps) - 1) // 2]
    at = part[part.step == step]
    return [seed.sort_values("layer")[measure].tolist() for _, seed in at.groupby("series")], None


def _word(part: pd.DataFrame, measure: str, where: str, shape: str) -> str:
    if part.empty:
        return "untested (these points not measured: dynamics.points)"
    if measure not in part:
        return f"untested ({measure} not in these runs)"
    curves, steps = _curves(part, measure, where)
    return read_shape(shape, curves, steps if shape == "late rise" else None)


def readings(table: pd.DataFrame) -> pd.DataFrame:
    """One row per claim × model × corpus × points read of ``table`` (the dynamics report's: a row per series,
    points, checkpoint and layer): the claim, its paper, the measure, the curve, the points, the seeds and the word.
    Li et al.'s phases are read on the last tokens and on every token; the other claims on every token."""
    rows = []
    for (model, corpus), part in table.groupby(["model", "corpus"], sort=True):
        for claim, paper, measure, where, shape in CLAIMS:
            for points in ("last-token", "tokens") if claim.startswith("three phases") else ("tokens",):
                at = part[part.points == points]
                rows.append({"claim": claim, "paper": paper, "model": model, "corpus": corpus, "measure": measure,
                             "curve": where, "points": POINTS[points], "seeds": int(at.series.nunique()),
                             "word": _word(at, measure, where, shape)})  # fmt: skip
    return pd.DataFrame(rows)
