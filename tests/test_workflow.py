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


@pytest.mark.slow
def test_offline_config_runs_for_real(tmp_path, shared_mirror):
    conf = ["--configfile", "config/offline.yaml", "--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results", f"mirror={shared_mirror}"]
    snakemake("--cores", "2", "--quiet", *conf)
    corr = pd.read_csv(tmp_path / "results/tables/correlations.csv")
    assert set(corr["task"]) == {"polarity", "pos-wordnet", "supersense"}
    traj = pd.read_parquet(tmp_path / "results/trajectories/glue/wnli/minilm/seed0.parquet")
    assert traj["step"].max() == 10 and traj["isoscore"].iloc[-1] < traj["isoscore"].iloc[0]
    assert (tmp_path / "results/figures/silhouette_vs_isoscore.pdf").is_file()
    # Nothing left to do afterwards.
    again = snakemake("-n", *conf)
    assert "Nothing to be done" in again.stdout + again.stderr
