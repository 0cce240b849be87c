"""What a layer's measurement did, counted: the arithmetic of its large parts and the seconds each took — what a run's
time is read against (docs/performance.md, "The time formula"). Counts are multiply-adds of the products that
dominate each part: K-means' point-centre products (m·k·d a pass), the silhouettes' and the neighbour searches' pair
products (m²·d a pass), the spectra's d × d products (n·d²); the Lloyd iterations beside them.

Examples
--------
>>> from isoflow.layers.work import Work
>>> work = Work()
>>> with work.timed("spectrum", spectrum_products=1000 * 64**2):
...     pass
>>> work.add({"lloyd_iterations": 12})
>>> sorted(work.counts)
['lloyd_iterations', 'seconds_spectrum', 'spectrum_products']

Before a run, :func:`expected` gives the same counts from the layer's shape and the run's settings, the Lloyd
iterations a fit takes being the one number the data set:

>>> from isoflow.layers.settings import LayerSettings
>>> counts = expected(20_000, 768, LayerSettings(kmeans_samples=1, kmeans_starts=1), past_first=19_000, iterations=30)
>>> counts["silhouette_products"] == (20_000**2 + 19_000**2) * 768
True
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from .settings import LayerSettings


class Work:
    """Counts and seconds, summed by name (:attr:`counts`)."""

    def __init__(self) -> None:
        self.counts: dict[str, float] = {}

    def add(self, counts: dict) -> None:
        for name, value in counts.items():
            self.counts[name] = self.counts.get(name, 0) + value

    @contextmanager
    def timed(self, part: str, **products: int) -> Iterator[None]:
        """The block's seconds as ``seconds_<part>``, and its ``products``, added when it ends."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add({f"seconds_{part}": time.perf_counter() - start, **products})


def expected(
    points: int,
    dim: int,
    settings: LayerSettings,
    *,
    past_first: int | None = None,
    distinct: int | None = None,
    iterations: float = 0.0,
) -> dict[str, float]:
    """The counts :class:`Work` records for one layer of ``points`` points in ``dim`` dimensions measured with
    ``settings`` (``states: all``): ``past_first`` the points past each sentence's first position (None: no
    positions, as static vectors), ``distinct`` the K-means sample's distinct points (default: all of them, the most),
    ``iterations`` the Lloyd iterations of one fit (each K, start and sample). The spectra: with and without outlier
    dimensions on every point (2·n·d², the second an upper bound), and past the first positions; the K decisions: on
    a sample of at most ``sample_cap`` points, and on one past the first positions where there are more than ``k_max``
    of them; the neighbour searches: two on the sample's distinct points."""
    s = settings
    decisions = []
    if min(points, s.sample_cap) >= s.k_max + 1:
        decisions.append(min(points, s.sample_cap))
        if past_first is not None and past_first >= s.k_max + 1:
            decisions.append(min(past_first, s.sample_cap))
    spectra = 2 * points + (past_first if past_first is not None and past_first >= 2 else 0)
    k_sum = sum(range(2, s.k_max + 1))
    fits = s.kmeans_samples * s.kmeans_starts
    distinct = min(points, s.sample_cap) if distinct is None else distinct
    return {
        "spectrum_products": spectra * dim**2,
        "lloyd_iterations": iterations * fits * (s.k_max - 1) * len(decisions),
        "kmeans_products": sum(fits * (iterations + 2) * m * k_sum * dim for m in decisions),
        "silhouette_products": sum(s.kmeans_samples * m**2 * dim for m in decisions),
        "neighbour_products": 2 * distinct**2 * dim if distinct >= s.k_lid + 1 else 0,
    }
