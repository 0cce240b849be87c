"""One run skeleton for every section: settings → inputs → resume or start → body → record → atomic write.

A section's run function does the first two steps itself — it checks its settings (its settings class refuses a
number out of range before any file is read) and resolves its inputs (:func:`isoflow.run_inputs.run_inputs`) — and
then hands :func:`run_section` where the run goes (:class:`Place`) and its body. :func:`run_section` does the rest,
the same way for every section:

3. **where it goes, checked first**: a run that is a folder refuses, before any work, to replace what is not its own
   (:func:`isoflow.atomic.check_replaceable`);
4. **the body** (the section's own work: optimise, fine-tune, measure the layers, pretrain), which resumes from what
   an interrupted run left (its section's kind of saved state) or starts, and names that state in its outcome;
5. **the record** in the one schema (:func:`isoflow.records.run_record`: settings, measurements, provenance);
6. **the atomic write**, record last: a run of files beside its record (:func:`isoflow.records.write_run`) or a run
   that is one folder (:func:`isoflow.records.write_run_folder`); an interrupted run (Ctrl-C:
   :mod:`isoflow.interrupt`) writes nothing that looks complete;
7. **the progress removed**, once the record stands.

Examples
--------
>>> import pandas as pd, tempfile, json
>>> from pathlib import Path
>>> from isoflow.skeleton import Outcome, Place, run_section
>>> out = Path(tempfile.mkdtemp()) / "seed0.json"
>>> def body():
...     return Outcome({"seed": 0}, {"n": 3}, tables=[(out.with_suffix(".parquet"), pd.DataFrame({"x": [1, 2, 3]}))])
>>> record = json.loads(run_section("toy", Place(out), body).read_text())
>>> record["section"], record["settings"], record["n"], record["complete"]
('toy', {'seed': 0}, 3, True)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .atomic import check_replaceable
from .records import run_record, write_run, write_run_folder


@dataclass(frozen=True)
class Place:
    """Where a run goes. A run of files: ``out`` is its record (``<stem>.json``), its tables beside it. A run that is
    a folder (``record`` set: the record's name inside it): ``out`` is the folder, which may replace only a folder of
    ``expected`` files (or anything, with ``force``); ``kind`` names it in a refusal."""

    out: str | os.PathLike
    record: str | None = None
    expected: tuple[str, ...] = ()
    force: bool = False
    kind: str = "run"


@dataclass
class Outcome:
    """What a run's body gives back: the ``settings`` and ``measured`` its record holds, its ``tables`` (``(path,
    DataFrame)`` pairs, parquet, written beside a run of files) or ``files`` (a function writing a folder run's files
    into the folder it is given), where it stopped if it diverged (``diverged_at``, in ``unit``: step or epoch), and
    its saved ``progress`` (anything with a ``remove()``: the state an interrupted run resumes from), removed once
    the record stands."""

    settings: dict
    measured: dict
    tables: Sequence[tuple[Path, pd.DataFrame]] = ()
    files: Callable[[Path], None] | None = None
    diverged_at: int | None = None
    unit: str = "step"
    progress: object | None = None


def run_section(section: str, place: Place, body: Callable[[], Outcome | None]) -> Path | None:
    """Steps 3–7 of the skeleton (module docstring): check ``place``, run ``body``, write its record in ``section``'s
    name atomically, then remove the progress it kept. Returns the record's path (a run of files) or the folder; None,
    with nothing written and its progress kept, when the body stopped before its end on purpose (returned None: a
    pretraining run's ``stop_after``)."""
    folder = place.record is not None
    if folder:
        check_replaceable(place.out, expected=place.expected, force=place.force)
    outcome = body()
    if outcome is None:
        return None
    record = run_record(section, outcome.settings, outcome.measured, diverged_at=outcome.diverged_at, unit=outcome.unit)
    if folder:
        written = write_run_folder(
            place.out,
            place.record,
            record,
            outcome.files or (lambda tmp: None),
            expected=place.expected,
            force=place.force,
            kind=place.kind,
        )
    else:
        written = write_run(place.out, record, outcome.tables)
    if outcome.progress is not None:
        outcome.progress.remove()
    return written
