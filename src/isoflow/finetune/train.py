"""Fine-tuning a sentence encoder with I-STAR (Rudman & Eickhoff 2024), measured on held-out data after every epoch.

The whole encoder (transformer and pooling, as sentence-transformers builds it) and a linear head (d → k; pairs:
2d → k on [u; v], as in the table experiment) are trained with AdamW on cross-entropy plus the I-STAR term
λ·(1 − IsoScore*_ζ(points of the batch)), the same :class:`~isoflow.istar.IStar` the table experiment
uses. Points: the batch's pooled sentence embeddings (pairs: both sentences), what the classifier sees; or, with
``istar_points="tokens"``, the token states of every layer but the embedding layer, padding removed. Σ_S is
re-estimated at the start of every epoch, without gradients, from a seeded sample of training sentences (I-STAR's
code does the same from the training set).

At epoch 0 (before training) and after every epoch, on the held-out examples: loss, accuracy, the GLUE task's own
metric (MCC for CoLA, F1 of the positive class for MRPC), IsoScore and IsoScore* of the held-out sentence
embeddings, the silhouette of the classified representations w.r.t. the labels, TwoNN and LID of the sentence
embeddings, and their mean cosine. Every training step records its loss and penalty.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from .. import interrupt
from ..istar import DEFAULT_ZETA, IStar, check_istar
from ..metrics import cosine_anisotropy, encode_labels, isoscore, lid_mle, sample_rows, silhouette_tensor, twonn
from ..progress import progress_bar
from .data import Examples
from .model import SentenceEncoder, token_points

POINTS = ("pooled", "tokens")
TASK_METRICS = {"glue/cola": "mcc", "glue/mrpc": "f1", "glue/qqp": "f1"}


@dataclass
class FinetuneSettings:
    task: str
    model: str
    seed: int
    istar_lambda: float = 0.0
    zeta: float = DEFAULT_ZETA
    epochs: int = 1
    batch_size: int = 32
    lr: float = 2e-5
    weight_decay: float = 0.01
    max_train: int = 0  # 0: every training example
    heldout_fraction: float = 0.1  # when the task has no validation split at hand
    max_heldout: int = 0  # 0: every held-out example
    istar_points: str = "pooled"
    shrinkage_sentences: int = 2048  # training sentences Σ_S is estimated from, every epoch
    eval_batch_size: int = 64
    sample_cap: int = 20_000
    k_lid: int = 20

    def __post_init__(self):
        def bad(name, want):
            raise ValueError(f"{name} must be {want}; got {getattr(self, name)!r}")

        for name, low in (("seed", 0), ("epochs", 1), ("batch_size", 2), ("max_train", 0), ("max_heldout", 0),
                          ("shrinkage_sentences", 2), ("eval_batch_size", 1), ("sample_cap", 3), ("k_lid", 2)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                bad(name, f"an integer >= {low}")
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (name == "lr" and v == 0):
                bad(name, "a finite number > 0" if name == "lr" else "a finite number >= 0")
        if not 0.0 < self.heldout_fraction < 1.0:
            bad("heldout_fraction", "in (0, 1)")
        if self.istar_points not in POINTS:
            bad("istar_points", f"one of {', '.join(POINTS)}")
        check_istar(self.istar_lambda, self.zeta)


@dataclass
class FinetuneResult:
    settings: FinetuneSettings
    epochs: list[dict]
    steps: list[dict]
    info: dict = field(default_factory=dict)


def _batches(n: int, size: int, gen: torch.Generator) -> list[torch.Tensor]:
    order = torch.randperm(n, generator=gen)
    return [order[i : i + size] for i in range(0, n, size)]


def _texts(ex: Examples, idx) -> list[str]:
    """The sentences a batch encodes: a's then (pairs) b's."""
    idx = [int(i) for i in idx]
    return [ex.a[i] for i in idx] + ([ex.b[i] for i in idx] if ex.pair else [])


def _reps(emb: torch.Tensor, pair: bool) -> torch.Tensor:
    if not pair:
        return emb
    half = emb.shape[0] // 2
    return torch.cat([emb[:half], emb[half:]], dim=1)


def _task_metric(task: str, y: np.ndarray, pred: np.ndarray) -> tuple[str, float]:
    from sklearn.metrics import f1_score, matthews_corrcoef

    kind = TASK_METRICS.get(task)
    if kind == "mcc":
        return "mcc", float(matthews_corrcoef(y, pred))
    if kind == "f1":
        return "f1", float(f1_score(y, pred))
    return "accuracy", float((y == pred).mean())


def shrinkage_points(encoder: SentenceEncoder, train: Examples, s: FinetuneSettings, device, epoch: int) -> torch.Tensor:
    """The points Σ_S is estimated from: a seeded sample of training sentences, encoded without gradients."""
    n = len(train)
    idx = sample_rows(n, max(1, s.shrinkage_sentences // (2 if train.pair else 1)), s.seed * 1000 + epoch)
    idx = torch.arange(n) if idx is None else idx.cpu()
    texts = _texts(train, idx)
    if s.istar_points == "pooled":
        return encoder.encode(texts, device, s.eval_batch_size).double()
    was = encoder.training
    encoder.eval()
    parts = []
    with torch.no_grad():
        for i in range(0, len(texts), s.eval_batch_size):
            _, states, mask = encoder(encoder.tokenize(texts[i : i + s.eval_batch_size], device), hidden_states=True)
            parts.append(token_points(states, mask).double())
    encoder.train(was)
    return torch.cat(parts)


def evaluate(encoder: SentenceEncoder, head: torch.nn.Linear, ex: Examples, s: FinetuneSettings, istar: IStar, device) -> dict:
    """Held-out measurements of the current encoder and head."""
    emb = encoder.encode(_texts(ex, range(len(ex))), device, s.eval_batch_size)
    n = len(ex)
    reps = torch.cat([emb[:n], emb[n:]], dim=1) if ex.pair else emb
    with torch.no_grad():
        logits = head(reps)
        y = torch.as_tensor(ex.y, device=device)
        loss = float(torch.nn.functional.cross_entropy(logits, y))
        pred = logits.argmax(dim=1).cpu().numpy()
    name, value = _task_metric(s.task, ex.y, pred)
    pick = sample_rows(reps.shape[0], s.sample_cap, s.seed, device)
    r, labels = (reps, y) if pick is None else (reps[pick], y[pick])
    pts = emb if emb.shape[0] <= s.sample_cap else emb[sample_rows(emb.shape[0], s.sample_cap, s.seed, device)]
    return {
        "loss": loss,
        "accuracy": float((pred == ex.y).mean()),
        "metric_name": name,
        "metric": value,
        "isoscore": isoscore(emb),
        "isoscore_star": float(istar.isoscore_star(emb.double(), torch.float64)),
        "silhouette": float(silhouette_tensor(r, encode_labels(labels))) if len(torch.unique(labels)) > 1 else float("nan"),
        "twonn": twonn(pts),
        "lid_mle": lid_mle(pts, k=min(s.k_lid, pts.shape[0] - 1)),
        "cosine_anisotropy": cosine_anisotropy(emb),
    }




def finetune(encoder: SentenceEncoder, train: Examples, heldout: Examples, s: FinetuneSettings, *, device="cpu",
             progress: bool | None = None, callback=None) -> FinetuneResult:
    """Train, measuring before training and after every epoch. A NaN stops the run at its epoch; the result then says
    ``info["diverged_at_epoch"]``. ``callback(epoch, step, loss)`` is called after every step (tests use it)."""
    device = torch.device(device)
    torch.manual_seed(s.seed)
    encoder.to(device).train()
    k = len(train.label_names)
    head = torch.nn.Linear(encoder.dim * (2 if train.pair else 1), k).to(device)
    opt = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], lr=s.lr, weight_decay=s.weight_decay)
    gen = torch.Generator().manual_seed(s.seed)
    istar = IStar(s.istar_lambda, s.zeta, None, torch.float32)
    epochs, steps = [], []
    timing = {"train_seconds": 0.0, "train_sentences": 0, "eval_seconds": 0.0, "eval_sentences": 0, "shrinkage_seconds": 0.0}
    diverged_at = None
    n_steps = s.epochs * math.ceil(len(train) / s.batch_size)
    bar = progress_bar(progress, n_steps, f"{s.task} x {s.model} λ={s.istar_lambda:g} seed {s.seed}", "step")

    def refresh_shrinkage(epoch: int) -> None:
        nonlocal istar
        t = time.perf_counter()
        if s.zeta:
            istar = istar.with_shrinkage_from(shrinkage_points(encoder, train, s, device, epoch))
        timing["shrinkage_seconds"] += time.perf_counter() - t

    def measure(epoch: int) -> None:
        t = time.perf_counter()
        row = {"epoch": epoch, **evaluate(encoder, head, heldout, s, istar, device)}
        timing["eval_seconds"] += time.perf_counter() - t
        timing["eval_sentences"] += len(heldout) * (2 if heldout.pair else 1)
        epochs.append(row)

    try:
        refresh_shrinkage(0)
        measure(0)
        step = 0
        for epoch in range(1, s.epochs + 1):
            if epoch > 1:
                refresh_shrinkage(epoch - 1)
            for idx in _batches(len(train), s.batch_size, gen):
                t = time.perf_counter()
                texts = _texts(train, idx)
                emb, states, mask = encoder(encoder.tokenize(texts, device), hidden_states=s.istar_points == "tokens")
                logits = head(_reps(emb, train.pair))
                loss = torch.nn.functional.cross_entropy(logits, torch.as_tensor(train.y[idx.numpy()], device=device))
                penalty = torch.zeros((), device=device)
                if istar.active:
                    points = emb if s.istar_points == "pooled" else token_points(states, mask)
                    penalty = istar.penalty(points)
                objective = loss + penalty
                if not torch.isfinite(objective):
                    diverged_at = epoch
                    raise FloatingPointError(f"loss became NaN/inf at epoch {epoch}, step {step} (diverged)")
                opt.zero_grad(set_to_none=True)
                objective.backward()
                opt.step()
                step += 1
                timing["train_seconds"] += time.perf_counter() - t
                timing["train_sentences"] += len(texts)
                steps.append({"step": step, "epoch": epoch, "loss": float(loss.detach()), "penalty": float(penalty.detach())})
                if callback is not None:
                    callback(epoch, step, float(loss.detach()))
                interrupt.check()
                if bar is not None:
                    bar.update(1)
            measure(epoch)
    except FloatingPointError:
        pass
    finally:
        if bar is not None:
            bar.close()
    info = {"n_train": len(train), "n_heldout": len(heldout), "pair": train.pair, "labels": train.label_names, "dim": encoder.dim,
            "n_params": sum(p.numel() for p in encoder.parameters()) + sum(p.numel() for p in head.parameters()),
            "device": str(device), **timing,
            "train_sentences_per_second": timing["train_sentences"] / timing["train_seconds"] if timing["train_seconds"] else None,
            "eval_sentences_per_second": timing["eval_sentences"] / timing["eval_seconds"] if timing["eval_seconds"] else None,
            "seconds_per_step": timing["train_seconds"] / max(len(steps), 1)}
    if diverged_at is not None:
        info.update(diverged=True, diverged_at_epoch=diverged_at)
    return FinetuneResult(s, epochs, steps, info)


def settings_dict(s: FinetuneSettings) -> dict:
    return asdict(s)
