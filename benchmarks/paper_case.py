"""The benchmarks' shared case: polarity × all-MiniLM-L6-v2 (10,662 × 384), prepared and encoded if missing."""

from __future__ import annotations


def polarity_minilm(data_dir: str = "data"):
    """(task, embeddings) of the paper's polarity run; prepares (through ``$ISOFLOW_MIRROR``) and encodes if needed."""
    from isoflow.datasets import prepare, read_task, task_dir
    from isoflow.embed import embeddings_dir, encode, load_embeddings

    if not (task_dir("polarity", data_dir) / "meta.json").is_file():
        prepare("polarity", data_dir=data_dir, progress=False)
    encode("minilm", "polarity", data_dir=data_dir, progress=False)
    return read_task(task_dir("polarity", data_dir)), load_embeddings(embeddings_dir("minilm", "polarity", data_dir))[0]


def write_result(out, result) -> None:
    """The benchmark's JSON, written whole or not at all."""
    import json

    from isoflow.atomic import atomic_file

    with atomic_file(out) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
