"""Rewrite the glossary table of docs/README.md from the section registry (isoflow.sections.glossary_table).

python scripts/generate.py     # with dvc.yaml; tests/test_docs.py checks that the table is up to date
"""

from __future__ import annotations

import sys

from ..sections import glossary_table
from . import ROOT

START = "<!-- glossary: written by scripts/generate.py from src/isoflow/sections.py -->\n"
END = "<!-- end of the glossary -->\n"


def main() -> int:
    page = ROOT / "docs" / "README.md"
    text = page.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{page}: the glossary's markers are missing; put the two lines of {__file__} around it", file=sys.stderr)
        return 1
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    page.write_text(head + START + glossary_table(ROOT) + END + tail, encoding="utf-8")
    print(f"{page.relative_to(ROOT)} written")
    return 0
