"""The fine-tuning run's settings, declared once: the command line (``isoflow finetune``), the config schema's
``finetune`` keys and the checks derive from them (tests/test_settings.py); kept apart from the training code so that
reading them does not load torch."""

from __future__ import annotations

from dataclasses import dataclass

from ..istar_settings import POINT_RECIPES, check_cosreg_weight, check_istar, zeta_setting
from ..models.loaders import TRAINING_POOLINGS as POOLINGS
from ..settings import check, setting

# Each regulariser with its weight's one name: the setting, the run record's field, the command-line option
# (`--istar-lambda`, `--cosreg-weight`, `--meandir-weight`) and, plural, the config's list (`istar_lambdas`, ...).
# meandir: the strength-matched control of I-STAR (isoflow.istar.MeanDirectionLoss; docs/finetune.md).
REGULARISERS = {"istar": "istar_lambda", "cosreg": "cosreg_weight", "meandir": "meandir_weight"}
# What names one configuration of a sweep in its records (a row of the report's tables: its seeds are the repeats).
# The mean-direction control's runs are not among them: finetune-report refuses them (isoflow.finetune.report).
CONFIGURATION = ("task", "model", "reg", "istar_lambda", "cosreg_weight")
POINTS = tuple(POINT_RECIPES)
PRECISIONS = ("float32", "bf16")
LAYER_TWONN = ("every-epoch", "first-and-last")
TASK_METRICS = {"glue/cola": "mcc", "glue/mrpc": "f1", "glue/qqp": "f1"}


# the strength-matched control's tables (isoflow.finetune.strength_control)
CONTROL_TABLES = ["finetune_strength_control", "finetune_strength_control_seeds", "finetune_strength_control_pulls"]


def report_outputs(
    layer_geometry: bool,
    gradients: bool = False,
    zeta: float | None = None,
    seed_floor: bool = False,
    same_as: bool = False,
    control: bool = False,
) -> tuple[list[str], list[str]]:
    """(tables, figures) `isoflow finetune-report` writes (isoflow.finetune.report): runs measured per layer add a
    table and a figure each of finetune_layers and finetune_layers_epochs; gradients measured at the pretrained model
    the table finetune_gradients; runs with IsoScore*'s shrinkage (``zeta``, default: the setting's; not 0) the
    manipulation check, finetune_manipulation; runs that wrote their states (``seed_floor``: states_points, two seeds
    or more) CKA between seeds, finetune_seed_floor; runs compared with their namesakes elsewhere (``same_as``)
    finetune_same_as; the strength-matched control's runs (``control``: meandir weights) its reading,
    finetune_strength_control, finetune_strength_control_seeds and finetune_strength_control_pulls, and the figure
    finetune_strength_control. The workflow declares them from here."""
    layers = ["finetune_layers", "finetune_layers_epochs"] if layer_geometry else []
    shrunk = FinetuneSettings.__dataclass_fields__["zeta"].default if zeta is None else zeta
    tables = [
        "finetune",
        "finetune_controls",
        "finetune_mcnemar_seeds",
        *(["finetune_gradients"] if gradients else []),
        *(["finetune_manipulation"] if shrunk else []),
        "finetune_paired",
        *layers,
        *(["finetune_seed_floor"] if seed_floor else []),
        *(["finetune_same_as"] if same_as else []),
        *(CONTROL_TABLES if control else []),
    ]
    figures = [
        "finetune_performance",
        "finetune_twonn",
        "finetune_silhouette_vs_isoscore",
        "finetune_baselines",
        "finetune_activations",
        "finetune_epochs",
        *layers,
        *(["finetune_strength_control"] if control else []),
    ]
    return tables, figures


@dataclass
class FinetuneSettings:
    """One fine-tuning run: what it trains (task, model, seed, regulariser and weight) and how."""

    task: str
    model: str
    seed: int = setting(0, "seeds the head's initialisation and the batch order", minimum=0, schema=False)
    reg: str = setting(
        "istar", "the regulariser the weight belongs to", choices=tuple(REGULARISERS), cli=False, schema=False
    )
    istar_lambda: float = setting(0.0, "I-STAR's weight lambda", cli=False, schema=False)
    cosreg_weight: float = setting(0.0, "CosReg's weight", cli=False, schema=False)
    meandir_weight: float = setting(
        0.0,
        "the mean-direction control's weight (with matched_pull_from: in units of that pull)",
        cli=False,
        schema=False,
    )
    zeta: float = zeta_setting()
    istar_pull: float = setting(
        0.0,
        "when > 0, istar_lambda is read in units of lambda*: the lambda at which, at the pretrained model, the "
        "penalty's gradient norm is this multiple of the task loss's (median over pull_batches training batches; one "
        "lambda* for every seed), so istar_lambda -1, 1 ask for that pull and 0.01 for a hundredth of it. 0: "
        "lambda as given",
        minimum=0.0,
    )
    matched_pull_from: str = setting(
        "",
        "a folder of fine-tuning runs (seed<S>.parquet) whose recorded pull, epoch by epoch, the mean-direction "
        "control's weight is set to match: at the start of every epoch, the weight that gives the pull the run of "
        "the same seed there had at the start of that epoch (times meandir_weight). Empty: the weight as given",
        quiet_at_default=True,
    )
    points: str = setting(
        POINTS[0],
        "the regulariser's points, a recipe: " + "; ".join(f"{k}: {v}" for k, v in POINT_RECIPES.items()),
        choices=POINTS,
    )
    pooling: str = setting(
        "auto",
        "what the head reads: the mean of the last layer's states (mean), the last non-padding token's state "
        "(last), or auto: last for a causal LM, mean otherwise",
        choices=POOLINGS,
    )
    precision: str = setting(
        "float32",
        "the transformer's forward pass in float32, or under bfloat16 autocast (bf16: a GPU's tensor cores); the head, "
        "loss, penalty and metrics stay float32/float64",
        choices=PRECISIONS,
    )
    epochs: int = setting(3, "epochs (BERT's GLUE recipe; the poster: a few)", minimum=1)
    batch_size: int = setting(32, "examples per step (I-STAR's code)", minimum=2)
    lr: float = setting(1e-5, "AdamW learning rate, constant (I-STAR's code)", exclusive_minimum=0.0)
    weight_decay: float = setting(0.0, "AdamW weight decay (I-STAR's code: none)", minimum=0.0)
    dropout: float = setting(0.1, "dropout of the classification head", minimum=0.0, exclusive_maximum=1.0)
    max_train: int = setting(0, "train on a fixed stratified subset of this many examples (0: all)", minimum=0)
    heldout_fraction: float = setting(
        0.1,
        "held out from the training data when no validation split is at hand",
        exclusive_minimum=0.0,
        exclusive_maximum=1.0,
    )
    max_heldout: int = setting(0, "evaluate on at most this many held-out examples (0: all)", minimum=0)
    validation_fraction: float = setting(
        0.1,
        "carved from the training data for model selection (epochs, learning rate), never the reported held-out "
        "set (0: none, as the runs published before it)",
        minimum=0.0,
        exclusive_maximum=1.0,
    )
    max_validation: int = setting(1000, "validation examples at most (0: no cap)", minimum=0)
    shrinkage_points: int = setting(
        100_000,
        "training points IsoScore*'s Sigma_S is estimated from, before training and after every epoch",
        minimum=2,
    )
    eval_batch_size: int = setting(64, "examples per evaluation batch", minimum=1)
    sample_cap: int = setting(
        20_000, "held-out points for the silhouette, TwoNN, LID and the per-layer geometry", minimum=3
    )
    k_lid: int = setting(20, "neighbours for LID", minimum=2)
    cka_points: int = setting(
        5000, "held-out tokens whose per-layer states are compared with the pretrained model's (linear CKA)", minimum=4
    )
    states_points: int = setting(
        0,
        "with layer_geometry: the first this many of the tokens CKA compares (at most cka_points), their every-layer "
        "states under the pretrained model and after the last epoch written to a file of their own, for CKA between "
        "seeds (isoflow finetune-seed-floor; 0: none)",
        minimum=0,
    )
    pull_batches: int = setting(
        5, "training batches the penalty's pull is measured on (at the pretrained model; after every epoch)", minimum=1
    )
    layer_geometry: bool = setting(
        False, "also IsoScore, S_inter and TwoNN of every layer's held-out token states, every epoch"
    )
    layer_twonn: str = setting(
        LAYER_TWONN[0],
        "with layer_geometry, when every layer's TwoNN is measured: every epoch, or before training and after the "
        "last epoch only (its neighbour search is most of a measurement's cost on a deep model)",
        choices=LAYER_TWONN,
    )

    def __post_init__(self):
        check(self)
        check_istar(self.istar_lambda, self.zeta)
        check_cosreg_weight(self.cosreg_weight)
        check_cosreg_weight(self.meandir_weight, "the mean-direction control's weight meandir_weight")
        if self.istar_pull and self.reg != "istar":
            raise ValueError(f"istar_pull sets I-STAR's lambda; it has no meaning with reg={self.reg}")
        if self.matched_pull_from and self.reg != "meandir":
            raise ValueError(
                f"matched_pull_from sets the mean-direction control's weight; it has no meaning with reg={self.reg}"
            )
        if self.states_points and not self.layer_geometry:
            raise ValueError("states_points needs layer_geometry: the states are those its pass collects")
        if self.states_points > self.cka_points:
            raise ValueError(
                f"states_points ({self.states_points}) must be at most cka_points ({self.cka_points}): the states "
                "written are those of the tokens CKA compares"
            )
        for other in (name for reg, name in REGULARISERS.items() if reg != self.reg):
            if getattr(self, other):
                raise ValueError(
                    f"{other} must be 0 with reg={self.reg} (one regulariser per run); got {getattr(self, other)!r}"
                )

    @property
    def weight(self) -> float:
        return getattr(self, REGULARISERS[self.reg])


def weight_option(reg: str, weight) -> str:
    """The command-line option that gives regulariser ``reg`` its weight, e.g. ``--istar-lambda -1``."""
    return f"--{REGULARISERS[reg].replace('_', '-')} {weight}"
