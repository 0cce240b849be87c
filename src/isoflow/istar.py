"""I-STAR (Rudman & Eickhoff, ICLR 2024): isotropy as a training objective, shared by every experiment that trains.

    loss = task_loss + λ · (1 − IsoScore*_ζ(points))

with IsoScore* the IsoScore of the shrunk covariance C_ζ = (1 − ζ)·C(points) + ζ·Σ_S (see
:func:`isoflow.metrics.isoscore_star`). The sign convention is I-STAR's: λ > 0 rewards isotropy (pushes IsoScore*
up), λ < 0 rewards anisotropy (pushes it down), λ = 0 is no penalty at all (nothing is computed, so the run is the
plain run bit for bit).

One API, :class:`IStarLoss`, and one rule for Σ_S, the shrinkage target: the covariance of reference points of the
same kind as the penalised ones, from a large sample (I-STAR: the training set's token states).

* Fine-tuning (and your own loop) re-estimates it every epoch from the training set's token states, as I-STAR's code
  does: :meth:`IStarLoss.update_reference` (a running covariance) after :meth:`IStarLoss.reset_reference`.
* The optimisation experiment trains a fixed table: its reference points are the table before training
  (:meth:`IStarLoss.from_points`, ``kind="pretrained"``, the default), or ``kind="isotropic"``, (tr Σ_pre / d)·I, the
  isotropic covariance with the same total variance (the I-STAR code falls back to the identity when no large
  sample exists; scaling it keeps ζ meaningful).

ζ = 0.2 is the I-STAR code's default.
"""

from __future__ import annotations

import torch

from .istar_settings import DEFAULT_ZETA, PENALTY_DTYPE_NAMES, check_cosreg_weight, check_istar
from .metrics import check_shrinkage, covariance_tensor, isoscore_star_tensor

PENALTY_DTYPES = {name: getattr(torch, name) for name in PENALTY_DTYPE_NAMES}


def shrinkage_target(points: torch.Tensor, kind: str = "pretrained") -> torch.Tensor:
    """Σ_S (float64, d × d) from reference points: their covariance, or its isotropic counterpart."""
    with torch.no_grad():
        C = covariance_tensor(points.detach(), torch.float64)
        if kind == "isotropic":
            return torch.eye(C.shape[0], dtype=C.dtype, device=C.device) * (torch.trace(C) / C.shape[0])
        return C


class _PenaltyFromCovariance(torch.autograd.Function):
    """λ·(1 − ι*) with ι* = (tr(C_ζ)²/‖C_ζ‖²_F − 1)/(d − 1), C_ζ = (1 − ζ)·C + ζ·Σ_S and C = X_cᵀX_c/(n − 1).

    Backward, in closed form: ∂ι*/∂C = (1 − ζ)/(d − 1)·(2t/q·I − 2t²/q²·C_ζ) with t = tr C_ζ, q = ‖C_ζ‖²_F, and
    ∂L/∂X = 2/(n − 1)·X_c·(∂L/∂C) (∂L/∂C is symmetric; the centring adds nothing since X_c's rows sum to zero).
    """

    @staticmethod
    def forward(ctx, points, covariance, shrinkage, zeta, istar_lambda, dtype):
        C = covariance.to(torch.float64)
        Cz = (1.0 - zeta) * C + zeta * shrinkage if zeta else C
        d = C.shape[0]
        t, q = torch.trace(Cz), (Cz * Cz).sum()
        iota = (t * t / q - 1.0) / (d - 1)
        eye = torch.eye(d, dtype=C.dtype, device=C.device)
        dpen_dC = -istar_lambda * (1.0 - zeta) / (d - 1) * (2.0 * t / q * eye - 2.0 * t * t / (q * q) * Cz)
        ctx.save_for_backward(points, dpen_dC)
        ctx.dtype = dtype
        return istar_lambda * (1.0 - iota)

    @staticmethod
    def backward(ctx, grad):
        points, dpen_dC = ctx.saved_tensors
        x = points.detach().to(ctx.dtype)
        xc = x - x.mean(dim=0, keepdim=True)
        dx = xc @ dpen_dC.to(ctx.dtype) * (2.0 / (x.shape[0] - 1))
        return (dx * grad.to(ctx.dtype)).to(points.dtype), None, None, None, None, None


# ----- The public losses: I-STAR and CosReg as torch modules, for any training loop ------------------------------


def points_of(states, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The point cloud of hidden states: ``states`` is an (n, d) tensor, a (batch, tokens, d) tensor, or a sequence of
    such tensors (one per layer); ``mask`` (batch, tokens), 1 for real tokens, drops padding. Returns (points, d)."""
    layers = list(states) if isinstance(states, (list, tuple)) else [states]
    if not layers:
        raise ValueError("no hidden states given")
    out = []
    for s in layers:
        if s.dim() == 2:
            out.append(s)
        elif s.dim() == 3:
            if mask is not None:
                if tuple(mask.shape) != tuple(s.shape[:2]):
                    raise ValueError(
                        f"the mask has shape {tuple(mask.shape)} but the states {tuple(s.shape)}; it must be (batch, "
                        f"tokens)"
                    )
                out.append(s[mask.bool()])
            else:
                out.append(s.reshape(-1, s.shape[-1]))
        else:
            raise ValueError(f"hidden states must be (points, dim) or (batch, tokens, dim); got shape {tuple(s.shape)}")
    return out[0] if len(out) == 1 else torch.cat(out, dim=0)


def first_positions_dropped(mask: torch.Tensor) -> torch.Tensor:
    """The attention mask (batch, tokens) without each row's first non-padding position (right or left padding).

    >>> first_positions_dropped(torch.tensor([[1, 1, 1, 0], [0, 0, 1, 1]])).tolist()
    [[0, 1, 1, 0], [0, 0, 0, 1]]"""
    kept = mask.clone()
    kept[torch.arange(mask.shape[0], device=mask.device), mask.to(torch.int8).argmax(dim=1)] = 0
    return kept


RMS_EPS = 1e-6  # in the RMS norm's denominator, as Llama's RMSNorm (1e-6 to 1e-5): a zero state stays finite


def rms_centred(layer_points: torch.Tensor) -> torch.Tensor:
    """One layer's points (n, d), each scaled to unit root mean square over its d coordinates (RMSNorm without its
    learned gain), then centred on their mean: every layer on one scale, with no offset between layers.

    >>> rms_centred(torch.tensor([[3.0, 4.0], [6.0, 8.0], [0.0, 5.0]]))   # the first two: one direction, one scale
    tensor([[ 0.2828, -0.0943],
            [ 0.2828, -0.0943],
            [-0.5657,  0.1886]])"""
    normed = rms_normed(layer_points)
    return normed - normed.mean(dim=0, keepdim=True)


def rms_normed(layer_points: torch.Tensor) -> torch.Tensor:
    """One layer's points (n, d), each scaled to unit root mean square over its d coordinates (RMSNorm without its
    learned gain): :func:`rms_centred` before the centring."""
    return layer_points * torch.rsqrt(layer_points.pow(2).mean(dim=1, keepdim=True) + RMS_EPS)


def penalty_points(recipe: str, hidden_states, mask: torch.Tensor, pooled: torch.Tensor | None = None) -> torch.Tensor:
    """The points a regulariser sees, by recipe (:data:`isoflow.istar_settings.POINT_RECIPES`), from a model's
    ``hidden_states`` (the embedding output first, then every layer's: what ``output_hidden_states=True`` gives), its
    attention mask and, for ``pooled``, the pooled outputs. Per batch: "centred" is on the batch's points of a layer.
    Use it in your own loop as ``IStarLoss(...)(penalty_points("tokens-all-layers-skip-first", out.hidden_states,
    mask))``.

    >>> states = tuple(torch.randn(2, 5, 8) * (1 + layer) for layer in range(4))   # embeddings + 3 layers
    >>> mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])                     # 7 real tokens
    >>> [penalty_points(r, states, mask).shape[0] for r in ("tokens-all-layers", "tokens-all-layers-skip-first")]
    [21, 15]"""
    layers = penalty_layers(recipe, hidden_states, mask, pooled)
    if "-rms-centred" in recipe:
        layers = [x - x.mean(dim=0, keepdim=True) for x in layers]
    return layers[0] if len(layers) == 1 else torch.cat(layers, dim=0)


def penalty_layers(recipe: str, hidden_states, mask: torch.Tensor, pooled: torch.Tensor | None = None) -> list:
    """The same points layer by layer, before the ``-rms-centred`` recipes centre them (their RMS norm applied): one
    (n_l, d) tensor per layer (one for ``pooled`` and ``tokens-last-layer``). What :class:`MeanDirectionLoss` reads:
    the layers' means, which the centring takes away from IsoScore*'s points.

    >>> states = tuple(torch.randn(2, 5, 8) for layer in range(4))
    >>> mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])
    >>> [x.shape[0] for x in penalty_layers("tokens-all-layers-rms-centred-skip-first", states, mask)]
    [5, 5, 5]"""
    from .istar_settings import POINT_RECIPES

    if recipe not in POINT_RECIPES:
        raise ValueError(f"points must be one of {', '.join(POINT_RECIPES)}; got {recipe!r}")
    if recipe == "pooled":
        if pooled is None:
            raise ValueError("points 'pooled' need the pooled outputs")
        return [pooled]
    if recipe == "tokens-last-layer":
        return [points_of(hidden_states[-1], mask)]
    kept = first_positions_dropped(mask) if recipe.endswith("-skip-first") else mask
    layers = [points_of(h, kept) for h in hidden_states[1:]]
    return [rms_normed(x) for x in layers] if "-rms-centred" in recipe else layers


def _zero_like(states) -> torch.Tensor:
    """A 0-d zero in the states' dtype and device (what a zero weight returns, without gathering any points)."""
    if isinstance(states, (list, tuple)):
        if not states:
            raise ValueError("no hidden states given")
        states = states[0]
    return torch.zeros((), dtype=states.dtype, device=states.device)


class RunningCovariance:
    """The covariance of every point fed to :meth:`update` so far, in float64 with O(d²) memory (sums of x and xxᵀ
    around a fixed shift, the first batch's mean, so that far-from-zero data does not cancel catastrophically)."""

    def __init__(self):
        self.n = 0
        self._shift = self._sum = self._outer = None

    def update(self, points: torch.Tensor) -> None:
        with torch.no_grad():
            x = points.detach().to(torch.float64)
            if x.shape[0] == 0:
                return
            if self._shift is None:
                self._shift = x.mean(dim=0)
                self._sum = torch.zeros_like(self._shift)
                self._outer = torch.zeros(x.shape[1], x.shape[1], dtype=torch.float64, device=x.device)
            x = x - self._shift
            self._sum += x.sum(dim=0)
            self._outer += x.T @ x
            self.n += x.shape[0]

    def covariance(self) -> torch.Tensor:
        """The sample covariance (d, d), float64."""
        if self.n < 2:
            raise ValueError(f"a covariance needs at least 2 points; {self.n} were given")
        mean = self._sum / self.n
        return (self._outer - self.n * torch.outer(mean, mean)) / (self.n - 1)


class IStarLoss(torch.nn.Module):
    r"""I-STAR's penalty as a module: :math:`\lambda\,(1 - \mathrm{IsoScore}^*_\zeta(X))` (Rudman & Eickhoff, ICLR
    2024).

    IsoScore* is IsoScore of the shrunk covariance :math:`C_\zeta = (1-\zeta)\,C(X) + \zeta\,\Sigma_S`; λ > 0 pushes
    isotropy up, λ < 0 down; λ = 0 returns a zero without computing anything. Σ_S, the reference covariance, is
    either fixed (``reference=`` a (d, d) matrix) or running: :meth:`update_reference` adds points (e.g. the training
    set's token states, without gradients, at the start of every epoch, as I-STAR does) and :meth:`reset_reference`
    starts over. The loss keeps the dtype of the states (the covariance is formed in float32 for float16/bfloat16
    states).

    >>> import torch
    >>> from isoflow import IStarLoss
    >>> loss = IStarLoss(istar_lambda=-1.0, zeta=0.2)
    >>> states = torch.randn(4, 16, 8, requires_grad=True)       # (batch, tokens, dim) of one layer
    >>> mask = torch.ones(4, 16, dtype=torch.long); mask[:, 12:] = 0   # the last 4 tokens are padding
    >>> loss.update_reference(states.detach(), mask)             # Σ_S from these points (usually: the training set)
    >>> penalty = loss(states, mask)
    >>> penalty.backward()
    >>> penalty.dtype, states.grad.shape
    (torch.float32, torch.Size([4, 16, 8]))
    """

    def __init__(self, istar_lambda: float, zeta: float = DEFAULT_ZETA, reference=None, dtype: str | None = None):
        super().__init__()
        check_istar(istar_lambda, zeta, dtype=dtype or "float32")
        self.istar_lambda, self.zeta = float(istar_lambda), float(zeta)
        self.dtype = PENALTY_DTYPES[dtype] if dtype else None  # None: float64 for float64 points, else float32
        self._running = RunningCovariance()
        self.reference = None if reference is None else torch.as_tensor(reference, dtype=torch.float64)

    @classmethod
    def from_points(
        cls, istar_lambda: float, zeta: float, points: torch.Tensor, kind: str = "pretrained", dtype: str | None = None
    ) -> IStarLoss:
        """A fixed Σ_S from reference points: their covariance (``pretrained``) or its isotropic counterpart."""
        check_istar(istar_lambda, zeta, kind, dtype or "float32")
        return cls(istar_lambda, zeta, shrinkage_target(points, kind) if zeta else None, dtype)

    @classmethod
    def from_matrix(
        cls, istar_lambda: float, zeta: float, matrix, dim: int, dtype: str | None = None, device=None
    ) -> IStarLoss:
        """A fixed, given Σ_S (checked: shape (dim, dim), finite, symmetric)."""
        check_istar(istar_lambda, zeta, dtype=dtype or "float32")
        return cls(istar_lambda, zeta, check_shrinkage(matrix, dim, zeta, device=device), dtype)

    @property
    def active(self) -> bool:
        """Whether the penalty computes anything (λ ≠ 0)."""
        return self.istar_lambda != 0.0

    def reset_reference(self) -> None:
        self._running = RunningCovariance()
        self.reference = None

    def update_reference(self, states, mask: torch.Tensor | None = None) -> None:
        """Add points to the running reference covariance Σ_S (no gradients)."""
        self._running.update(points_of(states, mask))
        self.reference = None  # recomputed from the running sums when next needed

    @property
    def reference_points(self) -> int:
        """How many points the running Σ_S holds."""
        return self._running.n

    def shrinkage(self, dim: int, device) -> torch.Tensor | None:
        if not self.zeta:
            return None
        if self.reference is None:
            if self._running.n < 2:
                raise ValueError(
                    "zeta > 0 needs a reference covariance: pass reference= or call update_reference() first"
                )
            self.reference = self._running.covariance()
        if self.reference.shape != (dim, dim):
            raise ValueError(f"the reference covariance is {tuple(self.reference.shape)}, the points have dim {dim}")
        return self.reference.to(device)

    def _dtype(self, x: torch.Tensor) -> torch.dtype:
        return self.dtype or (torch.float64 if x.dtype == torch.float64 else torch.float32)

    def isoscore_star(self, states, mask: torch.Tensor | None = None) -> torch.Tensor:
        """IsoScore*_ζ of the points (0-d, differentiable)."""
        x = points_of(states, mask)
        return isoscore_star_tensor(x, self.shrinkage(x.shape[1], x.device), self.zeta, self._dtype(x))

    def penalty_given_covariance(self, points: torch.Tensor, covariance: torch.Tensor) -> torch.Tensor:
        """The penalty of ``points`` when their (float64) covariance is already known, e.g. because a loop measured it
        for IsoScore: the forward pass costs nothing more, and the backward pass is one n×d·d×d product in the
        penalty's dtype (autograd through the covariance would cost two). Same value and gradient as :meth:`forward`
        (tested against autograd)."""
        shrink = self.shrinkage(points.shape[1], points.device)
        return _PenaltyFromCovariance.apply(
            points, covariance, shrink, self.zeta, self.istar_lambda, self._dtype(points)
        )

    def forward(self, states, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.istar_lambda == 0.0:
            return _zero_like(states)
        x = points_of(states, mask)
        return (self.istar_lambda * (1.0 - self.isoscore_star(x))).to(x.dtype)

    def penalty(self, points: torch.Tensor) -> torch.Tensor:
        """λ·(1 − IsoScore*_ζ(points)) in the penalty's dtype (``forward`` returns it in the points' dtype)."""
        return self.istar_lambda * (1.0 - self.isoscore_star(points))


class CosineRegLoss(torch.nn.Module):
    r"""CosReg, the baseline the I-STAR poster compares with: ``cosreg_weight`` × the mean cosine similarity of all
    distinct pairs of points, :math:`(\lVert\sum_i u_i\rVert^2 - n) / (n(n-1))` with
    :math:`u_i = x_i/\lVert x_i\rVert` (O(nd), no n×n matrix). A positive weight pushes the points apart in angle
    (more isotropic); weight 0 computes nothing.
    Same inputs as :class:`IStarLoss`.

    >>> import torch
    >>> from isoflow import CosineRegLoss
    >>> points = torch.tensor([[1., 0.], [0., 1.], [1., 1.]], requires_grad=True)
    >>> round(float(CosineRegLoss(cosreg_weight=1.0)(points)), 4)   # pairs: 0, 0.7071, 0.7071
    0.4714
    """

    def __init__(self, cosreg_weight: float):
        super().__init__()
        self.cosreg_weight = check_cosreg_weight(cosreg_weight)

    def forward(self, states, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.cosreg_weight == 0.0:
            return _zero_like(states)
        x = points_of(states, mask)
        n = x.shape[0]
        if n < 2:
            raise ValueError("CosReg needs at least 2 points")
        u = torch.nn.functional.normalize(x.to(torch.float32 if x.dtype != torch.float64 else x.dtype), dim=1)
        s = u.sum(dim=0)
        return (self.cosreg_weight * ((s * s).sum() - n) / (n * (n - 1))).to(x.dtype)


class MeanDirectionLoss(torch.nn.Module):
    r"""A control for I-STAR: a second loss on the same points that does not target their isotropy.
    ``weight`` × the mean over layers of :math:`1 - \cos(m_l, u_l)`, with :math:`m_l` the mean of layer *l*'s points
    before any centring (:func:`penalty_layers`) and :math:`u_l` a fixed random unit direction per layer (standard
    normal, seeded by ``direction_seed``: the same directions for every run). It pulls where each layer's cloud sits,
    not its shape: IsoScore* of the ``-rms-centred`` recipes reads each layer's points centred on their mean, to which
    this loss is a function of nothing else. Its gradient with respect to :math:`m_l` is orthogonal to :math:`m_l`, so
    to first order the mean's length (what cosine anisotropy grows with) does not change either. ``weight`` may be
    set between steps (the fine-tuning loop sets it every epoch to match a pull). Weight 0 computes nothing.

    >>> import torch
    >>> layers = [torch.tensor([[1., 0.], [1., 2.]]), torch.tensor([[0., 3.], [0., 1.]])]
    >>> loss = MeanDirectionLoss(1.0)
    >>> loss.directions = torch.tensor([[1., 0.], [1., 0.]], dtype=torch.float64)   # fixed by hand here
    >>> round(float(loss(layers)), 4)   # layer 0: 1 - cos((1, 1), (1, 0)); layer 1: 1 - cos((0, 2), (1, 0))
    0.6464
    """

    def __init__(self, weight: float, direction_seed: int = 0):
        super().__init__()
        self.weight = check_cosreg_weight(weight, "the mean-direction control's weight")
        self.direction_seed = int(direction_seed)
        self.directions: torch.Tensor | None = None  # (layers, d), float64, made on the first call

    def _directions(self, n_layers: int, dim: int, device) -> torch.Tensor:
        if self.directions is None:
            gen = torch.Generator().manual_seed(self.direction_seed)
            u = torch.randn(n_layers, dim, generator=gen, dtype=torch.float64)
            self.directions = u / u.norm(dim=1, keepdim=True)
        if tuple(self.directions.shape) != (n_layers, dim):
            raise ValueError(
                f"the directions were drawn for {tuple(self.directions.shape)} (layers, dim); these points have "
                f"{(n_layers, dim)}"
            )
        return self.directions.to(device)

    def forward(self, layers) -> torch.Tensor:
        layers = list(layers) if isinstance(layers, (list, tuple)) else [layers]
        if self.weight == 0.0:
            return _zero_like(layers)
        means = torch.stack([x.to(torch.float64).mean(dim=0) for x in layers])
        u = self._directions(*means.shape, means.device)
        cos = (means * u).sum(dim=1) / means.norm(dim=1).clamp_min(1e-12)
        return (self.weight * (1.0 - cos).mean()).to(layers[0].dtype)
