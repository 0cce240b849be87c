"""One fine-tuning run from a prepared task to its records: ``<out>.parquet`` (held-out measurements per epoch),
``<out>.steps.parquet`` (training loss and penalty per step) and ``<out>.json`` (settings, held-out data, sizes,
speeds, versions, code commit), the JSON last: an interrupted run leaves no record that looks complete, only its
state after the last epoch it finished, from which the same command resumes (:mod:`.checkpoint`). A run
that diverges (NaN) is recorded with ``"diverged": true`` and the epoch, so that the sweep's table reports it.

Default place: ``results/finetune/<task>/<model>/istar<λ>/seed<S>`` (λ = 0 included: every fine-tuning run is
part of a sweep), or ``.../cosreg<w>/seed<S>`` for CosReg runs; a learning-rate candidate's (a plain run the choice
reads) at ``.../lr-selection/lr<lr>/seed<S>``."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from ..atomic import in_progress_path
from ..datasets import resolve_name
from ..models import sentence_model
from ..models.spec import ModelSpec
from ..run_inputs import run_inputs
from ..skeleton import Outcome, Place, run_section
from .checkpoint import Checkpoint
from .data import splits
from .model import load_encoder
from .runs import LrRun, SweepRun, in_arm
from .train import FinetuneSettings, finetune, settings_dict


def finetune_path(
    task: str,
    model: str,
    seed: int,
    results: str | os.PathLike = "results",
    *,
    reg: str = "istar",
    weight: float = 0.0,
    lr_candidate: float | None = None,
) -> Path:
    """A run's place, its run id's path: ``results/finetune/runs/<task>/<model>/<reg><weight>/seed<S>``
    (:class:`~.runs.SweepRun`: ``istar0`` the plain run); with ``lr_candidate`` (a learning rate), that candidate's
    plain run, ``.../lr-selection/lr<lr>/seed<S>`` (:class:`~.runs.LrRun`)."""
    if lr_candidate is not None:
        return Path(LrRun(resolve_name(task), model, float(lr_candidate), int(seed)).path(results))
    return Path(SweepRun(resolve_name(task), model, reg, float(weight), int(seed)).path(results))


def matched_pulls(folder: str | os.PathLike, seed: int, epochs: int) -> dict:
    """The pulls a mean-direction control run of ``seed`` matches (``matched_pull_from``): the ``pull`` column of
    ``<folder>/seed<S>.parquet`` at epochs 0 … ``epochs`` − 1, the start of each epoch it trains, with the file's
    sha256 (for the record); a ValueError naming the file and what is missing otherwise."""
    from ..fetch import sha256_of

    path = Path(in_arm(folder, seed, ".parquet"))
    if not path.is_file():
        raise ValueError(
            f"{path}: no such run to match the pull of (finetune.matched_pull_from names a folder of runs with a "
            f"seed{seed}.parquet)"
        )
    frame = pd.read_parquet(path)
    pulls = frame.set_index("epoch")["pull"] if {"epoch", "pull"} <= set(frame.columns) else None
    wanted = list(range(epochs))
    if pulls is None or not set(wanted) <= set(pulls.index) or not pulls.loc[wanted].gt(0).all():
        raise ValueError(
            f"{path}: needs a positive 'pull' at epochs {wanted} (an I-STAR run that logged its pull, with at least "
            f"{epochs} epochs); fix finetune.matched_pull_from"
        )
    return {"from": str(folder), "file": str(path), "sha256": sha256_of(path), "pulls": pulls.loc[wanted].tolist()}


# Settings that do not change the pretrained encoder's pass over the held-out and validation examples at epoch 0: runs
# that differ only in these share it (one sweep's seeds, weights and regularisers on the same points).
NOT_IN_THE_PASS = (
    "seed", "reg", "istar_lambda", "cosreg_weight", "meandir_weight", "matched_pull_from", "istar_pull", "lr",
    "epochs", "dropout", "weight_decay", "batch_size", "shrinkage_points", "pull_batches", "layer_twonn", "k_lid",
    "states_points",
)  # fmt: skip


def shared_pass_path(out: Path, identity: dict) -> Path:
    """``<runs>/<task>/<model>/.pass-<digest>.partial``: where a run finds, or leaves, the pretrained encoder's pass
    at epoch 0 for the other runs of its sweep (named as progress, so that saving and publishing runs leave it)."""
    import hashlib

    from ..atomic import IN_PROGRESS

    kept = {**identity, "settings": {k: v for k, v in identity["settings"].items() if k not in NOT_IN_THE_PASS}}
    digest = hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return Path(out).parent.parent / f".pass-{digest}{IN_PROGRESS}"


def run_finetune(
    task: str,
    model: str | os.PathLike | ModelSpec,
    seed: int,
    *,
    data_dir: str | os.PathLike = "data",
    task_path: str | os.PathLike | None = None,
    results: str | os.PathLike = "results",
    out: str | os.PathLike | None = None,
    device: str = "auto",
    mirror=None,
    raw_dir: str | os.PathLike | None = None,
    progress: bool | None = None,
    callback=None,
    lr_choice: dict | None = None,
    states_out: str | os.PathLike | None = None,
    lr_candidate: bool = False,
    **settings,
) -> tuple[Path, Path]:
    """Fine-tune ``model`` (a name or path, or a :class:`~isoflow.models.spec.ModelSpec`) on ``task``
    (:mod:`isoflow.finetune.train`), write its records; returns (parquet, json).
    ``lr_choice``: how the learning rate was chosen (:mod:`isoflow.finetune.learning_rate`), for the record. With
    ``states_points``, the token states CKA between seeds reads go to ``states_out`` (default ``<out>.states.pt``),
    written before the record. ``lr_candidate``: the run is a candidate of the learning-rate choice (a plain run, placed
    as :class:`~.runs.LrRun` unless ``out`` is given)."""
    where = {"data_dir": data_dir, "raw_dir": raw_dir, "mirror": mirror}
    place = {"results": results, "out": out, "lr_candidate": lr_candidate}
    run = _prepared(task, model, seed, settings, where, task_path=task_path, device=device, **place)
    body = lambda: _finetuned(run, progress, callback, lr_choice, states_out)  # noqa: E731
    return run.out.with_suffix(".parquet"), run_section("finetune", Place(run.out.with_suffix(".json")), body)


@dataclass
class _Run:
    """A fine-tuning run past its checks, ready to train: its settings (as recorded), model, device, data, encoder,
    place, the pulls a control matches, and its saved state (resumed if it is this run's)."""

    s: FinetuneSettings
    resolved: object
    device: object
    data: object
    encoder: object
    out: Path
    matched: dict | None
    identity: dict
    checkpoint: Checkpoint


def _prepared(task, model, seed, settings, where: dict, *, task_path, device, results, out, lr_candidate) -> _Run:
    """The skeleton's first steps: the settings checked (every number, before any work), the inputs resolved (``where``:
    data_dir, raw_dir, mirror), the data split and the encoder loaded, the run's place and saved state."""
    s = FinetuneSettings(task=resolve_name(task), model=ModelSpec.of(model).model, seed=seed, **settings)
    if lr_candidate and s.weight:
        raise ValueError(f"a learning-rate candidate is a plain run: its {s.reg} weight is {s.weight:g}, not 0")
    inputs = run_inputs(device=device, task=task, task_path=task_path, model=model, **where)
    resolved, tdata = inputs.model, inputs.task
    if not resolved.local:
        sentence_model(resolved.load)  # unknown or static models: a clear error before any training
    s = replace(s, model=resolved.name, task=tdata.name)
    data = splits(tdata, s, **where)
    encoder = load_encoder(resolved, s.pooling, inputs.device)
    s = replace(s, pooling=encoder.pooling)  # the record says which pooling ran
    encoder.precision = s.precision
    lr = s.lr if lr_candidate else None
    place = {"results": results, "reg": s.reg, "weight": s.weight, "lr_candidate": lr}
    out = Path(out or finetune_path(tdata.name, resolved.name, seed, **place))
    matched = matched_pulls(s.matched_pull_from, seed, s.epochs) if s.matched_pull_from else None
    # What the run is, for its saved state: a state saved by a run of other settings, weights or data is not resumed.
    identity = {"settings": settings_dict(s), "model": resolved.source or resolved.name, "data": data.info}
    checkpoint = Checkpoint(in_progress_path(out), identity)
    return _Run(s, resolved, inputs.device, data, encoder, out, matched, identity, checkpoint)


def _finetuned(run: _Run, progress, callback, lr_choice, states_out) -> Outcome:
    """The body: train (resuming from the run's saved state), then what its record holds; the token states CKA between
    seeds reads, when asked for, written before the record."""
    s, data, out, matched = run.s, run.data, run.out, run.matched
    trained, pulled = _trained_settings(run.encoder, data, s)
    result = finetune(
        run.encoder,
        data.train,
        data.heldout,
        trained,
        shared_pass=shared_pass_path(out, run.identity),
        device=run.device,
        progress=progress,
        callback=callback,
        validation=data.validation,
        checkpoint=run.checkpoint,
        matched_pulls=None if matched is None else matched["pulls"],
    )
    measured = {**({"source": run.resolved.source} if run.resolved.local else {}), **data.info, **result.info}
    if lr_choice is not None:
        measured["lr_selection"] = lr_choice
    if matched is not None:  # the pulls the control's weight was set to give, and the runs they were read from
        measured["matched_pull"] = matched
    if pulled is not None:  # the λ that trained, and the pull it was chosen for
        measured["istar_lambda_from_pull"] = {**pulled, "istar_lambda": trained.istar_lambda}
    if result.states is not None:
        from .seed_floor import write_states

        write_states(Path(states_out or out.with_name(out.name + ".states.pt")), result.states, settings_dict(s))
    diverged_at = measured.pop("diverged_at", None)
    return Outcome(
        settings_dict(s), measured, _tables(result, s, out), diverged_at=diverged_at, unit="epoch",
        progress=run.checkpoint,
    )  # fmt: skip


def _trained_settings(encoder, data, s: FinetuneSettings) -> tuple[FinetuneSettings, dict | None]:
    """The settings that train: ``s``, or with ``istar_pull`` its λ in units of λ* (the penalty's pull at the
    pretrained model, :func:`~isoflow.finetune.points_diagnosis.lambda_for_pull`), and what the pull measured."""
    if not (s.istar_pull and s.istar_lambda):
        return s, None
    from .points_diagnosis import lambda_for_pull

    pulled = lambda_for_pull(encoder, data.train, s.points, s.istar_pull, s.pull_batches)
    return replace(s, istar_pull=0.0, istar_lambda=s.istar_lambda * pulled["lambda"]), pulled


def _tables(result, s: FinetuneSettings, out: Path) -> list[tuple[Path, pd.DataFrame]]:
    """A run's tables: ``<out>.parquet`` (its held-out measurements per epoch, labelled with the run's identity) and
    ``<out>.steps.parquet`` (training loss and penalty per step)."""
    frame = pd.DataFrame(result.epochs)
    for col, value in (
        *((("meandir_weight", s.meandir_weight),) if s.reg == "meandir" else ()),
        ("cosreg_weight", s.cosreg_weight),
        ("reg", s.reg),
        ("istar_lambda", s.istar_lambda),
        ("seed", s.seed),
        ("model", s.model),
        ("task", s.task),
    ):
        frame.insert(0, col, value)
    steps = pd.DataFrame(result.steps, columns=["step", "epoch", "loss", "penalty"])
    return [(out.with_suffix(".parquet"), frame), (out.with_name(out.name + ".steps.parquet"), steps)]
