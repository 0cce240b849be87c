"""The one run skeleton (isoflow.skeleton.run_section): where a run goes checked before any work, its record in the
one schema written last and atomically, its saved progress removed only once the record stands, nothing left that
looks complete by a run that failed, was interrupted or stopped on purpose."""

from __future__ import annotations

import ast
import json
import signal
from pathlib import Path

import pandas as pd
import pytest

from isoflow import interrupt
from isoflow.atomic import OutputExistsError
from isoflow.skeleton import Outcome, Place, run_section

SRC = Path(__file__).resolve().parents[1] / "src" / "isoflow"


class Progress:
    """A run's saved state: a file that ``remove()`` deletes."""

    def __init__(self, path: Path):
        self.path = path
        path.write_text("state after step 3")

    def remove(self) -> None:
        self.path.unlink()


def test_a_run_of_files_writes_its_tables_then_its_record_and_removes_its_progress(tmp_path):
    out = tmp_path / "runs" / "seed0.json"
    progress = Progress(tmp_path / "state")
    seen = []

    def body() -> Outcome:
        seen.append(progress.path.is_file())  # the body sees the state it resumes from
        frame = pd.DataFrame({"step": [0, 1], "loss": [1.0, 0.5]})
        return Outcome({"seed": 0, "lr": 0.1}, {"n": 2}, [(out.with_suffix(".parquet"), frame)], diverged_at=1,
                       unit="epoch", progress=progress)  # fmt: skip

    assert run_section("optimize", Place(out), body) == out
    record = json.loads(out.read_text())
    assert (record["section"], record["settings"], record["n"]) == ("optimize", {"seed": 0, "lr": 0.1}, 2)
    assert (record["diverged"], record["diverged_at"], record["diverged_unit"]) == (True, 1, "epoch")
    assert record["complete"] and {"versions", "code", "threads", "machine"} <= set(record)
    assert pd.read_parquet(out.with_suffix(".parquet"))["loss"].tolist() == [1.0, 0.5]
    assert seen == [True] and not progress.path.exists()


def test_a_failed_body_leaves_no_record_and_keeps_the_progress(tmp_path):
    out = tmp_path / "seed0.json"
    out.write_text('{"complete": true, "n": "an earlier run"}')
    progress = Progress(tmp_path / "state")

    def body() -> Outcome:
        raise RuntimeError("diverged at step 4")

    with pytest.raises(RuntimeError, match="step 4"):
        run_section("finetune", Place(out), body)
    assert progress.path.read_text() == "state after step 3"  # resumable
    assert json.loads(out.read_text())["n"] == "an earlier run"  # nothing written: the earlier record stands


def test_an_interrupt_swallowed_in_the_body_writes_nothing(tmp_path, monkeypatch):
    """Ctrl-C that arrived while the body ran (swallowed by a finaliser) stops the run before its record."""
    out = tmp_path / "seed0.json"
    out.write_text('{"complete": true}')
    progress = Progress(tmp_path / "state")

    def body() -> Outcome:
        monkeypatch.setattr(interrupt, "_pending", signal.SIGINT)
        return Outcome({"seed": 0}, {}, [(out.with_suffix(".parquet"), pd.DataFrame({"x": [1]}))], progress=progress)

    with pytest.raises(KeyboardInterrupt):
        run_section("finetune", Place(out), body)
    assert not out.with_suffix(".parquet").exists() and json.loads(out.read_text()) == {"complete": True}
    assert progress.path.is_file()


def test_a_folder_run_is_refused_before_any_work_and_written_whole(tmp_path):
    out = tmp_path / "layers" / "minilm" / "brown"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    ran = []

    def body() -> Outcome:
        ran.append(1)
        return Outcome({"k": 3}, {"layers": 7}, files=lambda tmp: (tmp / "layers.csv").write_text("layer\n0\n"))

    place = Place(out, "meta.json", expected=("layers.csv", "meta.json"), kind="layers")
    with pytest.raises(OutputExistsError, match="notes.txt"):
        run_section("layers", place, body)
    assert ran == [] and (out / "notes.txt").read_text() == "mine"  # refused before the body ran
    (out / "notes.txt").unlink()
    assert run_section("layers", place, body) == out
    assert json.loads((out / "meta.json").read_text())["layers"] == 7
    assert sorted(p.name for p in out.iterdir()) == [".isoflow-output", "layers.csv", "meta.json"]
    assert run_section("layers", place, body) == out  # its own folder: replaced
    assert ran == [1, 1] and not list(out.parent.glob(".brown.*"))


def test_a_body_that_stops_on_purpose_writes_nothing_and_keeps_its_progress(tmp_path):
    progress = Progress(tmp_path / "state")
    assert run_section("pretrain", Place(tmp_path / "model", "pretrain.json"), lambda: None) is None
    assert not (tmp_path / "model").exists() and progress.path.is_file()


def _run_functions():
    """Every section package's run functions: top-level ``run_*`` functions of their modules."""
    from isoflow.sections import section_packages

    for package in section_packages():
        folder = SRC / package
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else [SRC / f"{package}.py"]:
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.FunctionDef) and node.name.startswith("run_"):
                    yield f"{path.relative_to(SRC)}:{node.name}", node.end_lineno - node.lineno + 1


def test_no_section_keeps_a_run_function_over_60_lines():
    """The skeleton holds what runs share; a section's run function checks its settings, resolves its inputs and hands
    its body over (signature and docstring counted)."""
    found = dict(_run_functions())
    assert {"finetune/run.py:run_finetune", "layers/run.py:run_layers", "optimize/run.py:run_seeds"} <= set(found)
    assert {name: lines for name, lines in found.items() if lines > 60} == {}
