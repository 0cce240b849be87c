"""Figure helpers shared by every section's report."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from isoflow.reporting.figures import legend_below, panels  # noqa: E402


def _legend_fits(fig) -> bool:
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent()
    return 0 <= box.x0 and box.x1 <= fig.get_figwidth() * fig.dpi


@pytest.mark.parametrize("n_panels", [1, 2, 4])
def test_legend_below_fits_the_figure(n_panels):
    """Nine long labels under one panel (the fine-tuning sweep's every-epoch figure) used to run off both sides."""
    fig, axes = panels(n_panels)
    labels = [f"I-STAR λ = {lam:g}" for lam in (-5, -3, -1, 0.5, 1, 3, 5)] + ["none (λ = 0)", "CosReg w = 1"]
    handles = [Line2D([], [], marker="o", label=label) for label in labels]
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    legend_below(fig, handles)
    assert _legend_fits(fig)
    assert [label for row in _rows_as_read(fig) for label in row] == labels  # every series named, in order
    matplotlib.pyplot.close(fig)


def test_every_reports_legend_fits_a_one_panel_figure():
    """The λ legend (sweeps: a colour per λ, a marker per model) and the model legend (optimisation: a line per
    model) go through legend_below: a researcher's own sweep of eleven λ over three models, or eight models, under one
    panel stays inside the figure, every entry named."""
    from isoflow.optimize.figures import model_legend
    from isoflow.reporting.figures import lambda_colours, lambda_legend

    lams = [-5, -3, -2, -1, -0.5, 0, 0.5, 1, 2, 3, 5]
    fig, _ = panels(1)
    lambda_legend(fig, lambda_colours(lams), {"all-MiniLM-L6-v2": "o", "all-mpnet-base-v2": "s", "my-bert": "^"})
    assert _legend_fits(fig) and len(fig.legends[0].get_texts()) == 14
    matplotlib.pyplot.close(fig)
    fig, _ = panels(1)
    model_legend(fig, {f"my-sentence-encoder-{i}": f"C{i}" for i in range(8)})
    assert _legend_fits(fig) and len(fig.legends[0].get_texts()) == 8
    matplotlib.pyplot.close(fig)


def _rows_as_read(fig) -> list[list[str]]:
    """The legend's labels row by row, top to bottom, each row left to right, as drawn."""
    fig.canvas.draw()
    rows: dict[int, list] = {}
    for t in fig.legends[0].get_texts():
        box = t.get_window_extent()
        rows.setdefault(round(box.y0), []).append((box.x0, t.get_text()))
    return [[label for _, label in sorted(rows[y])] for y in sorted(rows, reverse=True)]


def test_a_legend_that_fits_stays_on_one_row():
    """Seven λ under one panel fit its 6 inches in one row (521 of 600 px): not split for want of room it has. Eight
    (the minus sign is wider than a hyphen) would not: they take two rows, and in one they are wider than the figure."""
    from isoflow.reporting.figures import lambda_colours, lambda_legend

    def rows(lams):
        fig, _ = panels(1)
        lambda_legend(fig, lambda_colours(lams))
        found = [len(row) for row in _rows_as_read(fig)], _legend_fits(fig)
        legend = fig.legends[0]
        one_row = fig.legend(handles=legend.legend_handles, ncol=len(lams), fontsize=7, frameon=False)
        too_wide = one_row.get_window_extent(fig.canvas.get_renderer()).width > fig.bbox.width
        matplotlib.pyplot.close(fig)
        return (*found, too_wide)

    assert rows([-5, -3, -1, 0, 1, 3, 5]) == ([7], True, False)
    assert rows([-5, -3, -1, 0, 0.5, 1, 3, 5]) == ([4, 4], True, True)


@pytest.mark.parametrize("n", [8, 9, 11, 14])
def test_a_split_legend_reads_in_order_in_even_rows(n):
    """A legend too wide for one row is read left to right, top to bottom, in the order of its handles (matplotlib
    fills column by column), in as few columns as its number of rows allows: every row full but the last (8 in two
    rows: 4 + 4, not 7 + 1): n long labels under one panel."""
    fig, _ = panels(1)
    labels = [f"a long series label {i}" for i in range(n)]
    legend_below(fig, [Line2D([], [], marker="o", label=label) for label in labels])
    read = _rows_as_read(fig)
    matplotlib.pyplot.close(fig)
    assert len(read) > 1 and [label for row in read for label in row] == labels
    lengths = [len(row) for row in read]
    assert set(lengths[:-1]) == {lengths[0]} and lengths[0] == -(-n // len(lengths)) and lengths[-1] <= lengths[0]


def test_row_major_is_the_order_matplotlib_fills():
    """The reordering by hand: 7 entries in 3 columns are rows (0 1 2), (3 4 5), (6); column by column that is
    0 3 6, 1 4, 2 5."""
    from isoflow.reporting.figures import row_major

    assert row_major(list(range(7)), 3) == [0, 3, 6, 1, 4, 2, 5]
    assert row_major(list(range(8)), 4) == [0, 4, 1, 5, 2, 6, 3, 7]
    assert row_major(list(range(5)), 5) == list(range(5))


@pytest.mark.parametrize(
    "values, log, scale",
    [
        ([2e-6, 1e-3, 0.05], True, "log"),  # SmolLM2's per-layer IsoScore: five decades, one tick a decade
        ([5.0, 40.0, 600.0], True, "log"),  # two decades: labelled 5, 10, 20, … (plain numbers)
        ([0.04, 0.28], False, "linear"),  # less than a factor of 100
        ([0.0, 1e-4, 0.05], False, "linear"),  # a zero has no place on a log axis
        ([-0.1, 0.5], False, "linear"),
        ([float("nan"), 1e-5, 0.1], True, "log"),  # NaN (a layer not measured) is left out
    ],
)
def test_a_panel_goes_log_only_where_its_values_span_two_decades(values, log, scale):
    from isoflow.reporting.figures import log_axis_if_it_spans

    fig, axes = panels(2)
    assert log_axis_if_it_spans(values, *axes) is log
    assert [ax.get_yscale() for ax in axes] == [scale, scale]  # panels compared take one decision
    matplotlib.pyplot.close(fig)


def test_a_log_x_axis_leaves_the_y_axis_alone():
    from isoflow.reporting.figures import log_axis_if_it_spans

    fig, axes = panels(2)
    assert log_axis_if_it_spans([1e-5, 0.2], *axes, axis="x")
    assert [(ax.get_xscale(), ax.get_yscale()) for ax in axes] == [("log", "linear")] * 2
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("one_scale", [False, True])
def test_curves_on_one_scale_share_both_axes_with_isoscore_on_a_log_axis(monkeypatch, tmp_path, one_scale):
    """The hidden output's figure: IsoScore from 0.2 to 1e-5 on one panel, 0.1 to 0.01 on the other."""
    import pandas as pd

    import isoflow.reporting.figures as figures

    drawn = []
    monkeypatch.setattr(figures, "save", lambda fig, stem: drawn.append(fig) or [])
    mean = pd.DataFrame(
        {
            "task": ["a"] * 3 + ["b"] * 3,
            "model": "m",
            "istar_lambda": 0.0,
            "step": [0, 1, 2] * 2,
            "isoscore": [0.2, 1e-3, 1e-5, 0.1, 0.05, 0.01],
            "silhouette": [0.0, 0.5, 0.9, 0.0, 0.1, 0.2],
        }
    )
    figures.lambda_curves_figure(mean, "step", "IsoScore", "silhouette", "t", tmp_path / "f", one_scale=one_scale)
    a, b = drawn[0].axes[:2]
    assert (a.get_xscale(), b.get_xscale()) == (("log", "log") if one_scale else ("linear", "linear"))
    assert (a.get_xlim() == b.get_xlim() and a.get_ylim() == b.get_ylim()) is one_scale
    matplotlib.pyplot.close(drawn[0])


def test_dense_scatters_are_images_in_the_pdf_and_the_png_is_unchanged(tmp_path):
    """save(): a scatter of more than RASTER_POINTS points becomes one image inside the PDF (as vectors the layer
    views' PDFs were 10-12 MB), a 3-D panel of one as a whole, a sparse one stays vectors, and the PNG is the same
    pixels as without the change."""
    import warnings

    import numpy as np

    import isoflow.reporting.figures as figures
    from isoflow.reporting.figures import RASTER_POINTS, save

    def draw(stem, rasterize: bool):
        rng = np.random.default_rng(0)
        fig, (ax,) = panels(1)
        dense = ax.scatter(*rng.normal(size=(2, 20 * RASTER_POINTS)), s=2)
        sparse = ax.scatter(*rng.normal(size=(2, 10)), s=20, marker="x")
        cube = fig.add_axes((0.6, 0.6, 0.3, 0.3), projection="3d")
        cube.scatter(*rng.normal(size=(3, 20 * RASTER_POINTS)), s=1)
        if not rasterize:  # save() must not change what the PNG shows: the same figure, never marked
            figures.rasterize_dense_scatters, keep = (lambda fig: None), figures.rasterize_dense_scatters
            try:
                return save(fig, stem), dense, sparse
            finally:
                figures.rasterize_dense_scatters = keep
        return save(fig, stem), dense, sparse

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns of a mark it ignores (a 3-D collection's)
        (png, pdf), dense, sparse = draw(tmp_path / "marked", True)
    assert dense.get_rasterized() and not sparse.get_rasterized()
    (png_vec, pdf_vec), _, _ = draw(tmp_path / "vectors", False)
    assert png.read_bytes() == png_vec.read_bytes()
    assert b"/Subtype /Image" in pdf.read_bytes() and b"/Subtype /Image" not in pdf_vec.read_bytes()
    assert pdf.stat().st_size < pdf_vec.stat().st_size / 10


def test_a_table_s_text_with_a_bar_stays_in_its_markdown_cell(tmp_path):
    """isoflow.reporting.tables.write_table: a cell holding `|` (two machines' names) is one Markdown cell (escaped),
    every row as many cells as the header; the CSV keeps the text as it is, numbers formatted as before."""
    import pandas as pd

    from isoflow.reporting.tables import write_table

    df = pd.DataFrame({"model": ["a", "b"], "machines": ["AMD EPYC | Intel Xeon", "AMD EPYC"], "x": [0.5, 1.25]})
    write_table(df, tmp_path / "t", caption="A caption.")
    rows = [line for line in (tmp_path / "t.md").read_text().splitlines() if line.startswith("|")]
    assert len({line.replace("\\|", "").count("|") for line in rows}) == 1 and len(rows) == 4
    assert rows[2] == "| a       | AMD EPYC \\| Intel Xeon | 0.500 |"
    assert pd.read_csv(tmp_path / "t.csv").equals(df)


def test_a_table_s_empty_text_cells_stay_empty_in_markdown(tmp_path):
    """Escaping bars must not change how other cells print: an empty text cell (a paper's bound not given) stays blank
    in the Markdown table, as it was before escaping existed, not 'nan'."""
    import pandas as pd

    from isoflow.reporting.tables import write_table

    df = pd.DataFrame({"task": ["a", "b"], "paper_max_std": pd.Series([None, "< 0.01"], dtype=object), "x": [0.5, 1.2]})
    write_table(df, tmp_path / "t", caption="A caption.")  # a report's row for a paper without the bound: None
    rows = [line for line in (tmp_path / "t.md").read_text().splitlines() if line.startswith("| a")]
    assert "nan" not in rows[0] and rows[0].split("|")[2].strip() == ""


def test_a_table_of_numbers_alone_prints_its_integers_as_integers(tmp_path):
    """A table with no text column (a control's pulls: seed, epoch, pulls) prints its seeds and epochs as 3 and 1,
    not 3.0000: pandas hands such rows on as one float array; the floats keep the table's format."""
    import pandas as pd

    from isoflow.reporting.tables import write_table

    df = pd.DataFrame({"seed": [3, 4], "epoch": [1, 2], "pull": [0.6225, float("nan")]})
    write_table(df, tmp_path / "t", caption="A caption.", floatfmt="%.4f")
    rows = [line for line in (tmp_path / "t.md").read_text().splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in row.split("|")[1:4]] for row in rows[2:]]
    assert cells == [["3", "1", "0.6225"], ["4", "2", "nan"]]
