"""The pretraining corpus: English text at hand offline that is no task's text, split into training and held-out
documents.

Sources (``sources``, in order):

* ``brown``: NLTK's Brown corpus, one document per file (500 files, 1.16 M words; already split into words and
  punctuation);
* ``wordnet``: WordNet 3.0's glosses, one document per synset: its definition and its example sentences;
* any other entry is a path to a UTF-8 text file: one sentence per line, documents separated by empty lines (a file
  without empty lines: every line a document).

**No task's text.** Every sentence that shares a word 8-gram with a text of the excluded tasks (their training and,
where there is one, validation split), or contains a whole task text of 5-7 words, is dropped — the decontamination
rule of GPT-3 (Brown et al. 2020, appendix C) at a shorter n-gram, since most task texts are short. Words are
lower-cased runs of letters and digits. Texts of fewer than 5 words are too generic to match ("a good film").

Held-out: a seeded ``heldout_fraction`` of each source's documents (whole documents, so no sentence of a held-out
document is seen in training).

Written: ``train.txt`` and ``heldout.txt`` (one sentence per line, an empty line between documents) and
``corpus.json`` (what was used, how much, what was dropped and why).
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..atomic import atomic_dir
from ..errors import DataFormatError
from .settings import CorpusSettings

BUILT_IN_SOURCES = ("brown", "wordnet")
# Every built-in task made of sentences (word tasks are lists of words, which no corpus can avoid).
SENTENCE_TASKS = (
    "polarity",
    "snli",
    "glue/cola",
    "glue/sst2",
    "glue/mrpc",
    "glue/qqp",
    "glue/mnli",
    "glue/qnli",
    "glue/rte",
    "glue/wnli",
)
NGRAM = 8
MIN_WHOLE = 5
_WORD = re.compile(r"[a-z0-9]+")
FILES = ("train.txt", "heldout.txt", "corpus.json")

Document = list[str]  # its sentences


def normalised_words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class TaskText:
    """The word n-grams of the excluded tasks' texts, and their short texts whole."""

    def __init__(self, texts: Iterable[str], n: int = NGRAM, min_whole: int = MIN_WHOLE):
        self.n, self.min_whole = n, min_whole
        self.grams: set[str] = set()
        for text in texts:
            words = normalised_words(text)
            if len(words) >= n:
                self.grams.update(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
            elif len(words) >= min_whole:
                self.grams.add(" ".join(words))

    def overlaps(self, sentence: str) -> bool:
        """Whether ``sentence`` holds an n-gram of a task text, or a short task text whole."""
        words = normalised_words(sentence)
        for size in range(self.min_whole, self.n + 1):
            for i in range(len(words) - size + 1):
                if " ".join(words[i : i + size]) in self.grams:
                    return True
        return False


def task_texts(
    tasks: Sequence[str], *, data_dir, raw_dir=None, mirror=None, allow_download: bool = True
) -> tuple[list[str], dict]:
    """The texts of ``tasks`` — built-in tasks by name (training split, and validation split where there is one), or
    prepared task folders (``data/tasks/<task>``: your own) — and per task what was read (``{"texts": n}``) or why it
    could not be (``{"unavailable": reason}``)."""
    from .. import datasets
    from ..fetch import FetchError

    texts, report = [], {}
    for name in tasks:
        if (Path(name) / "items.parquet").is_file():  # a prepared task (your own): its items
            from ..datasets import read_task

            found = read_task(name).items["text"].tolist()
            texts += found
            report[name] = {"texts": len(found), "splits": ["prepared"]}
            continue
        dev_missing = None
        fetch = dict(data_dir=data_dir, raw_dir=raw_dir, mirror=mirror, allow_download=allow_download, progress=False)
        try:
            splits = [datasets.build(name, **fetch)]
            if datasets.has_dev_split(name):
                try:
                    splits.append(datasets.build(name, split="dev", **fetch))
                except FetchError as exc:  # the training split is still excluded; the record says what was not
                    dev_missing = str(exc).splitlines()[0][:300]
        except FetchError as exc:
            report[name] = {"unavailable": str(exc).splitlines()[0][:300]}
            continue
        found = [t for task in splits for t in task.items["text"].tolist()]
        texts += found
        report[name] = {"texts": len(found), "splits": ["train", "dev"][: len(splits)]}
        if dev_missing:
            report[name]["dev_unavailable"] = dev_missing
    return texts, report


def brown_documents(*, cache, mirror=None, allow_download: bool = True) -> list[Document]:
    from ..corpora import BROWN, read_brown_documents
    from ..fetch import fetch

    path = fetch(BROWN, cache, mirror=mirror, allow_download=allow_download)
    return [[" ".join(words) for words in sentences] for _, sentences in read_brown_documents(path)]


def wordnet_documents(*, cache, mirror=None, wordnet_dir=None) -> list[Document]:
    from ..datasets.wordnet import WordNet

    wn = WordNet.locate(wordnet_dir, cache=cache, mirror=mirror)
    return [[d for d in (definition, *examples) if d] for _, definition, examples in wn.glosses()]


def text_file_documents(path: str | os.PathLike) -> list[Document]:
    """A text file's documents: sentences one per line, documents separated by empty lines (a file without empty lines:
    every line a document, as a layer-analysis corpus is written)."""
    from ..corpora import _text

    lines = [line.strip() for line in _text(Path(path).read_bytes(), str(path)).splitlines()]
    if not any(lines):
        raise DataFormatError(f"{path}: the corpus is empty (no text)")
    if all(lines):
        return [[line] for line in lines]
    documents, current = [], []
    for line in lines:
        if line:
            current.append(line)
        elif current:
            documents.append(current)
            current = []
    return documents + ([current] if current else [])


def source_documents(
    source: str, *, cache, mirror=None, allow_download: bool = True, wordnet_dir=None
) -> list[Document]:
    if source == "brown":
        return brown_documents(cache=cache, mirror=mirror, allow_download=allow_download)
    if source == "wordnet":
        return wordnet_documents(cache=cache, mirror=mirror, wordnet_dir=wordnet_dir)
    if not Path(source).expanduser().is_file():
        raise FileNotFoundError(
            f"pretraining source {source!r} is neither one of {', '.join(BUILT_IN_SOURCES)} nor a text file"
        )
    return text_file_documents(Path(source).expanduser())


def decontaminate(documents: Sequence[Document], task_text: TaskText) -> tuple[list[Document], int]:
    """The documents without the sentences that overlap a task text (documents left empty are dropped), and how many
    sentences were dropped."""
    kept, dropped = [], 0
    for doc in documents:
        clean = [s for s in doc if not task_text.overlaps(s)]
        dropped += len(doc) - len(clean)
        if clean:
            kept.append(clean)
    return kept, dropped


def split_documents(documents: Sequence[Document], fraction: float, seed: int) -> tuple[list[Document], list[Document]]:
    """(training, held-out) documents: a seeded ``fraction`` held out (at least one, if there are two or more)."""
    n_held = min(max(1, round(fraction * len(documents))), len(documents) - 1) if len(documents) > 1 else 0
    held = set(random.Random(seed).sample(range(len(documents)), n_held))
    return [d for i, d in enumerate(documents) if i not in held], [d for i, d in enumerate(documents) if i in held]


def _count(documents: Sequence[Document]) -> dict:
    return {
        "documents": len(documents),
        "sentences": sum(len(d) for d in documents),
        "words": sum(len(s.split()) for d in documents for s in d),
    }


def write_documents(documents: Iterable[Document], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for doc in documents:
            fh.write("\n".join(doc) + "\n\n")


def build_corpus(
    out: str | os.PathLike,
    *,
    sources: Sequence[str] = BUILT_IN_SOURCES,
    exclude_tasks: Sequence[str] = SENTENCE_TASKS,
    settings: CorpusSettings = CorpusSettings(),
    data_dir="data",
    raw_dir=None,
    mirror=None,
    allow_download: bool = True,
    wordnet_dir=None,
    force: bool = False,
    log=print,
) -> Path:
    """Assemble the corpus from ``sources`` without the text of ``exclude_tasks`` and write it to ``out``."""
    from ..datasets import raw_cache
    from ..settings import as_dict, check

    check(settings)
    if not sources:
        raise ValueError("pretraining needs at least one source (brown, wordnet or a text file)")
    cache = raw_cache(data_dir, raw_dir)
    texts, tasks_report = task_texts(
        exclude_tasks, data_dir=data_dir, raw_dir=raw_dir, mirror=mirror, allow_download=allow_download
    )
    task_text = TaskText(texts)
    log(
        f"pretraining corpus: {len(texts)} task texts to exclude ({len(task_text.grams)} n-grams) from "
        f"{sum('texts' in r for r in tasks_report.values())} of {len(exclude_tasks)} tasks"
    )
    train, heldout, per_source = [], [], {}
    for i, source in enumerate(sources):
        documents = source_documents(
            source, cache=cache, mirror=mirror, allow_download=allow_download, wordnet_dir=wordnet_dir
        )
        before = _count(documents)
        clean, dropped = decontaminate(documents, task_text)
        tr, he = split_documents(clean, settings.heldout_fraction, settings.seed + i)
        train += tr
        heldout += he
        per_source[source] = {"read": before, "dropped_sentences": dropped, "train": _count(tr), "heldout": _count(he)}
        log(
            f"  {source}: {before['words']:,} words in {before['documents']:,} documents; {dropped} sentence(s) "
            f"dropped as task text; "
            f"{per_source[source]['train']['words']:,} words for training, {per_source[source]['heldout']['words']:,} "
            f"held out"
        )
    if not heldout:
        raise DataFormatError(
            "the pretraining corpus has a single document, so nothing can be held out; give more text"
        )
    record = {
        "sources": per_source,
        "train": _count(train),
        "heldout": _count(heldout),
        "settings": as_dict(settings),
        "excluded_tasks": tasks_report,
        "rule": f"a sentence is dropped if it shares a word {NGRAM}-gram with a task text or contains a whole task "
        f"text of "
        f"{MIN_WHOLE}-{NGRAM - 1} words (words: lower-cased runs of letters and digits)",
    }
    with atomic_dir(out, expected=FILES, force=force, kind="pretraining corpus") as tmp:
        write_documents(train, tmp / "train.txt")
        write_documents(heldout, tmp / "heldout.txt")
        (tmp / "corpus.json").write_text(json.dumps(record, indent=2) + "\n")
    return Path(out)


def read_documents(path: str | os.PathLike) -> list[Document]:
    """The documents of a ``train.txt`` / ``heldout.txt`` written by :func:`build_corpus`."""
    return text_file_documents(path)
