"""GLUE training sets (Wang et al., 2019), unlabelled or malformed rows removed.

Canonical sources are those of GLUE's ``download_glue_data.py``: one zip per task
on dl.fbaipublicfiles.com, and for MRPC the SentEval copy of the MSR paraphrase
corpus plus GLUE's list of dev ids (GLUE's MRPC train = MSR train minus the dev
ids: 3,668 pairs). Hashes are pinned where a verified copy of the file exists
(CoLA, SST-2, MRPC, RTE, WNLI); QQP, MNLI and QNLI are not pinned, so every
copy of them is parsed before it enters the cache. Labels must belong to the
task's label set (binary "0"/"1", or MNLI's three and QNLI/RTE's two NLI
labels): any other value is an error naming the file and line.
Licenses: see each resource (CoLA: excerpts of published works; others: as
distributed by GLUE).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..fetch import Resource
from .table import DataFormatError, TaskData, build_task, source_record

GLUE_ZIP = "https://dl.fbaipublicfiles.com/glue/data/{}.zip"


@dataclass(frozen=True)
class GlueTask:
    name: str
    resource: Resource
    columns: tuple[str, ...]  # text column(s) then label column; header names, or positions for header-less files
    labels: tuple[str, ...]  # the task's label set: any other value is an error
    header: bool = True
    dev: Resource | None = None  # the validation file (same zip), read when it is at hand


def _task(
    name: str,
    task_dir: str,
    zip_name: str,
    columns: tuple[str, ...],
    labels: tuple[str, ...],
    *,
    header: bool = True,
    sha256: str | None = None,
    size: int | None = None,
    license: str = "",
) -> GlueTask:
    """A GLUE task read from ``<task_dir>/train.tsv`` of its zip; every copy is parsed (columns, labels) on arrival."""

    def check(path: Path) -> None:
        read_tsv(path, columns, header, labels=labels, task=f"glue/{name}")

    resource = Resource(
        name=f"glue/{task_dir}/train.tsv",
        urls=(GLUE_ZIP.format(zip_name),),
        member=f"{task_dir}/train.tsv",
        sha256=sha256,
        size=size,
        license=license,
        check=check,
    )
    dev_file = "dev_matched.tsv" if name == "mnli" else "dev.tsv"
    dev = Resource(
        name=f"glue/{task_dir}/{dev_file}",
        urls=(GLUE_ZIP.format(zip_name),),
        member=f"{task_dir}/{dev_file}",
        license=license,
        check=check,
        note="GLUE validation split; not pinned",
    )
    return GlueTask(name, resource, columns, labels, header, dev)


BINARY = ("0", "1")
NLI3 = ("contradiction", "entailment", "neutral")
NLI2 = ("entailment", "not_entailment")
TASKS: dict[str, GlueTask] = {
    "cola": _task(
        "cola",
        "CoLA",
        "CoLA",
        ("3", "1"),
        BINARY,
        header=False,  # no header: source, label, original label, sentence
        sha256="cb368ebeb9f27d7ad03720d27ddc95687a311bdb100781a2fe59a5f5b1bc0624",
        size=428590,
        license="excerpts of published works; research use (CoLA README)",
    ),
    "sst2": _task(
        "sst2",
        "SST-2",
        "SST-2",
        ("sentence", "label"),
        BINARY,
        sha256="48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1",
        size=3806081,
    ),
    "qqp": _task("qqp", "QQP", "QQP-clean", ("question1", "question2", "is_duplicate"), BINARY),
    "mnli": _task("mnli", "MNLI", "MNLI", ("sentence1", "sentence2", "gold_label"), NLI3),
    "qnli": _task("qnli", "QNLI", "QNLIv2", ("question", "sentence", "label"), NLI2),
    "rte": _task(
        "rte",
        "RTE",
        "RTE",
        ("sentence1", "sentence2", "label"),
        NLI2,
        sha256="41e3a9b063433392343fad9e962cf2f58b681c78d8f71592f4186f0837246c5c",
        size=846226,
    ),
    "wnli": _task(
        "wnli",
        "WNLI",
        "WNLI",
        ("sentence1", "sentence2", "label"),
        BINARY,
        sha256="9a88e9d54b6861cc796a088e9acf4f5f65064a9ef65ae6fa7a688b28391e5c9a",
        size=99411,
    ),
}
MRPC_COLUMNS = ("#1 ID", "#2 ID", "#1 String", "#2 String", "Quality")
MRPC_TRAIN = Resource(
    name="glue/MRPC/msr_paraphrase_train.txt",
    urls=("https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_train.txt",),
    sha256="60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89",
    size=1047044,
    license="Microsoft Research Paraphrase Corpus license",
)
MRPC_DEV_IDS = Resource(
    name="glue/MRPC/dev_ids.tsv",
    urls=(
        "https://firebasestorage.googleapis.com/v0/b/mtl-sentence-representations.appspot.com/o/data%2Fmrpc_dev_ids.tsv"
        "?alt=media&token=ec5c0836-31d5-48f4-b431-7480817f1adc",
    ),
    sha256="971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7",
    size=6222,
)
MRPC_RESOURCES = (MRPC_TRAIN, MRPC_DEV_IDS)


def read_tsv(
    path: Path, columns: tuple[str, ...], header: bool = True, *, labels: tuple[str, ...] | None = None, task: str = ""
) -> tuple[list[list[str]], int]:
    """Rows of the wanted columns (GLUE TSVs: tab-separated, no quoting). Returns (rows, dropped).

    A missing header column is an error naming the file and the column; a row
    with too few fields or an empty label is dropped and counted; a label
    outside ``labels`` (the task's label set) is an error naming the line.
    """
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            lines = fh.read().split("\n")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 text (byte {exc.start}); is this the GLUE training file?") from exc
    if lines and lines[-1] == "":
        lines.pop()
    if header:
        if not lines:
            raise DataFormatError(f"{path}: empty file; expected a header with the columns {list(columns)}")
        names = lines[0].rstrip("\r").split("\t")
        missing = [c for c in columns if c not in names]
        if missing:
            raise DataFormatError(
                f"{path}: header has no column(s) {missing}; found {names}. Is this the GLUE training file of the "
                f"right task?"
            )
        pos = [names.index(c) for c in columns]
        body = lines[1:]
    else:
        pos = [int(c) for c in columns]
        body = lines
    width = max(pos) + 1
    rows, dropped = [], 0
    first_line = 2 if header else 1
    for lineno, line in enumerate(body, first_line):
        fields = line.rstrip("\r").split("\t")
        if len(fields) < width or not fields[pos[-1]].strip():
            dropped += 1
            continue
        row = [fields[p] for p in pos]
        if labels is not None and row[-1].strip() not in labels:
            raise DataFormatError(
                f"{path}:{lineno}: label {row[-1].strip()!r} is not one of {task or 'the task'}'s labels "
                f"{list(labels)}; "
                "the file is corrupt or not the GLUE training file of this task"
            )
        rows.append(row)
    if not rows:
        raise DataFormatError(f"{path}: no usable rows (need at least {width} tab-separated fields and a label)")
    return rows, dropped


def dev_resources(task: str) -> tuple[Resource, ...]:
    """The files a task's validation split is built from (MRPC's: the same two as its training split)."""
    return MRPC_RESOURCES if task == "mrpc" else (TASKS[task].dev,)


def build(task: str, paths: dict[str, Path], split: str = "train") -> TaskData:
    """The training split (GLUE's train.tsv) or, with ``split="dev"``, the validation split (dev.tsv; MNLI:
    dev_matched.tsv; MRPC: the MSR training pairs whose ids GLUE lists as dev)."""
    if task == "mrpc":
        return build_mrpc(paths, split)
    spec = TASKS[task]
    res = spec.resource if split == "train" else spec.dev
    path = paths[res.name]
    rows, dropped = read_tsv(path, spec.columns, spec.header, labels=spec.labels, task=f"glue/{task}")
    texts = [r[0] for r in rows] if len(spec.columns) == 2 else [(r[0], r[1]) for r in rows]
    name = f"glue/{task}" + ("" if split == "train" else "-dev")
    return build_task(
        name,
        texts,
        [r[-1].strip() for r in rows],
        sources=[source_record(res, path)],
        extra={"dropped_rows": dropped, "split": split},
    )


def build_mrpc(paths: dict[str, Path], split: str = "train") -> TaskData:
    """GLUE's MRPC train: MSR paraphrase train minus GLUE's dev id pairs (as download_glue_data.py builds it); with
    ``split="dev"``, exactly those dev pairs (408)."""
    train, ids = paths[MRPC_TRAIN.name], paths[MRPC_DEV_IDS.name]
    dev = set()
    for lineno, line in enumerate(ids.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            parts = line.strip().split("\t")
            if len(parts) != 2:
                raise DataFormatError(f"{ids}:{lineno}: expected two tab-separated ids, got {line!r}")
            dev.add(tuple(parts))
    rows, dropped = read_tsv(train, MRPC_COLUMNS, labels=BINARY, task="glue/mrpc")
    kept = [r for r in rows if ((r[0], r[1]) in dev) == (split == "dev")]
    return build_task(
        "glue/mrpc" + ("" if split == "train" else "-dev"),
        [(r[2], r[3]) for r in kept],
        [r[4].strip() for r in kept],
        sources=[source_record(MRPC_TRAIN, train), source_record(MRPC_DEV_IDS, ids)],
        extra={
            "dropped_rows": dropped,
            "dev_pairs_removed" if split == "train" else "dev_pairs": len(rows) - len(kept)
            if split == "train"
            else len(kept),
            "split": split,
        },
    )
