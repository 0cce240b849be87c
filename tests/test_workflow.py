"""The Snakemake workflow: lint, the full paper DAG planned, config validation, a real scaled-down run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def snakemake(*args, cwd=ROOT, check=True):
    p = subprocess.run(["snakemake", *args], cwd=cwd, capture_output=True, text=True, timeout=1800)
    if check:
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


def job_counts(text: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, re.M)}


def test_lint():
    out = snakemake("--lint")
    assert "Congratulations, your workflow is in a good condition!" in out.stdout + out.stderr


def test_full_paper_config_plans_completely(tmp_path):
    out = snakemake("-n", "--quiet", "rules", "--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results")
    counts = job_counts(out.stdout + out.stderr)
    # 4 main + 8 GLUE tasks; 4 + 8x3 (task, model) pairs; 5 seeds each.
    assert counts["prepare"] == 12 and counts["encode"] == 28 and counts["optimize"] == (4 + 24) * 5
    assert counts["analyze"] == 1 and counts["total"] == 12 + 28 + 140 + 1 + 1


def test_invalid_config_is_refused(tmp_path):
    bad = snakemake("-n", "--config", "seeds=[]", check=False)
    assert bad.returncode != 0 and "seeds" in bad.stdout + bad.stderr
    bad = snakemake("-n", "--config", "device=gpu0", check=False)
    assert bad.returncode != 0 and "device" in bad.stdout + bad.stderr


def offline_conf(root: Path, mirror: Path) -> list[str]:
    return ["--configfile", "config/offline.yaml", "--config", f"data_dir={root}/data", f"results_dir={root}/results", f"mirror={mirror}"]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, shared_mirror):
    root = tmp_path_factory.mktemp("local")
    snakemake("--cores", "2", "--quiet", *offline_conf(root, shared_mirror))
    return root


@pytest.mark.slow
def test_offline_config_runs_for_real(local_run, shared_mirror):
    tmp_path = local_run
    conf = offline_conf(tmp_path, shared_mirror)
    corr = pd.read_csv(tmp_path / "results/tables/correlations.csv")
    assert set(corr["task"]) == {"polarity", "pos-wordnet", "supersense"}
    traj = pd.read_parquet(tmp_path / "results/trajectories/glue/wnli/minilm/seed0.parquet")
    assert traj["step"].max() == 10 and traj["isoscore"].iloc[-1] < traj["isoscore"].iloc[0]
    assert (tmp_path / "results/figures/silhouette_vs_isoscore.pdf").is_file()
    # Nothing left to do afterwards.
    again = snakemake("-n", *conf)
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_slurm_profile_on_a_real_cluster(local_run, shared_mirror, tmp_path):
    """`snakemake --profile slurm` through a single-node SLURM cluster on localhost: same results as locally."""
    import os

    env_dir = tmp_path / "cluster"
    start = subprocess.run(["bash", str(ROOT / "ci/slurm/start.sh")], capture_output=True, text=True, timeout=600,
                           env={**os.environ, "SLURM_TEST_DIR": str(env_dir)})
    assert start.returncode == 0, f"the test cluster did not start (needs root and apt): {start.stdout}{start.stderr}"
    try:
        env = {**os.environ, "SLURM_CONF": str(env_dir / "slurm.conf")}
        p = subprocess.run(["snakemake", "--profile", "slurm", *offline_conf(tmp_path, shared_mirror)], cwd=ROOT,
                           capture_output=True, text=True, timeout=1800, env=env)
        out = p.stdout + p.stderr
        assert p.returncode == 0, out[-4000:]
        assert len(re.findall(r"submitted with SLURM jobid", out)) == 11  # every job but the 5 local `prepare` jobs and `all`
        for ref in sorted((local_run / "results/trajectories").rglob("*.parquet")):
            got = pd.read_parquet(tmp_path / "results" / ref.relative_to(local_run / "results"))
            want = pd.read_parquet(ref)
            pd.testing.assert_frame_equal(got, want, check_exact=False, atol=1e-6, rtol=0)
    finally:
        subprocess.run(["bash", str(ROOT / "ci/slurm/stop.sh")], env={**os.environ, "SLURM_TEST_DIR": str(env_dir)}, timeout=60)
