"""Which points should I-STAR's penalty see on a given model? A diagnosis by forward and backward passes at the
pretrained model, before any training (docs/results/istar-points; ``isoflow points-diagnosis``).

For each model and each recipe of :data:`isoflow.istar_settings.POINT_RECIPES`, over the same ``batches`` batches of
32 training sentences (a seeded stratified subset), with Σ_S estimated from those batches' points as training
estimates it:

* ``isoscore_star``: IsoScore*_ζ of a batch's points (ζ = 0.2), and ``dimensions`` = ι*·(d − 1) + 1, the number of
  dimensions it implies (IsoScore = (PR − 1)/(d − 1), PR the participation ratio);
* ``top_share``: the share of the points' variance along their top principal direction (λ_max / tr C);
* the gradient norms (w.r.t. the encoder's weights) of the task loss (BERT's head on the pooled output, dropout off)
  and of 1 − IsoScore*, and their ratio ``pull`` (penalty / task at λ = 1; it scales with |λ|);

each the median over the batches. The rule that picks the fine-tuning sweep's recipe (:func:`choose_recipe`) is fixed
here, before any training, and printed in the table's caption.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from .gradients import PULL_SEED, SENTENCES_PER_BATCH, batches_of, gradient_norm
from .model import load_encoder

# BERT's per-layer IsoScore in the IsoScore paper's released results (WikiText-2, no shrinkage): the scale of the
# points the authors penalised (../shared/docs/methods.md, section 3).
BERT_ISOSCORE = (0.116, 0.154)
FLOOR = 0.01  # IsoScore* below this: the points use at most 1 % of the dimensions beyond one, the penalty has no room
REFERENCE_PULL = 0.62  # MiniLM's penalty-to-task gradient ratio at λ = 1 (docs/results/finetune-diagnosis)
MAX_LAMBDA = 100.0  # the largest |λ| the rule accepts to match REFERENCE_PULL
RULE = (
    f"Rule fixed before any training: among the token recipes whose median IsoScore* is at least {FLOOR} (off the "
    f"floor) and whose pull reaches {REFERENCE_PULL} (MiniLM's at lambda = 1) with |lambda| <= {MAX_LAMBDA:g}, the "
    f"one whose IsoScore* is closest, on a log scale, to BERT's {BERT_ISOSCORE[0]}-{BERT_ISOSCORE[1]} (their geometric "
    "mean); none passing: the sweep is not run on that model."
)


def _top_share(points: torch.Tensor) -> float:
    from ..metrics import covariance_tensor

    values = torch.linalg.eigvalsh(covariance_tensor(points.detach(), torch.float64))
    return float(values[-1] / values.sum())


def recipe_measurements(
    encoder, texts: list[str], y: np.ndarray, batches: int, seed: int, recipes, pairs: list[str] | None = None
) -> dict:
    """Per recipe, the medians over batches described in the module docstring (one forward pass per batch serves every
    recipe; the task's gradient is computed once per batch). ``pairs``: a pair task's second texts."""
    from ..istar import IStarLoss, penalty_points

    torch.manual_seed(seed)
    from .model import ClassificationHead

    head = ClassificationHead(encoder.dim, int(y.max()) + 1, dropout=0.0)
    params = [p for p in encoder.parameters() if p.requires_grad]
    chunks = batches_of(len(texts), batches, seed)
    encoder.eval()  # dropout off: one forward pass for both gradients

    device = next(encoder.parameters()).device

    def forward(idx):
        second = None if pairs is None else [pairs[i] for i in idx]
        return encoder(encoder.tokenize([texts[i] for i in idx], second, device), hidden_states=True)

    losses = {r: IStarLoss(1.0, 0.2) for r in recipes}  # Σ_S per recipe, from these batches' points
    with torch.no_grad():
        for idx in chunks:
            pooled, states, mask = forward(idx)
            for r, loss in losses.items():
                loss.update_reference(penalty_points(r, states, mask, pooled))
    rows: dict[str, list] = {r: [] for r in recipes}
    for idx in chunks:
        pooled, states, mask = forward(idx)
        task = torch.nn.functional.cross_entropy(head.to(device)(pooled), torch.as_tensor(y[idx], device=device))
        g_task = gradient_norm(task, params)
        for r, loss in losses.items():
            points = penalty_points(r, states, mask, pooled)
            penalty = loss(points)
            g_pen = gradient_norm(penalty, params)
            iota = 1.0 - float(penalty.detach())
            rows[r].append((iota, _top_share(points), g_task, g_pen, g_pen / g_task, points.shape[0]))
    d = encoder.dim
    out = {}
    for r, values in rows.items():
        a = np.array(values)
        iota = float(np.median(a[:, 0]))
        out[r] = {
            "isoscore_star": iota,
            "dimensions": iota * (d - 1) + 1,
            "top_share": float(np.median(a[:, 1])),
            "task_grad_norm": float(np.median(a[:, 2])),
            "penalty_grad_norm": float(np.median(a[:, 3])),
            "pull": float(np.median(a[:, 4])),
            "points_per_batch": int(np.median(a[:, 5])),
        }
    return out


def lambda_for_pull(encoder, examples, recipe: str, pull: float, batches: int = 5) -> dict:
    """|λ| at which I-STAR's penalty on ``recipe``'s points pulls ``pull`` times as hard as the task loss at this
    (pretrained) encoder: ``pull`` / the median over ``batches`` training batches of ‖∇(1 − IsoScore*)‖ / ‖∇ task‖
    (a fresh BERT head, dropout off, seeded by :data:`PULL_SEED`, so every seed of a sweep gets one λ). Returns
    ``{"istar_pull": pull, "lambda": |λ|, "pull_at_lambda_1": ..., "batches": ...}``."""
    n = min(batches, len(examples.y) // SENTENCES_PER_BATCH)
    if n < 1:
        raise ValueError(f"{len(examples.y)} training examples, fewer than one batch of 32 to measure the pull with")
    pairs = list(examples.b) if examples.pair else None
    m = recipe_measurements(encoder, list(examples.a), np.asarray(examples.y), n, PULL_SEED, [recipe], pairs)[recipe]
    if not m["pull"] > 0:
        raise ValueError(f"the penalty on {recipe} has no gradient at the pretrained model: no lambda gives a pull")
    return {"istar_pull": pull, "lambda": pull / m["pull"], "pull_at_lambda_1": m["pull"], "batches": n,
            "isoscore_star": m["isoscore_star"]}  # fmt: skip


def choose_recipe(measured: dict[str, dict]) -> str | None:
    """The recipe :data:`RULE` picks from one model's measurements (recipe -> row), or None when none passes."""
    target = float(np.sqrt(BERT_ISOSCORE[0] * BERT_ISOSCORE[1]))
    passing = {
        r: m
        for r, m in measured.items()
        if r.startswith("tokens-all-layers")
        and m["isoscore_star"] >= FLOOR
        and m["pull"] > 0
        and REFERENCE_PULL / m["pull"] <= MAX_LAMBDA
    }
    if not passing:
        return None
    return min(passing, key=lambda r: abs(np.log(passing[r]["isoscore_star"] / target)))


def diagnose_points(
    models: list[str],
    task: str,
    out: str | Path,
    *,
    data_dir="data",
    task_path=None,
    raw_dir=None,
    mirror=None,
    batches: int = 5,
    seed: int = 0,
    recipes=None,
    progress: bool = True,
) -> dict:
    """The diagnosis for each model (a built-in name, folder, hub id or GGUF file) on a prepared single-label task:
    writes ``out/points_diagnosis.json`` (the measurements, the recipe the rule picks per model, the provenance) and
    returns it. Tables and the figure: :func:`isoflow.finetune.points_report.write_report`."""
    from ..istar_settings import POINT_RECIPES
    from ..records import run_provenance
    from ..run_inputs import run_inputs
    from .data import examples_of, stratified_subset

    recipes = list(recipes or POINT_RECIPES)
    where = {"data_dir": data_dir, "raw_dir": raw_dir, "mirror": mirror}
    ex = stratified_subset(
        examples_of(run_inputs(device="cpu", task=task, task_path=task_path, **where).task),
        SENTENCES_PER_BATCH * batches,
        seed,
    )
    if len(ex) < SENTENCES_PER_BATCH * batches:
        raise ValueError(f"{task}: {len(ex)} examples, fewer than {batches} batches of 32; give fewer --batches")
    result: dict = {"task": task, "batches_of_32": batches, "seed": seed, "zeta": 0.2, "rule": RULE, "models": {}}
    for model in models:
        t0 = time.perf_counter()
        inputs = run_inputs(device="cpu", model=model, **where)
        resolved = inputs.model
        encoder = load_encoder(resolved, "auto", inputs.device)
        measured = recipe_measurements(encoder, list(ex.a), ex.y, batches, seed, recipes)
        result["models"][resolved.name] = {
            "dim": encoder.dim,
            "pooling": encoder.pooling,
            "recipes": measured,
            "chosen": choose_recipe(measured),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        if progress:
            chosen = result["models"][resolved.name]["chosen"]
            print(f"{resolved.name}: {time.perf_counter() - t0:.0f} s, the rule picks {chosen}", flush=True)
        del encoder
    result.update(run_provenance())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from ..atomic import write_json

    write_json(out / "points_diagnosis.json", result)
    return result
