"""The ``isoflow`` command line: thin wrappers over the library (the science lives in the modules).

One module per command (``cli/<command>.py``: its parser beside its handler); the options several commands share
are declared once in :mod:`.options`. Here: the parser, and the mapping of errors to one line and an exit code.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

from . import (
    encode,
    finetune,
    finetune_baseline,
    finetune_diagnosis,
    finetune_lr,
    finetune_report,
    finetune_same_as,
    finetune_seed_floor,
    geometry,
    import_embeddings,
    istar_report,
    layers,
    layers_cross,
    layers_report,
    layers_same_as,
    optimize,
    optimize_aggregate,
    optimize_report,
    points_diagnosis,
    prepare,
    pretrain,
    pretrain_corpus,
    pretrain_report,
    sources,
    stability,
)

# In the order `isoflow --help` lists them: from raw files to reports, then the helpers.
COMMANDS = (
    geometry,
    prepare,
    encode,
    import_embeddings,
    optimize,
    optimize_aggregate,
    optimize_report,
    istar_report,
    layers,
    layers_cross,
    layers_report,
    layers_same_as,
    finetune,
    finetune_baseline,
    finetune_diagnosis,
    points_diagnosis,
    finetune_lr,
    finetune_seed_floor,
    finetune_same_as,
    finetune_report,
    stability,
    pretrain_corpus,
    pretrain,
    pretrain_report,
    sources,
)


def build_parser() -> argparse.ArgumentParser:
    from ..version import __version__

    parser = argparse.ArgumentParser(
        prog="isoflow", description="Geometry of embedding spaces under classification training."
    )
    parser.add_argument("--version", action="version", version=f"isoflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (*COMMANDS, *_own_section_commands()):
        command.add_parser(sub)
    return parser


def _own_section_commands() -> list:
    """The command modules of sections that keep them in their own package (isoflow.sections: commands_package)."""
    import importlib

    from ..sections import own_command_modules

    return [importlib.import_module(name) for name in own_command_modules()]


def _os_message(exc: OSError) -> str:
    """One line for a filesystem error: what, where, and the likely fix."""
    if type(exc) in (FileExistsError, FileNotFoundError) and exc.args and exc.filename is None:
        return str(exc)  # isoflow's own messages already name the file and the fix
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    what = exc.strerror or str(exc)
    hint = {
        "PermissionError": "check the permissions, or write elsewhere (--out / --data-dir / --results)",
        "NotADirectoryError": "a path that should be a directory (or lead to one) is a file; point the option "
        "elsewhere",
        "IsADirectoryError": "a path that should be a file is a directory; point the option elsewhere",
    }.get(type(exc).__name__, "")
    if getattr(exc, "errno", None) == errno.EROFS:
        hint = "the filesystem is read-only; write elsewhere (--out / --data-dir / --results)"
    message = f"{what}: {where}" if where else what
    return f"{message} ({hint})" if hint else message


def _warnings_to_stderr(command: str) -> None:
    """The library's warnings (silent garbage: identical rows, unknown words, unmeasurable cells; a fallback copy) as
    one line each on stderr, ``isoflow <command>: warning: ...``. A handler of isoflow's own logger, replaced on each
    call; records still propagate to any handler a caller installed (a test's log capture)."""
    logger = logging.getLogger("isoflow")
    for handler in [h for h in logger.handlers if getattr(h, "isoflow_cli", False)]:
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"isoflow {command}: warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    handler.isoflow_cli = True
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    from .. import interrupt

    interrupt.install()
    parser = build_parser()
    args = parser.parse_args(argv)
    _warnings_to_stderr(args.command)
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        # Hugging Face's own bars (loading and writing weights): none under --quiet, and none in a log, where isoflow
        # writes a line per tenth of the work instead; read when transformers is first imported, i.e. later
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        return args.func(args)
    except KeyboardInterrupt as exc:  # outputs are renamed into place only when complete: nothing partial is left
        what = "terminated" if isinstance(exc, interrupt.Terminated) else "interrupted"
        print(
            f"isoflow {args.command}: {what}; nothing was written (outputs appear only once complete)", file=sys.stderr
        )
        return interrupt.exit_code(exc)
    except (ValueError, RuntimeError) as exc:  # bad input, missing data, offline: one clear line
        print(f"isoflow {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # missing, unreadable or unwritable paths
        print(f"isoflow {args.command}: error: {_os_message(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
