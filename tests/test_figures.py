"""Figure helpers shared by every section's report."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from isoflow.reporting.figures import legend_below, panels  # noqa: E402


@pytest.mark.parametrize("n_panels", [1, 2, 4])
def test_legend_below_fits_the_figure(n_panels):
    """Nine long labels under one panel (the fine-tuning sweep's every-epoch figure) used to run off both sides."""
    fig, axes = panels(n_panels)
    labels = [f"I-STAR λ={lam:g}" for lam in (-5, -3, -1, 0.5, 1, 3, 5)] + ["none (λ = 0)", "CosReg w=1"]
    handles = [Line2D([], [], marker="o", label=label) for label in labels]
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    legend_below(fig, handles)
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent()
    width = fig.get_figwidth() * fig.dpi
    assert 0 <= box.x0 and box.x1 <= width
    assert [t.get_text() for t in fig.legends[0].get_texts()] == labels  # every series named
    matplotlib.pyplot.close(fig)
