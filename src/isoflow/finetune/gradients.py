"""Gradient norms and the batches they are measured on: what the penalty's pull is (‖∇ penalty‖ / ‖∇ task loss‖
w.r.t. the encoder's weights), shared by the training loop (the pull after every epoch), the points diagnosis (λ for
a pull) and the gradient diagnosis, below all three."""

from __future__ import annotations

import numpy as np
import torch

SENTENCES_PER_BATCH = 32
PULL_SEED = 0  # the batches and the head the pull is measured with: the same for every seed of a sweep


def gradients_norm(grads) -> float:
    """The norm of a list of gradients taken together (float64 sum of squares; None: a parameter the value does not
    reach)."""
    return float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads if g is not None)))


def gradient_norm(value: torch.Tensor, params) -> float:
    """‖∇ value‖ w.r.t. ``params`` (:func:`gradients_norm`), the graph kept for the next gradient."""
    return gradients_norm(torch.autograd.grad(value, params, retain_graph=True, allow_unused=True))


def batches_of(n: int, batches: int, seed: int) -> list[np.ndarray]:
    """The first ``batches`` batches of 32 of a seeded order of ``n`` examples: what the pull is measured on."""
    order = np.random.default_rng(seed).permutation(n)
    return [order[b * SENTENCES_PER_BATCH : (b + 1) * SENTENCES_PER_BATCH] for b in range(batches)]
