"""The anchors' findings read on a measured series, by the rules docs/verdicts.md ("A shape across training") wrote
before any series was measured: one row per claim × model × corpus, its word from :func:`.shapes.read_shape` over
the model's seeds.

* three phases (Li et al. 2025): ``variance_effective_rank`` of the last layer, by step; the same in Garrido et
  al.'s convention (``effective_rank``) beside it;
* intrinsic dimension rises, then falls (Razzhigaev et al. 2024): ``twonn`` of the middle layer, by step (a peak);
* anisotropy a bell across layers (Razzhigaev et al. 2024): ``pc1_variance`` (λ_max / Σλ) over the layers, at the
  last checkpoint and at the middle one (a peak);
* late last-layer anisotropy (Godey et al. 2024): ``cosine_anisotropy`` of the last layer, by step (a late rise).

Li et al. read their phases on the last token of each sequence; the section measures every token (the layers
section's points), so that row's word on their points is **untested** until the last-token points are measured, and
the all-token reading stands beside it, never in its place.
"""

from __future__ import annotations

import pandas as pd

from .shapes import read_shape

# (claim, its paper, the measure, which curve, the shape)
CLAIMS = (
    ("three phases of the effective rank (σ²)", "Li et al. 2025", "variance_effective_rank", "last layer",
     "three phases"),
    ("three phases of the effective rank (σ)", "Li et al. 2025", "effective_rank", "last layer", "three phases"),
    ("intrinsic dimension rises, then falls", "Razzhigaev et al. 2024", "twonn", "middle layer", "peak"),
    ("anisotropy a bell across layers", "Razzhigaev et al. 2024", "pc1_variance", "last checkpoint", "peak"),
    ("anisotropy a bell across layers", "Razzhigaev et al. 2024", "pc1_variance", "middle checkpoint", "peak"),
    ("late last-layer anisotropy", "Godey et al. 2024", "cosine_anisotropy", "last layer", "late rise"),
)  # fmt: skip
LAST_TOKEN = "untested (the last token of each sequence is not measured yet: every token's reading is the next row)"


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


def readings(table: pd.DataFrame) -> pd.DataFrame:
    """One row per claim × model × corpus of ``table`` (the dynamics report's: a row per series, checkpoint and
    layer): the claim, its paper, the measure, the curve, the points read, the seeds and the word."""
    rows = []
    for (model, corpus), part in table.groupby(["model", "corpus"], sort=True):
        seeds = int(part.series.nunique())
        for claim, paper, measure, where, shape in CLAIMS:
            base = {"claim": claim, "paper": paper, "model": model, "corpus": corpus, "measure": measure,
                    "curve": where, "seeds": seeds}  # fmt: skip
            if claim.startswith("three phases") and measure == "variance_effective_rank":
                rows.append({**base, "points": "the last token of each sequence", "word": LAST_TOKEN})
            if measure not in part:
                rows.append({**base, "points": "every token", "word": f"untested ({measure} not in these runs)"})
                continue
            curves, steps = _curves(part, measure, where)
            word = read_shape(shape, curves, steps if shape == "late rise" else None)
            rows.append({**base, "points": "every token", "word": word})
    return pd.DataFrame(rows)
