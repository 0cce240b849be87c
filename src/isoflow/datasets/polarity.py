"""Pang & Lee (2005) sentence polarity v1.0, as distributed by NLTK (``sentence_polarity``).

10,662 snippets of movie reviews, 5,331 positive and 5,331 negative; one per line
in ``rt-polarity.pos`` / ``rt-polarity.neg`` (UTF-8 in NLTK's copy).
License: CC BY 4.0 (per NLTK's index); (C) 2005 Bo Pang and Lillian Lee.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from ..fetch import Resource
from .table import DataFormatError, TaskData, build_task, source_record

ZIP = Resource(
    name="sentence_polarity/sentence_polarity.zip",
    urls=("https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/sentence_polarity.zip",),
    sha256="6e1ed4405b65c7eabf1d199a7f7c437091ac21da0ea7467b410a74062574566b",
    size=490256,
    license="CC BY 4.0 (NLTK index); (C) 2005 Bo Pang and Lillian Lee",
)
RESOURCES = (ZIP,)


def build(paths: dict[str, Path]) -> TaskData:
    path = paths[ZIP.name]
    texts, labels = [], []
    with zipfile.ZipFile(path) as zf:
        for label in ("neg", "pos"):  # NLTK's category order
            member = f"sentence_polarity/rt-polarity.{label}"
            try:
                raw = zf.read(member).decode("utf-8")
            except KeyError as exc:
                raise DataFormatError(f"{path}: no member {member}; is this NLTK's sentence_polarity.zip?") from exc
            lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
            texts += lines
            labels += [label] * len(lines)
    return build_task("polarity", texts, labels, sources=[source_record(ZIP, path)])
