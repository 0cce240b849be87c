"""I-STAR's settings shared by every experiment that trains with it, declared once and without loading torch."""

from __future__ import annotations

import math

from .settings import setting

DEFAULT_ZETA = 0.2  # the I-STAR code's
# Σ_S, the shrinkage target: the reference points' covariance, or its isotropic counterpart (isoflow.istar)
SHRINKAGE_KINDS = ("pretrained", "isotropic")
PENALTY_DTYPE_NAMES = ("float32", "float64")  # the dtypes the penalty may be computed in


def _is_number(value) -> bool:
    """An int or float, not a bool (which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_istar(istar_lambda, zeta, shrinkage: str = "pretrained", dtype: str = "float32") -> None:
    """λ a finite number, ζ in [0, 1], a known shrinkage kind and penalty dtype; else a ValueError saying which."""
    if not _is_number(istar_lambda) or not math.isfinite(istar_lambda):
        raise ValueError(f"the I-STAR weight istar_lambda must be a finite number; got {istar_lambda!r}")
    if not _is_number(zeta) or not 0.0 <= zeta <= 1.0:
        raise ValueError(f"the I-STAR shrinkage zeta must be a number in [0, 1]; got {zeta!r}")
    if shrinkage not in SHRINKAGE_KINDS:
        raise ValueError(f"unknown I-STAR shrinkage target {shrinkage!r}; choose from {', '.join(SHRINKAGE_KINDS)}")
    if dtype not in PENALTY_DTYPE_NAMES:
        raise ValueError(f"unknown penalty dtype {dtype!r}; choose from {', '.join(PENALTY_DTYPE_NAMES)}")


def check_cosreg_weight(weight, name: str = "the CosReg weight") -> float:
    """A regulariser's weight (CosReg's, or the one ``name`` says) as a float, if a finite number; else a ValueError."""
    if not _is_number(weight) or not math.isfinite(weight):
        raise ValueError(f"{name} must be a finite number; got {weight!r}")
    return float(weight)


def zeta_setting():
    """ζ, IsoScore*'s shrinkage weight, as a settings field."""
    return setting(DEFAULT_ZETA, "IsoScore* shrinkage weight in [0, 1] (I-STAR's code: 0.2)", minimum=0.0, maximum=1.0)


# The penalty's points, by recipe (the setting `points`; isoflow.istar.penalty_points computes them). The first is
# I-STAR's: BERT's hidden_states[1:] are post-LayerNorm, every layer on one scale. A pre-norm model (Llama, Gemma:
# SmolLM2, Gemma-3) pools residual streams whose scale grows with depth and whose first position holds an attention
# sink's massive activation; the other token recipes make its points comparable to the ones the authors penalised.
# The model's forward pass is the same under every recipe: only what the penalty sees changes.
POINT_RECIPES = {
    "tokens-all-layers": "every layer's token states but the embedding output's (I-STAR's), padding left out",
    "tokens-all-layers-skip-first": "the same without each sentence's first non-padding position (an attention sink)",
    "tokens-all-layers-rms-centred": (
        "every layer's token states, each scaled to unit root mean square (a parameter-free RMS norm) and centred on "
        "its layer's mean before the layers are pooled"
    ),
    "tokens-all-layers-rms-centred-skip-first": "both: the first positions left out, then normed and centred per layer",
    "tokens-last-layer": "the last layer's token states, padding left out (the authors' CosReg)",
    "pooled": "the pooled outputs the head reads",
}
