"""Snakemake imported once, forked for every run a test asks for (tests/conftest.py: ``sh``).

A test that starts ``snakemake`` as a new process pays its imports and plugin discovery first — about 1.7 of a dry
run's 2.5 CPU seconds on this kind of machine, and the suite starts some eighty. This process imports Snakemake and
builds its argument parser once (which collects the plugins), then reads one request per line on stdin (JSON: argv,
cwd, env and the files that take the run's stdout and stderr) and forks a child per request that runs Snakemake's own
``main`` as the ``snakemake`` command would, in that directory and environment. The child starts from this process as
it was after the imports, so runs share no state; this process is single-threaded (checked), so forking it is safe.

Protocol (one JSON line each way): the request; then ``{"pid": P}`` once the child runs (the caller kills its process
group on a timeout) and ``{"rc": R}`` when it has exited. A line ``{"ready": true}`` at start says the imports are
done. Closing stdin ends this process.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# This process's PYTHONPATH, read when it started: a run's own entries beyond it are added to the child's sys.path
_STARTED_PYTHONPATH = frozenset(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)


def _child(request: dict) -> int:
    """Snakemake's ``main`` with the request's arguments, directory, environment and output files."""
    os.setpgid(0, 0)  # its own process group: a timeout kills the run and the jobs it started
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # PYTHONPATH is read when an interpreter starts: where the run's differs from this process's, its entries go
    # where a new interpreter would put them (after the script's directory, before the installed packages)
    mine = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [os.path.abspath(p) for p in mine if p not in _STARTED_PYTHONPATH]
    sys.argv = ["snakemake", *request["argv"]]
    code = 0
    try:
        from snakemake.cli import main

        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - printed as the command would print it, then a failing status
        import traceback

        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()  # what Snakemake registered, as at a process's normal end
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    sys.path[0] = os.path.dirname(sys.executable)  # as for the `snakemake` script beside this Python, not tests/
    from snakemake.cli import get_argument_parser

    get_argument_parser()  # collects the executor, storage and report plugins once, for every child
    if threading.active_count() != 1:
        raise SystemExit(f"{__file__}: Snakemake's import started threads; forking this process would not be safe")
    _reply({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os._exit(_child(request))
        try:  # here too (the child sets it first thing): the group exists before the caller may kill it
            os.setpgid(pid, pid)
        except OSError:  # the child has done it already, or has ended
            pass
        _reply({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply({"rc": os.waitstatus_to_exitcode(status)})


def _text(path: Path) -> str:
    """A file's bytes decoded as ``subprocess.run(..., text=True)`` decodes output: universal newlines."""
    return path.read_bytes().decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


class ForkedSnakemake:
    """The caller's side: one such process, started on first use, a run at a time (a pytest worker runs one test at
    a time). A run interrupted by anything but its own timeout leaves the protocol midway: the process is then
    stopped and the next run starts a new one."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.buffer = b""
        self.child: int | None = None  # the run in progress

    def _line(self, timeout: float | None = None) -> dict | None:
        """The next reply, or None once ``timeout`` seconds pass without one (read unbuffered: a reply already read
        into a buffer would keep select waiting)."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            if not select.select([fd], [], [], timeout)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"{__file__} ended unexpectedly (exit status {self.proc.wait()})")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buffer = b""
        if self._line() != {"ready": True}:
            raise RuntimeError(f"{__file__} did not start")

    def close(self) -> None:
        if self.child is not None:  # a run interrupted midway (a test's timeout): it and its jobs go too
            try:
                os.killpg(self.child, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.child = None
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, argv: list[str], cwd, env: dict, timeout: float) -> subprocess.CompletedProcess:
        """``snakemake <argv>`` in ``cwd`` with exactly ``env``: what ``subprocess.run(..., capture_output=True,
        text=True, timeout=timeout)`` returns (or raises) for the command."""
        if self.proc is None:
            self._start()
        try:
            with tempfile.TemporaryDirectory(prefix="isoflow-snakemake-") as tmp:
                out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
                request = {"argv": list(argv), "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
                self.child = self._line()["pid"]
                done = self._line(timeout)
                if done is None:  # as subprocess.run's timeout, and the jobs it started go too
                    os.killpg(self.child, signal.SIGKILL)
                    self._line()
                    self.child = None
                    raise subprocess.TimeoutExpired(["snakemake", *argv], timeout)
                self.child = None
                return subprocess.CompletedProcess(["snakemake", *argv], done["rc"], _text(out), _text(err))
        except subprocess.TimeoutExpired:
            raise
        except BaseException:
            self.close()
            raise


if __name__ == "__main__":
    main()
