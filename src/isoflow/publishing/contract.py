"""The import contract's sections tier (pyproject.toml, ``[tool.importlinter]``), written from the section registry:
a section added to :mod:`isoflow.sections` joins the tier whose modules import none of each other (``|``), so that
``make lint`` checks it as it checks the others — with ``python scripts/generate.py``, which the suite names when the
line is stale (tests/test_tiers.py)."""

from __future__ import annotations

import re

from ..sections import section_packages
from . import ROOT

MARK = "  # the sections: scripts/generate.py writes it from isoflow.sections"
LINE = re.compile(r'^    "[^"\n]*",' + re.escape(MARK) + "$", re.M)


def render(text: str) -> str:
    """pyproject.toml's text with its sections tier written from the registry (the line that carries :data:`MARK`)."""
    if len(LINE.findall(text)) != 1:
        raise ValueError(f"pyproject.toml: no single line of the contract's layers ends with {MARK.strip()!r}")
    return LINE.sub(lambda _: f'    "{" | ".join(section_packages())}",{MARK}', text)


def main() -> int:
    path = ROOT / "pyproject.toml"
    path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
    print("pyproject.toml's sections tier written")
    return 0
