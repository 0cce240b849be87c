"""What every experiment's report uses: tables in three formats (:mod:`.tables`), headless figures with one panel
grid, one way to save and one λ colour scale (:mod:`.figures`), and the summary of a λ sweep with its runs paired
with the plain run of the same seed (:mod:`.sweeps`)."""

from .figures import lambda_colours, panels, pyplot, save, suptitle
from .sweeps import diverged, lambda_summary, paired_with_plain
from .tables import rows_where, write_table

__all__ = [
    "diverged",
    "lambda_colours",
    "lambda_summary",
    "paired_with_plain",
    "panels",
    "pyplot",
    "rows_where",
    "save",
    "suptitle",
    "write_table",
]
