"""WordNet 3.0, read straight from its database files, and the two word tasks built on it.

* ``pos-wordnet``: for each word of a frequency-ranked list, the set of its
  WordNet parts of speech (noun, verb, adj, adv) — a multi-label stand-in for
  CoDWoE's POS task that works offline.
* ``supersense``: for each noun, the set of lexicographer classes (the 26
  ``noun.*`` supersenses) of its noun synsets — multi-label.

Where WordNet comes from, first found wins:

1. ``wordnet_dir`` / ``$ISOFLOW_WORDNET``: a directory with ``index.*`` and ``data.*``;
2. ``/usr/share/wordnet`` (Debian/Ubuntu ``wordnet-base``, installed by ``make install``);
3. NLTK's ``corpora/wordnet.zip`` (WordNet 3.0), from the mirror or NLTK's data server.

The version is checked (the files must say "WordNet 3.0"). Words are matched
exactly against WordNet's lemmas (lower case, ``_`` for spaces; no morphological
reduction, so "dogs" is not a noun lemma but "dog" is). The lexicographer file
numbers are WordNet's fixed list, documented in ``lexnames(5WN)``.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..fetch import Resource, fetch
from .table import DataFormatError, TaskData, build_task

WORDNET_ENV = "ISOFLOW_WORDNET"
SYSTEM_DIRS = (Path("/usr/share/wordnet"),)
NLTK_ZIP = Resource(
    name="nltk_data/corpora/wordnet.zip",
    urls=("https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/wordnet.zip",),
    license="WordNet 3.0 license (Princeton University)",
    note="hash not pinned; the version is checked from the files' header",
)
POS = ("noun", "verb", "adj", "adv")
_QUOTED = re.compile(r'"([^"]*)"')
# lexnames(5WN): lexicographer file number -> name.
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body noun.cognition "
    "noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive noun.object noun.person "
    "noun.phenomenon noun.plant noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
    "noun.substance noun.time verb.body verb.change verb.cognition verb.communication verb.competition "
    "verb.consumption verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession "
    "verb.social verb.stative verb.weather adj.ppl"
).split()
NOUN_SUPERSENSES = tuple(n for n in LEXNAMES if n.startswith("noun."))
assert len(LEXNAMES) == 45 and len(NOUN_SUPERSENSES) == 26


class WordNet:
    """Lemma → parts of speech and noun supersenses, from WordNet's ``index.*`` and ``data.noun``."""

    def __init__(self, read: callable, origin: str):
        self.origin = origin
        self._read = read
        header = read("data.noun")[:2000].decode("utf-8", "replace")
        if "WordNet 3.0" not in header:
            raise DataFormatError(f"{origin}: data.noun is not WordNet 3.0 (its header does not say so)")
        self._index = {pos: self._parse_index(read(f"index.{pos}").decode("utf-8"), origin, pos) for pos in POS}
        self._lexfile = self._parse_lexfiles(read("data.noun").decode("utf-8"))

    @staticmethod
    def _parse_index(text: str, origin: str, pos: str) -> dict[str, tuple[int, ...]]:
        out = {}
        for line in text.splitlines():
            if not line or line.startswith(" "):  # license header lines start with two spaces
                continue
            f = line.split()
            try:
                n_synsets = int(f[2])
                out[f[0]] = tuple(int(o) for o in f[len(f) - n_synsets :])
            except (IndexError, ValueError) as exc:
                raise DataFormatError(f"{origin}: malformed line in index.{pos}: {line[:80]!r}") from exc
        return out

    @staticmethod
    def _parse_lexfiles(text: str) -> dict[int, int]:
        # Each synset line: "offset lex_filenum ss_type ..."; the offset is the line's byte position.
        return {
            int(f[0]): int(f[1])
            for f in (ln.split(maxsplit=2) for ln in text.splitlines() if ln and not ln.startswith(" "))
        }

    @classmethod
    def from_dir(cls, root: Path) -> WordNet:
        missing = [n for n in (*(f"index.{p}" for p in POS), "data.noun") if not (root / n).is_file()]
        if missing:
            raise DataFormatError(f"{root}: not a WordNet database directory (missing {', '.join(missing)})")
        return cls(lambda name: (root / name).read_bytes(), str(root))

    @classmethod
    def from_zip(cls, path: Path) -> WordNet:
        zf = zipfile.ZipFile(path)
        prefix = next((n[: -len("index.noun")] for n in zf.namelist() if n.endswith("index.noun")), None)
        if prefix is None:
            raise DataFormatError(f"{path}: no index.noun inside; is this NLTK's wordnet.zip?")
        return cls(lambda name: zf.read(prefix + name), str(path))

    @classmethod
    def locate(
        cls, wordnet_dir: str | os.PathLike | None = None, *, cache: str | os.PathLike = "data/raw", mirror=None
    ) -> WordNet:
        """Find WordNet 3.0 (see the module docstring for the order)."""
        explicit = wordnet_dir or os.environ.get(WORDNET_ENV)
        if explicit:
            return cls.from_dir(Path(explicit))
        for d in SYSTEM_DIRS:
            if (d / "index.noun").is_file():
                return cls.from_dir(d)
        return cls.from_zip(fetch(NLTK_ZIP, cache, mirror=mirror))

    def glosses(self) -> Iterator[tuple[str, str, list[str]]]:
        """Every synset's (``pos:offset``, definition, example sentences), in file order (``data.noun``, ``data.verb``,
        ``data.adj``, ``data.adv``): the text after a synset line's ``|``, the examples being its quoted parts."""
        for pos in POS:
            for line in self._read(f"data.{pos}").decode("utf-8").splitlines():
                if not line or line.startswith(" ") or " | " not in line:
                    continue
                gloss = line.split(" | ", 1)[1].strip()
                examples = [e.strip() for e in _QUOTED.findall(gloss) if e.strip()]
                definition = gloss.split('"', 1)[0].strip().rstrip(";").strip()
                yield f"{pos}:{line.split(' ', 1)[0]}", definition, examples

    def parts_of_speech(self, word: str) -> set[str]:
        return {pos for pos in POS if word in self._index[pos]}

    def is_noun(self, word: str) -> bool:
        return word in self._index["noun"]

    def noun_supersenses(self, word: str) -> set[str]:
        return {LEXNAMES[self._lexfile[o]] for o in self._index["noun"].get(word, ())}


def _candidate(word: str) -> bool:
    # Frequency lists hold punctuation, numbers and cased forms: keep lower-case alphabetic words.
    return word.isalpha() and word == word.lower()


def _from_list(name: str, words: Sequence[str], labeller, source: dict, extra: dict) -> TaskData:
    return build_task(
        name, list(words), [sorted(labeller(w)) for w in words], multilabel=True, sources=[source], extra=extra
    )


def _first_words(vocabulary: Iterable[str], keep, n_words: int, task: str, vocab_name: str, what: str) -> list[str]:
    """The first ``n_words`` candidate words of ``vocabulary`` (frequency order) for which ``keep(word)`` holds."""
    words = []
    for w in vocabulary:
        if _candidate(w) and keep(w):
            words.append(w)
            if len(words) == n_words:
                return words
    raise DataFormatError(f"{task}: only {len(words)} of the requested {n_words} words of {vocab_name} are {what}")


def build_pos_wordnet(wn: WordNet, vocabulary: Iterable[str], n_words: int, vocab_name: str) -> TaskData:
    """The first ``n_words`` words of ``vocabulary`` (frequency order) that WordNet knows, with their POS sets."""
    words = _first_words(vocabulary, wn.parts_of_speech, n_words, "pos-wordnet", vocab_name, "in WordNet")
    return _from_list(
        "pos-wordnet", words, wn.parts_of_speech, {"name": "WordNet 3.0", "url": wn.origin}, {"vocabulary": vocab_name}
    )


MAX_UNAMBIGUOUS_SUPERSENSES = 2


def unambiguous_noun(wn: WordNet, word: str) -> bool:
    """Our rule for a word list closer to a curated one (Tikhonov et al.'s is not reachable here): not a function
    word (scikit-learn's English stop-word list: WordNet knows "he" as helium, "it" as information technology), a
    word WordNet knows only as a noun, whose noun senses fall into at most two supersenses."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return (
        word not in ENGLISH_STOP_WORDS
        and wn.parts_of_speech(word) == {"noun"}
        and len(wn.noun_supersenses(word)) <= MAX_UNAMBIGUOUS_SUPERSENSES
    )


def build_supersense(
    wn: WordNet,
    n_words: int,
    vocab_name: str,
    vocabulary: Iterable[str] | None = None,
    wordlist: Sequence[str] | None = None,
    rule: str = "nouns",
) -> TaskData:
    """Noun supersenses for a user word list, or for the first ``n_words`` WordNet nouns of ``vocabulary``
    (``rule="unambiguous"``: the first ones passing :func:`unambiguous_noun`, task ``supersense-unambiguous``).

    A user list must consist of WordNet nouns; the error lists the ones that are not.
    """
    if rule == "unambiguous":
        words = _first_words(
            vocabulary or (),
            lambda w: unambiguous_noun(wn, w),
            n_words,
            "supersense-unambiguous",
            vocab_name,
            f"nouns only, with at most {MAX_UNAMBIGUOUS_SUPERSENSES} supersenses",
        )
        extra = {
            "wordlist": f"first {n_words} words of {vocab_name} that are not stop words, that WordNet knows only as "
            f"nouns, "
            f"with at most {MAX_UNAMBIGUOUS_SUPERSENSES} noun supersenses",
            "vocabulary": vocab_name,
        }
        return _from_list(
            "supersense-unambiguous", words, wn.noun_supersenses, {"name": "WordNet 3.0", "url": wn.origin}, extra
        )
    if wordlist is not None:
        words = list(dict.fromkeys(w.strip() for w in wordlist if w.strip()))
        unknown = [w for w in words if not wn.is_noun(w)]
        if unknown:
            raise DataFormatError(
                f"supersense: {len(unknown)} word(s) of the word list are not WordNet 3.0 noun lemmas, e.g. "
                f"{unknown[:10]}; "
                "remove them or use their lemma form"
            )
        extra = {"wordlist": "user", "vocabulary": vocab_name}
    else:
        words = _first_words(vocabulary or (), wn.is_noun, n_words, "supersense", vocab_name, "WordNet nouns")
        extra = {"wordlist": f"first {n_words} WordNet nouns of {vocab_name}", "vocabulary": vocab_name}
    return _from_list("supersense", words, wn.noun_supersenses, {"name": "WordNet 3.0", "url": wn.origin}, extra)
