"""Cai et al. (ICLR 2021) across layers: token embeddings of every layer of a contextual model (or one static
table), and per layer S_inter, S_intra, IsoScore, cosine anisotropy, K-means clusters, the same after removing each
cluster's mean, LID (Euclidean and cosine) and TwoNN.

Modules: :mod:`.encoder` (hidden states of every layer, special tokens excluded), :mod:`.store` (layer-by-layer
storage: memory or disk), :mod:`.settings` (what an analysis is), :mod:`.measure` (the metrics of one layer),
:mod:`.run` (corpus in, table out), :mod:`.report` (tables and figures over runs).
"""

from .settings import LayerSettings

__all__ = ["LayerSettings", "layer_metrics", "run_layers"]


def __getattr__(name: str):
    # Lazy: the settings (the command line, the workflow) do not load torch.
    if name in ("layer_metrics", "run_layers"):
        import importlib

        return getattr(importlib.import_module(".measure" if name == "layer_metrics" else ".run", __name__), name)
    raise AttributeError(f"module 'isoflow.layers' has no attribute {name!r}")
