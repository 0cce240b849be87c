"""The paper's own numbers beside ours: the data module (every row of Table 3, Tables 1-2) and the table columns."""

from __future__ import annotations

import pandas as pd
import pytest

from isoflow.optimize import paper
from isoflow.optimize.report import paper_columns, sizes


def test_every_glue_row_of_table_3_and_table_2():
    assert len(paper.GLUE_CORRELATIONS) == 24 == len(paper.GLUE_MODELS) * len(paper.GLUE_ITEMS)
    rs = [r for r, _ in paper.GLUE_CORRELATIONS.values()]
    rhos = [rho for _, rho in paper.GLUE_CORRELATIONS.values()]
    assert max(rs) == pytest.approx(-0.8386, abs=1e-4) and min(rs) == pytest.approx(
        -0.9397, abs=1e-4
    )  # "r from -0.838 to -0.94"
    assert max(rhos) < -0.966  # "Spearman's rho always below -0.966"
    # Table 2's parameter counts are distinct sentences x d + classifier (pairs: 2d -> k): WNLI's 925 distinct
    # sentences;
    # CoLA's 8,551 examples hold 8,532 distinct sentences.
    assert paper.glue_params("glue/wnli", "minilm") == 925 * 384 + 768 * 2 + 2
    assert paper.glue_params("glue/cola", "minilm") == 8_532 * 384 + 384 * 2 + 2


def test_main_rows_and_departures():
    assert paper.main_row("pos-wordnet") is paper.MAIN["pos"]
    assert paper.setup("polarity", "minilm", 1000) == "as in the paper"
    assert paper.setup("glue/sst2", "minilm", 250) == "as in the paper"
    assert "GloVe 6B 50d" in paper.setup("supersense", "glove-50d", 1000)
    assert paper.setup("glue/wnli", "minilm", 10) == "10 updates (paper: 250)"
    assert paper.setup("polarity-300", "minilm", 1000) == "not in the paper"


def test_table_columns_carry_the_paper_value_and_the_difference():
    row = paper_columns("glue/rte", "mpnet", -0.9, -0.999, 250)
    assert row["paper_pearson_r"] == paper.GLUE_CORRELATIONS[("mpnet", "rte")][0]
    assert row["delta_r"] == pytest.approx(-0.9 - row["paper_pearson_r"]) and row["paper_source"] == "App. A, Table 3"
    main = paper_columns("snli", "minilm", -0.877, -1.0, 1000)
    assert (
        main["paper_pearson_r"] == -0.878
        and main["delta_r"] == pytest.approx(0.001)
        and main["paper_spearman_rho"] == "< -0.998"
    )
    info = pd.DataFrame(
        [
            {
                "task": "snli",
                "model": "minilm",
                "n_items": 12_982,
                "n_examples": 9_842,
                "dim": 384,
                "n_labels": 3,
                "n_params": 12_982 * 384 + 768 * 3 + 3,
            }
        ]
    )
    table = sizes(info)
    assert (
        table.loc[0, "paper_n_items"] == 9_842
        and table.loc[0, "delta_n_items"] == 0
        and table.loc[0, "delta_n_params"] == 0
    )


def test_report_captions_quote_the_data_module():
    """The numbers the HTML report's captions quote are the data modules' (one source, checked copies)."""
    import re
    from pathlib import Path

    from isoflow.layers.report import CAI_TABLE3

    root = Path(__file__).resolve().parents[1] / "report"
    numbers = lambda text: [float(x.replace("−", "-")) for x in re.findall(r"[−-]?\d+\.\d+", text)]  # noqa: E731
    main = numbers((root / "correlations_table.rst").read_text().split("Sec. 3.2", 1)[1])
    assert main[:4] == [paper.MAIN[t]["pearson_r"] for t in ("polarity", "snli", "pos", "supersense")]
    assert main[4] == paper.MAIN_SPEARMAN_BELOW
    glue = numbers((root / "correlations_glue_table.rst").read_text())
    rs = [r for r, _ in paper.GLUE_CORRELATIONS.values()]
    # As the paper's text words it: "always below -0.838" (the largest is -0.8386), down to -0.94; rho below -0.966.
    assert glue[0] == int(max(rs) * 1000) / 1000 and glue[1] == round(min(rs), 2) and glue[2] == -0.966
    assert numbers((root / "layers_lid_table.rst").read_text()) == list(CAI_TABLE3.values())
    spread = numbers((root / "seed_spread_table.rst").read_text())
    assert spread == [3.2, paper.MAIN_SPREAD_BELOW["max"], paper.MAIN_SPREAD_BELOW["mean"]]
