"""Progress on long steps: a tqdm bar on a terminal, plain lines in a log file.

Under Snakemake or SLURM, stderr is a log file. A tqdm bar there is a stream of carriage returns, and with the bar
switched off the log stays empty until the run ends, so a cluster user cannot tell a slow job from a stuck one.
When stderr is not a terminal, `progress_bar` returns a `LineProgress` instead: one line at the start and one each
time another tenth of the work is done (triggered by the count, never by a timer), carrying the latest postfix
values (loss, silhouette, IsoScore in the optimisation)."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO


class LineProgress:
    """The subset of tqdm's interface the loops use (`n`, `update`, `set_postfix`, `close`), written as lines."""

    def __init__(self, total: int, desc: str, unit: str, stream: TextIO | None = None, parts: int = 10):
        self.total, self.desc, self.unit = int(total), desc, unit
        self.n = 0
        self.stream = stream if stream is not None else sys.stderr
        self.every = max(1, math.ceil(self.total / parts))
        self._next = self.every
        self._postfix = ""
        self._start = time.perf_counter()
        self._last_written = -1
        self._write(f"{self.desc}: started, {self.total} {self.unit}")

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def _line(self) -> None:
        pct = 100.0 * self.n / self.total if self.total else 100.0
        elapsed = time.perf_counter() - self._start  # reported, never used to decide when to write
        tail = f", {self._postfix}" if self._postfix else ""
        self._write(f"{self.desc}: {self.n}/{self.total} {self.unit} ({pct:.0f}%), {elapsed:.0f} s{tail}")
        self._last_written = self.n

    def set_postfix(self, refresh: bool = True, **values) -> None:
        self._postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.n >= self._next or (self.total and self.n >= self.total):
            self._line()
            while self._next <= self.n:
                self._next += self.every

    def close(self) -> None:
        if self.n != self._last_written:  # a run stopped early (divergence, Ctrl-C) still says where
            self._line()


def progress_bar(enabled: bool | None, total: int, desc: str, unit: str):
    """A progress reporter for `total` units, or None when `enabled` is False.

    `enabled` None or True: a tqdm bar when stderr is a terminal, else a `LineProgress` writing to stderr.
    """
    if enabled is False:
        return None
    if not sys.stderr.isatty():
        return LineProgress(total, desc, unit)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True)
