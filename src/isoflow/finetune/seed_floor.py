"""How far apart two seeds' fine-tuned models are: the floor that "which layers did fine-tuning change?" is read
against.

Every run with layer geometry records, per layer and epoch, linear CKA between the pretrained model's and the current
model's held-out token states (``layer_cka_pretrained``). A value below 1 says the layer moved, not that the procedure
moved it: two seeds of one procedure (its head's initialisation and batch order) end in two models. A run with
``states_points`` writes every layer's states of the first held-out tokens, under the pretrained model and after the
last epoch (:func:`write_states`); from the runs of one weight (two seeds or more), per layer and on the same tokens
(:func:`seed_floor`, exact: :func:`isoflow.metrics.linear_cka_matrices`):

- ``cka_pretrained``: CKA(pretrained, fine-tuned) of each seed;
- ``cka_between_seeds``: CKA(fine-tuned at seed a, fine-tuned at seed b) for every pair of seeds — the floor;
- each biased (as the records' ``layer_cka_pretrained``) and debiased (the unbiased HSIC, Song et al. 2012: the
  biased estimator is high for unrelated states at small n), over three sets of tokens (:data:`TOKENS`): all of them;
  those past their sequence's first position (on a causal LM the attention sink, whose massive states alone can make
  two Gram matrices alike); and those past it that are no outlier point (:func:`isoflow.metrics.outlier_points`, ≥ 10
  × the median distance from the layer's mean) in any of the states compared at that layer — the sink lands
  elsewhere too (on SmolLM2-135M, at the second position of a few SST-2 sentences), and CKA, which centres, is then
  those tokens' number;
- per layer and token set, how many tokens it keeps (``tokens``) and, of the tokens of the set before it (all, then
  past the first), the largest share over the states compared of their centred variance held by those this set
  leaves out (``left_out_share``, :func:`isoflow.metrics.points_variance_share`): how much of the larger set's CKA is
  the left-out tokens' number;
- ``beyond_floor`` (the report's): every seed's model is farther from the pretrained one than any two seeds' models
  are from each other, max over seeds of CKA(pretrained, ·) < min over pairs of CKA between seeds (biased) — a change
  its seeds agree on. Where it fails, the layer moved about as much between seeds as from the pretrained model.

Reference: S. Kornblith, M. Norouzi, H. Lee, G. Hinton. *Similarity of Neural Network Representations Revisited*.
ICML 2019 (CKA between networks trained from different initialisations as the baseline of similarity).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..atomic import atomic_file
from ..records import run_provenance

# torch is imported where states are read or written: the report reads only the floors' JSON

# What names one weight of a sweep in a states file: the runs compared share all of it and differ in seed
ARM = ("task", "model", "reg", "istar_lambda", "cosreg_weight")
# the token sets each CKA is computed over (:func:`token_sets`): a field's suffix -> the set's name in the report
TOKENS = {"": "all", "_past_first": "past first", "_past_outliers": "past first, no outliers"}


def token_sets(reps: list, past_first) -> dict:
    """The masks of :data:`TOKENS` at one layer, from the states compared there (``reps``, each (tokens, dim)) and
    which tokens are past their sequence's first position: all; past the first; past the first and no outlier point
    among those in any of ``reps``."""
    import torch

    from ..metrics import outlier_points

    past_first = torch.as_tensor(past_first).bool()
    later = torch.nonzero(past_first).squeeze(1)
    outliers = torch.zeros_like(past_first)
    for x in reps:
        outliers[later[outlier_points(x[past_first])]] = True
    return {"": torch.ones_like(past_first), "_past_first": past_first, "_past_outliers": past_first & ~outliers}


def write_states(path: str | os.PathLike, states: dict, settings: dict) -> Path:
    """A run's states (:func:`isoflow.finetune.train.kept_states`) and its settings, written whole or not at all."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        torch.save({"settings": settings, **states}, tmp)
    return path


def read_states(path: str | os.PathLike) -> dict:
    import torch

    states = torch.load(path, map_location="cpu", weights_only=False)
    missing = [k for k in ("settings", "pretrained", "layers", "past_first") if k not in states]
    if missing:
        raise ValueError(
            f"{path}: not a fine-tuning run's states file (no {', '.join(missing)}); runs write one with "
            "--states-points"
        )
    return states


def _one_arm(runs: list[tuple[str, dict]]) -> None:
    """The runs compared are seeds of one weight, on the same tokens; else a one-line error naming the file."""
    (first_path, first), *rest = runs
    arm = {k: first["settings"].get(k) for k in ARM}
    for path, states in rest:
        other = {k: states["settings"].get(k) for k in ARM}
        if other != arm:
            differ = ", ".join(f"{k} {other[k]!r} (not {arm[k]!r})" for k in ARM if other[k] != arm[k])
            raise ValueError(f"{path}: another weight's run than {first_path}'s: {differ}; give the seeds of one")
        same_tokens = states["past_first"].shape == first["past_first"].shape and (
            states.get("ids") is None or first.get("ids") is None or bool((states["ids"] == first["ids"]).all())
        )
        if not same_tokens or len(states["layers"]) != len(first["layers"]):
            raise ValueError(f"{path}: other tokens or layers than {first_path}'s (states_points, held-out set)")
    seeds = [s["settings"]["seed"] for _, s in runs]
    if len(set(seeds)) != len(seeds) or len(seeds) < 2:
        raise ValueError(f"CKA between seeds needs two seeds or more, each once; got seeds {seeds}")


def seed_floor(paths) -> dict:
    """Per layer, CKA of each seed's fine-tuned states to its pretrained ones and between every pair of seeds (module
    docstring), from the states files of one weight's runs; a JSON-ready dict."""
    import torch

    from ..metrics import linear_cka_matrices, points_variance_share

    runs = [(str(p), read_states(p)) for p in paths]
    _one_arm(runs)
    ordered = sorted((s for _, s in runs), key=lambda s: s["settings"]["seed"])
    seeds = [s["settings"]["seed"] for s in ordered]
    pairs = list(itertools.combinations(range(len(seeds)), 2))
    layers = []
    for layer in range(len(ordered[0]["layers"])):
        row = {"layer": layer}
        # one matrix: the seeds' fine-tuned states, then each seed's pretrained states; in float64, for the debiased
        # estimator subtracts terms that a massive token makes 10^4 times the rest (float32 loses the difference)
        every = [s[part][layer].double() for part in ("layers", "pretrained") for s in ordered]
        wider = None  # the set before this one (the sets are nested: all, past the first, past the outliers too)
        for suffix, mask in token_sets(every, ordered[0]["past_first"]).items():
            row[f"tokens{suffix}"] = int(mask.sum())
            base = torch.ones_like(mask) if wider is None else wider
            row[f"left_out_share{suffix}"] = max(points_variance_share(x[base], ~mask[base]) for x in every)
            wider = mask
            biased, debiased = (m.tolist() for m in linear_cka_matrices([x[mask] for x in every]))
            k = len(seeds)
            for estimator, m in (("", biased), ("_debiased", debiased)):
                row[f"cka_pretrained{estimator}{suffix}"] = [m[i][k + i] for i in range(k)]
                row[f"cka_between_seeds{estimator}{suffix}"] = [m[i][j] for i, j in pairs]
        layers.append(row)
    settings = ordered[0]["settings"]
    return {
        **{k: settings.get(k) for k in ARM},
        "seeds": seeds,
        "pairs": [[seeds[i], seeds[j]] for i, j in pairs],
        "tokens": int(ordered[0]["past_first"].shape[0]),
        "tokens_past_first": int(ordered[0]["past_first"].sum()),
        "layers": layers,
        **run_provenance(),
    }


CAPTION = (
    "CKA between seeds, the floor of 'which layers did fine-tuning change?': per weight, layer (0 = the embedding "
    "layer) and token set (all the held-out tokens the runs wrote; those past their sequence's first position; those "
    "past it that are no outlier point, ≥ 10 × the median distance from the layer's mean, in any of the states "
    "compared: isoflow.metrics.outlier_points), n_tokens: the tokens the set keeps, left_out_share: of the previous "
    "set's tokens (all, then past the first), the largest share over the states compared of their centred variance "
    "held by those this set leaves out (how much of the previous set's CKA is theirs); "
    "linear CKA between each seed's fine-tuned states and its pretrained ones (cka_pretrained: min, mean, max over "
    "seeds) and between the fine-tuned states of every pair of seeds (cka_between_seeds: min, mean, max over pairs), "
    "biased (as the runs' layer_cka_pretrained), with the debiased means (unbiased HSIC) beside them; beyond_floor: "
    "the largest cka_pretrained is below the smallest cka_between_seeds (every seed moved farther from the "
    "pretrained model than any two seeds are apart)."
)


def floor_table(paths) -> pd.DataFrame:
    """The report's rows (:data:`CAPTION`) from :func:`seed_floor`'s files, one per weight."""
    import json

    rows = []
    for path in paths:
        floor = json.loads(Path(path).read_text())
        weight = floor["istar_lambda"] if floor["reg"] == "istar" else floor["cosreg_weight"]
        for row in floor["layers"]:
            for suffix, name in TOKENS.items():
                if f"cka_pretrained{suffix}" not in row:  # a floor written before the set existed
                    continue
                to_pretrained, between = row[f"cka_pretrained{suffix}"], row[f"cka_between_seeds{suffix}"]
                rows.append(
                    {
                        "task": floor["task"],
                        "model": floor["model"],
                        "reg": floor["reg"],
                        "weight": weight,
                        "layer": row["layer"],
                        "tokens": name,
                        "seeds": len(floor["seeds"]),
                        "n_tokens": row.get(f"tokens{suffix}"),
                        "left_out_share": row.get(f"left_out_share{suffix}"),
                        "cka_pretrained_min": min(to_pretrained),
                        "cka_pretrained_mean": float(np.mean(to_pretrained)),
                        "cka_pretrained_max": max(to_pretrained),
                        "cka_between_seeds_min": min(between),
                        "cka_between_seeds_mean": float(np.mean(between)),
                        "cka_between_seeds_max": max(between),
                        "cka_pretrained_debiased_mean": float(np.mean(row[f"cka_pretrained_debiased{suffix}"])),
                        "cka_between_seeds_debiased_mean": float(np.mean(row[f"cka_between_seeds_debiased{suffix}"])),
                        "beyond_floor": max(to_pretrained) < min(between),
                    }
                )
    table = pd.DataFrame(rows)
    return table if table.empty else table.sort_values(["task", "model", "reg", "weight", "tokens", "layer"])
