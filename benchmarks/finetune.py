"""Benchmark: fine-tuning speed (sentences per second, training and held-out evaluation) and what the I-STAR penalty
adds per step at batch 32, with MiniLM on polarity sentences; and what the paper-scale config's fine-tuning sweep
costs at the measured per-step time.

Not a test. Variants alternate (order rotated per repeat) in one process; medians are reported. Writes
``benchmarks/results/finetune.json`` (``--device cuda`` writes ``finetune-cuda.json``). Run:
``python benchmarks/finetune.py`` (prepares polarity through ``$ISOFLOW_MIRROR`` if needed).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results"
# The paper config's fine-tuning sweep: 4 GLUE tasks x 2 models x 8 lambdas x 5 seeds x 3 epochs; training examples of
# SST-2, CoLA, MRPC, RTE (GLUE train sizes), batch 32.
PAPER_TRAIN = {"glue/sst2": 67_349, "glue/cola": 8_551, "glue/mrpc": 3_668, "glue/rte": 2_490}
PAPER_RUNS_PER_TASK = 2 * 8 * 5
PAPER_EPOCHS = 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--steps", type=int, default=8, help="training steps per timed run (default 8)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, help="JSON output (default benchmarks/results/finetune[-cuda].json)")
    from paper_case import add_tiny

    add_tiny(parser)
    args = parser.parse_args()
    if args.tiny:
        args.steps, args.repeats = 1, 1
    sample = 64 if args.tiny else None  # sentences for Σ_S and the held-out encoding (else 512 and 1,024)

    from isoflow.datasets import prepare, read_task, task_dir
    from isoflow.finetune.data import examples_of
    from isoflow.finetune.model import SentenceEncoder, penalty_points
    from isoflow.istar import IStarLoss
    from isoflow.models import SENTENCE_MODELS
    from isoflow.models.sbert import load_sentence_model
    from isoflow.records import run_provenance

    if not (task_dir("polarity", args.data_dir) / "meta.json").is_file():
        prepare("polarity", data_dir=args.data_dir, progress=False)
    ex = examples_of(read_task(task_dir("polarity", args.data_dir)))
    device = torch.device(args.device)
    encoder = SentenceEncoder.from_sentence_transformer(
        load_sentence_model(SENTENCE_MODELS["minilm"], str(device), Path(args.data_dir) / "raw")
    ).to(device)
    head = torch.nn.Linear(encoder.dim, 2).to(device)
    opt = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], lr=2e-5)
    batch = 8 if args.tiny else 32  # --tiny checks that the script runs, not the rate

    def pooled(texts: list[str], size: int = 64) -> torch.Tensor:
        """The encoder's pooled outputs of ``texts``, without gradients."""
        with torch.no_grad():
            return torch.cat(
                [encoder(encoder.tokenize(texts[i : i + size], None, device))[0] for i in range(0, len(texts), size)]
            )

    reference = pooled(ex.a[: sample or 512]).double()

    def train_steps(points: str | None) -> float:
        istar = IStarLoss.from_points(1.0, 0.2, reference) if points else None
        encoder.train()
        t = time.perf_counter()
        for i in range(args.steps):
            j = (i * batch) % (len(ex) - batch)
            emb, states, mask = encoder(
                encoder.tokenize(ex.a[j : j + batch], None, device), hidden_states=points == "tokens"
            )
            loss = torch.nn.functional.cross_entropy(head(emb), torch.as_tensor(ex.y[j : j + batch], device=device))
            if istar is not None:
                loss = loss + istar(
                    penalty_points("pooled" if points == "pooled" else "tokens-all-layers", emb, states, mask)
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t) / args.steps

    variants = {"plain (lambda 0)": None, "I-STAR, pooled points": "pooled", "I-STAR, token points": "tokens"}
    names = list(variants)
    for v in variants.values() if not args.tiny else ():
        train_steps(v)  # warm-up
    times = {name: [] for name in names}
    for r in range(args.repeats):
        for name in names[r % 3 :] + names[: r % 3]:
            times[name].append(train_steps(variants[name]))
    per_step = {name: statistics.median(t) for name, t in times.items()}
    t = time.perf_counter()
    pooled(ex.a[: sample or 1024])
    eval_rate = (sample or 1024) / (time.perf_counter() - t)
    plain = per_step["plain (lambda 0)"]
    steps_paper = sum(math.ceil(0.9 * n / batch) for n in PAPER_TRAIN.values()) * PAPER_RUNS_PER_TASK * PAPER_EPOCHS
    result = {
        "case": f"all-MiniLM-L6-v2, polarity sentences, batch {batch}, AdamW; one step = forward, backward, update",
        "seconds_per_step_median": per_step,
        "seconds_per_step_all": times,
        "train_sentences_per_second": {name: batch / s for name, s in per_step.items()},
        "penalty_overhead_vs_plain": {name: s / plain - 1.0 for name, s in per_step.items()},
        "eval_sentences_per_second": eval_rate,
        "paper_config_finetune_steps": steps_paper,
        "paper_config_finetune_hours_at_this_rate_minilm": steps_paper * plain / 3600 / 2,  # half the runs are MiniLM's
        "provenance": run_provenance(),  # the commit and versions that made these numbers
        "environment": {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "device": str(device),
            "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        },
    }
    for name, s in per_step.items():
        print(
            f"{name:24s} {s * 1000:7.0f} ms/step  {batch / s:6.1f} sentences/s  ({(s / plain - 1) * 100:+.1f} % vs "
            f"plain)"
        )
    print(
        f"held-out encoding: {eval_rate:.0f} sentences/s; the paper config's MiniLM fine-tuning runs: "
        f"{steps_paper // 2} steps, ~{result['paper_config_finetune_hours_at_this_rate_minilm']:.0f} h at this rate"
    )
    from paper_case import write_result

    write_result(args.out or RESULTS / ("finetune-cuda.json" if device.type == "cuda" else "finetune.json"), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
