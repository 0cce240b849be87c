"""I-STAR's settings shared by every experiment that trains with it, declared once and without loading torch."""

from __future__ import annotations

from .settings import setting

DEFAULT_ZETA = 0.2  # the I-STAR code's


def zeta_setting():
    """ζ, IsoScore*'s shrinkage weight, as a settings field."""
    return setting(DEFAULT_ZETA, "IsoScore* shrinkage weight in [0, 1] (I-STAR's code: 0.2)", minimum=0.0, maximum=1.0)
