"""Why did λ = −1 collapse the held-out space under the earlier fine-tuning setup, and does it under I-STAR's?
(docs/results/finetune-diagnosis; ``isoflow finetune-diagnosis``, ``make diagnose-istar``.)

1. **The penalty's pull against the task's**, at the pretrained model: over the same batches of polarity sentences,
   the norm of the gradient (w.r.t. the encoder's weights) of the task loss and of 1 − IsoScore* (λ = 1: the ratio
   scales with |λ|), under three setups — the earlier one (a linear head on L2-normalised sentence embeddings, the
   penalty on the batch's 32 normalised embeddings), I-STAR's (BERT's head on the unnormalised pooled output, the
   penalty on every layer's token states), and I-STAR's head with the penalty on the pooled outputs.
2. **What training does with it**: I-STAR's setup on polarity (1,500 training / 600 held-out sentences, 1 epoch,
   seed 0) at λ ∈ {−1, 0, 1}: held-out accuracy, IsoScore and mean cosine of the pooled outputs and of the token
   points — the numbers of the check that found the collapse, under the new setup.

Writes ``diagnosis.json`` into ``out``, the runs under ``out/runs``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from ..istar import IStarLoss
from ..models.spec import ModelSpec
from .gradients import gradients_norm
from .model import ClassificationHead, SentenceEncoder, load_encoder, penalty_points


def gradient_ratios(encoder: SentenceEncoder, texts: list[str], y: np.ndarray, batches: int, seed: int) -> dict:
    """Per setup: median over batches of ‖∇ task loss‖, ‖∇ (1 − IsoScore*)‖ and their ratio (penalty / task)."""
    torch.manual_seed(seed)
    params = [p for p in encoder.parameters() if p.requires_grad]
    k = int(y.max()) + 1
    heads = {
        "linear on normalised": torch.nn.Linear(encoder.dim, k),
        "BERT head": ClassificationHead(encoder.dim, k, dropout=0.0),
    }
    setups = {
        "earlier: linear head on normalised embeddings, penalty on them": ("linear on normalised", "normalised"),
        "I-STAR: BERT head on pooled output, penalty on every layer's tokens": ("BERT head", "tokens-all-layers"),
        "I-STAR head, penalty on the pooled outputs": ("BERT head", "pooled"),
    }
    order = np.random.default_rng(seed).permutation(len(texts))
    encoder.eval()  # dropout off: the same forward pass for both gradients
    out = {}

    def forward(idx, head, head_name, points):
        pooled, states, mask = encoder(encoder.tokenize([texts[i] for i in idx], None, "cpu"), hidden_states=True)
        if head_name == "linear on normalised":
            emb = torch.nn.functional.normalize(pooled, dim=1)
            return head(emb), emb
        return head(pooled), penalty_points(points, pooled, states, mask)

    for name, (head_name, points) in setups.items():
        head = heads[head_name]
        penalty_of = IStarLoss(1.0, 0.2)  # Σ_S: the covariance of these batches' points, as training estimates it
        with torch.no_grad():
            for b in range(batches):
                penalty_of.update_reference(forward(order[b * 32 : (b + 1) * 32], head, head_name, points)[1])
        rows = []
        for b in range(batches):
            idx = order[b * 32 : (b + 1) * 32]
            logits, pts = forward(idx, head, head_name, points)
            task = torch.nn.functional.cross_entropy(logits, torch.as_tensor(y[idx]))
            penalty = penalty_of(pts)
            g_task = torch.autograd.grad(task, params, retain_graph=True, allow_unused=True)
            g_pen = torch.autograd.grad(penalty, params, allow_unused=True)
            norms = (gradients_norm(g_task), gradients_norm(g_pen))
            rows.append((*norms, float(task.detach()), float(penalty.detach()), pts.shape[0]))
        a = np.array(rows)
        out[name] = {
            "task_grad_norm": float(np.median(a[:, 0])),
            "penalty_grad_norm": float(np.median(a[:, 1])),
            "ratio_penalty_to_task": float(np.median(a[:, 1] / a[:, 0])),
            "task_loss": float(np.median(a[:, 2])),
            "one_minus_isoscore_star": float(np.median(a[:, 3])),
            "points_per_batch": int(np.median(a[:, 4])),
        }
    return out


def model_gradients(
    task: str,
    model: str | os.PathLike | ModelSpec,
    *,
    data_dir: str | os.PathLike = "data",
    task_path: str | os.PathLike | None = None,
    raw_dir: str | os.PathLike | None = None,
    mirror=None,
    pooling: str = "auto",
    batches: int = 10,
    seed: int = 0,
) -> dict:
    """Part 1 of the diagnosis for any model fine-tuning takes (a built-in name, a folder, a hub id, a GGUF file; or
    a :class:`~isoflow.models.spec.ModelSpec`, which names the outputs) on a
    prepared single-label task: the task loss's and 1 − IsoScore*'s gradient norms at the pretrained model, per setup
    (:func:`gradient_ratios`), over ``batches`` batches of 32 of the task's sentences (a seeded stratified subset; the
    first text of a pair). On the CPU, in float32. Returns the numbers with what was measured and the provenance."""
    from ..records import run_provenance
    from ..run_inputs import run_inputs
    from .data import examples_of, stratified_subset

    t0 = time.perf_counter()
    inputs = run_inputs(
        device="cpu",
        task=task,
        task_path=task_path,
        model=model,
        data_dir=data_dir,
        raw_dir=raw_dir,
        mirror=mirror,
    )
    resolved = inputs.model
    ex = stratified_subset(examples_of(inputs.task), 32 * batches, seed)
    if len(ex) < 32 * batches:
        raise ValueError(f"{task}: {len(ex)} examples, fewer than {batches} batches of 32; give fewer --batches")
    encoder = load_encoder(resolved, pooling, inputs.device)
    gradients = gradient_ratios(encoder, list(ex.a), ex.y, batches, seed)
    return {
        "task": task,
        "model": resolved.name,
        "pooling": encoder.pooling,
        "batches_of_32": batches,
        "gradients_at_the_pretrained_model": gradients,
        "seconds": round(time.perf_counter() - t0, 1),
        **run_provenance(),
    }


def diagnose(
    out: str | os.PathLike,
    *,
    data_dir: str | os.PathLike = "data/reproduce-offline",
    raw_dir: str | os.PathLike = "data/raw",
    mirror=None,
    batches: int = 10,
) -> dict:
    """The diagnosis (module docstring): the gradients at the pretrained model, then λ ∈ {−1, 0, 1} trained for an
    epoch; writes ``out/diagnosis.json`` and returns it. The runs use the settings they were published with (no
    validation split: it did not exist then)."""
    import pandas as pd

    from ..datasets import prepare, read_task
    from ..datasets.table import build_task, write_task
    from ..models import SENTENCE_MODELS
    from ..models.sbert import load_sentence_model
    from ..records import run_provenance
    from .data import examples_of, stratified_subset
    from .run import run_finetune

    t0 = time.perf_counter()
    data = Path(data_dir)
    full = read_task(prepare("polarity", data_dir=data, raw_dir=raw_dir, mirror=mirror, progress=False))
    ex = stratified_subset(examples_of(full), 2100)  # 1,500 training + 600 held-out (10 % = 210 would be too few)
    sub = build_task("polarity-2100", ex.a, [ex.label_names[i] for i in ex.y])
    write_task(sub, data / "tasks/polarity-2100", force=True)
    st = load_sentence_model(SENTENCE_MODELS["minilm"], "cpu", raw_dir, mirror)
    result = {
        "gradients_at_the_pretrained_model": gradient_ratios(
            SentenceEncoder.from_sentence_transformer(st), ex.a, ex.y, batches, 0
        )
    }
    runs = {}
    for lam in (-1.0, 0.0, 1.0):
        parquet, record = run_finetune(
            "polarity-2100",
            "minilm",
            0,
            data_dir=data,
            raw_dir=raw_dir,
            mirror=mirror,
            results=Path(out) / "runs",
            device="cpu",
            progress=False,
            istar_lambda=lam,
            epochs=1,
            heldout_fraction=600 / 2100,
            validation_fraction=0.0,
        )
        epochs = pd.read_parquet(parquet)
        cols = ["accuracy", "isoscore", "cosine_anisotropy", "isoscore_points", "cosine_points", "isoscore_star"]
        runs[f"lambda {lam:g}"] = {
            "before": epochs[cols].iloc[0].to_dict(),
            "after 1 epoch": epochs[cols].iloc[-1].to_dict(),
            "n_train": json.loads(record.read_text())["n_train"],
        }
    result["training_polarity_1500_sentences_1_epoch"] = runs
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result.update(run_provenance())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "diagnosis.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
