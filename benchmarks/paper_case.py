"""The benchmarks' shared case: polarity × all-MiniLM-L6-v2 (10,662 × 384), prepared and encoded if missing."""

from __future__ import annotations

TINY_SENTENCES = 300  # a benchmark's --tiny case: this many polarity sentences (half of each class), in seconds


def polarity_minilm(data_dir: str = "data", limit: int | None = None):
    """(task, embeddings) of the paper's polarity run; prepares (through ``$ISOFLOW_MIRROR``) and encodes if needed.
    ``limit``: the first ``limit / 2`` sentences of each class instead (a task ``polarity-<limit>``), for a smoke run
    of the benchmark itself (``--tiny``: its numbers say nothing of speed)."""
    from isoflow.datasets import prepare, read_task, task_dir
    from isoflow.datasets.table import build_task, write_task
    from isoflow.embed import embeddings_dir, encode, load_embeddings

    if not (task_dir("polarity", data_dir) / "meta.json").is_file():
        prepare("polarity", data_dir=data_dir, progress=False)
    name = "polarity"
    if limit is not None:
        full = read_task(task_dir("polarity", data_dir))
        texts, labels = full.items["text"].tolist(), full.examples["label"].tolist()
        name = f"polarity-{limit}"
        if not (task_dir(name, data_dir) / "meta.json").is_file():
            half = limit // 2
            write_task(build_task(name, texts[:half] + texts[-half:], labels[:half] + labels[-half:]),
                       task_dir(name, data_dir))  # fmt: skip
    encode("minilm", name, data_dir=data_dir, progress=False)
    return read_task(task_dir(name, data_dir)), load_embeddings(embeddings_dir("minilm", name, data_dir))[0]


def add_tiny(parser) -> None:
    """The ``--tiny`` option every benchmark on the paper's case has: the whole script on a few hundred sentences."""
    parser.add_argument(
        "--tiny",
        action="store_true",
        help=f"{TINY_SENTENCES} polarity sentences and the fewest repetitions: the script end to end in seconds "
        "(the test suite's run; its numbers say nothing of speed)",
    )


def write_result(out, result) -> None:
    """The benchmark's JSON, written whole or not at all."""
    import json

    from isoflow.atomic import atomic_file

    with atomic_file(out) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
