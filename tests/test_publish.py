"""scripts/publish_results.py: a section of docs/results holds exactly what its tables were made from, and publishing
one section leaves the others (and, on failure, itself) as they were."""

import csv
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from publish_results import PublishError, main, publish  # noqa: E402


def _results(root: Path) -> Path:
    results = root / "results" / "repro"
    for name in ("correlations.csv", "correlations.md", "table1_sizes.csv", "istar.csv", "layers.csv"):
        (results / "tables").mkdir(parents=True, exist_ok=True)
        (results / "tables" / name).write_text(name)
    for name in ("silhouette.png", "istar_curves.png", "layers_lid.png"):
        (results / "figures").mkdir(parents=True, exist_ok=True)
        (results / "figures" / name).write_text(name)
    runs = []
    for run in ("polarity/minilm/seed0", "polarity/minilm/seed1", "stray/minilm/seed0"):
        base = results / "trajectories" / run
        base.parent.mkdir(parents=True, exist_ok=True)
        base.with_suffix(".json").write_text("{}")
        base.with_suffix(".parquet").write_text("p")
        runs.append(f"results/repro/trajectories/{run}.json")
    (results / "aggregate").mkdir()
    with open(results / "aggregate" / "runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task", "seed", "record"])
        writer.writerows([["polarity", 0, runs[0]], ["polarity", 1, runs[1]]])  # not the stray run
    (results / "layers" / "minilm" / "brown").mkdir(parents=True)
    (results / "layers" / "minilm" / "brown" / "layers.csv").write_text("l")
    (results / "layers" / "benchmarks").mkdir()
    (results / "layers" / "benchmarks" / "x.tsv").write_text("b")
    return results


def test_a_section_holds_its_tables_figures_and_exactly_the_listed_runs(tmp_path):
    results = _results(tmp_path)
    other = tmp_path / "docs" / "results" / "finetune"
    other.mkdir(parents=True)
    (other / "keep.txt").write_text("mine")
    dest = tmp_path / "docs" / "results" / "paper"
    files = {p.relative_to(dest).as_posix() for p in publish("paper", results, dest, root=tmp_path, made_by="snakemake correlations")}
    assert files == {"PUBLISHED.json", "tables/correlations.csv", "tables/correlations.md", "tables/table1_sizes.csv",
                     "figures/silhouette.png", "runs.csv",
                     "trajectories/polarity/minilm/seed0.json", "trajectories/polarity/minilm/seed0.parquet",
                     "trajectories/polarity/minilm/seed1.json", "trajectories/polarity/minilm/seed1.parquet"}
    with open(dest / "runs.csv", newline="") as fh:
        records = [row["record"] for row in csv.DictReader(fh)]
    assert records == [str(dest / "trajectories/polarity/minilm/seed0.json"),
                       str(dest / "trajectories/polarity/minilm/seed1.json")]
    assert (other / "keep.txt").read_text() == "mine"  # another section is not touched
    made = json.loads((dest / "PUBLISHED.json").read_text())
    assert made["made_by"] == "snakemake correlations" and made["results_dir"] == "results/repro"  # relative to the checkout
    assert made["workflow_checkout"] == {"git_commit": None, "git_dirty": None}  # tmp_path is no git checkout

    layers_dest = tmp_path / "docs" / "results" / "layers"
    layers = {p.relative_to(layers_dest).as_posix() for p in publish("layers", results, layers_dest, root=tmp_path)}
    assert layers == {"PUBLISHED.json", "tables/layers.csv", "figures/layers_lid.png", "layers/minilm/brown/layers.csv"}  # no benchmarks
    assert sorted(p.name for p in dest.parent.iterdir()) == ["finetune", "layers", "paper"]  # no temp dirs left
    (dest / "README.md").write_text("the discussion of these numbers")
    publish("paper", results, dest, root=tmp_path)  # an earlier publication (it carries the marker) is replaced
    assert (dest / "runs.csv").is_file()
    assert (dest / "README.md").read_text() == "the discussion of these numbers"  # written by hand: carried over


def test_a_destination_that_is_not_a_publication_is_refused_without_force(tmp_path, capsys):
    results = _results(tmp_path)
    dest = tmp_path / "docs" / "results" / "paper"
    dest.mkdir(parents=True)
    (dest / "notes.txt").write_text("mine")
    assert main(["paper", str(results), str(dest), "--root", str(tmp_path)]) == 1
    assert "holds files isoflow did not write (notes.txt)" in capsys.readouterr().err
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]
    assert main(["paper", str(results), str(dest), "--root", str(tmp_path), "--force"]) == 0
    assert not (dest / "notes.txt").exists() and (dest / "runs.csv").is_file()
    # A section published before the marker file existed (exactly a section's names) is recognised.
    old = tmp_path / "docs" / "results" / "layers"
    for name in ("tables", "figures", "layers"):
        (old / name).mkdir(parents=True)
    publish("layers", results, old, root=tmp_path)
    assert (old / "layers" / "minilm" / "brown" / "layers.csv").is_file()


def test_a_missing_run_fails_and_leaves_the_published_section_as_it_was(tmp_path, capsys):
    results = _results(tmp_path)
    dest = tmp_path / "docs" / "results" / "paper"
    publish("paper", results, dest, root=tmp_path)
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    (results / "trajectories" / "polarity" / "minilm" / "seed1.parquet").unlink()
    with pytest.raises(PublishError, match="seed1.parquet is missing; rerun the workflow"):
        publish("paper", results, dest, root=tmp_path)
    assert {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["paper"]
    assert main(["istar", str(tmp_path / "nothing"), str(tmp_path / "out")]) == 1
    assert "no istar tables or figures; run `snakemake istar`" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
