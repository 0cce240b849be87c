"""isoflow: how the geometry of embedding spaces changes when embeddings are trained for classification.

The metrics are in :mod:`isoflow.metrics`; the losses for your own training loop are :class:`IStarLoss` (I-STAR's
isotropy penalty) and :class:`CosineRegLoss` (the cosine-similarity baseline), imported on first use."""

from .version import __version__

__all__ = ["CosineRegLoss", "IStarLoss", "__version__"]


def __getattr__(name: str):
    # Lazy: `import isoflow` (the CLI, every subprocess) does not pay for torch until a loss is asked for.
    if name in ("IStarLoss", "CosineRegLoss"):
        from . import istar

        return getattr(istar, name)
    raise AttributeError(f"module 'isoflow' has no attribute {name!r}")
