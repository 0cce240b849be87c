"""Pretraining a plain language model: a BERT-style masked LM or a GPT-2-style causal LM of the same size, from
scratch, with the standard objective and nothing else.

* **masked** (Devlin et al. 2019, without next-sentence prediction, as RoBERTa): text packed into sequences
  ``[CLS] ... [SEP]`` of ``seq_len`` tokens, documents separated by ``[SEP]``; 15 % of the tokens chosen anew at
  every step, of which 80 % become ``[MASK]``, 10 % a random token and 10 % stay; cross-entropy on the chosen ones.
* **causal** (Radford et al. 2019): text packed into sequences of ``seq_len`` tokens, documents separated by
  ``<|endoftext|>``; learned absolute positions; cross-entropy of every next token.

AdamW (β = 0.9, 0.98; ε = 1e-6; weight decay on matrices only), a linear warm-up then linear decay to 0, gradients
clipped at norm 1. Every quantity that is random is drawn from generators seeded by (seed, step), so a run resumed
from a checkpoint takes exactly the steps the uninterrupted run would have taken.

The held-out set is scored with fixed masks (the same for every seed) every ``eval_every`` steps: cross-entropy,
perplexity = exp(cross-entropy) and the accuracy of the most likely token; beside them the same numbers for a
unigram model of the training tokens (add-one smoothed), the baseline any language model must beat.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .settings import PretrainSettings

EVAL_MASK_SEED = 20_210_101  # the held-out masks: one fixed draw, whatever the training seed
MASK_TOKEN_SHARE, RANDOM_TOKEN_SHARE = 0.8, 0.1


# --- data ------------------------------------------------------------------------------------------------------------


def pack(documents: Sequence[Sequence[str]], tokenizer, objective: str, seq_len: int) -> np.ndarray:
    """(n, seq_len) int64 training sequences: the documents' tokens in order with a separator after each document,
    cut into consecutive chunks (the last, incomplete one dropped); a masked model's chunks wrapped in [CLS] ...
    [SEP]."""
    from .tokenizer import document_separator

    sep = document_separator(tokenizer)
    encodings = tokenizer.backend_tokenizer.encode_batch([" ".join(doc) for doc in documents], add_special_tokens=False)
    stream = np.fromiter((t for enc in encodings for t in (*enc.ids, sep)), dtype=np.int64)
    width = seq_len - 2 if objective == "masked" else seq_len
    n = len(stream) // width
    if n == 0:
        raise ValueError(
            f"the text gives {len(stream)} tokens, fewer than one sequence of {seq_len}; give more text or a shorter "
            f"--seq-len"
        )
    chunks = stream[: n * width].reshape(n, width)
    if objective == "masked":
        cls = np.full((n, 1), tokenizer.cls_token_id, dtype=np.int64)
        chunks = np.concatenate([cls, chunks, np.full((n, 1), tokenizer.sep_token_id, dtype=np.int64)], axis=1)
    return np.ascontiguousarray(chunks)


def mask_tokens(
    ids: torch.Tensor, tokenizer, probability: float, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: (inputs, labels) where labels are -100 except at the chosen positions (never a special token);
    of those, 80 % become [MASK], 10 % a random non-special token, 10 % stay as they are."""
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids))
    chosen = (torch.rand(ids.shape, generator=generator) < probability) & ~special
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    draw = torch.rand(ids.shape, generator=generator)
    to_mask = chosen & (draw < MASK_TOKEN_SHARE)
    to_random = chosen & (draw >= MASK_TOKEN_SHARE) & (draw < MASK_TOKEN_SHARE + RANDOM_TOKEN_SHARE)
    low = max(tokenizer.all_special_ids) + 1  # specials come first in the trained vocabulary
    random_ids = torch.randint(low, len(tokenizer), ids.shape, generator=generator)
    inputs = torch.where(to_mask, torch.full_like(ids, tokenizer.mask_token_id), ids)
    return torch.where(to_random, random_ids, inputs), labels


def targets_of(ids: torch.Tensor, objective: str, tokenizer, probability: float, generator: torch.Generator | None):
    """(inputs, labels) for a batch: masked as BERT, or the next token (labels aligned with the inputs' positions; the
    last position has none)."""
    if objective == "masked":
        return mask_tokens(ids, tokenizer, probability, generator)
    labels = torch.full_like(ids, -100)
    labels[:, :-1] = ids[:, 1:]
    return ids, labels


# --- model -----------------------------------------------------------------------------------------------------------


def build_model(settings: PretrainSettings, tokenizer):
    """A freshly initialised BertForMaskedLM or GPT2LMHeadModel of the settings' size (input and output embeddings
    tied, as in both originals)."""
    torch.manual_seed(settings.seed)
    if settings.objective == "masked":
        from transformers import BertConfig, BertForMaskedLM

        config = BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=settings.hidden,
            num_hidden_layers=settings.layers,
            num_attention_heads=settings.heads,
            intermediate_size=settings.ffn,
            max_position_embeddings=settings.seq_len,
            hidden_dropout_prob=settings.dropout,
            attention_probs_dropout_prob=settings.dropout,
            pad_token_id=tokenizer.pad_token_id,
        )
        return BertForMaskedLM(config)
    from transformers import GPT2Config, GPT2LMHeadModel

    eot = tokenizer.eos_token_id
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=settings.seq_len,
        n_embd=settings.hidden,
        n_layer=settings.layers,
        n_head=settings.heads,
        n_inner=settings.ffn,
        resid_pdrop=settings.dropout,
        embd_pdrop=settings.dropout,
        attn_pdrop=settings.dropout,
        bos_token_id=eot,
        eos_token_id=eot,
    )
    return GPT2LMHeadModel(config)


def logits_at(model, objective: str, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits, targets) at the positions that have a label only: the output layer (a vocabulary-wide product) is
    applied to the ~15 % masked positions rather than to all of them — the same numbers as the models' own forward."""
    keep = labels != -100
    if objective == "masked":
        hidden = model.bert(input_ids=inputs, return_dict=True).last_hidden_state
        return model.cls(hidden[keep]), labels[keep]
    hidden = model.transformer(input_ids=inputs, return_dict=True).last_hidden_state
    return model.lm_head(hidden[keep]), labels[keep]


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())


# --- evaluation ------------------------------------------------------------------------------------------------------


@dataclass
class HeldOut:
    """The held-out sequences with their fixed inputs and labels, and the unigram baseline on the same targets."""

    inputs: torch.Tensor
    labels: torch.Tensor
    unigram: dict

    @classmethod
    def build(cls, sequences: np.ndarray, train: np.ndarray, settings: PretrainSettings, tokenizer) -> HeldOut:
        ids = torch.from_numpy(sequences[: settings.eval_sequences])
        inputs, labels = targets_of(
            ids, settings.objective, tokenizer, settings.mask_probability, torch.Generator().manual_seed(EVAL_MASK_SEED)
        )
        return cls(inputs, labels, unigram_baseline(train, labels, settings.objective, tokenizer))


def unigram_baseline(train: np.ndarray, labels: torch.Tensor, objective: str, tokenizer) -> dict:
    """Cross-entropy, perplexity and accuracy (always the most frequent token) of the training tokens' add-one
    smoothed unigram distribution on the held-out targets."""
    tokens = train[:, 1:] if objective == "causal" else train[~np.isin(train, tokenizer.all_special_ids)]
    counts = np.bincount(tokens.ravel(), minlength=len(tokenizer)).astype(np.float64) + 1.0
    log_p = np.log(counts / counts.sum())
    targets = labels[labels != -100].numpy()
    ce = float(-log_p[targets].mean())
    return {"loss": ce, "perplexity": math.exp(ce), "accuracy": float((targets == int(np.argmax(counts))).mean())}


def evaluate(model, objective: str, held: HeldOut, device, batch_size: int = 32) -> dict:
    """Held-out cross-entropy (mean over the targets), perplexity and top-1 accuracy."""
    was_training = model.training
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for i in range(0, len(held.inputs), batch_size):
            logits, targets = logits_at(
                model, objective, held.inputs[i : i + batch_size].to(device), held.labels[i : i + batch_size].to(device)
            )
            total += float(torch.nn.functional.cross_entropy(logits.double(), targets, reduction="sum"))
            correct += int((logits.argmax(-1) == targets).sum())
            count += int(targets.numel())
    model.train(was_training)
    loss = total / count
    return {"loss": loss, "perplexity": math.exp(loss), "accuracy": correct / count, "targets": count}


# --- the loop --------------------------------------------------------------------------------------------------------


def learning_rate(step: int, settings: PretrainSettings) -> float:
    """Linear warm-up over the first ``warmup`` share of the steps, then linear decay to 0 (step counts from 0)."""
    warm = max(1, round(settings.warmup * settings.steps))
    if step < warm:
        return settings.lr * (step + 1) / warm
    return settings.lr * max(0.0, (settings.steps - step) / max(1, settings.steps - warm))


def make_optimizer(model, settings: PretrainSettings) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": settings.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    # foreach: the per-tensor loop's arithmetic bit for bit, in a few large ops (the loop is torch's CPU default)
    return torch.optim.AdamW(groups, lr=settings.lr, betas=(0.9, 0.98), eps=1e-6, foreach=True)


def batch_indices(step: int, n_sequences: int, settings: PretrainSettings) -> np.ndarray:
    """The sequences of ``step``: each epoch a new seeded permutation, consumed in order (a partial batch at an epoch's
    end wraps into the next epoch's permutation)."""
    start = step * settings.batch_size
    out = []
    while len(out) < settings.batch_size:
        epoch, offset = divmod(start + len(out), n_sequences)
        order = np.random.default_rng([settings.seed, epoch]).permutation(n_sequences)
        out.extend(order[offset : offset + settings.batch_size - len(out)].tolist())
    return np.asarray(out)


@dataclass
class Checkpoint:
    """Where a run's state lives while it trains (beside, never inside, the final model folder)."""

    folder: Path

    @property
    def state(self) -> Path:
        return self.folder / "state.pt"

    @property
    def tokenizer(self) -> Path:
        return self.folder / "tokenizer"

    @property
    def series(self) -> Path:
        """Where the checkpoint series is written while the run trains (moved into the model folder at its end)."""
        return self.folder / "series"

    def save(self, payload: dict) -> None:
        from ..atomic import atomic_file

        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_file(self.state) as tmp:
            torch.save(payload, tmp)

    def load(self) -> dict | None:
        return torch.load(self.state, weights_only=False) if self.state.is_file() else None

    def remove(self) -> None:
        """Gone once the model folder stands (:func:`isoflow.skeleton.run_section`)."""
        shutil.rmtree(self.folder, ignore_errors=True)


class _Pretraining:
    """One pretraining run's moving parts (the model, AdamW, the step it is at) and what it has recorded (the curve,
    the loss window of the curve's next point, the training loss since the series' last checkpoint); :func:`train`
    drives it. Made from its saved state when ``checkpoint`` holds one of this run's (another run's is refused)."""

    def __init__(self, settings, train_seqs, held, tokenizer, checkpoint, device, corpus_sha256, log):
        from ..checkpoints import checkpoint_steps

        self.settings, self.train_seqs, self.held, self.tokenizer = settings, train_seqs, held, tokenizer
        self.checkpoint, self.device, self.corpus_sha256, self.log = checkpoint, device, corpus_sha256, log
        self.model = build_model(settings, tokenizer).to(device)
        self.optimizer = make_optimizer(self.model, settings)
        self.step, self.curve, self.spent_before, self.window = (
            0,
            [],
            0.0,
            [],
        )  # window: the curve's next point's losses
        self.series_steps = set(checkpoint_steps(settings.steps, settings.checkpoints))
        self.since = [0.0, 0]  # the training loss's sum and count since the series' last checkpoint
        state = checkpoint.load()
        if state is not None:
            self._resume(state)
        self.started = time.perf_counter()

    def _resume(self, state: dict) -> None:
        settings, corpus_sha256 = self.settings, self.corpus_sha256
        if state["settings"] != settings.training_fields() or state["corpus_sha256"] != corpus_sha256:
            theirs = {**state["settings"], "corpus": state["corpus_sha256"][:12]}
            ours = {**settings.training_fields(), "corpus": corpus_sha256[:12]}
            differ = ", ".join(f"{k} {theirs[k]} (checkpoint) vs {ours[k]}" for k in ours if theirs.get(k) != ours[k])
            raise ValueError(
                f"{self.checkpoint.folder}: a checkpoint of another run ({differ}); delete that folder to start over, "
                "or resume with the checkpoint's settings"
            )
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.curve, self.spent_before, self.window = (
            state["step"],
            state["curve"],
            state["seconds"],
            state["window"],
        )
        self.since = state.get("since_checkpoint", self.since)
        self.log(f"resuming from step {self.step} of {settings.steps} ({self.checkpoint.state})")

    def spent(self) -> float:
        """Seconds spent training, over every resume."""
        return self.spent_before + time.perf_counter() - self.started

    def save(self) -> None:
        """The state a stopped run resumes from."""
        self.checkpoint.save(
            {
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "step": self.step,
                "curve": self.curve,
                "settings": self.settings.training_fields(),
                "corpus_sha256": self.corpus_sha256,
                "seconds": self.spent(),
                "window": self.window,
                "since_checkpoint": self.since,
            }
        )

    def record_eval(self) -> None:
        """The held-out scores at this step, onto the curve and into the log beside the unigram model's."""
        result = evaluate(self.model, self.settings.objective, self.held, self.device)
        self.curve.append(
            {
                "step": self.step,
                "heldout_loss": result["loss"],
                "heldout_perplexity": result["perplexity"],
                "heldout_accuracy": result["accuracy"],
            }
        )
        unigram = self.held.unigram
        self.log(
            f"step {self.step}/{self.settings.steps}: held-out loss {result['loss']:.3f}, perplexity "
            f"{result['perplexity']:.1f}, accuracy {result['accuracy']:.3f} (unigram: {unigram['loss']:.3f}, "
            f"{unigram['perplexity']:.1f}, {unigram['accuracy']:.3f})"
        )

    def keep_checkpoint(self) -> None:
        """The model at this step into the series, if the schedule has it (scored on the held-out set at it)."""
        from ..checkpoints import step_folder
        from ..records import run_record
        from ..settings import as_dict
        from .series import write_checkpoint

        step, settings, curve, since, series = self.step, self.settings, self.curve, self.since, self.checkpoint.series
        if step not in self.series_steps:
            return
        if not step_folder(series, step).is_dir():  # written before an interruption: the same model
            if not (curve and curve[-1]["step"] == step and "heldout_loss" in curve[-1]):
                self.record_eval()
            scores = {k.removeprefix("heldout_"): v for k, v in curve[-1].items() if k != "step"}
            measured = {
                "step": step,
                "tokens_seen": step * settings.batch_size * settings.seq_len,
                "train_loss": since[0] / since[1] if since[1] else None,  # since the previous checkpoint
                "train_loss_steps": since[1],
                "heldout": scores,
                "objective": settings.objective,
            }
            record = run_record("pretrain", as_dict(settings), measured)
            write_checkpoint(series, step, self.model, self.tokenizer, record)
            self.log(f"checkpoint at step {step} -> {step_folder(series, step)}")
        since[:] = [0.0, 0]

    def take_step(self) -> float:
        """One optimiser step on this step's batch, with this step's masks and dropout; returns its loss."""
        settings, step, device = self.settings, self.step, self.device
        ids = torch.from_numpy(self.train_seqs[batch_indices(step, len(self.train_seqs), settings)])
        generator = torch.Generator().manual_seed(settings.seed * 1_000_003 + step)
        inputs, labels = targets_of(ids, settings.objective, self.tokenizer, settings.mask_probability, generator)
        torch.manual_seed(settings.seed * 1_000_003 + step)  # dropout
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(step, settings)
        logits, targets = logits_at(self.model, settings.objective, inputs.to(device), labels.to(device))
        loss = torch.nn.functional.cross_entropy(logits, targets)
        if not torch.isfinite(loss):
            raise RuntimeError(
                f"the training loss became {float(loss)} at step {step}; lower --lr (now {settings.lr:g})"
            )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.step += 1
        return loss.item()

    def after_step(self, loss: float, bar) -> None:
        """What follows a step: the curve's training point every ``log_every`` steps, its held-out point every
        ``eval_every``, the series' checkpoint and the state to resume from when they fall due."""
        settings, step, window = self.settings, self.step, self.window
        window.append(loss)
        self.since[0], self.since[1] = self.since[0] + loss, self.since[1] + 1
        if bar is not None:
            bar.update(1)
        if step % settings.log_every == 0 or step == settings.steps:
            point = {"step": step, "train_loss": float(np.mean(window)), "lr": learning_rate(step - 1, settings)}
            self.curve.append({**point, "seconds": self.spent()})
            if bar is not None:
                bar.set_postfix(loss=f"{np.mean(window):.3f}")
            window.clear()
        if step % settings.eval_every == 0 or step == settings.steps:
            self.record_eval()
        self.keep_checkpoint()
        if step % settings.checkpoint_every == 0 or step == settings.steps:
            self.save()


def train(
    settings: PretrainSettings,
    train_seqs: np.ndarray,
    held: HeldOut,
    tokenizer,
    checkpoint: Checkpoint,
    *,
    device="cpu",
    corpus_sha256: str = "",
    log: Callable[[str], None] = print,
    progress: bool | None = None,
    stop_after: int | None = None,
    on_step: Callable[[int], None] | None = None,
):
    """Train (or resume) to ``settings.steps``; returns (model, curve rows, seconds spent training, over every resume).
    With ``settings.checkpoints``, the model at each step of the series (:mod:`.series`) is written to
    ``checkpoint.series``, its held-out scores measured at that step too; a step already written is not written again.

    ``stop_after``: leave after that many steps in total (a checkpoint written), as an interrupted run would — the
    tests' way to interrupt a run at a known step. ``on_step(step)`` is called after every step."""
    from .. import interrupt
    from ..progress import progress_bar

    run = _Pretraining(settings, train_seqs, held, tokenizer, checkpoint, torch.device(device), corpus_sha256, log)
    if run.step == 0 and not run.curve:
        run.record_eval()
    if run.step == 0:
        run.keep_checkpoint()
    bar = progress_bar(progress, settings.steps, f"pretrain {settings.objective}", "steps")
    if bar is not None and run.step:
        bar.update(run.step)
    run.model.train()
    try:
        while run.step < settings.steps and (stop_after is None or run.step < stop_after):
            interrupt.check()
            run.after_step(run.take_step(), bar)
            if on_step is not None:
                on_step(run.step)
    except KeyboardInterrupt:
        run.save()  # the last finished step is kept: the next run resumes there
        log(f"interrupted: checkpoint at step {run.step} in {checkpoint.folder}; run the same command again to resume")
        raise
    finally:
        if bar is not None:
            bar.close()
    if run.step < settings.steps:
        run.save()
    return run.model, run.curve, run.spent()


def write_curve(curve: list[dict], path: str | os.PathLike) -> None:
    import pandas as pd

    pd.DataFrame(curve).sort_values("step", kind="stable").to_csv(path, index=False)
