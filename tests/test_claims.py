"""The claims ledger (docs/results/claims.yaml): every quoted number is what its table gives, as the document writes
it; editing either side without the other fails here."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from isoflow.finetune.runs import BASELINE
from isoflow.finetune.verdicts import (
    CLAIM_KEY,
    LINK,
    TREATMENT,
    TWONN,
    leading,
    manipulation_intervals,
    outside_kind,
    publication_claims,
)
from isoflow.finetune.verdicts import CLAIMS as ACCURACY
from isoflow.models.kinds import model_kind
from isoflow.reporting.significance import (
    correlation_interval,
    detectable_effect,
    paired_test,
    seed_interval,
    seeds_for,
    summary_p,
)
from isoflow.reporting.verdicts import family_verdicts, verdict

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "docs/results/claims.yaml"
CLAIMS = yaml.safe_load(LEDGER.read_text(encoding="utf-8"))


def written(value: float, digits: int) -> str:
    """A number as the documents write it: fixed decimals, a Unicode minus."""
    return f"{value:.{digits}f}".replace("-", "−")


def _read(path: Path) -> pd.DataFrame:
    """A CSV or Parquet table; a JSON record as one row whose columns are its key paths joined by '/'."""
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix == ".json":
        return pd.json_normalize(json.loads(path.read_text(encoding="utf-8")), sep="/")
    return pd.read_csv(path)


def kind_of(model: str) -> str:
    """A model's kind (isoflow.models.kinds): a registered name's, else its published pretraining run's config."""
    config = ROOT / "docs/results/pretrain/runs" / model / "config.json"
    return model_kind(model, json.loads(config.read_text(encoding="utf-8")) if config.exists() else None)


@functools.cache
def claims_of(publication: str, epoch: str = "selected") -> pd.DataFrame:
    """Every verdict of a fine-tuning publication, one family, every condition of docs/verdicts.md applied
    (isoflow.finetune.verdicts.publication_claims), from its committed tables."""
    tables = ROOT / "docs/results" / publication / "tables"
    controls, paired = (pd.read_csv(tables / f"finetune_{name}.csv") for name in ("controls", "paired"))
    moved = manipulation_intervals(pd.read_csv(tables / "finetune_manipulation.csv"), paired)
    kinds = {model: kind_of(model) for model in set(controls.model) - {BASELINE}}
    return publication_claims(controls, moved, paired, kinds, epoch=epoch)


def accuracy_verdicts(publication: str, epoch: str = "selected") -> pd.DataFrame:
    """The poster's accuracy claims among a publication's verdicts (:func:`claims_of`)."""
    claims = claims_of(publication, epoch)
    return claims[claims.claim.isin(ACCURACY.values())].reset_index(drop=True)


def word(publication: str, claim: str, reg: str, weight: float, task: str | None = None) -> str:
    """The word of one of a publication's verdicts (:func:`claims_of`), as the documents write it."""
    c = claims_of(publication)
    rows = c[(c.claim == claim) & (c.reg == reg) & (c.weight == weight)]
    rows = rows[rows.task == task] if task else rows
    if len(rows) != 1:
        raise AssertionError(f"{publication}: {len(rows)} verdicts of {claim!r} at {reg} {weight} {task}, not one")
    return markdown(rows.verdict.iloc[0])


def family_of(rows: pd.DataFrame, claimed, effect: str, seeds: str, untested=None) -> list[str]:
    """The words of a family of tests read from a table's paired columns for ``effect`` (``seeds``: the column counting
    the unit of replication): each row's test (isoflow.reporting.significance.paired_test), Holm over the family
    (docs/verdicts.md, "A family of tests")."""
    tests = pd.DataFrame([paired_test(r, effect, int(r[seeds])) for _, r in rows.iterrows()])
    return family_verdicts(
        list(claimed), tests.low, tests.high, tests.p, detectable=tests.detectable, untested_because=untested
    )


def same_pass(runs: pd.DataFrame, parquet: str) -> int:
    """How many of ``runs`` (a sweep's measurements) made the same epoch-0 pass (the pretrained model, before any
    training) as the run measured in ``parquet``: IsoScore*, silhouette and TwoNN equal bit for bit, which runs made on
    one kind of CPU share (docs/results/finetune-smollm2-fair-rerun)."""
    z, r = runs[runs.epoch == 0], pd.read_parquet(ROOT / parquet).iloc[0]
    return int(((z.isoscore == r.isoscore) & (z.silhouette == r.silhouette) & (z.twonn == r.twonn)).sum())


def markdown(text: str) -> str:
    """Text as the documents write it in Markdown: IsoScore* as IsoScore\\*."""
    return text.replace("*", "\\*")


def value_of(claim: dict) -> str:
    tables = claim["table"] if isinstance(claim["table"], list) else [claim["table"]]
    files = [f for p in tables for f in (sorted(ROOT.glob(p)) if "*" in p else [ROOT / p])]
    if not files:
        raise AssertionError(f"{tables} names no file")
    t = pd.concat([_read(f) for f in files], ignore_index=True)
    for column, wanted in (claim.get("row") or {}).items():
        t = t[t[column] == wanted]
    if claim.get("row") and len(t) != 1:
        raise AssertionError(f"{claim['row']} selects {len(t)} rows of {tables}, not one")
    if "expr" in claim:
        helpers = {
            **{"np": np, "pd": pd, "abs": abs, "tuple": tuple, "format": format, "m": written},
            # a verdict is computed by its rule (docs/verdicts.md), never typed: the word written must be the rule's
            **{"verdict": verdict, "detectable": detectable_effect, "seed_interval": seed_interval},
            **{"seeds_for": seeds_for},  # how many seeds a test needs (a README's power statement)
            # a family of tests, Holm over it (docs/verdicts.md): from a table's paired columns, or its p-values
            **{"family_of": family_of, "family": family_verdicts, "correlation_interval": correlation_interval},
            **{"summary_p": summary_p},
            # the rules' conditions, applied the same way everywhere (docs/verdicts.md, "Whose claim it is")
            **{"accuracy": accuracy_verdicts, "kind": kind_of, "outside_kind": outside_kind, "md": markdown},
            **{"word": word, "LINK": LINK, "TWONN": TWONN},  # a fine-tuning publication's verdict, one family
            **{"same_pass": same_pass},  # runs that share a CPU kind's epoch-0 pass
        }
        out = eval(claim["expr"], {**helpers, "t": t})  # noqa: S307 - our own ledger; t global: comprehensions see it
        return out if isinstance(out, str) else written(float(out) * claim.get("scale", 1), claim.get("digits", 4))
    return written(float(t[claim["column"]].iloc[0]) * claim.get("scale", 1), claim.get("digits", 4))


def prose(text: str) -> str:
    """Text as a reader reads it: every run of spaces and line breaks one space, so a quoted string may wrap where the
    document's width puts its line breaks."""
    return " ".join(text.split())


def places(claim: dict) -> list[str]:
    """The documents a claim is quoted in: one path, or a list where several quote the same cells the same way."""
    return claim["where"] if isinstance(claim["where"], list) else [claim["where"]]


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{', '.join(places(c))}: {c['says']!r}"[:90])
def test_a_quoted_number_is_its_tables(claim):
    says = prose(claim["says"])
    for where in places(claim):
        text = prose((ROOT / where).read_text(encoding="utf-8"))
        assert says in text, f"{where} no longer says {claim['says']!r}: update the ledger with the text"
    computed = prose(value_of(claim))
    assert computed == says, f"{claim['where']} says {claim['says']!r} but the table gives {computed!r}"


def test_a_claim_listing_two_documents_fails_where_either_no_longer_says_it():
    claim = next(c for c in CLAIMS if places(c) == ["README.md", "docs/claims.md"])
    test_a_quoted_number_is_its_tables(claim)
    with pytest.raises(AssertionError, match="docs/verdicts.md no longer says"):
        test_a_quoted_number_is_its_tables({**claim, "where": ["README.md", "docs/verdicts.md"]})


def test_a_quoted_string_may_wrap_but_not_change():
    """The ledger reads past line breaks (a document rewrapped still quotes its numbers) and nothing else."""
    assert prose("over the 6\n  seeds: −0.005") == prose("over the 6 seeds:\n−0.005") == "over the 6 seeds: −0.005"
    assert prose("−0.005 [−0.017,\n0.008]") != prose("−0.005 [−0.017,0.008]")


def test_the_check_fails_when_a_quoted_number_is_edited():
    claim = next(c for c in CLAIMS if "column" in c)
    edited = {**claim, "says": claim["says"][:-1] + ("1" if claim["says"][-1] != "1" else "2")}
    assert value_of(edited) != edited["says"]


def test_a_verdict_is_its_rules_and_a_wrong_word_fails():
    """A ledger entry may compute a verdict (`verdict(...)` over a table's seed-level interval and detectable effect):
    the word the document writes must be the one the rule gives. Here on a publication's controls, as the claim "λ < 0
    improves accuracy" reads them."""
    table = "docs/results/finetune-smollm2/tables/finetune_controls.csv"
    claim = {"where": "docs/verdicts.md", "table": table, "row": {"reg": "istar", "weight": -1.0}}
    expr = "verdict(+0.01, t.diff_last_low.iloc[0], t.diff_last_high.iloc[0], detectable=t.detectable_last.iloc[0])"
    row = pd.read_csv(ROOT / table).query("reg == 'istar' and weight == -1.0").iloc[0]
    word = verdict(+0.01, row["diff_last_low"], row["diff_last_high"], detectable=row["detectable_last"])
    assert value_of({**claim, "expr": expr, "says": word}) == word
    for wrong in {"reproduced", "contradicted", "inconclusive", "not seen (could have detected ≥ 0.01)"} - {word}:
        assert value_of({**claim, "expr": expr, "says": wrong}) != wrong


# Where verdicts are written, and the vocabulary's own page (it defines the words; it gives none).
VERDICT_DOCUMENTS = [
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for g in ("docs/*.md", "docs/results/*/README.md") for p in ROOT.glob(g)),
]
VOCABULARY = "docs/verdicts.md"
# the expressions that give a verdict word by its rule
COMPUTING = ("verdict(", "accuracy(", "outside_kind(", "family(", "family_of(", "word(")
BOLD_VERDICT = re.compile(r"\*\*((?:reproduced|contradicted|not seen|inconclusive|untested)\b.*?)\*\*")


def typed_verdicts(document: str, text: str, claims=CLAIMS) -> list[str]:
    """The bold verdict words of ``text`` (the document ``document``) that lie in no ledger entry computing them."""
    computed = [
        prose(c["says"]) for c in claims if document in places(c) and any(f in c.get("expr", "") for f in COMPUTING)
    ]
    flat = prose(text)
    typed = []
    for found in BOLD_VERDICT.finditer(flat):
        spans = [(i, i + len(s)) for s in computed for i in _starts(flat, s)]
        if not any(a <= found.start() and found.end() <= b for a, b in spans):
            typed.append(found.group(0))
    return typed


def _starts(text: str, part: str) -> list[int]:
    found, at = [], text.find(part)
    while at >= 0:
        found.append(at)
        at = text.find(part, at + 1)
    return found


@pytest.mark.parametrize("document", [d for d in VERDICT_DOCUMENTS if d != VOCABULARY])
def test_every_bold_verdict_word_is_computed_by_the_ledger(document):
    """docs/verdicts.md: every verdict word is computed, "untested" too (its entry computes the condition that makes it
    so); a bold verdict typed into a document, outside the ledger entry that computes it, fails here."""
    typed = typed_verdicts(document, (ROOT / document).read_text(encoding="utf-8"))
    assert not typed, f"{document}: {typed} typed, not computed: give each a ledger entry (docs/results/claims.yaml)"


def test_a_typed_verdict_is_found():
    document = "docs/results/finetune-smollm2-fair/README.md"
    text = (ROOT / document).read_text(encoding="utf-8")
    assert typed_verdicts(document, text) == []
    assert typed_verdicts(document, text + "\nSo it is **reproduced** after all.\n") == ["**reproduced**"]
    # the same words, once their entry no longer computes them, count as typed
    uncomputed = [{**c, "expr": "'x'"} if document in places(c) else c for c in CLAIMS]
    assert "**reproduced**" in typed_verdicts(document, text, uncomputed)


# Which run a headline quotes (docs/verdicts.md, "A family of tests"): the one testing its claim best, and, where runs
# of one claim disagree, each of them (isoflow.finetune.verdicts.leading over every fine-tuning publication).
HEADLINES = ("README.md", "docs/claims.md")
FINETUNE_PUBLICATIONS = sorted(p.parent.parent.name for p in ROOT.glob("docs/results/*/tables/finetune_controls.csv"))
QUOTED = re.compile(r"""accuracy\(\s*(["'])([^"']+)\1(?:\s*,\s*(["'])(\w+)\3)?\s*\)\.query\(\s*(["'])(.+?)\5\s*\)""")


@functools.cache
def treatment_of(publication: str) -> tuple[str, int]:
    """What λ names in a publication's I-STAR runs (isoflow.finetune.verdicts.TREATMENT, from one run's record: one
    config sets them for every run) and how many epochs its runs trained."""
    record = next(iter(sorted((ROOT / "docs/results" / publication / "runs").rglob("istar*/seed*.json"))))
    settings = json.loads(record.read_text(encoding="utf-8"))["settings"]
    return "; ".join(f"{k}={settings.get(k)}" for k in TREATMENT), int(settings["epochs"])


def accuracy_tests(publications=FINETUNE_PUBLICATIONS, epoch: str = "selected") -> pd.DataFrame:
    """Every accuracy claim every fine-tuning publication tests, with its treatment and epochs (leading()'s input)."""
    frames = []
    for publication in publications:
        claims = accuracy_verdicts(publication, epoch)
        treatment, epochs = treatment_of(publication)
        frames.append(claims.assign(publication=publication, treatment=treatment, epochs=epochs))
    return pd.concat(frames, ignore_index=True)


def headline_quotes(document: str, claims=CLAIMS, epoch: str = "selected") -> dict[tuple, set[str]]:
    """The accuracy claims a headline document's ledger entries quote (claim key -> the publications quoted on it)."""
    quoted: dict[tuple, set[str]] = {}
    for claim in claims:
        if document not in places(claim):
            continue
        for _, publication, _, at, _, query in QUOTED.findall(claim.get("expr", "")):
            rows = accuracy_tests([publication], at or epoch).query(query)
            for key in rows[CLAIM_KEY].itertuples(index=False):
                quoted.setdefault(tuple(key), set()).add(publication)
    return quoted


@pytest.mark.parametrize("document", HEADLINES)
def test_a_headline_quotes_the_run_that_tests_its_claim_best(document):
    """A headline on an accuracy claim quotes the publication whose runs test it best (the longest-trained, then the
    most powerful) and every publication of the same claim whose word differs from it."""
    leads = leading(accuracy_tests()).set_index(CLAIM_KEY)
    quoted = headline_quotes(document)
    assert quoted, f"{document}: no accuracy claim quoted (the ledger's accuracy(...).query(...) entries)"
    missing = {key: sorted(set(leads.loc[key, "quote"]) - found) for key, found in quoted.items()}
    missing = {key: pubs for key, pubs in missing.items() if pubs}
    assert not missing, f"{document}: a headline leaves out the runs that lead its claim: {missing}"


def test_a_headline_quoting_a_weaker_run_fails():
    """The same check on a ledger whose MiniLM entry quotes the 2-epoch sweep instead of the 4-epoch one."""
    longer = "accuracy('finetune-longer').query('weight == -1')"
    minilm = [c for c in CLAIMS if "README.md" in places(c) and longer in c.get("expr", "")]
    assert minilm, "the README's MiniLM verdict is read from finetune-longer"
    shorter = "accuracy('finetune').query('task == \"glue/sst2\" and weight == -1')"
    weaker = [{**c, "expr": c["expr"].replace(longer, shorter)} for c in minilm]
    quoted = headline_quotes("README.md", weaker)
    (key,) = quoted
    assert leading(accuracy_tests()).set_index(CLAIM_KEY).loc[key, "lead"] == "finetune-longer"
    assert quoted[key] == {"finetune"}
    assert headline_quotes("README.md", minilm)[key] == {"finetune-longer"}


# Every decimal a results README writes is read from a table (the ledger) or declared not measured (constants.yaml).
CONSTANTS = yaml.safe_load((ROOT / "docs/results/constants.yaml").read_text(encoding="utf-8"))
DECIMAL = re.compile(r"(?<![\w.])[−-]?\d+\.\d+(?:e[−-]?\d+)?")
RESULTS_READMES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/results/*/README.md"))


def unsourced_decimals(document: str, text: str, claims=CLAIMS, constants=CONSTANTS) -> list[str]:
    """The decimals of ``text`` (the document ``document``) in no ledger entry's quote and no declared constant."""
    flat = prose(text)
    quoted = [prose(c["says"]) for c in [*claims, *constants] if document in places(c)]
    spans = [(i, i + len(q)) for q in quoted for i in _starts(flat, q)]
    return [
        flat[max(0, m.start() - 30) : m.end() + 10]
        for m in DECIMAL.finditer(flat)
        if not any(a <= m.start() and m.end() <= b for a, b in spans)
    ]


@pytest.mark.parametrize("document", RESULTS_READMES)
def test_every_decimal_of_a_results_readme_is_read_from_a_table_or_declared(document):
    found = unsourced_decimals(document, (ROOT / document).read_text(encoding="utf-8"))
    assert not found, f"{document}: decimals from nowhere (a ledger entry, or docs/results/constants.yaml): {found}"


def test_an_unsourced_decimal_is_found():
    document = RESULTS_READMES[0]
    text = (ROOT / document).read_text(encoding="utf-8")
    assert unsourced_decimals(document, text) == []
    found = unsourced_decimals(document, text + "\nIt took 12.5 minutes.\n")
    assert len(found) == 1 and "12.5" in found[0]
    # a quote of another document does not count here
    assert unsourced_decimals(document, text + "\ndropout 0.1\n") and not unsourced_decimals(
        "docs/results/finetune-smollm2/README.md", "dropout 0.1"
    )
