"""Ctrl-C and SLURM's SIGTERM that are never lost.

Python turns SIGINT into a ``KeyboardInterrupt`` raised wherever the main thread happens to be. If that is inside
a finaliser (``__del__``, a weakref callback: common while torch, pandas and pyarrow import or free memory), the
exception is printed as "Exception ignored" and the run goes on as if nothing happened. :func:`install` replaces
the handlers with ones that also *remember* the signal, and long loops call :func:`check` at every step, so a
swallowed interrupt still stops the run at the next step. The CLI installs them; library users keep Python's
default behaviour unless they call :func:`install` themselves."""

from __future__ import annotations

import signal
import threading

_pending: int | None = None  # the signal received and not yet acted upon


class Terminated(KeyboardInterrupt):
    """SIGTERM (``scancel``, a SLURM time limit, ``kill``): handled like Ctrl-C."""


def _handler(signum, frame):  # noqa: ARG001 (signal handler signature)
    global _pending
    _pending = signum
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def install() -> None:
    """Remembering handlers for SIGINT and SIGTERM (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)
        signal.signal(signal.SIGTERM, _handler)


def check() -> None:
    """Raise the interrupt again if one arrived and was swallowed on the way."""
    if _pending is not None:
        raise Terminated() if _pending == signal.SIGTERM else KeyboardInterrupt()


def exit_code(exc: KeyboardInterrupt) -> int:
    """The shell's convention: 128 + signal number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
