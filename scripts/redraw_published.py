"""`python scripts/redraw_published.py`: isoflow.publishing.redraw (what it does: its docstring; the make targets run
it)."""

import sys

from isoflow.publishing.redraw import main

if __name__ == "__main__":
    sys.exit(main())
