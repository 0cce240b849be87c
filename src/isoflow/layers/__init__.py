"""Cai et al. (ICLR 2021) across layers: token embeddings of every layer of a contextual model (or one static
table), and per layer S_inter, S_intra, IsoScore, cosine anisotropy, K-means clusters, the same after removing each
cluster's mean, LID (Euclidean and cosine) and TwoNN.

Modules: :mod:`.encoder` (hidden states of every layer, special tokens excluded), :mod:`.store` (layer-by-layer
storage: memory or disk), :mod:`.settings` (what an analysis is), :mod:`.measure` (the metrics of one layer, with
:mod:`.kmeans` for the K decision and its spread, :mod:`.pca` for the principal components, :mod:`.composition` for
what clusters hold), :mod:`.run` (corpus in, files out), :mod:`.cross` (two models' layers compared on the same
words), :mod:`.report` (tables and figures over runs).
"""

from .settings import LayerSettings

# What a point is (isoflow.layers.encoder): a word piece, a word (the mean of its pieces), or a sentence's last piece.
TYPE_MODES = ("tokens", "words", "last-token")

# The files of one analysis (isoflow.layers.run); the workflow's rule declares them from here.
LAYER_FILES = (
    "layers.parquet",
    "layers.csv",
    "pca.parquet",
    "clusters.parquet",
    "kmeans.parquet",
    "dims.parquet",
    "types.parquet",
    "cka.parquet",
    "meta.json",
)

# The columns of types.parquet and cka.parquet (isoflow.layers.run), and the first number of types S_inter is measured
# over (then doubling; isoflow.layers.measure.type_rungs): read by the report without loading torch.
TYPES_COLUMNS = ("layer", "n_types", "s_inter", "s_inter_centred")
CKA_COLUMNS = ("subset", "layer_a", "layer_b", "n_points", "cka", "cka_debiased")

# The files of one comparison of two models' layers on the same words (isoflow.layers.cross), and its columns past
# model_a, model_b and corpus.
CROSS_FILES = ("cross.parquet", "cross.json")
CROSS_COLUMNS = ("subset", "layer_a", "layer_b", "n_words", "cka", "cka_debiased")
CROSS_WORDS = 5000  # the words two models are compared on by default: exact CKA takes seconds to minutes on a CPU
TYPE_RUNGS_FROM = 125
# The spectrum columns of a layer's row (isoflow.layers.measure writes them; the spectrum figure draws them).
SPECTRUM = ("effective_rank", "participation_ratio", "stable_rank", "alpha_req")

# The principal components whose orderings pca.parquet holds, and the roll depth's view of its largest K-means cluster
# alone (isoflow.layers.pca: where a few points lie far out, a causal LM's first tokens, whose massive activations
# dominate the first components, the shape of the rest shows only there).
PCS = ("pc1", "pc2", "pc3")
ROLL_LARGEST = "roll, largest cluster"

# What `isoflow layers-report` writes (isoflow.layers.report, isoflow.layers.figures), whatever the runs: the workflow
# declares them from here.
REPORT_TABLES = (
    "layers",
    "layers_summary",
    "layers_lid",
    "layers_kmeans",
    "layers_clusters",
    "layers_orderings",
    "layers_outliers",
    "layers_types",
    "layers_matched",
    "layers_cka",
    "layers_cross",
)
REPORT_FIGURES = (
    "layers_similarity",
    "layers_isoscore",
    "layers_lid",
    "layers_spectrum",
    "layers_kmeans",
    "layers_orderings",
    "layers_pca",
    "layers_roll",
    "layers_outliers",
    "layers_types",
    "layers_cka",
    "layers_cross",
)

__all__ = ["LAYER_FILES", "REPORT_FIGURES", "REPORT_TABLES", "LayerSettings", "layer_metrics", "run_layers"]


def __getattr__(name: str):
    # Lazy: the settings (the command line, the workflow) do not load torch.
    if name in ("layer_metrics", "run_layers"):
        import importlib

        return getattr(importlib.import_module(".measure" if name == "layer_metrics" else ".run", __name__), name)
    raise AttributeError(f"module 'isoflow.layers' has no attribute {name!r}")
