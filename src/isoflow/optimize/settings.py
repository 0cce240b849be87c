"""An optimisation run's settings, declared once (the command line, the config schema and the checks derive from
them); kept apart from the loop so that reading them does not load torch."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..istar_settings import SHRINKAGE_KINDS, check_istar, zeta_setting
from ..settings import check, setting
from .paper import MAIN_SEEDS, PAPER_STEPS
from .runs import head_dir  # noqa: F401 (the settings, the rules and the I-STAR report name a head by it)

# Updates per run by default: the paper's (1,000; 250 for the GLUE tasks, its Appendix A), for the command line and the
# workflow config's `optimize.steps` (the schema's x-default names this).
STEPS = {"default": PAPER_STEPS["main"], "glue": PAPER_STEPS["glue"]}
SEEDS = tuple(range(MAIN_SEEDS))  # the workflow's seeds by default (`optimize.seeds`): as many as the paper ran
HEADS = ("linear", "mlp")


@dataclass
class Settings:
    """Everything that determines a run (written to its JSON record). The fields with a help text are declared once:
    the command line (``isoflow optimize``) and the config schema's keys (``sample_cap``, ``label_centred_every``,
    ``istar.zeta``, ``head``, ``head_layers``, ``hidden_updates``) derive from them (tests/test_settings.py)."""

    task: str
    model: str
    seed: int
    steps: int
    lr: float = setting(1e-3, "Adam learning rate (the paper's)", exclusive_minimum=0.0, schema=False)
    betas: tuple[float, float] = (0.9, 0.999)
    sample_cap: int = setting(
        20_000, "measure sets larger than this on a fresh random sample of this size per update", minimum=2
    )
    extra_every: int = setting(
        0,
        "also record cosine anisotropy, LID, TwoNN, effective rank and uniformity of the table every K updates "
        "(0: never)",
        minimum=0,
        schema=False,
        metavar="K",
    )
    # Beside Mickus et al.'s silhouette-IsoScore link: the table's spectrum (effective rank, RankMe) and its geometry
    # on the sphere (uniformity), isoflow.metrics.spectrum.
    extra_metrics: tuple[str, ...] = ("cosine_anisotropy", "lid_mle", "twonn", "effective_rank", "uniformity")
    block: int = setting(
        0,
        "rows per block of the silhouette (0: the device's size policy, isoflow.metrics.device_policy)",
        minimum=0,
        cli=False,
        schema=False,
    )
    istar_lambda: float = setting(
        0.0, "I-STAR's weight: > 0 pushes isotropy up, < 0 down, 0 = the plain run", cli=False, schema=False
    )
    zeta: float = zeta_setting()
    shrinkage: str = setting(
        "pretrained",
        "IsoScore*'s shrinkage target: the pretrained table's covariance or its isotropic counterpart",
        choices=SHRINKAGE_KINDS,
        flag="--istar-shrinkage",
        schema=False,
    )
    penalty_dtype: str = setting(
        "float32",
        "dtype of the penalty's (differentiated) covariance; metrics stay float64",
        choices=("float32", "float64"),
        cli=False,
        schema=False,
    )
    label_centred_every: int = setting(
        0,
        "every K updates also record IsoScore after removing each label cluster's mean, and "
        "S_intra within classes (0: never)",
        minimum=0,
        metavar="K",
    )
    head: str = setting(
        "linear",
        "the classifier on the embeddings: linear (the paper's) or mlp (hidden layers as wide as its input, GELU)",
        choices=HEADS,
    )
    head_layers: int = setting(1, "hidden layers of an mlp head", minimum=1, maximum=2)
    hidden_updates: int = setting(
        0,
        "an mlp head's last hidden output (what its final linear layer separates): its silhouette and IsoScore before "
        "training and at K updates spaced evenly on a log scale from the first to the last, where it changes most "
        "(0: at every update; each measurement costs about as much as the table's)",
        minimum=0,
        metavar="K",
    )

    def __post_init__(self):
        check_settings(self)

    @property
    def head_dir(self) -> str:
        """Where this run goes below its model: :func:`head_dir`."""
        return head_dir(self.head, self.head_layers)


def check_settings(s: Settings) -> None:
    """Every number of a run in range, before any work (the CLI checks the same; the library must too)."""
    for name, low in (("seed", 0), ("steps", 1)):
        v = getattr(s, name)
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
            raise ValueError(f"{name} must be an integer of at least {low}; got {v!r}")
    check(s)
    if len(s.betas) != 2 or not all(isinstance(b, (int, float)) and 0.0 <= b < 1.0 for b in s.betas):
        raise ValueError(f"betas must be two numbers in [0, 1); got {s.betas!r}")
    check_istar(s.istar_lambda, s.zeta, s.shrinkage, s.penalty_dtype)


def report_outputs(*, main: bool, glue: bool, seeds: int, label_centred: bool) -> tuple[list[str], list[str]]:
    """(tables, figures) `isoflow optimize-report` writes (isoflow.optimize.report) for a config with the paper's main
    pairs (``main``), GLUE pairs (``glue``), ``seeds`` seeds and label-centred measurements: per-run correlations
    always; the main tasks' and GLUE's tables where there are such pairs; the seeds' spread from two seeds. The
    workflow declares them from here."""
    tables = ["correlations_per_run"] + (["seed_spread"] if seeds > 1 else [])
    if main:
        tables += ["correlations", "table1_sizes"]
    if glue:
        tables += ["correlations_glue", "table2_sizes_glue"]
    if label_centred and (main or glue):
        tables += ["label_centred"]
    figures = ["silhouette", "log_isoscore", "silhouette_vs_isoscore"] + (
        ["label_centred_isoscore"] if label_centred else []
    )
    return tables, figures


def hidden_steps(steps: int, hidden_updates: int) -> set[int]:
    """The updates at which a non-linear head's hidden output is measured: every one (``hidden_updates`` 0), or 0, the
    last, and ``hidden_updates`` spaced evenly on a log scale from 1 to the last (rounded; two that round to one
    update are one): a classifier's hidden output changes most in its first updates."""
    if not hidden_updates:
        return set(range(steps + 1))
    return {0, steps, *(int(round(u)) for u in np.geomspace(1, steps, hidden_updates))}


def istar_report_outputs(baseline: bool, hidden: bool = False) -> tuple[list[str], list[str]]:
    """(tables, figures) `isoflow istar-report` writes (isoflow.optimize.istar_report); with a baseline sweep, the
    comparison istar_heads as a table and a figure; for runs with hidden layers (``hidden``), their hidden output's
    figure istar_hidden."""
    heads = ["istar_heads"] if baseline else []
    figures = ["istar_performance", "istar_curves", "istar_silhouette_vs_isoscore", *heads]
    return ["istar", *heads], figures + (["istar_hidden"] if hidden else [])
