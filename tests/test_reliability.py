"""Bad input and faults, as a new user meets them (the issue "Reliability"). Each test names the case, the error the
user must get (one line, naming the file or option and the fix), and checks that nothing was lost or half-written.

Elsewhere: Ctrl-C at a chosen update, also when Python drops it in a finaliser (test_optimization.py); a seed added to
a config re-makes the tables, and --forcerun re-makes what depends on the rule (test_workflow.py); a config file is
not merged into config.yaml (test_workflow.py)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import isoflow_cli

from isoflow.atomic import MARKER, OutputExistsError, atomic_dir
from isoflow.datasets import glue, prepare, read_task
from isoflow.datasets.table import build_task, write_task
from isoflow.embed import encode, items_digest, load_embeddings, write_embeddings
from isoflow.metrics import geometry, isoscore, lid_mle, silhouette, twonn
from isoflow.optimize import OptimizationError, Settings, optimize, run_optimize

WNLI = "glue/WNLI/train.tsv"


def prepare_wnli(mirror, data_dir, out, *extra) -> tuple[int, str]:
    """`isoflow prepare glue/wnli` from the mirror into ``out``, quietly: (exit code, stderr)."""
    return isoflow_cli(
        "prepare", "glue/wnli", "--mirror", mirror, "--data-dir", data_dir, "--out", out, "--quiet", *extra
    )


def one_line_error(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    return lines[-1]


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def no_temp_leftovers(parent: Path) -> bool:
    return not [p for p in parent.rglob("*") if ".tmp" in p.name or p.name.endswith(".old")]


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A prepared two-class task of 60 sentences with random 16-d embeddings (no model needed)."""
    data = tmp_path / "data"
    texts = [f"sentence {i}" for i in range(60)]
    write_task(build_task("tiny", texts, ["a", "b"] * 30), data / "tasks/tiny")
    emb = np.random.default_rng(0).normal(size=(60, 16)).astype(np.float32)
    write_embeddings(
        data / "embeddings/m/tiny",
        emb,
        texts,
        {"model": "m", "task": "tiny", "n_items": 60, "dim": 16, "items_sha256": items_digest(texts)},
        force=False,
    )
    return data


# ----- 1. Data loss: an output path never loses what isoflow did not write --------------------------------------------


def test_out_onto_a_directory_of_other_files_is_refused(tmp_path, shared_mirror):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("my notes")
    rc, err = prepare_wnli(shared_mirror, tmp_path / "d", keep)
    assert rc == 2 and "holds files isoflow did not write (notes.txt)" in one_line_error(err) and "--force" in err
    assert tree(keep) == {"notes.txt": b"my notes"} and not (tmp_path / "d").exists()  # refused before any work


@pytest.mark.parametrize("out", [".", ".."])
def test_out_onto_the_working_directory_or_its_parent_is_refused(tmp_path, shared_mirror, monkeypatch, out):
    work = tmp_path / "work"
    work.mkdir()
    (work / "paper.tex").write_text("draft")
    monkeypatch.chdir(work)
    for extra in ([], ["--force"]):  # even with --force
        rc, err = prepare_wnli(shared_mirror, "d", out, *extra)
        assert rc == 2 and "current directory or one of its parents" in one_line_error(err)
    assert (work / "paper.tex").read_text() == "draft"


def test_out_onto_a_file_is_refused_and_leaves_no_old_copy(tmp_path, shared_mirror):
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    rc, err = prepare_wnli(shared_mirror, tmp_path / "d", target)
    assert rc == 2 and "is a file, not an isoflow output directory" in one_line_error(err)
    assert target.read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["results.txt"]


def test_own_previous_output_is_replaced_cleanly(tmp_path, shared_mirror):
    out = tmp_path / "wnli"
    for _ in range(2):
        rc, err = prepare_wnli(shared_mirror, tmp_path / "d", out)
        assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "items.parquet", "examples.parquet", "meta.json"])
    assert no_temp_leftovers(tmp_path)
    # An output written before the marker existed (exactly a task's three files) is recognised as isoflow's own.
    (out / MARKER).unlink()
    assert prepare("glue/wnli", data_dir=tmp_path / "d", out=out, mirror=shared_mirror, progress=False) == out
    # --force replaces a directory of other files, as documented.
    (tmp_path / "other").mkdir()
    (tmp_path / "other/x").write_text("x")
    rc, _ = prepare_wnli(shared_mirror, tmp_path / "d", tmp_path / "other", "--force")
    assert rc == 0 and read_task(tmp_path / "other").name == "glue/wnli" and not (tmp_path / "other/x").exists()


def test_encode_refuses_a_foreign_directory_before_encoding(tiny):
    foreign = tiny / "foreign"
    foreign.mkdir()
    (foreign / "embeddings.npy").write_bytes(b"someone else's")
    rc, err = isoflow_cli(
        "encode", "--model", "glove-50d", "--task", "tiny", "--data-dir", tiny, "--out", foreign, "--quiet"
    )
    assert rc == 2 and "holds files isoflow did not write (embeddings.npy)" in one_line_error(err)
    assert (foreign / "embeddings.npy").read_bytes() == b"someone else's"


def test_atomic_dir_refuses_what_appeared_during_the_work(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(OutputExistsError, match="holds files isoflow did not write"):
        with atomic_dir(out) as tmp:
            (tmp / "a").write_text("new")
            out.mkdir()
            (out / "b").write_text("appeared meanwhile")
    assert tree(out) == {"b": b"appeared meanwhile"} and no_temp_leftovers(tmp_path)


# ----- 3. Mixed results -----------------------------------------------------------------------------------------------


def test_runs_differing_in_more_than_the_seed_are_refused_by_name(tiny, tmp_path):
    results = tmp_path / "results"
    for seed, lr in ((0, 1e-3), (1, 1e-2)):
        run_optimize("tiny", "m", seed, steps=3, data_dir=tiny, results=results, progress=False, lr=lr)
    rc, err = isoflow_cli("optimize-aggregate", "--results", results)
    line = one_line_error(err)
    assert rc == 2 and "runs of tiny x m differ in lr, not only in their seed" in line and "seed1.json" in line
    assert not (results / "optimize/aggregate").exists()


def test_runs_differing_only_in_their_extra_measurements_are_seeds_of_one_row(tiny, tmp_path):
    """The list of extra metrics (a default that grew) changes what a run adds, not what it trained: a sweep made
    before the list grew still takes a seed made after."""
    results = tmp_path / "results"
    for seed, extra in ((0, ("cosine_anisotropy",)), (1, ("cosine_anisotropy", "effective_rank"))):
        run_optimize("tiny", "m", seed, steps=3, data_dir=tiny, results=results, progress=False, extra_metrics=extra)
    rc, err = isoflow_cli("optimize-aggregate", "--results", results)
    assert rc == 0, err
    assert len(pd.read_csv(results / "optimize/aggregate/runs.csv")) == 2


def test_aggregate_reads_exactly_the_runs_it_is_given(tiny, tmp_path):
    """Stale runs of another config in the same results directory change no table."""
    results = tmp_path / "results"
    given = [
        run_optimize("tiny", "m", seed, steps=4, data_dir=tiny, results=results, progress=False)[1] for seed in (0, 1)
    ]

    def aggregate_and_report(out, *runs):
        assert isoflow_cli("optimize-aggregate", "--results", results, "--out", out / "aggregate", *runs)[0] == 0
        assert (
            isoflow_cli(
                "optimize-report",
                "--aggregate",
                out / "aggregate",
                "--tables",
                out / "tables",
                "--figures",
                out / "figures",
            )[0]
            == 0
        )

    aggregate_and_report(tmp_path / "a", *given)
    run_optimize(
        "tiny", "m", 2, steps=4, data_dir=tiny, results=results, progress=False, lr=0.5
    )  # a stale, different run
    manifest = tmp_path / "runs.txt"
    manifest.write_text("\n".join(map(str, given)) + "\n")
    aggregate_and_report(tmp_path / "b", "--manifest", manifest)
    for name in ("tables/correlations.csv", "tables/correlations_per_run.csv", "aggregate/runs.csv"):
        a, b = (tmp_path / d / name for d in "ab")
        if name.endswith("runs.csv"):
            assert pd.read_csv(a).drop(columns="record").equals(pd.read_csv(b).drop(columns="record"))
        else:
            assert a.read_text() == b.read_text()
    assert len(pd.read_csv(tmp_path / "b/aggregate/runs.csv")) == 2


def test_corrupt_or_incomplete_run_records_are_named(tiny, tmp_path):
    results = tmp_path / "results"
    parquet, record = run_optimize("tiny", "m", 0, steps=2, data_dir=tiny, results=results, progress=False)
    record.write_text("{not json")
    rc, err = isoflow_cli("optimize-aggregate", "--out", tmp_path / "agg", record)
    assert rc == 2 and f"{record} is not a valid run record" in one_line_error(err) and "run it again" in err
    record.unlink()
    rc, err = isoflow_cli("optimize-aggregate", "--out", tmp_path / "agg", parquet)
    assert rc == 2 and f"{record} is missing: that run did not complete" in one_line_error(err)


# ----- 5/6. Garbage labels; a bad cached raw file; mirrors ------------------------------------------------------------


@pytest.fixture
def unpinned_wnli(monkeypatch):
    """WNLI as if its hash were unknown (as QQP, MNLI, QNLI are): only the content check guards it."""
    from dataclasses import replace

    spec = glue.TASKS["wnli"]
    monkeypatch.setitem(glue.TASKS, "wnli", replace(spec, resource=replace(spec.resource, sha256=None, size=None)))


def wnli_with_label(shared_mirror: Path, mirror: Path, label: str, line: int = 3) -> Path:
    lines = (shared_mirror / WNLI).read_text().split("\n")
    fields = lines[line - 1].split("\t")
    fields[-1] = label
    lines[line - 1] = "\t".join(fields)
    (mirror / WNLI).parent.mkdir(parents=True, exist_ok=True)
    (mirror / WNLI).write_text("\n".join(lines))
    return mirror / WNLI


def test_labels_outside_the_task_set_are_refused(tmp_path, shared_mirror, unpinned_wnli):
    bad = wnli_with_label(shared_mirror, tmp_path / "mirror", "2")
    rc, err = isoflow_cli(
        "prepare", "glue/wnli", "--mirror", bad.parents[2], "--data-dir", tmp_path / "d", "--offline", "--quiet"
    )
    line = one_line_error(err)
    assert rc == 2 and "line 3: label '2' is not one of glue/wnli's labels ['0', '1']" in line and str(bad) in line
    assert not (tmp_path / "d").exists()  # not cached, no empty directories


def test_a_bad_cached_copy_does_not_stick(tmp_path, shared_mirror, unpinned_wnli):
    """A bad copy cached (with its verification stamp) by an older isoflow: the error names the cached path and
    removes it, so that the next run takes the repaired mirror copy."""
    cache = tmp_path / "d/raw"
    bad = wnli_with_label(shared_mirror, cache, "x")
    st = bad.stat()
    bad.with_name(bad.name + ".verified").write_text(f"None {st.st_size} {st.st_mtime_ns}\n")
    mirror = tmp_path / "mirror"
    (mirror / WNLI).parent.mkdir(parents=True)
    (mirror / WNLI).write_bytes((shared_mirror / WNLI).read_bytes())
    rc, err = isoflow_cli("prepare", "glue/wnli", "--mirror", mirror, "--data-dir", tmp_path / "d", "--quiet")
    line = one_line_error(err)
    assert rc == 2 and "label 'x'" in line and f"cached copy {bad} was removed" in line
    assert not bad.exists() and not bad.with_name(bad.name + ".verified").exists()
    rc, err = isoflow_cli("prepare", "glue/wnli", "--mirror", mirror, "--data-dir", tmp_path / "d", "--quiet")
    assert rc == 0, err


def test_a_truncated_copy_in_the_first_mirror_falls_back_to_the_next(tmp_path, shared_mirror, caplog):
    first = tmp_path / "first"
    (first / WNLI).parent.mkdir(parents=True)
    (first / WNLI).write_bytes((shared_mirror / WNLI).read_bytes()[:1000])
    rc, err = isoflow_cli(
        "prepare", "glue/wnli", "--mirror", f"{first}:{shared_mirror}", "--data-dir", tmp_path / "d", "--quiet"
    )
    assert rc == 0 and "truncated" in caplog.text and str(first / WNLI) in caplog.text  # a warning names the bad copy
    rc, err = isoflow_cli(
        "prepare", "glue/wnli", "--mirror", first, "--data-dir", tmp_path / "e", "--offline", "--quiet"
    )
    assert rc == 2 and "truncated" in one_line_error(err) and not (tmp_path / "e").exists()


# ----- 7. Extreme magnitudes: the right number, or a clear refusal ----------------------------------------------------


@pytest.mark.parametrize(
    "dtype, scale",
    [(np.float32, 1e-30), (np.float32, 1e-8), (np.float32, 1e8), (np.float32, 1e25), (np.float32, 1e30)]
    + [(np.float64, 1e-200), (np.float64, 1e200)],
)
@pytest.mark.parametrize("gemm", ["torch", "numpy"])
def test_scale_free_metrics_at_extreme_magnitudes(monkeypatch, dtype, scale, gemm):
    monkeypatch.setenv("ISOFLOW_CPU_GEMM", gemm)  # both CPU paths rescale (NumPy's only outside 2**-32 .. 2**32)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 12))
    y = rng.integers(0, 3, 200)
    X[y == 1] += 2.0
    Z = (X * scale).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-9
    for metric in (lambda a: silhouette(a, y), isoscore, lid_mle, twonn):
        assert metric(Z) == pytest.approx(metric(X), abs=tol * max(1.0, abs(metric(X))))


def test_a_read_only_array_is_measured_in_place_without_a_warning():
    """A memory-mapped or Parquet-backed array is read-only: it is measured without a copy and without torch's warning
    about writing to it (torch warns once per process, so a fresh process, warnings as errors)."""
    code = """
import warnings
import numpy as np
warnings.simplefilter("error")
from isoflow.metrics import isoscore
from isoflow.metrics._validate import as_points
X = np.random.default_rng(0).normal(size=(50, 4))
R = X.copy()
R.flags.writeable = False
assert as_points(R).data_ptr() == R.ctypes.data, "copied"
print(isoscore(R) == isoscore(X))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_one_enormous_row_is_refused_not_measured(tiny, tmp_path):
    X = np.random.default_rng(0).normal(size=(100, 8)).astype(np.float32)
    y = np.arange(100) % 2
    X[5] = 3e38
    with pytest.raises(ValueError, match=r"row 5 is .* times longer than the median row"):
        silhouette(X, y)
    with pytest.raises(ValueError, match=r"row 5 is .* times longer"):
        lid_mle(X)
    # Long but measurable rows: computed in float64, same value as the float64 reference.
    X[5] = X[5] / 3e38 * 1e5
    assert silhouette(X, y) == pytest.approx(silhouette(X.astype(np.float64), y), abs=1e-9)
    # In the experiment: refused at the start, no record.
    emb, _ = load_embeddings(tiny / "embeddings/m/tiny")
    emb = emb.copy()
    emb[7] = 3e38
    with pytest.raises(OptimizationError, match="row 7 is .* re-run `isoflow encode --force`"):
        optimize(read_task(tiny / "tasks/tiny"), emb, Settings("tiny", "m", 0, 2), progress=False)


# ----- 8. Embedding cache integrity -----------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_embeddings_are_named_with_the_fix(tiny, tmp_path, damage):
    npy = tiny / "embeddings/m/tiny/embeddings.npy"
    raw = bytearray(npy.read_bytes())
    if damage == "flip":
        raw[-5] ^= 0xFF  # same size, different content
    else:
        raw = raw[: len(raw) // 2]
    npy.write_bytes(bytes(raw))
    rc, err = isoflow_cli(
        "optimize",
        "--task",
        "tiny",
        "--model",
        "m",
        "--data-dir",
        tiny,
        "--results",
        tmp_path / "r",
        "--steps",
        "2",
        "--quiet",
    )
    line = one_line_error(err)
    assert (
        rc == 2
        and str(npy) in line
        and "does not match the sha256" in line
        and "isoflow encode --model m --task tiny" in line
    )
    assert "--force" in line and not (tmp_path / "r").exists()


def test_encode_re_encodes_a_damaged_cached_table(tmp_path):
    task = build_task("words", ["cat", "dog", "fish", "bird"], ["a", "b", "a", "b"])
    write_task(task, tmp_path / "tasks/words")
    out = encode("glove-50d", "words", data_dir=tmp_path)
    good = np.load(out / "embeddings.npy")
    npy = out / "embeddings.npy"
    npy.write_bytes(npy.read_bytes()[:-4] + b"\0\0\0\0")
    encode("glove-50d", "words", data_dir=tmp_path)  # no --force: the damage is noticed and the table re-made
    np.testing.assert_array_equal(load_embeddings(out)[0], good)


# ----- 9. Numbers out of range: refused at the CLI and in the library -------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["geometry", "X.npy", "--sample", "-1"], "--sample: must be at least 0"),
        (["geometry", "X.npy", "--k-lid", "1"], "--k-lid: must be at least 2"),
        (["geometry", "X.npy", "--seed", "-3"], "--seed: must be at least 0"),
        (["optimize", "--task", "t", "--model", "m", "--extra-every", "-1"], "--extra-every: must be at least 0"),
        (["optimize", "--task", "t", "--model", "m", "--steps", "0"], "--steps: must be at least 1"),
        (["optimize", "--task", "t", "--model", "m", "--lr", "nan"], "--lr: must be a finite number"),
        (["optimize", "--task", "t", "--model", "m", "--lr=-1e-3"], "--lr: must be greater than 0; got -0.001"),
        (["optimize", "--task", "t", "--model", "m", "--sample-cap", "1"], "--sample-cap: must be at least 2"),
        (["encode", "--model", "m", "--task", "t", "--batch-size", "0"], "--batch-size: must be at least 1"),
        (["prepare", "supersense", "--n-words", "0"], "--n-words: must be at least 2"),
    ],
)
def test_cli_numbers_out_of_range(argv, message):
    rc, err = isoflow_cli(*argv)
    assert rc == 2 and message in one_line_error(err)


def test_library_numbers_out_of_range():
    for bad, message in (
        (dict(lr=-1.0), "lr must be greater than 0; got -1.0"),
        (dict(extra_every=-1), "extra_every must be at least 0"),
        (dict(sample_cap=0), "sample_cap must be at least 2"),
        (dict(lr=float("inf")), "lr must be a finite number; got inf"),
    ):
        with pytest.raises(ValueError, match=message):
            Settings("t", "m", 0, 5, **bad)
    with pytest.raises(ValueError, match="steps must be an integer of at least 1; got 0"):
        Settings("t", "m", 0, 0)
    X = np.random.default_rng(0).normal(size=(30, 4))
    with pytest.raises(ValueError, match="sample must be None"):
        geometry(X, sample=0)
    with pytest.raises(ValueError, match=r"lid_mle.*needs 31 \(k_lid = 30 neighbours\)"):
        geometry(X, metrics=["lid_mle"], k_lid=30)  # no silent clipping of k


# ----- 10/11. Errors that name the file and the fix; no tracebacks ----------------------------------------------------


def test_geometry_input_errors_name_the_file(tmp_path):
    np.save(tmp_path / "str.npy", np.array([["a", "b"], ["c", "d"]]))
    (tmp_path / "text.npy").write_text("0.1 0.2\n0.3 0.4\n")
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(10, 50)))
    (tmp_path / "latin1.txt").write_bytes("café\n1\n".encode("latin-1"))
    cases = [
        (["str.npy"], "str.npy: holds <U1 values, not numbers"),
        (["text.npy"], "text.npy: is not a NumPy .npy file"),
        (["X.npy", "--labels", "latin1.txt"], "latin1.txt: is not UTF-8 text"),
        (["X.npy"], "X.npy: metrics 'lid_mle', 'cluster_centered_isoscore': too few points (10)"),
        (
            ["X.npy", "--labels", "X.npy", "--labels-key", "y"],
            "--labels-key applies only to .npz, .parquet and .pt files",
        ),
        (["X.npy", "--metrics", "silhouette"], "metric 'silhouette' needs --labels"),
    ]
    for argv, message in cases:
        rc, err = isoflow_cli("geometry", *(str(tmp_path / a) if a.endswith((".npy", ".txt")) else a for a in argv))
        assert rc == 2 and message in one_line_error(err), (argv, err)
    # The n < d case suggests the metrics that can be computed.
    assert "--metrics isoscore,cosine_anisotropy,twonn" in isoflow_cli("geometry", tmp_path / "X.npy")[1]


def test_paths_that_are_files_or_read_only(tiny, tmp_path, shared_mirror, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("x")
    rc, err = isoflow_cli("prepare", "glue/wnli", "--mirror", shared_mirror, "--data-dir", afile, "--quiet")
    assert rc == 2 and "Not a directory" in one_line_error(err) and str(afile) in err
    rc, err = isoflow_cli(
        "optimize", "--task", "tiny", "--model", "m", "--task-dir", afile, "--data-dir", tiny, "--quiet"
    )
    assert rc == 2 and f"{afile} is a file, not a prepared task directory" in one_line_error(err)

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", kwargs.get("dir"))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    rc, err = isoflow_cli(
        "optimize",
        "--task",
        "tiny",
        "--model",
        "m",
        "--data-dir",
        tiny,
        "--results",
        tmp_path / "ro",
        "--steps",
        "2",
        "--quiet",
    )
    assert rc == 2 and "Read-only file system" in one_line_error(err) and "write elsewhere" in err


# ----- 12. Permissions follow the umask -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "umask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o002, 0o664, 0o775), (0o077, 0o600, 0o700)]
)
def test_outputs_honour_the_umask(tiny, tmp_path, umask, file_mode, dir_mode):
    old = os.umask(umask)
    try:
        parquet, record = run_optimize("tiny", "m", 0, steps=2, data_dir=tiny, results=tmp_path / "r", progress=False)
        out = write_task(build_task("t", ["a", "b"], ["x", "y"]), tmp_path / "task")
    finally:
        os.umask(old)
    for f in (parquet, record, out / "meta.json"):
        assert stat.S_IMODE(f.stat().st_mode) == file_mode, f
    assert stat.S_IMODE(out.stat().st_mode) == dir_mode


def test_a_run_whose_write_fails_half_way_leaves_no_record_vouching_for_it(tmp_path):
    """Every section writes a run with records.write_run: tables first, the record last; the earlier run's record is
    gone before the first table is replaced, so a failure between them leaves no record at all, never an old one
    beside new tables."""
    from isoflow.records import write_run

    stem = tmp_path / "seed0"
    frame = pd.DataFrame({"step": [0, 1], "loss": [0.7, 0.6]})
    record = write_run(
        stem.with_suffix(".json"), {"complete": True, "n": np.float32(2.5)}, [(stem.with_suffix(".parquet"), frame)]
    )
    assert record.read_text().startswith("{") and pd.read_parquet(stem.with_suffix(".parquet")).equals(frame)

    class Unwritable(pd.DataFrame):
        def to_parquet(self, *args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

    steps = stem.with_name("seed0.steps.parquet")
    with pytest.raises(OSError, match="No space"):
        write_run(record, {"complete": True}, [(stem.with_suffix(".parquet"), frame), (steps, Unwritable(frame))])
    assert not record.exists()  # the old record does not vouch for the new parquet beside it
    assert not steps.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["seed0.parquet"]  # no temp file left


def test_a_run_that_is_a_folder_appears_whole_or_not_at_all(tmp_path, monkeypatch):
    """records.write_run_folder (a layer analysis, a pretrained model): the files, then the record, in a temporary
    folder that takes the output's place at the end; a failure while writing leaves the earlier run as it was and no
    temporary folder; a folder isoflow did not write is refused; an interrupted run writes nothing."""
    import json
    import signal

    from isoflow import interrupt
    from isoflow.records import write_run_folder

    out = tmp_path / "minilm" / "brown"

    def files(tmp: Path) -> None:
        pd.DataFrame({"layer": [0, 1]}).to_parquet(tmp / "layers.parquet", index=False)

    kw = {"expected": ("layers.parquet", "meta.json"), "kind": "layers"}
    assert write_run_folder(out, "meta.json", {"complete": True, "n": np.float32(2.5)}, files, **kw) == out
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "layers.parquet", "meta.json"]
    assert json.loads((out / "meta.json").read_text()) == {"complete": True, "n": 2.5}
    before = tree(out)

    def failing(tmp: Path) -> None:
        files(tmp)
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_run_folder(out, "meta.json", {"complete": True, "n": 3}, failing, force=True, **kw)
    assert tree(out) == before and no_temp_leftovers(out.parent)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError):  # a folder isoflow did not write is never replaced
        write_run_folder(foreign, "meta.json", {"complete": True}, files, **kw)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    monkeypatch.setattr(interrupt, "_pending", signal.SIGTERM)  # a SIGTERM swallowed on the way
    with pytest.raises(interrupt.Terminated):
        write_run_folder(tmp_path / "other", "meta.json", {"complete": True}, files, **kw)
    assert not (tmp_path / "other").exists()


def test_a_runs_inputs_are_resolved_one_way_and_refused_in_one_line(tiny, tmp_path):
    """run_inputs: the task read from its prepared folder, a model's loader, the device; an unknown task or device is
    refused before any work, naming what is known."""
    from isoflow.run_inputs import run_inputs

    inputs = run_inputs(device="cpu", task="tiny", data_dir=tiny, model="glove-50d")
    assert str(inputs.device) == "cpu" and inputs.task_path == tiny / "tasks/tiny"
    assert inputs.task.name == read_task(tiny / "tasks/tiny").name and inputs.model.name == "glove-50d"
    assert (
        inputs.cache == tiny / "raw"
        and run_inputs(raw_dir=tmp_path).cache == tmp_path
        and inputs.model.kind == "static"
    )
    with pytest.raises(ValueError, match="unknown task 'nonesuch' .*known: .*polarity"):
        run_inputs(task="nonesuch", data_dir=tiny)
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        run_inputs(device="tpu")
