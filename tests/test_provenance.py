"""The git commit and dirtiness every run record and publication carries."""

from __future__ import annotations

import subprocess

from isoflow.provenance import BENCHMARK_RESULTS, PARTIAL_RESULTS, code_version, shown_path


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit(repo, path, message):
    """Commit `path` in `repo`; returns the new HEAD."""
    git(repo, "add", path)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def test_commit_and_dirtiness_of_a_checkout(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    head = commit(repo, "a.py", "one")
    assert code_version(repo) == {"git_commit": head, "git_dirty": False}
    (repo / "results.csv").write_text("untracked output\n")  # outputs inside the checkout do not make it dirty
    assert code_version(repo)["git_dirty"] is False
    saved = repo / PARTIAL_RESULTS / "sweep"
    saved.mkdir(parents=True)
    (saved / "PARTIAL.json").write_text("{}\n")
    head = commit(repo, PARTIAL_RESULTS, "saved runs")
    (saved / "PARTIAL.json").write_text('{"runs": 2}\n')  # a sweep saving its runs as it goes changes no code
    assert code_version(repo) == {"git_commit": head, "git_dirty": False}
    timed = repo / BENCHMARK_RESULTS / "metrics.json"
    timed.parent.mkdir(parents=True)
    timed.write_text("{}\n")
    head = commit(repo, BENCHMARK_RESULTS, "a benchmark's numbers")
    timed.write_text('{"seconds": 1}\n')  # nor does a benchmark writing its JSON
    assert code_version(repo) == {"git_commit": head, "git_dirty": False}
    (repo / "a.py").write_text("x = 20\n")  # another size: git's stat check cannot miss it within the same second
    assert code_version(repo) == {"git_commit": head, "git_dirty": True}
    assert code_version(saved) == {"git_commit": head, "git_dirty": True}  # asked from a folder: the whole checkout


def test_outside_a_checkout(tmp_path):
    assert code_version(tmp_path) == {"git_commit": None, "git_dirty": None}


def test_a_record_shows_a_path_under_the_working_directory_relative_to_it(tmp_path, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / "data/raw").mkdir(parents=True)
    elsewhere.mkdir()
    (repo / "data/raw/task.csv").write_text("text,label\n")
    (repo / "linked").symlink_to(elsewhere)
    monkeypatch.chdir(repo)
    assert shown_path("data/raw/task.csv") == "data/raw/task.csv"
    assert shown_path(repo / "data/raw/../raw/task.csv") == "data/raw/task.csv"
    assert shown_path(elsewhere / "vectors.npy") == str(elsewhere.resolve() / "vectors.npy")
    assert shown_path("linked/vectors.npy") == str(elsewhere.resolve() / "vectors.npy")  # where the file really is
