"""The documentation agrees with the code: links resolve, the sources page is what `isoflow sources` writes, every
public metric has a runnable example, and the README stays a front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs/results").glob("*/README.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a Markdown page's headings."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text)))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^(https?:|mailto:)", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_sources_page_is_what_the_command_writes():
    from isoflow.sources import sources_markdown

    assert (ROOT / "docs/sources.md").read_text(encoding="utf-8") == sources_markdown() + "\n", \
        "docs/sources.md is stale: regenerate it with `isoflow sources > docs/sources.md`"


def test_every_public_metric_has_a_runnable_example():
    import isoflow.metrics as m

    public = ["isoscore", "isoscore_star", "silhouette", "silhouette_sqeuclidean", "cosine_anisotropy", "s_inter", "s_intra",
              "cluster_centered", "lid_mle", "twonn", "geometry"]
    missing = [name for name in public if "Examples" not in (getattr(m, name).__doc__ or "") or ">>>" not in getattr(m, name).__doc__]
    assert not missing, f"no Examples doctest in {missing}"


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for command in ("make run", "make test"):
        assert f"{command}" in text
    for page in ("docs/optimization.md", "docs/layers.md", "docs/finetune.md", "docs/workflow.md", "docs/metrics.md"):
        assert f"]({page}" in text, page
