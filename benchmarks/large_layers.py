"""Benchmark: every layer of a large model's shape (random weights, benchmarks/model_shapes.py) through `isoflow
layers`, in the dtype asked for: tokens encoded per second, each layer's measuring time, peak host memory and, on a
GPU, peak GPU memory. Not a test; the GPU check runs it on the Llama-3.2-1B shape in bf16
(`bash benchmarks/gpu_check.sh large`), the suite on the tiny shape.

    python benchmarks/large_layers.py --shape llama-3.2-1b --dtype bfloat16 --device cuda --out large.json

The text is examples/own/corpus.txt's 80 sentences in seeded orders, repeated until ``--tokens`` (a timing needs
tokens, not a real corpus: the GPU machine reaches no mirror); the K decision takes one sample of ``--sample-cap``
points and one start (the section's cheap settings).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import model_shapes

from isoflow.layers.settings import BATCH_SIZE  # sentences a batch (isoflow layers' default)

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = ROOT / "examples" / "own" / "corpus.txt"


def text_of(tokens: int, out: Path, corpus: str | None = None, mirror: Path | None = None) -> Path:
    """Sentences in seeded orders until about ``tokens`` words (twice: the tokenizer's pieces outnumber them):
    examples/own/corpus.txt's 80, or a corpus isoflow reads (``brown``: its thousands of types, as a real run's) from
    ``mirror``, nothing downloaded."""
    if corpus is None:
        lines = [line for line in SENTENCES.read_text().splitlines() if line.strip()]
    else:
        from isoflow import corpora

        sentences = corpora.load(corpus, out.parent / "cache", mirror, allow_download=False)
        lines = [" ".join(words) for words in corpora.sample(sentences, 2 * tokens, 0, len)]
    rng, chosen, words = random.Random(0), [], 0
    while words < 2 * tokens:
        order = lines[:]
        rng.shuffle(order)
        chosen += order
        words += sum(len(line.split()) for line in order)
    out.write_text("\n".join(chosen) + "\n")
    return out


class MemoryByStage:
    """The process's resident memory sampled every ``every`` seconds (/proc/self/status: RssAnon, the memory the
    process allocated; RssFile, file pages mapped into it — the safetensors weights, the states store), the peak of
    each in every stage of the run. The stages are marked by wrapping the run's steps (load the model, encode,
    measure the layers, CKA); what lies between them counts to the stage before."""

    STEPS = {"load_encoder": "load", "_encode": "encode", "_measured_layers": "layers", "layer_cka": "cka"}

    def __init__(self, every: float = 0.1):
        self.every, self.stage, self.peaks = every, "start", {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def now() -> dict:
        fields = {}
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                fields[key] = int(value.split()[0]) / 1024  # kB -> MiB
        return fields

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            peak = self.peaks.setdefault(self.stage, {})
            for key, mib in self.now().items():
                peak[key] = max(peak.get(key, 0.0), round(mib, 1))

    def marked(self, module) -> None:
        """Wrap ``module``'s steps (:data:`STEPS`) so that each names its stage while it runs."""
        for name, stage in self.STEPS.items():
            step = getattr(module, name)

            def wrapped(*args, _step=step, _stage=stage, **kwargs):
                self.stage = _stage
                return _step(*args, **kwargs)

            setattr(module, name, wrapped)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def measure(
    shape: str,
    dtype: str,
    device: str,
    tokens: int,
    sample_cap: int,
    work: Path,
    states: str = "all",
    saved: str = "",
    layers: str | None = None,
    corpus: tuple[str, Path] | None = None,
) -> dict:
    """One run of ``isoflow layers --dtype <dtype>`` on the shape's random weights saved in ``saved`` (default: the
    same dtype), measuring the states ``layers`` names (default: every one), over ``corpus`` (its name and mirror;
    default: the example's sentences)."""
    import pandas as pd
    import torch

    from isoflow.layers.cost import peak_memory, store_bytes, type_sums_bytes
    from isoflow.layers.run import run_layers
    from isoflow.models.spec import ModelSpec

    text = text_of(tokens, work / "text.txt", *(corpus or ()))
    t = time.perf_counter()
    # Built in a process of its own, so that this one's peak memory is the run's alone (the weights it built are
    # not what `isoflow layers` holds)
    built = [sys.executable, str(Path(model_shapes.__file__)), shape, "--dtype", saved or dtype, "--text", str(text)]
    made = json.loads(subprocess.run([*built, "--out", str(work / "model")], check=True, capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1])  # fmt: skip
    made["build_seconds"] = round(time.perf_counter() - t, 1)
    settings = run_settings(tokens, sample_cap, states)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    import isoflow.layers.run as layers_run

    t = time.perf_counter()
    with MemoryByStage() as memory:
        memory.marked(layers_run)
        # the cache under the work folder: a narrowed copy (saved wider than loaded) is made there, in the run
        out = run_layers(ModelSpec(str(work / "model"), f"{shape}-random", None, dtype), str(text), settings=settings,
                         out=work / "run", device=device, batch_size=BATCH_SIZE, progress=False,
                         data_dir=work / "data", layers=layers)  # fmt: skip
    wall = time.perf_counter() - t
    meta = json.loads((out / "meta.json").read_text())
    seconds = meta["seconds"]
    n_types = int(pd.read_parquet(out / "layers.parquet")["n_types"].max())  # the types the layers counted
    shape = _shape(made, meta, n_types, settings, dtype)
    predicted = {name: round(value / 2**20, 1) for name, value in peak_memory(shape).items()}  # the formula's, MiB
    layers = {k: round(v, 2) for k, v in seconds.items() if k.startswith("layer")}
    measured = meta.get("layers_measured", list(range(meta["n_layers"])))
    return {
        **made,
        "loaded_dtype": dtype,  # what the run loaded the weights in ("dtype": what they were saved in)
        "device": meta["device"],
        "n_points": meta["n_points"],
        "sentences_used": meta["sentences_used"],  # their first positions: what the second K decision leaves out
        "positions_computed": meta.get("positions_computed"),  # the batches' padded positions: the encoding's work
        "states": states,
        "points_kept": meta.get("points_kept", meta["n_points"]),
        # on disk: every measured state's kept points, float32, and (keeping a sample) its types' sums, float64
        "states_disk_mb": round(store_bytes(shape) / 2**20, 1),
        "n_types": n_types,
        "types_disk_mb": round(type_sums_bytes(shape) / 2**20, 1),
        "n_states": meta["n_layers"],
        "layers_measured": measured,
        "dim": meta["dim"],
        "wall_seconds": round(wall, 1),
        "encode_seconds": round(seconds["encode"], 2),
        "tokens_per_second": round(meta["n_points"] / seconds["encode"], 1),
        "layer_seconds": layers,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},  # every step's, as the run's meta.json has them
        "work": meta.get("work"),  # each layer's arithmetic by part and its seconds (isoflow.layers.work)
        "peak_rss_mb": meta["peak_rss_mb"],
        # MiB by stage: VmRSS = RssAnon (allocated) + RssFile (mapped file pages) + RssShmem
        "memory_by_stage_mb": memory.peaks,
        "predicted_mb": predicted,  # isoflow.layers.cost's formula for this run, in MiB
        "peak_over_predicted": round(meta["peak_rss_mb"] / predicted["peak"], 3),
        "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.startswith("cuda") else None,
        "run_code": meta.get("code"),
        "narrowed_copy": "narrowed_copy" in meta.get("source", {}),  # loaded from a copy in its dtype, made in the run
    }


def run_settings(tokens: int, sample_cap: int, states: str = "all"):
    """The layer settings a run of this benchmark measures at: ``tokens`` points, K-means on one sample of
    ``sample_cap`` points with one start (what a large model's run is sized by), the states kept as ``states``."""
    from isoflow.layers import LayerSettings

    return LayerSettings(max_tokens=tokens, sample_cap=sample_cap, kmeans_samples=1, kmeans_starts=1, states=states)


def _shape(made: dict, meta: dict, n_types: int, settings, dtype: str):
    """This run's shape for isoflow.layers.cost, read back from its record (a batch's points: the batch's sentences
    times the points a sentence gave) with its ``n_types``."""
    from isoflow.layers.cost import RunShape
    from isoflow.models.shapes import BYTES

    n = meta["n_points"]
    return RunShape.at(
        settings,
        weight_bytes=made["parameters"] * BYTES[dtype] if dtype in BYTES else made["weights_bytes"],  # as loaded
        dim=meta["dim"],
        states=meta["n_layers"],
        measured=len(meta.get("layers_measured", range(meta["n_layers"]))),
        points=n,
        types=n_types,
        kept=meta.get("points_kept", n),
        batch_points=round(BATCH_SIZE * n / meta["sentences_used"]),  # a batch's sentences, the points of one
    )


def parser() -> argparse.ArgumentParser:
    """The benchmark's command line (its defaults: what a record's settings are when its command left them out)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", default="llama-3.2-1b", choices=sorted(model_shapes.SHAPES))
    parser.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16", "float16"))
    parser.add_argument(
        "--saved-dtype", default="", choices=("", "float32", "bfloat16", "float16"),
        help="the dtype the weights are saved in (default: --dtype's); the run loads them in --dtype",
    )  # fmt: skip
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--sample-cap", type=int, default=5_000)
    parser.add_argument(
        "--states", default="all", choices=("all", "sample"), help="what the run keeps (docs/layers.md)"
    )
    parser.add_argument(
        "--layers", default=None, metavar="SPEC", help="measure only these states (isoflow layers --layers)"
    )
    parser.add_argument(
        "--corpus", default=None, help="a corpus isoflow reads (brown), its sentences the text (default: the example's)"
    )
    parser.add_argument("--mirror", type=Path, default=None, help="where --corpus is read from (nothing downloaded)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON written")
    return parser


def checking(
    description: str, argv: list[str] | None, why: str, *, mirror: bool = True
) -> tuple[argparse.Namespace, dict, dict]:
    """The command line of a benchmark that checks a run this benchmark made on this machine (--check, --mirror
    (``mirror``: required), --out): its arguments, the checked JSON and this machine's provenance; a JSON made on
    another CPU is refused with ``why`` (what ties the check to the machine)."""
    from isoflow.records import run_provenance

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", type=Path, required=True, help="a benchmarks/large_layers.py JSON made here")
    parser.add_argument("--mirror", type=Path, required=mirror, help="where its corpus is read (nothing downloaded)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = parser.parse_args(argv)
    checked = json.loads(args.check.read_text())
    provenance = run_provenance()
    if provenance["machine"] != checked["provenance"]["machine"]:
        raise SystemExit(f"{args.check}: made on {checked['provenance']['machine']['cpu']}, this is "
                         f"{provenance['machine']['cpu']}; {why}")  # fmt: skip
    return args, checked, provenance


def main(argv: list[str] | None = None) -> int:
    from isoflow.records import run_provenance

    args = parser().parse_args(argv)
    load_before = os.getloadavg()
    provenance = run_provenance()  # the code as it is imported: a file edited while the run goes is not what ran
    with tempfile.TemporaryDirectory() as work:
        corpus = None if args.corpus is None else (args.corpus, args.mirror)
        result = measure(args.shape, args.dtype, args.device, args.tokens, args.sample_cap, Path(work), args.states,
                         args.saved_dtype, args.layers, corpus)  # fmt: skip
    written = {
        "what": "python benchmarks/large_layers.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        # the 1-, 5- and 15-minute load averages before and after: near 2 with nothing else running on 2 cores
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "provenance": provenance,
        "results": [result],
    }
    args.out.write_text(json.dumps(written, indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
