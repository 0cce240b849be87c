"""What several commands share, declared once: number types with messages that name the range, and the option groups
(device, data, I-STAR, run lists, report outputs)."""

from __future__ import annotations

import argparse
import math

DEVICE_HELP = "auto (CUDA if present), cpu, cuda or cuda:N"


def _number(text: str, cast=float) -> float:
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'an integer' if cast is int else 'a number'}, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number; got {text}")
    return value


def int_at_least(low: int, what: str = ""):
    """argparse type: an integer >= ``low`` (the message names the range)."""

    def parse(text: str) -> int:
        value = _number(text, int)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}{what}; got {value}")
        return value

    return parse


def finite_float(text: str) -> float:
    return _number(text)


def unit_interval(text: str) -> float:
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1]; got {text}")
    return value


def seed_list(text: str) -> list[int]:
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, e.g. 0,1,2; got {text!r}") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"expected distinct non-negative integers, e.g. 0,1,2; got {text!r}")
    return seeds


def model(p: argparse.ArgumentParser, *, static: bool = True, extra: str = "") -> None:
    """--model (a built-in name, a local folder or a Hugging Face hub id), --model-name, --revision and --dtype."""
    built_in = "minilm, mpnet, distilroberta (SBERT)" + (", glove-50d, word2vec-222 (static vectors)" if static else "")
    p.add_argument(
        "--model",
        required=True,
        help=f"{built_in}, smollm2-135m, gemma3-270m (4-bit GGUF causal LMs), a local model folder "
        f"(sentence-transformers, or Hugging Face's save_pretrained{extra}), a .gguf file (de-quantised once into "
        "the raw-file cache), or a Hugging Face hub id (bert-base-uncased, gpt2) or a hub repository's GGUF file "
        "(org/repo/file.gguf): from the Hugging Face cache, which works offline, else downloaded",
    )
    p.add_argument(
        "--model-name",
        default=None,
        help="the name outputs go under, for a folder, a GGUF file or a hub id (default: the folder's name, the "
        "file's stem, or the id's last part)",
    )
    p.add_argument(
        "--revision",
        default=None,
        metavar="NAME",
        help="a checkpoint: of a hub id (a branch or tag, e.g. Pythia's step1000; the cache works offline) or of a "
        "local checkpoint series (<folder>/checkpoints/NAME, as isoflow pretrain --checkpoints writes); outputs go "
        "under <name>-NAME, the record names NAME and the commit or folder it resolved to",
    )
    dtype(p)


def dtype(p: argparse.ArgumentParser, *, other: bool = False) -> None:
    """--dtype, the dtype a model's weights load in; ``other``: --other-dtype, a command's second model's (default:
    --dtype's)."""
    from ..models.local import MODEL_DTYPES

    whose = "the second" if other else "a Hugging Face"
    p.add_argument(
        "--other-dtype" if other else "--dtype",
        default=None if other else "auto",
        choices=MODEL_DTYPES,
        help=f"the dtype {whose} model's weights are loaded in (auto: the checkpoint's own; bfloat16 halves a float32 "
        "checkpoint's memory); the hidden states are measured in float32, the measures' sums in float64; recorded "
        f"(source.dtype){'; default: --dtype' if other else ''}",
    )


def model_spec(args: argparse.Namespace):
    """What :func:`model`'s options name, as one :class:`~isoflow.models.spec.ModelSpec` (a command without
    --revision or --dtype leaves them at none and auto)."""
    from ..models.spec import ModelSpec

    return ModelSpec(
        args.model,
        args.model_name,
        getattr(args, "revision", None),
        getattr(args, "dtype", "auto"),
        getattr(args, "device_map", None),
    )


def device_map(p: argparse.ArgumentParser) -> None:
    """--device-map: a Hugging Face model's weights spread over the devices there are (a model too large for one)."""
    from ..models.resolve import DEVICE_MAPS

    p.add_argument(
        "--device-map",
        default=None,
        choices=DEVICE_MAPS,
        help="spread the model's weights over the devices (GPUs, then the CPU) as transformers' device_map does, for a "
        "model larger than one device; its states are gathered to --device for the measures; recorded "
        "(source.device_map). Default: the whole model on --device",
    )


def corpus(p: argparse.ArgumentParser) -> None:
    """--corpus (a built-in corpus or a text file) and --corpus-name."""
    p.add_argument(
        "--corpus", required=True, help="brown, wikitext-2, or a plain UTF-8 text file (one sentence per line)"
    )
    p.add_argument(
        "--corpus-name",
        default=None,
        help="the corpus' name in the outputs (default: a built-in corpus' name, or the text file's stem); the "
        "workflow passes the config's name",
    )


def layer_run(p: argparse.ArgumentParser, output: str, batch_size: int) -> None:
    """What a command that reads every layer of a model over a corpus also takes: --batch-size, --device, where its
    output goes (``output``: the default folder), --force and the data options; ``batch_size``: --batch-size's
    default (isoflow.layers.settings.BATCH_SIZE, passed by the layer commands: the other commands' DVC stages need not
    follow it)."""
    p.add_argument("--batch-size", type=int_at_least(1), default=batch_size)
    device(p)
    results(p, f"; output {output}")
    force(p)
    data(p)


def say(quiet: bool):
    """A function writing one line of progress to stderr, or nothing under --quiet."""
    import sys

    return (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr, flush=True))


def device(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help=DEVICE_HELP)


def quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress output (a bar on a terminal, a line per tenth of the work in a log)",
    )


def data(p: argparse.ArgumentParser, *, out: str = "output directory (default under --data-dir)") -> None:
    """Where inputs come from and outputs go: --data-dir, --mirror, --out, --raw-dir, --quiet."""
    p.add_argument(
        "--data-dir", default="data", help="root of tasks/, embeddings/ and the raw-file cache raw/ (default: data)"
    )
    p.add_argument(
        "--mirror",
        default=None,
        help="mirror directory (or several, ':'-separated) holding the raw files; default $ISOFLOW_MIRROR",
    )
    p.add_argument("--out", default=None, help=out)
    p.add_argument(
        "--raw-dir", default=None, help="cache of downloaded/mirrored raw files and models (default <data-dir>/raw)"
    )
    quiet(p)


def task_dir(p: argparse.ArgumentParser, name: str = "task") -> None:
    p.add_argument("--task-dir", default=None, help=f"the prepared task directory (default <data-dir>/tasks/<{name}>)")


def results(p: argparse.ArgumentParser, what: str = "") -> None:
    p.add_argument("--results", default="results", help=f"results root (default: results{what})")


def istar(p: argparse.ArgumentParser, *, zeta: bool = True) -> None:
    """The I-STAR weight (and, unless a settings class declares it, the shrinkage ζ), as every training command takes
    them."""
    from ..istar_settings import zeta_setting

    p.add_argument(
        "--istar-lambda",
        type=finite_float,
        default=0.0,
        help="I-STAR: add ISTAR_LAMBDA * (1 - IsoScore*) to the loss; > 0 pushes isotropy up, < 0 down (default 0: "
        "plain run)",
    )
    renamed(p, "--istar", "--istar-lambda")
    if zeta:
        field = zeta_setting()
        p.add_argument(
            "--zeta",
            type=unit_interval,
            default=field.default,
            help=f"{field.metadata['help']} (default {field.default})",
        )


class _Renamed(argparse.Action):
    """An option under its former name: refused with the name it has now (rather than argparse's guess at an
    abbreviation, or an 'unrecognized arguments')."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is now {self.const} (the name it has in configs, run records and settings)")


def renamed(p: argparse.ArgumentParser, old: str, new: str) -> None:
    p.add_argument(old, action=_Renamed, const=new, nargs="?", help=argparse.SUPPRESS)


def force(
    p: argparse.ArgumentParser, what: str = "replace what stands at --out even if isoflow did not write it"
) -> None:
    p.add_argument("--force", action="store_true", help=what)


def run_list(p: argparse.ArgumentParser) -> None:
    """Run records given on the command line or in manifests (default: every complete run under --results)."""
    p.add_argument(
        "runs",
        nargs="*",
        help="run records (<stem>.json or .parquet) to use; default: every complete run under --results",
    )
    p.add_argument(
        "--manifest",
        action="append",
        help="a file listing run records, one per line, or an aggregate's runs.csv (its record column); repeatable",
    )
    p.add_argument(
        "--results", default="results", help="results root holding optimize/runs and istar/runs (default: results)"
    )


def runs_of(args: argparse.Namespace) -> list[str] | None:
    """The runs named on the command line (paths, and the lines of --manifest files), or None: discover them."""
    runs = list(args.runs)
    for manifest in args.manifest or ():
        try:
            text = open(manifest, encoding="utf-8").read()
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{manifest}: not UTF-8 text ({exc.reason}); a manifest lists one run record path per line"
            ) from exc
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        if lines and "record" in lines[0].split(","):  # an aggregate's runs.csv: its record column
            import csv
            import io

            rows = list(csv.DictReader(io.StringIO(text)))
            if not rows or "record" not in rows[0]:
                raise ValueError(f"{manifest}: a CSV manifest needs a 'record' column (an aggregate's runs.csv)")
            lines = [row["record"] for row in rows]
        runs += lines
    return runs or None


def aggregate_input(p: argparse.ArgumentParser, section: str) -> None:
    default = f"results/{section}/aggregate"
    p.add_argument(
        "--aggregate", default=default, help=f"the output of `isoflow optimize-aggregate` (default: {default})"
    )


def report_outputs(p: argparse.ArgumentParser, section: str) -> None:
    """--tables and --figures, by default the section's results folder's (isoflow.sections)."""
    p.add_argument(
        "--tables",
        default=f"results/{section}/tables",
        help=f"where the {section} tables go (default: results/{section}/tables)",
    )
    p.add_argument(
        "--figures",
        default=f"results/{section}/figures",
        help=f"where the {section} figures go (default: results/{section}/figures)",
    )
