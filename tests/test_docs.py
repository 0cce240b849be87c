"""The documentation agrees with the code: links resolve, the sources page is what `isoflow sources` writes, every
public metric has a runnable example, and the README stays a front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs/results").glob("*/README.md")),
]
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

    assert (ROOT / "docs/sources.md").read_text(encoding="utf-8") == sources_markdown() + "\n", (
        "docs/sources.md is stale: regenerate it with `isoflow sources > docs/sources.md`"
    )


# The measures a user calls on points (the *_tensor variants, helpers and classes excepted): each documented as numpydoc
# documents a function, in numpydoc's order, its example run by the doctests.
MEASURES = [
    "isoscore",
    "isoscore_star",
    "cosine_anisotropy",
    "s_inter",
    "s_intra",
    "silhouette",
    "silhouette_sqeuclidean",
    "silhouettes",
    "cluster_centered",
    "lid_mle",
    "twonn",
    "distinct_points",
    "linear_cka",
    "geometry",
    "mean_abs_activation",
    "peak_ratio",
    "outlier_dimensions",
    "cosine_shares",
    "drop_dimensions",
    "outlier_points",
    "points_variance_share",
    "participation_ratio",
    "effective_rank",
    "variance_effective_rank",
    "stable_rank",
    "alpha_req",
    "uniformity",
    "alignment",
]
SECTIONS = ("Parameters", "Returns", "References", "Examples")


@pytest.mark.parametrize("name", MEASURES)
def test_every_public_measure_has_numpydoc_sections_and_a_runnable_example(name):
    import inspect

    import isoflow.metrics as m

    doc = inspect.getdoc(getattr(m, name)) or ""
    at = [doc.find(f"\n{section}\n{'-' * len(section)}\n") for section in SECTIONS]
    assert all(i >= 0 for i in at), f"{name}: no {[s for s, i in zip(SECTIONS, at) if i < 0]} section"
    assert at == sorted(at), f"{name}: sections out of numpydoc's order {SECTIONS}"
    assert "\n>>> " in doc[at[-1] :], f"{name}: its Examples section has no doctest"
    params = doc[at[0] : at[1]]
    assert all(f"\n{p}" in params or f", {p}" in params for p in inspect.signature(getattr(m, name)).parameters), (
        f"{name}: a parameter missing from its Parameters section"
    )


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert [n for n, line in enumerate(text.splitlines(), 1) if len(line) > 120] == []  # read without scrolling
    for command in ("make run", "make test"):
        assert f"{command}" in text
    for page in ("docs/optimize.md", "docs/layers.md", "docs/finetune.md", "docs/workflow.md", "docs/metrics.md"):
        assert f"]({page}" in text, page


# ----- the names the docs use exist -----------------------------------------------------------------------------------
# Every `isoflow <command> --option`, `make <target>`, `snakemake <target>` and DVC stage `<stage>@<config>` written in
# the docs (code spans and code blocks, README, docs/, results' READMEs, the HTML report's captions) names something
# that exists, so a renamed command, option, target or stage cannot leave a stale instruction behind.
DOC_PAGES = [*PAGES, *sorted((ROOT / "report").glob("*.rst"))]
CODE = re.compile(r"```[^\n]*\n(.*?)```|``?([^`\n]+)``?", re.S)
PLACEHOLDER = re.compile(r"<[^>]*>")


def _code_lines(page: Path) -> list[str]:
    """The lines of a page's code blocks and code spans (comments after `#` dropped)."""
    lines = []
    for block, span in CODE.findall(page.read_text(encoding="utf-8")):
        for line in (block or span).splitlines():
            lines.append(re.split(r"\s#\s|\s+#\s*|^#", line)[0])
    return lines


def _isoflow_options() -> dict[str, set[str]]:
    import argparse

    from isoflow.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {o for action in p._actions for o in action.option_strings} for name, p in sub.choices.items()}


def _make_targets() -> set[str]:
    from isoflow.sections import PUBLICATIONS

    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w-]*):(?!=)", text, re.M))
    per_publication = re.findall(r"^([a-z][\w-]*-)%:", text, re.M)  # reproduce-%, resume-%, save-partial-%
    return targets | {f"{prefix}{name}" for prefix in per_publication for name in [*PUBLICATIONS, "X"]}


def _snakemake_targets() -> set[str]:
    files = [ROOT / "Snakefile", *(ROOT / "rules").glob("*.smk")]
    return {m for f in files for m in re.findall(r"^(?:rule|checkpoint) (\w+):", f.read_text(), re.M)}


def _dvc_names() -> tuple[set[str], set[str]]:
    import yaml

    stages = set(yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"])
    configs = set(yaml.safe_load((ROOT / "dvc-configs.yaml").read_text())["configs"]) | {
        "offline"
    }  # offline: the example in it
    return stages, configs


def _unknown_names(line: str, options, make, snake, stages, configs) -> list[str]:
    bad = []
    line = PLACEHOLDER.sub("X", line)
    for m in re.finditer(r"(?<!from )(?<!import )\bisoflow ([a-z][a-z-]*)(.*?)(?=\||;|&&|$)", line):
        command, rest = m.group(1), m.group(2)
        if command not in options:
            bad.append(f"isoflow {command}")
            continue
        bad += [
            f"isoflow {command} {o}"
            for o in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest)
            if o not in options[command]
        ]
    for m in re.finditer(r"(?:^|[\s(])make ((?:[a-z][\w-]*)(?: [a-z][\w-]*)*)", line):
        bad += [f"make {t}" for t in m.group(1).split() if t not in make]
    for m in re.finditer(r"\bsnakemake ((?:[a-z]\w*\s*)+)", line):
        bad += [f"snakemake {t}" for t in m.group(1).split() if t not in snake]
    for stage, config in re.findall(r"\b([a-z]+)@([A-Za-z]\w*)\b", line):
        if stage not in stages or (config != "X" and config not in configs):
            bad.append(f"DVC stage {stage}@{config}")
    return bad


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_name_only_commands_options_targets_and_stages_that_exist(page):
    options, make, snake = _isoflow_options(), _make_targets(), _snakemake_targets()
    stages, configs = _dvc_names()
    bad = sorted({b for line in _code_lines(page) for b in _unknown_names(line, options, make, snake, stages, configs)})
    assert not bad, f"{page.relative_to(ROOT)} names what does not exist: {bad}"


def test_the_names_check_catches_a_stale_name():
    options, make, snake = _isoflow_options(), _make_targets(), _snakemake_targets()
    stages, configs = _dvc_names()
    check = lambda line: _unknown_names(line, options, make, snake, stages, configs)  # noqa: E731
    assert check("isoflow optimize --task polarity --model minilm --istar-lambda -1") == []
    assert check("isoflow analyze") == ["isoflow analyze"]
    assert check("isoflow encode --model minilm --dataset polarity") == ["isoflow encode --dataset"]
    assert check("make reproduce-optimize && make report") == [] and check("make reproduce-paper") == [
        "make reproduce-paper"
    ]
    assert check("snakemake correlations --cores 2") == ["snakemake correlations"]
    assert check("dvc repro optimize@paper") == [] and check("dvc repro analysis@paper") == ["DVC stage analysis@paper"]


@pytest.mark.parametrize("caption", sorted((ROOT / "report").glob("*.rst")), ids=lambda p: p.name)
def test_report_captions_are_valid_restructured_text(caption):
    """Snakemake renders every caption with docutils: an error there is printed into the HTML report."""
    import docutils.core
    import docutils.utils

    try:
        docutils.core.publish_doctree(
            caption.read_text(encoding="utf-8"),
            settings_overrides={"report_level": 2, "halt_level": 2, "warning_stream": False},
        )
    except docutils.utils.SystemMessage as exc:
        pytest.fail(f"report/{caption.name}: {exc}")


def test_report_categories_are_valid_link_targets():
    """A section's title is a category of the HTML report, i.e. a reST link target: a colon would end its name."""
    from isoflow.sections import SECTIONS

    assert not [s.title for s in SECTIONS.values() if ":" in s.title]


def test_the_glossary_is_written_from_the_registry():
    """docs/README.md's glossary table is what scripts/generate.py writes from isoflow.sections (edit the
    registry, then run it)."""
    from isoflow.publishing.glossary import END, START
    from isoflow.sections import glossary_table

    page = (ROOT / "docs/README.md").read_text(encoding="utf-8")
    table = page.split(START, 1)[1].split(END, 1)[0]
    assert table == glossary_table(ROOT), "docs/README.md's glossary is stale: run python scripts/generate.py"


def test_the_glossary_links_every_publication_in_its_sections_row():
    """docs/README.md's table: each section's row links every publication the registry gives it that has a README."""
    from isoflow.sections import PUBLICATIONS

    rows = {
        m.group(1): line
        for line in (ROOT / "docs/README.md").read_text(encoding="utf-8").splitlines()
        if (m := re.match(r"^\| `(\w+)` \|", line))
    }
    missing = [
        name
        for name, publication in PUBLICATIONS.items()
        if (ROOT / f"docs/results/{name}/README.md").is_file()
        and f"(results/{name}/README.md)" not in rows.get(publication.section, "")
    ]
    assert not missing, f"docs/README.md does not link these publications in their section's row: {missing}"


CONFIGS = sorted([ROOT / "config.yaml", *(ROOT / "config").glob("*.yaml"), ROOT / "examples/own/config.yaml"])


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_configs_name_only_commands_and_targets_that_exist(config):
    """A config's comments tell how to run it: the commands and targets they name exist."""
    options, make, snake = _isoflow_options(), _make_targets(), _snakemake_targets()
    stages, configs = _dvc_names()
    bad = sorted(
        {b for line in _code_lines(config) for b in _unknown_names(line, options, make, snake, stages, configs)}
    )
    assert not bad, f"{config.relative_to(ROOT)} names what does not exist: {bad}"


@pytest.mark.parametrize(
    "record", sorted((ROOT / "docs/results").glob("*/PUBLISHED.json")), ids=lambda p: p.parent.name
)
def test_each_publication_names_commands_that_exist(record):
    """PUBLISHED.json says how the publication was made and redrawn: with commands and targets that exist."""
    import json

    info = json.loads(record.read_text())
    options, make, snake = _isoflow_options(), _make_targets(), _snakemake_targets()
    stages, configs = _dvc_names()
    lines = [info.get("made_by", ""), *(info.get("redrawn", {}).get("commands") or [])]
    bad = sorted({b for line in lines for b in _unknown_names(line, options, make, snake, stages, configs)})
    assert not bad, f"{record.relative_to(ROOT)} names what does not exist: {bad}"
