"""The metric benchmark's subprocess path (benchmarks/metrics.py): each side runs in a spawned process whose result,
or whose failure, comes back to the parent; a child that fails or dies is an error, never a wait without end (on a
GPU it once hung there)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import metrics as bench  # noqa: E402


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    folder = tmp_path_factory.mktemp("case")
    return bench.write_case({"name": "tiny", "n": 300, "d": 8, "k": 3}, folder)


@pytest.mark.slow
def test_each_side_runs_in_a_spawned_process_and_agrees(case):
    from sklearn.metrics import silhouette_score

    ours = bench.run_isolated("ours", case, "float64", 1)
    reference = bench.run_isolated("reference", case, "float64", 1)
    X, y = np.load(case / "X_float64.npy"), np.load(case / "y.npy")
    assert ours["silhouette"] == pytest.approx(silhouette_score(X, y), abs=1e-9)
    assert reference["silhouette"] == pytest.approx(ours["silhouette"], abs=1e-9)
    assert ours["isoscore"] == pytest.approx(reference["isoscore"], abs=1e-6) and ours["seconds"] > 0


@pytest.mark.slow
def test_a_failing_child_is_an_error_not_a_hang(case):
    with pytest.raises(RuntimeError, match="failed on cpu: FileNotFoundError"):
        bench.run_isolated("ours", case / "missing", "float64", 1)
    with pytest.raises(RuntimeError, match="failed on no-such-device"):
        bench.run_isolated("ours", case, "float64", 1, device="no-such-device")


def test_strips_dispatch_fewer_operations_and_no_host_sync():
    """benchmarks/launches.py under the GPU policy: 8,192 points make 4 row blocks of 2,048 rows, each multiplied by
    its whole strip (4 products instead of 10 block pairs: fewer operations, the host's work on a GPU), and neither
    the silhouette nor IsoScore waits on the device (no .item(), no data-dependent shape)."""
    import launches

    counts = launches.case_counts(8192, 8, 2)
    assert (counts["rows_per_block"], counts["columns_per_product"]) == (2048, 8192)
    assert counts["silhouette_by_operation"]["mm"] == 4 + 4 + 3  # distances, sums into columns, sums into rows
    assert counts["silhouette"] < counts["silhouette_square_blocks"]
    assert counts["host_syncs"] == 0


def test_the_device_step_benchmark_times_strips_and_square_blocks_alike(monkeypatch):
    """benchmarks/metric_step_device.py (what a lent GPU runs) on the CPU under the GPU policy, in three row blocks
    (1,024 rows at least, as on a GPU): the strips' silhouette is scikit-learn's and the square blocks' (to
    rounding), with fewer operations; a CPU launches no kernels (None, not 0)."""
    import metric_step_device
    import torch
    from sklearn.metrics import silhouette_score

    from isoflow.metrics import device_policy

    monkeypatch.setenv(device_policy.POLICY_ENV, "gpu")
    monkeypatch.setenv(device_policy.GEMM_ENV, "torch")
    monkeypatch.setattr(device_policy, "GPU_MIN_BLOCK", 100)
    case = {"name": "t", "n": 2400, "d": 8, "k": 3}
    row = metric_step_device.case_result(case, torch.device("cpu"), reps=1, splits=(1, 2))
    X, y = bench.make_data(2400, 8, 3)
    assert (row["rows_per_block"], row["columns_per_product"]) == (1024, 2400)
    assert row["silhouette"] == pytest.approx(silhouette_score(X, y), abs=1e-5)
    assert row["abs_diff_square_blocks"] < 1e-6 and row["operations"] < row["operations_square_blocks"]
    assert row["kernel_launches"] is None and row["step_over_xxt"] > 0 and list(row["step_ms_by_split"]) == ["1", "2"]
    assert device_policy.GPU_SPLIT == 4  # the sweep of splits leaves the policy as it was


def test_section_budgets_sum_each_kind_of_run_record(tmp_path):
    """benchmarks/section_budgets.py: a run's seconds by the keys its record has; files that are not timed records
    (a config, a run list) are passed over; a publication without times says so."""
    import json

    import section_budgets

    runs = tmp_path / "opt" / "runs"
    (runs / "t" / "m").mkdir(parents=True)
    (runs / "t" / "m" / "seed0.json").write_text(
        json.dumps({"setup_seconds": 2, "loop_seconds": 100, "device": "cpu", "threads": 2})
    )
    (runs / "t" / "m" / "seed1.json").write_text(
        json.dumps({"setup_seconds": 2, "loop_seconds": 300, "device": "cuda", "threads": 16})
    )
    (runs / "config.json").write_text(json.dumps({"hidden": 8}))
    (tmp_path / "lay" / "runs" / "m" / "c").mkdir(parents=True)
    (tmp_path / "lay" / "runs" / "m" / "c" / "meta.json").write_text(
        json.dumps({"seconds": {"encode": 60, "layer0": 30}})
    )
    (tmp_path / "none" / "runs").mkdir(parents=True)
    (tmp_path / "none" / "runs" / "meta.json").write_text(json.dumps({"settings": {}}))
    opt = section_budgets.publication_budget(tmp_path / "opt")
    assert (opt["runs"], opt["device"], opt["threads"], opt["median_run_seconds"]) == (2, "cpu, cuda", "16, 2", 202.0)
    assert opt["hours"] == 404 / 3600 and opt["counts"] == "set-up + loop"
    lay = section_budgets.publication_budget(tmp_path / "lay")
    assert (lay["runs"], lay["hours"], lay["device"]) == (1, 90 / 3600, "not recorded")
    assert section_budgets.publication_budget(tmp_path / "none") == {
        "publication": "none",
        "runs": 0,
        "note": "its records keep no time",
    }


@pytest.fixture(scope="module")
def bench_data(tmp_path_factory) -> Path:
    """One data folder for the benchmarks' tiny runs: polarity prepared and its 300 sentences encoded once."""
    return tmp_path_factory.mktemp("bench-data")


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,keys",
    [
        ("optimize_loop", ("isoflow_seconds_per_update", "reference_seconds_per_update", "abs_diff_after_update_1")),
        ("istar_penalty", ("seconds_per_update_median", "overhead_vs_plain")),
        ("finetune", ("seconds_per_step_median", "penalty_overhead_vs_plain", "eval_sentences_per_second")),
    ],
)
def test_a_benchmark_on_the_papers_case_runs_end_to_end_on_a_tiny_one(
    script, keys, tmp_path, bench_data, monkeypatch, shared_mirror
):
    """`--tiny`: the script as a reader runs it, on 300 polarity sentences (prepared through the mirror, encoded by
    MiniLM): it writes its JSON whole, with the commit that made it; the values agree with the reference stack."""
    import importlib
    import json

    monkeypatch.setenv("ISOFLOW_MIRROR", str(shared_mirror))
    out = tmp_path / f"{script}.json"
    argv = [f"{script}.py", "--tiny", "--data-dir", str(bench_data), "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    assert importlib.import_module(script).main() == 0
    written = json.loads(out.read_text())
    assert all(k in written for k in keys) and written["provenance"]["code"]
    assert script == "finetune" or written["case"].startswith("polarity x minilm (300 x 384")
    if script == "optimize_loop":
        assert max(written["abs_diff_after_update_1"].values()) < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("script", ["layers", "layers_budget"])
def test_the_layer_benchmarks_run_end_to_end_on_a_tiny_corpus_sample(script, tmp_path, bench_data, monkeypatch,
                                                                       shared_mirror):  # fmt: skip
    """`--tiny`: MiniLM over 300 tokens of Brown (through the mirror), every stage of the analysis or of its budget."""
    import importlib
    import json

    monkeypatch.setenv("ISOFLOW_MIRROR", str(shared_mirror))
    out = tmp_path / f"{script}.json"
    argv = [f"{script}.py", "--tiny", "--model", "minilm", "--data-dir", str(bench_data), "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    assert importlib.import_module(script).main() == 0
    written = json.loads(out.read_text())
    assert written["provenance"]["code"]
    if script == "layers":
        assert written["case"].startswith("minilm x brown") and written["total_seconds"] > 0
    else:
        (run,) = written["runs"]
        assert run["model"] == "minilm" and run["states"] == 7 and run["seconds"]["one_layer"] > 0


@pytest.mark.slow
def test_the_alpha_req_precision_measurement_runs_on_a_few_tokens(tmp_path, bench_data, monkeypatch, shared_mirror):
    """MiniLM over 300 Brown tokens: a row per state with α-ReQ of its float32 states and of their float64 copy; the
    float64 copy counts no eigenvalue near float32's rounding (its smallest counted above 1e-12 of the largest, or a
    rounding direction left out: every state of a BERT is a LayerNorm's output)."""
    import importlib
    import json

    out = tmp_path / "precision.json"
    argv = ["alpha_req_precision.py", "--tokens", "300", "--data-dir", str(bench_data), "--mirror", str(shared_mirror)]
    monkeypatch.setattr(sys, "argv", [*argv, "--out", str(out)])
    assert importlib.import_module("alpha_req_precision").main() == 0
    written = json.loads(out.read_text())
    assert [r["layer"] for r in written["rows"]] == list(range(7)) and written["code"] and written["machine"]["cpu"]
    for row in written["rows"]:
        assert row["smallest_counted_float64"] > 1e-12 and row["smallest_counted_float32"] > 0


def test_the_forward_cost_benchmark_fits_a_pass_s_fixed_cost(tmp_path):
    """benchmarks/forward_cost.py --tiny: two passes of the tiny shape timed, the fit's line through them (two points:
    exactly), its fixed cost in positions the intercept over the slope."""
    import json

    import forward_cost

    out = tmp_path / "forward.json"
    assert forward_cost.main(["--tiny", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    rows, fit = written["rows"], written["fit"]
    assert [r["positions"] for r in rows] == [32, 256]
    provenance = written["provenance"]  # what every run's record says of what made it (isoflow.records)
    assert provenance["code"]["git_commit"] and provenance["machine"]["cpu"] and provenance["versions"]["torch"]
    a = (rows[1]["seconds"] - rows[0]["seconds"]) / (256 - 32)
    assert fit["ms_per_position"] == pytest.approx(1000 * a, rel=1e-6)
    assert fit["fixed_cost_positions"] == pytest.approx(rows[0]["seconds"] / a - 32, rel=1e-6, abs=1e-6)
    # the fit weighs relative errors: a long pass 2 % slow leaves a fixed cost of 6 positions near 6 (unweighted: -1.5)
    passes = (32, 256, 512, 1024, 2048)
    seconds = [0.001 * (p + 6) * (1.02 if p == 2048 else 1) for p in passes]
    assert forward_cost.fixed_cost(passes, seconds)[1] == pytest.approx(5.75, abs=0.01)


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,count",
    [("silhouette_paths.py", "results"), ("metric_step_parts.py", "seconds")],
)
def test_the_metric_path_benchmarks_run_end_to_end_on_a_tiny_case(script, count, tmp_path):
    """`--tiny`, in a process of its own (metric_step_parts forces NumPy's BLAS for the whole process it runs in)."""
    import json

    from conftest import sh

    out = tmp_path / "out.json"
    sh([sys.executable, str(ROOT / "benchmarks" / script), "--tiny", "--out", str(out)], tmp_path, timeout=600)
    written = json.loads(out.read_text())
    assert written[count] and written["provenance"]["code"]
    if script == "silhouette_paths.py":
        assert all(r["abs_diff"] < 1e-5 for r in written["results"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,args",
    [
        ("launches.py", ["--tiny"]),
        ("spectral.py", ["--tiny"]),
        ("section_budgets.py", []),
    ],
)
def test_the_remaining_benchmarks_run_end_to_end(script, args, tmp_path):
    """Every other benchmark script as a reader runs it, writing under tmp_path (section_budgets reads the committed
    publications' run records)."""
    import json

    from conftest import sh

    out = tmp_path / ("budgets" if script == "section_budgets.py" else "out.json")
    sh([sys.executable, str(ROOT / "benchmarks" / script), *args, "--out", str(out)], tmp_path, timeout=600)
    written = json.loads(out.with_suffix(".json").read_text())
    if script == "section_budgets.py":
        assert len(written) >= 10 and out.with_suffix(".md").read_text().startswith("# What each publication cost")
    else:
        (row,) = written["results"]
        assert row["name"] == "tiny" and written["provenance"]["code"]
    if script == "spectral.py":  # ours against the Gram-matrix definition and NumPy's singular values
        # Our effective rank of the float32 points comes from their float64 products (isoflow.metrics.spectrum.
        # float64_scatter), NumPy's from float64 singular values of a float64 copy: float64's rounding, relative 1e-9.
        rankme = row["reference_rankme"]["value"]
        assert row["abs_diff_cka"] < 1e-6 and row["abs_diff_rankme"] < 1e-9 * rankme and row["cka"]["ratio_to_gemm"] > 0
        layers = written["layers"]  # the layer analysis' CKA matrix against its pairs one by one
        assert layers["name"] == "tiny CKA matrix" and layers["pairs"] == 10
        for name in ("cka_matrix", "cka_matrix_debiased"):
            assert layers[name]["max_abs_diff_from_pairs"] < 1e-12 and layers[name]["seconds"] > 0


@pytest.mark.slow
def test_the_gpu_check_runs_dry_on_the_cpu(tmp_path):
    """`gpu_check.sh dry`: every step of the prepared device check on the CPU and a tiny case, saying what it
    skipped; both benchmarks run end to end as a reader runs them, their JSON written and read back (once
    benchmarks/metrics.py crashed after the first case's timings, on a name the flop count reused; a broken script is
    found here, not on a lent GPU's minutes). The device tests are collected, not run (the suite runs them); the
    large-model step (its own call there) runs on the tiny shape. Over 60 s on 2 cores: three benchmark processes."""
    import json
    import re

    from conftest import sh

    sh(["bash", "benchmarks/gpu_check.sh", "dry"], ROOT, env={"OUT": str(tmp_path)}, timeout=900)
    assert "skipped (GPU only): nvidia-smi" in (tmp_path / "skipped.txt").read_text()
    selected = re.search(r"(\d+)/\d+ tests collected", (tmp_path / "tests.log").read_text())
    assert selected and int(selected.group(1)) >= 20
    device_step = json.loads((tmp_path / "metric-step-cpu.json").read_text())
    (step,) = device_step["results"]
    assert step["name"] == "tiny" and device_step["provenance"]["code"]
    written = json.loads((tmp_path / "metrics-cpu.json").read_text())
    rows = written["results"]
    assert [(r["name"], r["dtype"]) for r in rows] == [("tiny", "float32"), ("tiny", "float64")]
    assert all(r["abs_diff_silhouette"] < 1e-5 and r["ours_gflop"] > 0 and r["ours_over_xxt"] > 0 for r in rows)
    assert written["provenance"]["code"] and written["environment"]["gemm_gflops"]["float64"] > 0
    (large,) = json.loads((tmp_path / "large-layers-cpu.json").read_text())["results"]  # `gpu_check.sh large`'s step
    assert large["shape"] == "tiny-llama" and large["dtype"] == "bfloat16" and large["tokens_per_second"] > 0
    assert set(large["layer_seconds"]) == {f"layer{i}" for i in range(large["n_states"])}
    estimate = json.loads((tmp_path / "layer-estimate-cpu.json").read_text())  # and its estimate, no mirror needed
    assert estimate["estimate"]["n_points"] == large["n_points"] and estimate["estimate"]["device"] == "cpu"


def test_the_suite_durations_record_names_every_test_as_pytest_does(tmp_path):
    """benchmarks/suite_durations.py: a JUnit file (a test, a parametrised one, a class's, a doctest) made into
    seconds per pytest node id and per file; a comparison names the ids in one record only."""
    import json

    import suite_durations

    junit = tmp_path / "suite.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_one@offline-workflow" time="2.5"/>'
        '<testcase classname="tests.test_a" name="test_two[x-1]" time="0.5"/>'
        '<testcase classname="tests.test_b.TestThing" name="test_three" time="1.0"/>'
        '<testcase classname="src.isoflow.metrics.geometry" name="isoflow.metrics.geometry.geometry" time="0.25"/>'
        "</testsuite></testsuites>"
    )
    out = tmp_path / "run.json"
    assert suite_durations.main([str(junit), "--wall", "10", "--label", "after", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["per_test"] == {
        "tests/test_a.py::test_one": 2.5,
        "tests/test_b.py::TestThing::test_three": 1.0,
        "tests/test_a.py::test_two[x-1]": 0.5,
        "src/isoflow/metrics/geometry.py::isoflow.metrics.geometry.geometry": 0.25,
    }
    assert rec["per_file"]["tests/test_a.py"] == 3.0 and rec["tests"] == 4 and rec["wall_seconds"] == 10
    before = {**rec, "label": "before", "per_test": {**rec["per_test"], "tests/test_c.py::test_gone": 9.0}}
    said = suite_durations.compare(before, rec)
    assert "only in before: tests/test_c.py::test_gone" in said and "only in after" not in said


def test_the_suite_processes_record_splits_the_cpu_by_who_started_each_process(tmp_path):
    """benchmarks/suite_processes.py: an accounting file's processes (dump-acct's lines) split into the pytest workers'
    own CPU, one tree per process a worker started (its jobs counted in it) and the rest; the workers found as the
    longest-lived Python processes of one parent, a worker that loaded pyarrow among them."""
    import json

    import suite_processes

    def line(name, cpu, wall, pid, ppid):  # dump-acct v3: times in ticks of 1/100 s
        times = f"{cpu * 100:9.2f}|     0.00|{wall * 100:9.2f}"
        return f"{name:16}|v3|{times}|0|0|0|0|{pid}|{ppid}| |0|__|Tue Dec  1 22:49:39 2026"

    dump = "\n".join(
        [
            line("make", 1.0, 100, 10, 1),  # make test, and under it the linters and pytest's controller
            line("ruff", 2.0, 3, 11, 10),
            line("python3", 4.0, 95, 12, 10),
            line("python3", 300.0, 90, 13, 12),  # worker 1
            line("jemalloc_bg_thd", 200.0, 89, 14, 12),  # worker 2, which loaded pyarrow: named after its last thread
            line("python3", 0.5, 1, 15, 12),  # a short-lived helper of the controller: not a worker
            line("jemalloc_bg_thd", 3.0, 50, 20, 13),  # a snakemake run started by a test: itself and two jobs
            line("bash", 0.0, 20, 21, 20),
            line("isoflow", 15.0, 20, 22, 21),
            line("isoflow", 9.0, 25, 23, 20),
            line("dvc", 2.5, 4, 30, 14),  # a single command
            "malformed line",
        ]
    )
    (tmp_path / "pacct.txt").write_text(dump)
    out = tmp_path / "processes.json"
    assert suite_processes.main([str(tmp_path / "pacct.txt"), "--label", "x", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["cpu_seconds"] == 537.0 and rec["workers_own_cpu_seconds"] == 500.0
    assert rec["tests_processes_cpu_seconds"] == 29.5 and rec["other_cpu_seconds"] == 7.5
    assert [(t["cpu_seconds"], t["processes"], t["over_a_second"]) for t in rec["trees"]] == [(27.0, 4, 3), (2.5, 1, 1)]
    with pytest.raises(ValueError, match="4 workers"):  # the controller started three Python processes, not four
        suite_processes.record(suite_processes.read_dump(dump), 4, "x")


def test_every_test_a_committed_suite_record_found_over_a_minute_says_why():
    """The budget kept visible: a test that took over 60 s in any committed clean-clone record of the suite
    (benchmarks/results/suite/*.json) says why in its docstring ("Over 60 s ..."); tests renamed or removed since are
    passed over."""
    import ast
    import json

    slow = set()
    for record in sorted((ROOT / "benchmarks/results/suite").glob("*.json")):
        slow |= {t for t, seconds in json.loads(record.read_text())["per_test"].items() if seconds > 60}
    assert "tests/test_dvc.py::test_round_trip_through_the_default_local_remote" in slow  # the records are read
    unexplained = []
    for test in sorted(slow):
        path, _, name = test.partition("::")
        name = name.split("[")[0].split("@")[0]  # parameters, xdist groups
        source = ROOT / path
        tree = ast.parse(source.read_text()) if source.is_file() else ast.Module(body=[], type_ignores=[])
        found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
        if found and "Over 60 s" not in (ast.get_docstring(found[0]) or ""):
            unexplained.append(test)
    assert unexplained == []


def test_the_published_shapes_have_their_model_cards_parameters():
    """benchmarks/model_shapes.py: each shape, built on the meta device, has the parameter count its model card
    publishes (SmolLM2-135M, Qwen2.5-0.5B, Llama-3.2-1B, Llama-3.1-8B and -70B), so the weights' bytes and FLOPs a
    budget reads from it are the real model's."""
    import model_shapes

    assert {name: model_shapes.parameters(name) for name in model_shapes.PUBLISHED_PARAMETERS} == (
        model_shapes.PUBLISHED_PARAMETERS
    )


def test_the_large_models_on_paper_are_the_formulas_and_the_manuals_table():
    """benchmarks/large_on_paper.py: its record is what it computes now, docs/performance.md shows that table, and
    its GPU sum adds what a GPU run holds: the 8B's 33 states' scatters are 33 × 2 × 4,096² float64 (8.9 GB) and its
    every layer fits one H100; the 70B's weights alone (141 GB) do not."""
    import json

    import large_on_paper

    rows = large_on_paper.table()
    assert json.loads((ROOT / "benchmarks/results/large-on-paper.json").read_text())["results"] == rows
    assert large_on_paper.markdown(rows) in (ROOT / "docs/performance.md").read_text(encoding="utf-8")
    by = {(r["shape"], r["layers"]): r for r in rows}
    eight, seventy = by[("llama-3.1-8b", "all")], by[("llama-3.1-70b", "all")]
    assert eight["scatters_gb"] == round(33 * 2 * 8 * 4096**2 / 1e9, 1) and eight["h100s"] == 1
    assert seventy["weights_gb"] * 1e9 > large_on_paper.H100_BYTES and seventy["h100s"] == 3
    assert eight["weights_gb"] + eight["scatters_gb"] < eight["gpu_gb"] < eight["host_peak_gb"]


@pytest.mark.slow
def test_a_shape_saved_in_bfloat16_is_measured_in_bfloat16_at_a_subset_of_layers(tmp_path):
    """A random model of a Llama shape saved in bfloat16 (built in it, no float32 copy), read by `isoflow layers
    --dtype bfloat16 --layers ::2`: its weights stay bf16, the record names the dtype and the layers measured, and
    every measured row is finite (the states are taken in float32 before any measure)."""
    import json

    import model_shapes
    import pandas as pd
    from safetensors import safe_open

    from isoflow.cli import main

    text = tmp_path / "text.txt"
    rng = np.random.default_rng(0)
    words = "the model reads every layer of a large network in bounded memory and time".split()
    text.write_text("\n".join(" ".join(rng.choice(words, size=12)) for _ in range(400)) + "\n")
    made = model_shapes.write_model("tiny-llama", tmp_path / "model", "bfloat16", text, vocab=300)
    assert made["weights_bytes"] == 2 * made["parameters"]
    with safe_open(str(tmp_path / "model" / "model.safetensors"), "pt") as weights:
        assert {str(weights.get_tensor(k).dtype) for k in weights.keys()} == {"torch.bfloat16"}
    out = tmp_path / "run"
    argv = ["layers", "--model", str(tmp_path / "model"), "--dtype", "bfloat16", "--layers", "::2", "--corpus",
            str(text), "--max-tokens", "300", "--k-lid", "5", "--k-max", "3", "--kmeans-samples", "1",
            "--kmeans-starts", "1", "--device", "cpu", "--quiet", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source"]["dtype"] == "bfloat16" and meta["layers_measured"] == [0, 2] and meta["n_layers"] == 3
    rows = pd.read_parquet(out / "layers.parquet")
    assert rows.layer.tolist() == [0, 2] and np.isfinite(rows[["isoscore", "effective_rank", "twonn"]]).all().all()


@pytest.mark.slow
def test_the_large_model_benchmark_keeps_a_sample_when_asked(tmp_path, shared_mirror):
    """benchmarks/large_layers.py on the tiny Llama shape with --states sample and --layers, over Brown's sentences
    read from the mirror: its record names what the run kept and measured, and the disk that follows (measured states
    × kept points × d × 4 bytes of states, × types × d × 8 of types' sums), fewer points than it read; and
    benchmarks/layer_estimate.py estimates that run from its record."""
    import json

    import large_layers

    out = tmp_path / "large.json"
    argv = ["--shape", "tiny-llama", "--dtype", "bfloat16", "--tokens", "300", "--sample-cap", "40", "--states",
            "sample", "--layers", "0,-1", "--corpus", "brown", "--mirror", str(shared_mirror),
            "--out", str(out)]  # fmt: skip
    assert large_layers.main(argv) == 0
    (row,) = json.loads(out.read_text())["results"]
    assert row["states"] == "sample" and row["points_kept"] == 40 < row["n_points"]
    assert row["layers_measured"] == [0, 2] == [int(k[len("layer") :]) for k in row["layer_seconds"]]
    assert row["states_disk_mb"] == round(2 * 40 * row["dim"] * 4 / 2**20, 1)
    assert row["n_types"] > 100 and row["types_disk_mb"] == round(2 * row["n_types"] * row["dim"] * 8 / 2**20, 1)
    # `isoflow layers --estimate` of that run on the files it read, made again: its points, kept points and the
    # positions its batches compute counted as the run counted them
    import layer_estimate

    assert (
        layer_estimate.main(["--check", str(out), "--mirror", str(shared_mirror), "--out", str(tmp_path / "e.json")])
        == 0
    )
    written = json.loads((tmp_path / "e.json").read_text())
    made, result = written["estimate"], written["result"]
    assert (made["n_points"], made["points_kept"], made["positions"]) == (
        row["n_points"], row["points_kept"], row["positions_computed"])  # fmt: skip
    assert made["states_measured"] == 2 and set(result["predicted_over_measured"]) == {
        "encode", "measure", "total", "peak_memory"}  # fmt: skip
    assert (
        result["estimate"]["encode_seconds"] == round(made["predicted"]["encode"], 1)
        and made["predicted"]["encode"] > 0
    )
