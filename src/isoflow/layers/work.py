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
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


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
