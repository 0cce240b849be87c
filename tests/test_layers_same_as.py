"""isoflow layers-same-as (isoflow.layers.same_as): layer runs made again, compared with those made before, table by
table and column by column, on copies of published runs (an analysis, a comparison of two models)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from conftest import ROOT

from isoflow.cli import main
from isoflow.layers.same_as import TABLES, compare_runs

PUBLISHED = ROOT / "docs/results/layers/runs"


def test_a_rerun_s_moves_are_tabulated_column_by_column(tmp_path, capsys):
    """GloVe's published analysis and MiniLM × mpnet's comparison copied twice, the new GloVe's α-ReQ moved in one
    layer and its record given another commit and k_lid: that column alone is listed, with its absolute and relative
    move, the setting named, both commits in the table; the comparison identical; MiniLM's analysis, in the old folder
    only, named and left out."""
    old, new, out = tmp_path / "old", tmp_path / "new", tmp_path / "same"
    for folder in (old, new):
        shutil.copytree(PUBLISHED / "glove-50d/brown", folder / "glove-50d/brown")
        shutil.copytree(PUBLISHED / "cross/minilm/mpnet/brown", folder / "cross/minilm/mpnet/brown")
    shutil.copytree(PUBLISHED / "minilm/brown", old / "minilm/brown")
    moved = new / "glove-50d/brown"
    layers = pd.read_parquet(moved / "layers.parquet")
    before = float(layers.loc[0, "alpha_req"])
    layers.loc[0, "alpha_req"] = before + 0.01
    layers.to_parquet(moved / "layers.parquet", index=False)
    meta = json.loads((moved / "meta.json").read_text())
    meta["code"]["git_commit"] = "abcdef0" + "0" * 33
    meta["settings"]["k_lid"] = 50
    (moved / "meta.json").write_text(json.dumps(meta))

    assert main(["layers-same-as", str(old), str(new), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "glove-50d/brown: 1 columns moved" in said and "cross/minilm/mpnet/brown: identical" in said
    assert f"in {old} only, not compared: minilm/brown" in said
    crossed = json.loads((out / "cross/minilm/mpnet/brown.json").read_text())
    assert crossed["identical"] and list(crossed["tables"]) == ["cross"] and crossed["tables"]["cross"]["rows"][0] > 0
    compared = json.loads((out / "glove-50d/brown.json").read_text())
    assert not compared["identical"] and compared["settings_differing"] == ["k_lid"]
    assert compared["tables"]["layers"]["columns_differing"] == {"alpha_req": pytest.approx(0.01, rel=1e-9)}
    relative = 0.01 / max(abs(before), abs(before + 0.01))
    assert compared["tables"]["layers"]["relative_differing"] == {"alpha_req": pytest.approx(relative, rel=1e-9)}
    present = [name for name in TABLES if (moved / f"{name}.parquet").is_file()]
    assert sorted(compared["tables"]) == sorted(present)
    assert all(compared["tables"][name]["equal"] for name in present if name != "layers")
    table = pd.read_csv(out / "layers_same_as.csv")
    moved = table.fillna("")[["run", "table", "column", "nan_changed"]].values.tolist()
    assert moved == [["glove-50d/brown", "layers", "alpha_req", 0], ["cross/minilm/mpnet/brown", "", "", 0]]
    published = json.loads((old / "glove-50d/brown/meta.json").read_text())["code"]["git_commit"]
    assert table.loc[0, "commits"] == f"{published[:7]} abcdef0"
    assert not (out / "minilm").exists()


def test_an_analysis_compared_with_another_model_s_is_refused(tmp_path, capsys):
    """Another model's analysis is no namesake; two folders with no analysis in common: one line, nothing written."""
    with pytest.raises(ValueError, match="the run minilm/brown, not glove-50d/brown; compare a run with its namesake"):
        compare_runs(PUBLISHED / "glove-50d/brown", PUBLISHED / "minilm/brown")
    assert main(["layers-same-as", str(PUBLISHED), str(tmp_path), "--out", str(tmp_path / "same")]) != 0
    (said,) = capsys.readouterr().err.strip().splitlines()
    runs = "<model>/<corpus>/meta.json, cross/<a>/<b>/<corpus>/cross.json"
    assert said.endswith(f"{tmp_path}: no layer run ({runs}) that {PUBLISHED} also holds")
    assert not (tmp_path / "same").exists()
