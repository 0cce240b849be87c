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
    labels = [f"I-STAR λ={lam:g}" for lam in (-5, -3, -1, 0.5, 1, 3, 5)] + ["none (λ = 0)", "CosReg w=1"]
    handles = [Line2D([], [], marker="o", label=label) for label in labels]
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    legend_below(fig, handles)
    assert _legend_fits(fig)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == labels  # every series named
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


def test_a_legend_that_fits_stays_on_one_row():
    """Eight λ under one panel fit its 6 inches in one row (590 of 600 px): not split for want of room it has."""
    from isoflow.reporting.figures import lambda_colours, lambda_legend

    fig, _ = panels(1)
    lambda_legend(fig, lambda_colours([-5, -3, -1, 0, 0.5, 1, 3, 5]))
    fig.canvas.draw()
    rows = {round(t.get_window_extent().y0) for t in fig.legends[0].get_texts()}
    assert _legend_fits(fig) and len(rows) == 1
    matplotlib.pyplot.close(fig)


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
