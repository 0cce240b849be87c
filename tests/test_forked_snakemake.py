"""The suite's Snakemake, forked from one process that imported it (tests/forked_snakemake.py; every `snakemake` a test
starts through conftest.sh), answers as the `snakemake` command does: its plan, its refusals, its exit status; a
timeout stops the run and the jobs it started, and the next run is answered."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import FORKED_SNAKEMAKE, job_counts


@pytest.mark.slow
def test_a_forked_run_answers_as_the_command_does(plan_checkout, tmp_path):
    env = dict(os.environ)
    where = [f"data_dir={tmp_path}/data", f"raw_dir={tmp_path}/raw", f"results_dir={tmp_path}/results"]
    planned = ["-n", "--configfile", "config/offline.yaml", "--config", *where]
    refused = [*planned, "finetune={'epochs': -1}"]
    answers = {}
    for name, argv in (("planned", planned), ("refused", refused)):
        forked = FORKED_SNAKEMAKE.run(argv, plan_checkout, env, timeout=600)
        command = subprocess.run(
            ["snakemake", *argv], cwd=plan_checkout, capture_output=True, text=True, env=env, timeout=600
        )
        answers[name] = forked, command
        assert forked.returncode == command.returncode, (name, forked.stderr[-2000:], command.stderr[-2000:])
    forked, command = answers["planned"]
    assert forked.returncode == 0 and job_counts(forked.stdout) == job_counts(command.stdout)
    assert job_counts(forked.stdout)["total"] > 20
    forked, command = answers["refused"]
    named = lambda text: [line for line in text.splitlines() if "finetune.epochs" in line]  # noqa: E731
    assert forked.returncode != 0 and named(forked.stderr) and named(forked.stderr) == named(command.stderr)


def running(marker: str) -> list[str]:
    """The command lines of this machine's processes that contain ``marker``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        if marker in line:
            found.append(line)
    return found


def test_a_timeout_stops_the_run_and_its_jobs_and_the_next_run_is_answered(tmp_path):
    marker = f"isoflow-timeout-{uuid.uuid4().hex}"
    (tmp_path / "Snakefile").write_text(
        f'rule wait:\n    output: "never"\n    shell: "touch started; sleep 600 # {marker}"\n'
    )
    with pytest.raises(subprocess.TimeoutExpired):  # 10 s: the run has started its job by then, on any machine
        FORKED_SNAKEMAKE.run(["--cores", "1", "never"], tmp_path, dict(os.environ), timeout=10)
    assert (tmp_path / "started").exists() and not running(marker), "the job outlived its run"
    (tmp_path / "Snakefile").write_text('rule done:\n    output: "done"\n    shell: "echo ok > {output}"\n')
    after = FORKED_SNAKEMAKE.run(["--cores", "1", "done"], tmp_path, dict(os.environ), timeout=600)
    assert after.returncode == 0 and (tmp_path / "done").read_text() == "ok\n", after.stderr[-2000:]
