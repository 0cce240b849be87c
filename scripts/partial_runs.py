"""`python scripts/partial_runs.py`: isoflow.publishing.partial (what it does: its docstring; the make targets run
it)."""

import sys

from isoflow.publishing.partial import main

if __name__ == "__main__":
    sys.exit(main())
