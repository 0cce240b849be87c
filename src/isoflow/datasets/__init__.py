"""Dataset registry: ``prepare(name)`` fetches a task's sources and writes its canonical tables.

Names: ``polarity``, ``snli``, ``glue/<task>`` (cola, sst2, mrpc, qqp, mnli,
qnli, rte, wnli; ``<task>`` alone also works), ``pos`` (CoDWoE), ``pos-wordnet``
and ``supersense`` (WordNet). Output: ``<data_dir>/tasks/<name>/`` (see
:mod:`isoflow.datasets.table`); raw files are cached under ``<data_dir>/raw/``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

from ..errors import DataFormatError
from ..fetch import FetchError, OfflineError, Resource, fetch
from . import codwoe, glue, polarity, snli, wordnet
from .from_file import from_file
from .table import TaskData, check_task_out, read_task, write_task

logger = logging.getLogger(__name__)

GLUE_TASKS = tuple(glue.TASKS) + ("mrpc",)
DATASETS: tuple[str, ...] = (
    "polarity",
    "snli",
    *(f"glue/{t}" for t in sorted(GLUE_TASKS)),
    "pos",
    "pos-wordnet",
    "supersense",
    "supersense-unambiguous",
)
WORD_TASKS = ("pos", "pos-wordnet", "supersense", "supersense-unambiguous")
# The paper's sizes for the word tasks (Table 1): POS 11,462 words; supersenses 2,275 nouns.
DEFAULT_N_WORDS = {"pos-wordnet": 11_462, "supersense": 2_275, "supersense-unambiguous": 2_275}


def canonical_name(name: str) -> str:
    """Accept ``cola`` for ``glue/cola``; reject unknown names with the list of known ones."""
    if name in DATASETS:
        return name
    if f"glue/{name}" in DATASETS:
        return f"glue/{name}"
    hint = ""
    if Path(name).suffix.lower() in (".csv", ".tsv", ".jsonl", ".json", ".parquet") or Path(name).is_file():
        hint = f". For your own file: `isoflow prepare NAME --from-file {name} --text COLUMN --label COLUMN`"
    raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}{hint}")


TASK_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*(/[a-z0-9][a-z0-9-]*)?$")


def check_task_name(name: str) -> str:
    """A name for your own task: lower-case letters, digits, hyphens, at most one ``/`` (``reviews``, ``lab/nli``)."""
    if not TASK_NAME.match(name) or name in DATASETS:
        why = (
            "is a built-in dataset's"
            if name in DATASETS
            else "must be lower-case letters, digits and '-', with at most one '/'"
        )
        raise ValueError(f"task name {name!r} {why}; choose another (e.g. my-reviews)")
    return name


def resources(name: str) -> tuple[Resource, ...]:
    """The external files a dataset is built from (alternatives for SNLI)."""
    name = canonical_name(name)
    if name == "polarity":
        return polarity.RESOURCES
    if name == "snli":
        return snli.ALTERNATIVES
    if name == "glue/mrpc":
        return glue.MRPC_RESOURCES
    if name.startswith("glue/"):
        return (glue.TASKS[name[5:]].resource,)
    if name == "pos":
        return codwoe.RESOURCES
    return (wordnet.NLTK_ZIP,)


def _fetch_first(
    alternatives: Sequence[Resource], cache: Path, mirror, allow_download: bool, progress: bool
) -> dict[str, Path]:
    """The first alternative present in the cache or a mirror; else the first that downloads."""
    for res in alternatives:
        try:
            return {res.name: fetch(res, cache, mirror=mirror, allow_download=False, progress=progress)}
        except OfflineError:
            continue
    errors = []
    for res in alternatives:
        if not allow_download:
            break
        try:
            return {res.name: fetch(res, cache, mirror=mirror, progress=progress)}
        except OfflineError as exc:
            errors.append(str(exc))
    raise OfflineError(
        " | ".join(errors)
        or f"none of {[r.name for r in alternatives]} is cached or mirrored, and downloads are disabled"
    )


def resolve_name(name: str) -> str:
    """A registry name canonicalised (``cola`` → ``glue/cola``); any other name is the user's own prepared task."""
    try:
        return canonical_name(name)
    except ValueError:
        return name


def task_dir(name: str, data_dir: str | os.PathLike = "data") -> Path:
    return Path(data_dir) / "tasks" / resolve_name(name)


def prepared_task(task: str, data_dir: str | os.PathLike = "data", task_path=None) -> Path:
    """The folder of a prepared task a run reads (``task_path``, else ``<data_dir>/tasks/<task>``); a name that is
    neither prepared there nor in the registry is refused, naming the known tasks."""
    tpath = Path(task_path or task_dir(task, data_dir))
    if task_path is None and not tpath.is_dir() and resolve_name(task) not in DATASETS:
        raise ValueError(f"unknown task {task!r} (no prepared task at {tpath}); known: {', '.join(DATASETS)}")
    return tpath


def raw_cache(data_dir: str | os.PathLike = "data", raw_dir: str | os.PathLike | None = None) -> Path:
    """Where downloaded or mirrored raw files (datasets, static vectors, models) are cached: ``raw_dir``, else
    ``<data_dir>/raw``."""
    return Path(raw_dir) if raw_dir else Path(data_dir) / "raw"


def build(
    name: str,
    *,
    data_dir: str | os.PathLike = "data",
    mirror=None,
    vocab: str = "glove-50d",
    n_words: int | None = None,
    wordlist: Sequence[str] | None = None,
    source_file: str | os.PathLike | None = None,
    wordnet_dir: str | os.PathLike | None = None,
    allow_download: bool = True,
    progress: bool = True,
    raw_dir: str | os.PathLike | None = None,
    split: str = "train",
) -> TaskData:
    """Fetch and parse dataset ``name`` into a :class:`TaskData` (nothing is written).

    Raw files are cached under ``raw_dir`` (default ``<data_dir>/raw``). ``split="dev"``: the validation split,
    for the tasks that have one (GLUE; :func:`has_dev_split`)."""
    name = canonical_name(name)
    if split not in ("train", "dev"):
        raise ValueError(f"split must be 'train' or 'dev'; got {split!r}")
    if split == "dev" and not has_dev_split(name):
        raise ValueError(
            f"{name} has no canonical validation split (only GLUE tasks do); hold out part of the training data instead"
        )
    cache = raw_cache(data_dir, raw_dir)
    if name in WORD_TASKS:
        from ..models import static_model

        vectors = static_model(vocab).load(cache, mirror, allow_download=allow_download)
        if name == "pos":
            paths = (
                {codwoe.ENGLISH.name: Path(source_file)}
                if source_file
                else _fetch_first(codwoe.RESOURCES, cache, mirror, allow_download, progress)
            )
            return _parse_cached(
                paths, cache, lambda p: codwoe.build(p, vocabulary=set(vectors.words), vocab_name=vocab)
            )
        wn = wordnet.WordNet.locate(wordnet_dir, cache=cache, mirror=mirror)
        n = n_words or DEFAULT_N_WORDS[name]
        if name == "pos-wordnet":
            return wordnet.build_pos_wordnet(wn, vectors.words, n, vocab)
        if name == "supersense-unambiguous":
            return wordnet.build_supersense(wn, n, vocab, vocabulary=vectors.words, rule="unambiguous")
        if wordlist is not None:
            vocab_words = set(vectors.words)
            unknown = [w for w in wordlist if w.strip() and w.strip() not in vocab_words]
            if unknown:
                raise DataFormatError(
                    f"supersense: {len(unknown)} word(s) of the word list are not in the vocabulary of {vocab}, e.g. "
                    f"{unknown[:10]}"
                )
        return wordnet.build_supersense(wn, n, vocab, vocabulary=vectors.words, wordlist=wordlist)
    if name == "snli":
        paths = _fetch_first(snli.ALTERNATIVES, cache, mirror, allow_download, progress)
        return _parse_cached(paths, cache, snli.build)
    if split == "dev":
        paths = _fetch_all(glue.dev_resources(name[5:]), cache, mirror, allow_download, progress)
        return _parse_cached(paths, cache, lambda p: glue.build(name[5:], p, "dev"))
    paths = _fetch_all(resources(name), cache, mirror, allow_download, progress)
    if name == "polarity":
        return _parse_cached(paths, cache, polarity.build)
    return _parse_cached(paths, cache, lambda p: glue.build(name[5:], p))


def _fetch_all(res, cache, mirror, allow_download, progress) -> dict[str, Path]:
    return {r.name: fetch(r, cache, mirror=mirror, allow_download=allow_download, progress=progress) for r in res}


def has_dev_split(name: str) -> bool:
    """Whether the task has a canonical validation split isoflow can read (GLUE's dev files)."""
    return canonical_name(name).startswith("glue/")


def _parse_cached(paths: dict[str, Path], cache: Path, parse):
    """``parse(paths)``; if it fails on the cached raw files, remove them (and their verification
    stamps) so that the next run fetches them again instead of failing on the same bad copy, and say so."""
    try:
        return parse(paths)
    except DataFormatError as exc:
        removed = []
        for path in paths.values():
            if cache.resolve() in path.resolve().parents:
                path.unlink(missing_ok=True)
                path.with_name(path.name + ".verified").unlink(missing_ok=True)
                removed.append(str(path))
        if not removed:
            raise
        raise DataFormatError(
            f"{exc}. The cached cop{'ies' if len(removed) > 1 else 'y'} {', '.join(removed)} "
            "w" + ("ere" if len(removed) > 1 else "as") + " removed, so the next run fetches "
            "again: replace the mirror's copy with the original first"
        ) from exc


def prepare(
    name: str,
    *,
    data_dir: str | os.PathLike = "data",
    out: str | os.PathLike | None = None,
    force: bool = False,
    from_file: dict | None = None,
    **options,
) -> Path:
    """Build dataset ``name`` and write it (atomically) to ``out`` (default ``<data_dir>/tasks/<name>``).

    ``from_file``: your own data instead of a built-in dataset, as the keyword arguments of
    :func:`isoflow.datasets.from_file.from_file` (``path``, ``text``, ``label``, optionally ``text_b``, ``label_sep``).
    ``out`` may hold an earlier isoflow output, which is replaced; anything else there is refused (before any
    work) unless ``force``."""
    if from_file is not None:
        from .from_file import from_file as read_file

        out = Path(out or Path(data_dir) / "tasks" / check_task_name(name))
        check_task_out(out, force=force)
        return write_task(read_file(name, **from_file), out, force=force)
    name = canonical_name(name)  # an unknown name (a file's path, say) is an error here, never an output path
    out = Path(out or task_dir(name, data_dir))
    check_task_out(out, force=force)
    task = build(name, data_dir=data_dir, **options)
    written = write_task(task, out, force=force)
    if has_dev_split(name):  # best effort: bring the validation file into the cache for fine-tuning's held-out data
        try:
            build(name, data_dir=data_dir, split="dev", **options)
        except (FetchError, DataFormatError) as exc:
            logger.info(
                "%s: no validation split at hand (%s); fine-tuning will hold out part of the training data", name, exc
            )
    return written


__all__ = [
    "DATASETS",
    "TaskData",
    "build",
    "canonical_name",
    "check_task_name",
    "from_file",
    "has_dev_split",
    "prepare",
    "prepared_task",
    "raw_cache",
    "read_task",
    "resolve_name",
    "resources",
    "task_dir",
]
