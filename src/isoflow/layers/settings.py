"""A layer analysis' settings, declared once (the command line, the config schema and the checks derive from them);
kept apart from the measurements so that reading them does not load torch."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..settings import check, setting

# Sentences per forward pass of a layer run (`isoflow layers --batch-size`, isoflow.layers.run.run_layers): each batch
# is padded to its longest sentence, so that its points and positions, and the run's memory plan, follow from it
BATCH_SIZE = 32


@dataclass(frozen=True)
class LayerSettings:
    """A layer analysis' settings, declared once (the command line and the config schema's ``layers`` keys derive
    from them: tests/test_settings.py)."""

    max_tokens: int = setting(
        100_000, "points to analyse: whole sentences in a seeded order until this many tokens", minimum=2
    )
    sample_cap: int = setting(20_000, "points for K-means, LID and TwoNN", minimum=3)
    k_max: int = setting(15, "K-means tries K = 2..K_MAX", minimum=2)
    kmeans_samples: int = setting(3, "samples of SAMPLE_CAP points on which K is chosen (its spread)", minimum=1)
    kmeans_starts: int = setting(5, "k-means++ starts per K and sample (the best inertia is kept)", minimum=1)
    min_silhouette: float = setting(
        0.1, "below this best silhouette the layer is one cluster", minimum=0.0, maximum=1.0
    )
    k_lid: int = setting(100, "neighbours for LID (Cai et al.'s)", minimum=2)
    max_per_type: int = setting(1000, "instances per type for S_intra", minimum=2)
    outlier_factor: float = setting(
        5.0,
        "an outlier dimension's mean |activation| is at least this many times the median dimension's",
        exclusive_minimum=0.0,
    )
    outlier_remove: int = setting(
        3, "dimensions (largest mean |activation|) removed to measure without them", minimum=0
    )
    pair_points: int = setting(
        5000,
        "points (a seeded sample, the same rows in every layer) for the measures over all pairs of points: uniformity "
        "and the layer-by-layer CKA",
        minimum=4,
    )
    seed: int = setting(0, "seed of the sentence order, the samples and K-means", minimum=0)
    states: str = setting(
        "all",
        "which states a contextual model's run keeps: all (every point of every measured layer, on disk) or sample "
        "(only its K-means samples' points, the measures that sums give taken over all points while encoding: "
        "docs/layers.md)",
        choices=("all", "sample"),
        quiet_at_default=True,
    )

    def __post_init__(self):
        check(self)

    def dict(self) -> dict:
        return asdict(self)
