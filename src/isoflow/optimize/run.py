"""One run of the experiment from prepared files to its record on disk.

Reads ``<data_dir>/tasks/<task>`` and ``<data_dir>/embeddings/<model>/<task>``,
optimises, and writes ``<out>.parquet`` (tidy: task, model, seed, step, loss,
accuracy, silhouette, isoscore[, extra metrics]) and ``<out>.json`` (settings,
versions, device, timings, sizes). Both are written to temp files and renamed
only after the whole run succeeded, JSON last: an interrupted or failed run
leaves no record that looks complete.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

from ..datasets import resolve_name
from ..embed import embeddings_dir, items_digest, load_embeddings
from ..models import MODELS
from ..run_inputs import run_inputs
from ..skeleton import Outcome, Place, run_section
from .loop import Diverged, OptimizationError, Settings, optimize, settings_dict
from .runs import optimisation_run, run_kind
from .settings import STEPS

logger = logging.getLogger(__name__)


def default_steps(task: str) -> int:
    """The paper's updates for ``task`` (isoflow.optimize.settings.STEPS)."""
    return STEPS["glue" if resolve_name(task).startswith("glue/") else "default"]


def trajectory_path(
    task: str,
    model: str,
    seed: int,
    results: str | os.PathLike = "results",
    istar_lambda: float = 0.0,
    head_dir: str = "",
) -> Path:
    """``results/optimize/runs/<task>/<model>/seed<S>`` (the optimize section's), or
    ``results/istar/runs/<task>/<model>/istar<λ>/seed<S>`` for I-STAR runs with λ ≠ 0 (the istar section's; its λ = 0
    rows are the optimize runs); a non-linear head's runs one folder deeper, ``<model>/<head_dir>/`` (``mlp1``); add
    .parquet / .json."""
    return Path(
        optimisation_run(resolve_name(task), model, seed, istar_lambda=istar_lambda, head=head_dir).path(results)
    )


def _run_one(settings: Settings, out: Path, body) -> tuple[Path, Path]:
    """One seed's run through the skeleton: ``body(settings, out)`` optimises and gives (trajectory, diverged_at); the
    record goes in the section of its λ (λ = 0: optimize; else istar). A run that stopped (diverged_at) is recorded as
    such: the analysis counts it, never averages it."""
    parquet = out.with_suffix(".parquet")

    def outcome() -> Outcome:
        traj, diverged_at = body(settings, out)
        return Outcome(settings_dict(traj.settings), traj.info, [(parquet, traj.frame())], diverged_at=diverged_at)

    section = run_kind(settings.istar_lambda).SECTION
    return parquet, run_section(section, Place(out.with_suffix(".json")), outcome)


def run_optimize(
    task: str, model: str, seed: int, *, out: str | os.PathLike | None = None, **kwargs
) -> tuple[Path, Path]:
    """Optimise ``task`` × ``model`` with ``seed`` and write its record; returns (parquet, json): :func:`run_seeds`."""
    return run_seeds(task, model, [seed], out=out, **kwargs)[0]


def _embeddings(model: str, task: str, tdata, tpath: Path, data_dir, embeddings_path) -> tuple:
    """The task's embeddings by ``model`` (``embeddings_path``, else where ``isoflow encode`` puts them), checked to be
    of the task's items as prepared now; (array, its metadata, the items' digest)."""
    emb_dir = Path(embeddings_path or embeddings_dir(model, task, data_dir))
    if not (emb_dir / "embeddings.npy").is_file():
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r} (no embeddings at {emb_dir}); known: {', '.join(MODELS)}")
        raise FileNotFoundError(f"{emb_dir}: no embeddings; run `isoflow encode --model {model} --task {task}` first")
    emb, emb_meta = load_embeddings(emb_dir)
    digest = items_digest(tdata.items["text"].astype(str).tolist())
    if emb_meta.get("items_sha256") not in (None, digest):
        raise ValueError(
            f"{emb_dir} was encoded from another item list than the task at {tpath} (the task was prepared "
            f"again since?); re-encode: `isoflow encode --model {model} --task {task} --force`"
        )
    return emb, emb_meta, digest


def _plan(task: str, model: str, seeds: list[int], steps: int | None, out, settings: dict) -> list[Settings]:
    """Each seed's settings, checked first: a number out of range is an error before any file is read."""
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, and at least one; got {list(seeds)}")
    if out is not None and len(seeds) > 1 and "{seed}" not in str(out):
        raise ValueError(f"with several seeds, the output path must contain {{seed}}; got {out}")
    name = resolve_name(task)
    steps = default_steps(name) if steps is None else steps
    return [Settings(task=name, model=model, seed=seed, steps=steps, **settings) for seed in seeds]


def run_seeds(
    task: str,
    model: str,
    seeds: list[int],
    *,
    steps: int | None = None,
    data_dir: str | os.PathLike = "data",
    task_path: str | os.PathLike | None = None,
    embeddings_path: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    results: str | os.PathLike = "results",
    device: str = "auto",
    progress: bool | None = None,
    callback=None,
    keep_diverged: bool = False,
    **settings,
) -> list[tuple[Path, Path]]:
    """Optimise ``task`` × ``model`` once per seed, in this process (the task and embeddings are read once, which
    saves a GPU job most of its time), writing each seed's record exactly as a run of its own would; returns their
    (parquet, json) paths. ``out`` (optional) must contain ``{seed}`` when there are several seeds.

    A run that diverges raises :class:`~isoflow.optimize.optimize.Diverged` and writes nothing, unless
    ``keep_diverged``: then its record says ``"diverged": true`` and the step (the states before it are kept), so that
    a sweep's analysis can report it (an I-STAR sweep at large |λ| may diverge by design)."""
    plan = _plan(task, model, seeds, steps, out, settings)
    inputs = run_inputs(device=device, task=task, task_path=task_path, data_dir=data_dir)
    tdata = inputs.task
    emb, emb_meta, digest = _embeddings(model, task, tdata, inputs.task_path, data_dir, embeddings_path)

    def body(s: Settings, target: Path):
        diverged_at = None
        try:
            traj = optimize(tdata, emb, s, device=inputs.device, progress=progress, callback=callback)
        except Diverged as exc:
            if not keep_diverged:
                raise OptimizationError(f"{exc}; no trajectory was written") from exc
            traj, diverged_at = exc.trajectory, exc.step
            logger.warning("%s; recorded as diverged in %s", exc, target.with_suffix(".json"))
        traj.info["embeddings_items_sha256"] = digest
        traj.info["embeddings_sha256"] = emb_meta.get("embeddings_sha256")
        return traj, diverged_at

    written = []
    for s in plan:
        s = replace(s, task=tdata.name)
        target = Path(
            str(out).replace("{seed}", str(s.seed))
            if out is not None
            else trajectory_path(tdata.name, model, s.seed, results, s.istar_lambda, s.head_dir)
        )
        written.append(_run_one(s, target, body))
    return written
