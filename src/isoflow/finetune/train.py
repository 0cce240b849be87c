"""Fine-tuning a sentence encoder with I-STAR (Rudman & Eickhoff 2024) or CosReg, measured on held-out data after every
epoch, set up as I-STAR's fine-tuning is:

* **Model.** The encoder's transformer with mean pooling and BERT's classification head on the pooled output
  (:mod:`.model`); pairs as one sequence. AdamW, lr 1e-5, no weight decay, batch 32, a constant learning rate.
* **Objective.** Cross-entropy + the regulariser: I-STAR's λ·(1 − IsoScore*_ζ(points)) (:class:`~isoflow.IStarLoss`)
  or CosReg's weight × mean pairwise cosine of the same points (:class:`~isoflow.CosineRegLoss`), or the
  strength-matched control, a loss on the same points' layer means that does not target their isotropy
  (:class:`~isoflow.istar.MeanDirectionLoss`; with ``matched_pull_from`` its weight is set at the start of every epoch
  to pull as hard as another run did then: :func:`match_pull`). A weight of 0 computes nothing: the plain run, bit
  for bit, whichever regulariser is named.
* **Points** (``points``): every hidden layer's token states but the embedding output's, padding left out
  (``tokens-all-layers``, the default and I-STAR's choice; its code keeps the padding); or the last layer's
  (``tokens-last-layer``); or the pooled outputs (``pooled``).
* **Σ_S**, IsoScore*'s shrinkage target: the covariance of at least ``shrinkage_points`` training points of the same
  kind (all there are, if fewer), estimated without gradients from the pretrained model and again after every
  epoch, i.e. at the start of the next one, as I-STAR's code does (it uses ≥ 250,000 points; 100,000 keep it
  affordable on a CPU). The held-out IsoScore* after an epoch uses the Σ_S of the model after that epoch.

At epoch 0 (before training) and after every epoch, on the held-out examples: loss, accuracy, the task's metric (MCC
for CoLA, F1 for MRPC and QQP); on the penalty's points, IsoScore* (``isoscore_star``), IsoScore
(``isoscore_points``) and their mean pairwise cosine (``cosine_points``); on the pooled outputs (what the head
classifies), IsoScore, mean cosine, silhouette w.r.t. the labels, TwoNN, LID, and the mean |activation| of every
dimension (the poster's Figure 1); with ``layer_geometry``, per layer of the encoder (0 = embeddings), IsoScore,
S_inter and TwoNN of the held-out token states (does a classification objective's anisotropy reach the bottom
layers? Mickus et al.'s conjecture). Every training step records its loss and penalty.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from .. import interrupt
from ..istar import (
    CosineRegLoss,
    IStarLoss,
    MeanDirectionLoss,
    RunningCovariance,
    first_positions_dropped,
    penalty_layers,
)
from ..metrics import (
    cosine_anisotropy,
    distinct_points,
    encode_labels,
    isoscore,
    isoscore_of_covariance,
    lid_mle,
    linear_cka,
    sample_rows,
    silhouette_tensor,
    twonn,
)
from ..progress import progress_bar
from ..provenance import code_version
from .checkpoint import Checkpoint
from .data import Examples
from .gradients import PULL_SEED, batches_of, gradient_norm
from .model import ClassificationHead, SentenceEncoder, penalty_points
from .settings import TASK_METRICS, FinetuneSettings

logger = logging.getLogger(__name__)


@dataclass
class FinetuneResult:
    settings: FinetuneSettings
    epochs: list[dict]
    steps: list[dict]
    info: dict = field(default_factory=dict)
    states: dict | None = None  # with states_points: the tokens' states for CKA between seeds (:func:`kept_states`)


Regulariser = IStarLoss | CosineRegLoss | MeanDirectionLoss


def regulariser(s: FinetuneSettings) -> Regulariser:
    if s.reg == "meandir":
        return MeanDirectionLoss(s.meandir_weight)
    return IStarLoss(s.istar_lambda, s.zeta) if s.reg == "istar" else CosineRegLoss(s.cosreg_weight)


def penalty_of(reg: Regulariser, s: FinetuneSettings, pooled, states, mask) -> torch.Tensor:
    """The regulariser's value on a batch's forward pass: on the penalty's points, or (the mean-direction control) on
    the same points layer by layer before their centring."""
    if isinstance(reg, MeanDirectionLoss):
        return reg(penalty_layers(s.points, states, mask, pooled))
    return reg(penalty_points(s.points, pooled, states, mask))


def match_pull(reg: MeanDirectionLoss, pull: float, epoch: int, targets: list[float], s: FinetuneSettings) -> dict:
    """Set the control's weight for the next epoch (after epoch ``epoch``; 0: before training) so that its pull, at
    the current model, is ``s.meandir_weight`` × ``targets[epoch]`` (the matched run's pull at the start of that
    epoch): the pull is linear in the weight, so the weight is the target over the pull per unit of weight, measured
    (``pull``) at the weight now in force. Returns the row's record: that weight and the pull it gives."""
    unit = pull / reg.weight
    if not unit > 0:
        raise ValueError(
            f"the mean-direction control has no gradient at epoch {epoch} (pull {pull!r} at weight {reg.weight!r}): "
            "its weight cannot be matched"
        )
    target = s.meandir_weight * targets[epoch]
    reg.weight = target / unit
    return {"pull_target": target, "next_reg_weight": reg.weight}


def _batches(n: int, size: int, gen: torch.Generator) -> list[torch.Tensor]:
    order = torch.randperm(n, generator=gen)
    return [order[i : i + size] for i in range(0, n, size)]


def _texts(ex: Examples, idx) -> tuple[list[str], list[str] | None]:
    idx = [int(i) for i in idx]
    return [ex.a[i] for i in idx], ([ex.b[i] for i in idx] if ex.pair else None)


def _task_metric(task: str, y: np.ndarray, pred: np.ndarray) -> tuple[str, float]:
    # scikit-learn only where its metric is used: importing it takes about a second of every run's start
    kind = TASK_METRICS.get(task)
    if kind == "mcc":
        from sklearn.metrics import matthews_corrcoef

        return "mcc", float(matthews_corrcoef(y, pred))
    if kind == "f1":
        from sklearn.metrics import f1_score

        return "f1", float(f1_score(y, pred))
    return "accuracy", float((y == pred).mean())


class _Eval:
    """Evaluation mode for the duration of a block (dropout off), without gradients; the previous mode after."""

    def __init__(self, *modules):
        self.modules = modules

    def __enter__(self):
        self.was = [m.training for m in self.modules]
        for m in self.modules:
            m.eval()
        self.grad = torch.no_grad()
        self.grad.__enter__()

    def __exit__(self, *exc):
        self.grad.__exit__(*exc)
        for m, was in zip(self.modules, self.was):
            m.train(was)


def estimate_reference(
    encoder: SentenceEncoder, train: Examples, s: FinetuneSettings, device, epoch: int
) -> tuple[torch.Tensor, int]:
    """(Σ_S, points used): the covariance of at least ``shrinkage_points`` training points of the penalty's kind, from
    training examples in a seeded order, without gradients."""
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(s.seed * 1000 + epoch))
    running = RunningCovariance()
    with _Eval(encoder):
        for i in range(0, len(train), s.eval_batch_size):
            a, b = _texts(train, order[i : i + s.eval_batch_size])
            pooled, states, mask = encoder(encoder.tokenize(a, b, device), hidden_states=s.points != "pooled")
            running.update(penalty_points(s.points, pooled, states, mask))
            if running.n >= s.shrinkage_points:
                break
    return running.covariance(), running.n


def pull_at(encoder: SentenceEncoder, head: ClassificationHead, reg: Regulariser, train: Examples, s, device) -> float:
    """The penalty's pull at the current model: the median over ``s.pull_batches`` training batches (the batches
    ``istar_pull`` chose λ on, the same every epoch) of ‖∇ λ·(1 − IsoScore*)‖ / ‖∇ task loss‖ w.r.t. the encoder's
    weights (or the same of another regulariser at its weight), with the run's own head and Σ_S, dropout off: what λ
    was chosen to give, followed through training."""
    params = [p for p in encoder.parameters() if p.requires_grad]
    ratios = []
    modes = [(m, m.training) for m in (encoder, head)]
    encoder.eval(), head.eval()
    try:
        for idx in batches_of(len(train), s.pull_batches, PULL_SEED):
            if len(idx) == 0:
                break
            a, b = _texts(train, idx)
            pooled, states, mask = encoder(encoder.tokenize(a, b, device), hidden_states=True)
            task = torch.nn.functional.cross_entropy(head(pooled), torch.as_tensor(train.y[idx], device=device))
            penalty = penalty_of(reg, s, pooled, states, mask)
            ratios.append(gradient_norm(penalty, params) / gradient_norm(task, params))
    finally:
        for m, was in modes:
            m.train(was)
    return float(np.median(ratios))


def cka_to_pretrained(pretrained: list[torch.Tensor], current: list[torch.Tensor], past_first: torch.Tensor) -> dict:
    """Per layer, linear CKA between two models' states of the same tokens: ``layer_cka_pretrained`` over all of them,
    ``layer_cka_pretrained_past_first`` over those past their sequence's first position (``past_first``)."""
    pairs = list(zip(pretrained, current))
    return {
        "layer_cka_pretrained": [linear_cka(p, x) for p, x in pairs],
        "layer_cka_pretrained_past_first": [linear_cka(p[past_first], x[past_first]) for p, x in pairs],
    }


class LayerTokens:
    """Every layer's token states of the held-out examples as batches of them pass (0 = the embedding layer's output;
    padding and special tokens left out; the first ``cap`` tokens in held-out order, so every epoch sees the same
    tokens), and their per-layer IsoScore, S_inter (types: the token ids) and TwoNN (of the distinct states: a token's
    layer-0 state repeats): :meth:`geometry`, lists indexed by layer. Filled by :func:`evaluate` from the forward pass
    it makes anyway."""

    def __init__(self, tokenizer, cap: int, device):
        # [UNK] stands for a word: kept, as the layer analysis keeps it
        self.special = torch.tensor(
            [i for i in tokenizer.all_special_ids if i != tokenizer.unk_token_id], device=device
        )
        self.cap, self.layers, self.ids, self.later, self.n = cap, None, [], [], 0

    @property
    def full(self) -> bool:
        return self.n >= self.cap

    def add(self, states, mask: torch.Tensor, input_ids: torch.Tensor) -> None:
        if self.full:
            return
        keep = mask.bool() & ~torch.isin(input_ids, self.special)
        if self.layers is None:
            self.layers = [[] for _ in states]
        for parts, h in zip(self.layers, states):
            parts.append(h[keep].float())
        self.ids.append(input_ids[keep])
        self.later.append(first_positions_dropped(mask).bool()[keep])
        self.n += int(keep.sum())

    def token_ids(self, cap: int) -> torch.Tensor:
        """The first ``cap`` tokens' ids, in held-out order."""
        return torch.cat(self.ids)[:cap]

    def past_first(self, cap: int) -> torch.Tensor:
        """Which of the first ``cap`` tokens are not their sequence's first non-padding position: on a causal LM that
        position is the attention sink, whose massive states alone can make two layers' Gram matrices alike."""
        return torch.cat(self.later)[:cap]

    def points(self, cap: int | None = None) -> list[torch.Tensor]:
        """Every layer's held-out token states, the first ``cap`` (default: this collection's cap) in held-out order."""
        return [torch.cat(parts)[: cap or self.cap] for parts in self.layers]

    def similarity_to(self, pretrained: list[torch.Tensor]) -> dict:
        """Per layer, linear CKA between the pretrained model's states of the first tokens and the current model's
        states of the same tokens (:func:`isoflow.metrics.linear_cka`, exact from d × d products): of all of them, and
        of those past their sequence's first position (:meth:`past_first`)."""
        n = pretrained[0].shape[0]
        return cka_to_pretrained(pretrained, self.points(n), self.past_first(n))

    def geometry(self, twonn_too: bool = True) -> dict:
        """Per layer: IsoScore, S_inter and (``twonn_too``; else NaN) TwoNN."""
        from ..metrics import s_inter

        points = self.points()
        types = torch.cat(self.ids)[: self.cap]

        def measured(
            metric, x, *args
        ):  # a measurement the points do not allow (too few distinct ones) is NaN, not a failed run
            try:
                return metric(x, *args)
            except ValueError as exc:
                logger.warning("layer geometry: %s", exc)
                return float("nan")

        return {
            "layer_isoscore": [measured(isoscore, x) for x in points],
            "layer_s_inter": [measured(s_inter, x, types) for x in points],
            "layer_twonn": [
                measured(twonn, distinct_points(x, warn=False)) if twonn_too else float("nan") for x in points
            ],
        }


def _held_out_pass(encoder, head, ex: Examples, s: FinetuneSettings, device, shared: dict | None):
    """One pass of the encoder and head over the held-out examples: (pooled outputs, logits, the penalty points'
    covariance, their unit vectors' sum and count, the layers' tokens or None). With ``shared``: the batches' pooled
    outputs kept there."""
    pooled_parts, logit_parts = [], []
    running = RunningCovariance()
    unit_sum, n_points = None, 0
    tokens = LayerTokens(encoder.tokenizer, s.sample_cap, device) if s.layer_geometry else None
    with _Eval(encoder, head):
        for i in range(0, len(ex), s.eval_batch_size):
            a, b = _texts(ex, range(i, min(i + s.eval_batch_size, len(ex))))
            inputs = encoder.tokenize(a, b, device)
            pooled, states, mask = encoder(inputs, hidden_states=s.points != "pooled" or tokens is not None)
            if tokens is not None:  # the per-layer geometry from this pass, not a second one
                tokens.add(states, mask, inputs["input_ids"])
            points = penalty_points(s.points, pooled, states, mask).double()
            running.update(points)
            u = torch.nn.functional.normalize(points, dim=1).sum(dim=0)
            unit_sum = u if unit_sum is None else unit_sum + u
            n_points += points.shape[0]
            pooled_parts.append(pooled.float())
            logit_parts.append(head(pooled).float())
    if shared is not None:
        shared["pooled"] = [p.cpu() for p in pooled_parts]
    return torch.cat(pooled_parts), torch.cat(logit_parts), running.covariance(), unit_sum, n_points, tokens


def _load_shared(path: Path) -> dict:
    """A sweep's shared pass of the pretrained encoder (:func:`evaluate`), or an empty dict to fill."""
    if not path.is_file():
        return {}
    return torch.load(path, map_location="cpu", weights_only=False)


def _save_shared(path: Path, shared: dict) -> None:
    from ..atomic import atomic_file

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        torch.save(shared, tmp)


@dataclass
class Pretrained:
    """What the later evaluations compare with, taken at epoch 0: Σ_S of the pretrained model's training points (the
    manipulation check: does IsoScore* against it move the way λ asks?) and its held-out token states per layer (the
    first ``cka_points`` tokens: CKA to the pretrained model)."""

    reference: torch.Tensor | None = None
    layers: list[torch.Tensor] | None = None
    past_first: torch.Tensor | None = None  # which of those tokens are past their sequence's first position
    ids: torch.Tensor | None = None  # those tokens' ids (with states_points: the states file names its tokens)
    last: list[torch.Tensor] | None = None  # with states_points: the latest evaluation's states of the first tokens


def evaluate(
    encoder: SentenceEncoder,
    head: ClassificationHead,
    ex: Examples,
    s: FinetuneSettings,
    reference,
    device,
    pretrained: Pretrained | None = None,
    layer_twonn: bool = True,
    shared: dict | None = None,
) -> dict:
    """Held-out measurements of the current encoder and head (see the module docstring). With ``pretrained`` filled
    (every epoch after 0): IsoScore* against the pretrained Σ_S and, with layer geometry, CKA to the pretrained model;
    at epoch 0 (``pretrained`` empty) it is filled from this evaluation. ``shared`` (epoch 0 only): the parts of the
    evaluation no seed changes — the encoder's pass over the held-out examples, its penalty points' statistics, every
    layer's geometry — filled by the first run of a sweep and read by the others (:class:`PretrainedPass`); the head's
    predictions and everything the seed touches are computed here either way, batch by batch as without it."""
    if shared is not None and shared.get("pooled"):  # the pretrained encoder's pass, made by another seed's run
        with _Eval(encoder, head):
            logits = torch.cat([head(p.to(device)).float() for p in shared["pooled"]])  # batch by batch, as below
        reps = torch.cat(shared["pooled"]).to(device)
        C, unit_sum, n_points = shared["C"].to(device), shared["unit_sum"].to(device), shared["n_points"]
        per_layer = {k: list(v) for k, v in shared["per_layer"].items()}
        tokens = None
        if pretrained is not None and pretrained.layers is None and shared.get("layers") is not None:
            pretrained.layers, pretrained.past_first = shared["layers"], shared["past_first"]
            pretrained.ids = shared.get("ids")
    else:
        reps, logits, C, unit_sum, n_points, tokens = _held_out_pass(encoder, head, ex, s, device, shared)
        per_layer = tokens.geometry(layer_twonn) if tokens is not None else {}
        if shared is not None:  # for the runs of the other seeds: everything here that no seed changes
            shared.update(C=C.cpu(), unit_sum=unit_sum.cpu(), n_points=n_points, per_layer=per_layer)
    y = torch.as_tensor(ex.y, device=device)
    pred = logits.argmax(dim=1).cpu().numpy()
    name, value = _task_metric(s.task, ex.y, pred)
    pick = sample_rows(reps.shape[0], s.sample_cap, s.seed, device)
    r, labels = (reps, y) if pick is None else (reps[pick], y[pick])
    compared = {}
    if pretrained is not None:
        if pretrained.layers is None and tokens is not None:  # epoch 0: this is the pretrained model
            pretrained.layers = [x.clone() for x in tokens.points(s.cka_points)]
            pretrained.past_first = tokens.past_first(s.cka_points).clone()
            pretrained.ids = tokens.token_ids(s.cka_points).clone()
            if shared is not None:
                shared.update(layers=pretrained.layers, past_first=pretrained.past_first, ids=pretrained.ids)
        if pretrained.reference is None:
            pretrained.reference = reference
        if tokens is not None:
            per_layer.update(tokens.similarity_to(pretrained.layers))
            if s.states_points:  # overwritten by every evaluation: the last one's stay
                pretrained.last = [x.clone() for x in tokens.points(s.states_points)]
        elif "layer_isoscore" in per_layer:  # epoch 0 from the shared pass: the pretrained model against itself
            per_layer.update(cka_to_pretrained(pretrained.layers, pretrained.layers, pretrained.past_first))
        if s.zeta and pretrained.reference is not None:
            compared["isoscore_star_pretrained"] = float(isoscore_of_covariance(C, pretrained.reference, s.zeta))
    distinct = distinct_points(r, warn=False)  # intrinsic dimension of the distinct outputs (k bounded by them)
    return {
        **per_layer,
        "loss": float(torch.nn.functional.cross_entropy(logits, y)),
        "accuracy": float((pred == ex.y).mean()),
        "metric_name": name,
        "metric": value,
        "predictions": pred.tolist(),  # per held-out example, for paired tests over sentences
        "isoscore_star": float(isoscore_of_covariance(C, reference, s.zeta)),  # = IsoScore when ζ = 0
        "isoscore_points": float(isoscore_of_covariance(C)),
        **compared,
        "cosine_points": float(((unit_sum * unit_sum).sum() - n_points) / (n_points * (n_points - 1))),
        "isoscore": isoscore(reps),
        "cosine_anisotropy": cosine_anisotropy(reps),
        "silhouette": float(silhouette_tensor(r, encode_labels(labels)))
        if len(torch.unique(labels)) > 1
        else float("nan"),
        "twonn": twonn(distinct),
        "lid_mle": lid_mle(distinct, k=min(s.k_lid, distinct.shape[0] - 1)),
        "mean_abs_activation": reps.abs().mean(dim=0).cpu().tolist(),
    }


def validate(
    encoder: SentenceEncoder, head: ClassificationHead, ex: Examples, s: FinetuneSettings, device, shared=None
) -> dict:
    """The validation split's loss, accuracy and the task's metric (what model selection reads). ``shared`` (epoch 0):
    the encoder's pooled outputs, batch by batch, read when there and kept when not."""
    logits = []
    with _Eval(encoder, head):
        if shared is not None and shared.get("validation_pooled"):
            logits = [head(p.to(device)).float() for p in shared["validation_pooled"]]
        else:
            pooled = [
                encoder(encoder.tokenize(*_texts(ex, range(i, min(i + s.eval_batch_size, len(ex)))), device))[0]
                for i in range(0, len(ex), s.eval_batch_size)
            ]
            logits = [head(p).float() for p in pooled]
            if shared is not None:
                shared["validation_pooled"] = [p.cpu() for p in pooled]
    logits = torch.cat(logits)
    pred = logits.argmax(dim=1).cpu().numpy()
    loss = torch.nn.functional.cross_entropy(logits, torch.as_tensor(ex.y, device=logits.device))
    return {
        "validation_loss": float(loss),
        "validation_accuracy": float((pred == ex.y).mean()),
        "validation_metric": _task_metric(s.task, ex.y, pred)[1],
    }


class _Training:
    """One fine-tuning run's moving parts (the encoder and its head, AdamW, the batch order, the regulariser) and what
    it has measured so far; :func:`finetune` drives it. Made in the order a run never stopped makes them, so that the
    seeded random state is the same whichever way a run goes."""

    def __init__(self, encoder, train, heldout, s, device, progress, validation, checkpoint, shared_pass, matched):
        self.note = (
            (lambda line: None) if progress is False else (lambda line: print(line, file=sys.stderr, flush=True))
        )
        self.label = f"{s.task} x {s.model} {s.reg} {s.weight:g} seed {s.seed}"
        self.encoder, self.train, self.heldout, self.s, self.validation = encoder, train, heldout, s, validation
        self.device = torch.device(device)
        self.checkpoint, self.shared_pass, self.matched = checkpoint, shared_pass, matched
        torch.manual_seed(s.seed)
        encoder.to(self.device).train()
        self.head = ClassificationHead(encoder.dim, len(train.label_names), s.dropout).to(self.device).train()
        # foreach: the per-tensor loop's arithmetic (torch's CPU default) bit for bit, in a few large ops (MiniLM's
        # step 818 -> 786 ms on 2 quiet cores, benchmarks/finetune.py)
        self.opt = torch.optim.AdamW(
            [*encoder.parameters(), *self.head.parameters()], lr=s.lr, weight_decay=s.weight_decay, foreach=True
        )
        self.gen = torch.Generator().manual_seed(s.seed)
        self.reg = regulariser(s)
        self.active = s.weight != 0.0
        self.epochs, self.steps, self.references = [], [], []
        self.timing = {
            "train_seconds": 0.0,
            "train_sentences": 0,
            "eval_seconds": 0.0,
            "eval_sentences": 0,
            "shrinkage_seconds": 0.0,
        }
        self.diverged_at = None
        self.pretrained = Pretrained()
        self.log_pull = self.active and isinstance(self.reg, (IStarLoss, MeanDirectionLoss))
        if matched is not None and (not isinstance(self.reg, MeanDirectionLoss) or len(matched) < s.epochs):
            raise ValueError(f"matched pulls need the mean-direction control and one pull per epoch; got {matched}")
        self.resumed = {}  # where a stopped run was picked up, and the code that ran its first epochs
        self.bar = progress_bar(progress, s.epochs * math.ceil(len(train) / s.batch_size), self.label, "step")

    def reference(self, epoch: int):
        """Σ_S from the model as it is (None without ζ); an I-STAR penalty takes it for the next epoch."""
        s = self.s
        if not s.zeta:
            return None
        self.note(f"{self.label}: epoch {epoch}, Sigma_S from up to {s.shrinkage_points} training points")
        t = time.perf_counter()
        reference, n = estimate_reference(self.encoder, self.train, s, self.device, epoch)
        self.timing["shrinkage_seconds"] += time.perf_counter() - t
        self.note(f"{self.label}: epoch {epoch}, Sigma_S from {n} points ({time.perf_counter() - t:.0f} s)")
        self.references.append(n)
        if self.active and isinstance(self.reg, IStarLoss):
            self.reg.reference = reference  # the next epoch's Σ_S: this model's
        return reference

    def measure(self, epoch: int) -> None:
        """Epoch ``epoch``'s row (held-out measurements, the pull, validation), then the state to resume from."""
        s, note, label = self.s, self.note, self.label
        reference = self.reference(epoch)
        t = time.perf_counter()
        note(f"{label}: epoch {epoch}, evaluating {len(self.heldout)} held-out examples")
        twonn_now = s.layer_twonn == "every-epoch" or epoch in (0, s.epochs)
        shared = _load_shared(self.shared_pass) if epoch == 0 and self.shared_pass is not None else None
        made_here = shared is not None and not shared
        if shared is not None:
            note(f"{label}: epoch 0, the pretrained model's pass " + ("made here" if made_here else "shared"))
        measured = evaluate(
            self.encoder, self.head, self.heldout, s, reference, self.device, self.pretrained, twonn_now, shared
        )
        row = {"epoch": epoch, **measured}
        if self.log_pull:  # the penalty's pull at this model, at the run's own λ (its own head, this epoch's Σ_S)
            row["pull"] = pull_at(self.encoder, self.head, self.reg, self.train, s, self.device)
            if self.matched is not None and epoch < s.epochs:  # the weight of the next epoch, set to match
                row.update(match_pull(self.reg, row["pull"], epoch, self.matched, s))
        if self.validation is not None:
            note(f"{label}: epoch {epoch}, validating on {len(self.validation)} examples")
            row.update(validate(self.encoder, self.head, self.validation, s, self.device, shared))
            self.timing["eval_sentences"] += len(self.validation)
        if made_here:
            _save_shared(self.shared_pass, shared)
        self.epochs.append(row)
        self.timing["eval_seconds"] += time.perf_counter() - t
        self.timing["eval_sentences"] += len(self.heldout)
        seconds = time.perf_counter() - t
        note(f"{label}: epoch {epoch}, held-out {row['metric_name']} {row['metric']:.4f} ({seconds:.0f} s)")
        if self.checkpoint is not None and epoch < s.epochs:
            t = time.perf_counter()
            self.checkpoint.save(self.state(epoch))
            note(f"{label}: epoch {epoch}, saved to resume from ({time.perf_counter() - t:.0f} s)")

    def state(self, epoch: int) -> dict:
        """What a run stopped after ``epoch`` resumes from (:meth:`resume`)."""
        reg, pretrained, device = self.reg, self.pretrained, self.device
        return {
            "epoch": epoch,
            "encoder": self.encoder.state_dict(),
            "head": self.head.state_dict(),
            "optimizer": self.opt.state_dict(),
            "batch_order": self.gen.get_state(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "reference": reg.reference if isinstance(reg, IStarLoss) else None,
            "reg_weight": reg.weight if isinstance(reg, MeanDirectionLoss) else None,
            "pretrained": {
                "reference": pretrained.reference,
                "layers": pretrained.layers,
                "past_first": pretrained.past_first,
                "ids": pretrained.ids,
            },
            "epochs": self.epochs,
            "steps": self.steps,
            "references": self.references,
            "timing": self.timing,
            "code": code_version(),  # a resumed run's record names the code of its first epochs too
        }

    def resume(self, state: dict) -> int:
        """Put back a saved state (:meth:`state`'s); return the epochs it had finished."""
        self.encoder.load_state_dict(state["encoder"])
        self.head.load_state_dict(state["head"])
        self.opt.load_state_dict(state["optimizer"])
        self.gen.set_state(state["batch_order"])
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and self.device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        if isinstance(self.reg, IStarLoss):
            self.reg.reference = state["reference"]
        if isinstance(self.reg, MeanDirectionLoss):  # the weight matched for the next epoch
            self.reg.weight = state["reg_weight"]
        if state.get("pretrained") is not None:  # a state saved before the comparisons existed has none
            saved, pretrained = state["pretrained"], self.pretrained
            pretrained.reference, pretrained.layers = saved["reference"], saved["layers"]
            pretrained.past_first, pretrained.ids = saved.get("past_first"), saved.get("ids")
        self.epochs.extend(state["epochs"])
        self.steps.extend(state["steps"])
        self.references.extend(state["references"])
        self.timing.update(state["timing"])
        self.resumed.update(after_epoch=state["epoch"], code=state["code"])
        self.note(f"{self.label}: resumed after epoch {state['epoch']} ({self.checkpoint.path})")
        if self.bar is not None:
            self.bar.update(len(self.steps))
        return state["epoch"]

    def train_epoch(self, epoch: int, callback) -> None:
        """One pass over the training examples in this epoch's order; a NaN objective raises FloatingPointError."""
        s, device, train = self.s, self.device, self.train
        for idx in _batches(len(train), s.batch_size, self.gen):
            t = time.perf_counter()
            a, b = _texts(train, idx)
            hidden = self.active and s.points != "pooled"
            pooled, states, mask = self.encoder(self.encoder.tokenize(a, b, device), hidden_states=hidden)
            labels = torch.as_tensor(train.y[idx.numpy()], device=device)
            loss = torch.nn.functional.cross_entropy(self.head(pooled), labels)
            penalty = penalty_of(self.reg, s, pooled, states, mask) if self.active else torch.zeros((), device=device)
            objective = loss + penalty
            step = len(self.steps) + 1
            if not torch.isfinite(objective):
                self.diverged_at = epoch
                raise FloatingPointError(f"loss became NaN/inf at epoch {epoch}, step {step - 1} (diverged)")
            self.opt.zero_grad(set_to_none=True)
            objective.backward()
            self.opt.step()
            self.timing["train_seconds"] += time.perf_counter() - t
            self.timing["train_sentences"] += len(a)
            loss_value, penalty_value = float(loss.detach()), float(penalty.detach())  # one host transfer each
            self.steps.append({"step": step, "epoch": epoch, "loss": loss_value, "penalty": penalty_value})
            if callback is not None:
                callback(epoch, step, loss_value)
            interrupt.check()
            if self.bar is not None:
                self.bar.set_postfix(loss=f"{loss_value:.4f}", penalty=f"{penalty_value:.4f}", refresh=False)
                self.bar.update(1)

    def info(self) -> dict:
        """The run's record beyond its settings and rows: sizes, where it ran, how fast, where it stopped."""
        timing, encoder = self.timing, self.encoder
        per_second = lambda n, seconds: n / seconds if seconds else None  # noqa: E731
        info = {
            "n_train": len(self.train),
            "n_heldout": len(self.heldout),
            "n_validation": len(self.validation) if self.validation is not None else 0,
            "pooling": encoder.pooling,
            "heldout_labels": self.heldout.y.tolist(),  # with each epoch's predictions: paired tests, same sentences
            "pair": self.train.pair,
            "labels": self.train.label_names,
            "dim": encoder.dim,
            "n_params": sum(p.numel() for p in (*encoder.parameters(), *self.head.parameters())),
            "device": str(self.device),
            "reference_points": self.references,
            **timing,
            "train_sentences_per_second": per_second(timing["train_sentences"], timing["train_seconds"]),
            "eval_sentences_per_second": per_second(timing["eval_sentences"], timing["eval_seconds"]),
            "seconds_per_step": timing["train_seconds"] / max(len(self.steps), 1),
        }
        if self.diverged_at is not None:
            info.update(diverged_at=self.diverged_at)
        if self.resumed:
            info["resumed"] = self.resumed
        return info


def finetune(
    encoder: SentenceEncoder,
    train: Examples,
    heldout: Examples,
    s: FinetuneSettings,
    *,
    device="cpu",
    progress: bool | None = None,
    callback=None,
    validation: Examples | None = None,
    checkpoint: Checkpoint | None = None,
    shared_pass: Path | None = None,
    matched_pulls: list[float] | None = None,
) -> FinetuneResult:
    """Train, measuring before training and after every epoch (on ``validation`` too, when given). A NaN stops the run
    at its epoch; the result then says ``info["diverged_at"]`` (the epoch). ``callback(epoch, step, loss)`` is called
    after every step (tests use it). Unless ``progress`` is False, a line before every Σ_S estimate and every
    evaluation says what runs (they take minutes on a large model). With a ``checkpoint``, the state after every
    measured epoch but the last is saved there, and a run stopped before its end resumes from it
    (:mod:`.checkpoint`); removing the file once the records are written is the caller's. With ``shared_pass`` (a
    file for the runs of one sweep that differ only in seed and regulariser), the pretrained encoder's pass over the
    held-out and validation examples at epoch 0 is read from it, or made and written there for the others
    (:func:`evaluate`); the numbers are the same either way. With ``matched_pulls`` (one per epoch trained: the pull
    another run had at the start of each), the mean-direction control's weight is set before every epoch to pull as
    hard (:func:`match_pull`)."""
    run = _Training(encoder, train, heldout, s, device, progress, validation, checkpoint, shared_pass, matched_pulls)
    try:
        saved = checkpoint.load() if checkpoint is not None else None
        done = run.resume(saved) if saved is not None else 0
        if saved is None:
            run.measure(0)
        for epoch in range(done + 1, s.epochs + 1):
            run.train_epoch(epoch, callback)
            run.measure(epoch)
    except FloatingPointError:
        pass
    finally:
        if run.bar is not None:
            run.bar.close()
    return FinetuneResult(s, run.epochs, run.steps, run.info(), kept_states(run.pretrained, s))


def kept_states(pretrained: Pretrained, s: FinetuneSettings) -> dict | None:
    """With ``states_points``: every layer's states of the first held-out tokens under the pretrained model
    (``pretrained``) and at the last evaluation (``layers``: the last epoch's, or the last before a divergence), with
    those tokens' ids and which are past their sequence's first position — what CKA between seeds reads
    (:mod:`isoflow.finetune.seed_floor`); None without it."""
    if not s.states_points or pretrained.last is None:
        return None
    n = s.states_points
    return {
        "pretrained": [x[:n].cpu() for x in pretrained.layers],
        "layers": [x.cpu() for x in pretrained.last],
        "past_first": pretrained.past_first[:n].cpu(),
        "ids": None if pretrained.ids is None else pretrained.ids[:n].cpu(),
    }


def settings_dict(s: FinetuneSettings) -> dict:
    return asdict(s)
