"""`python scripts/publish_results.py`: isoflow.publishing.publish (what it does: its docstring; the make targets run
it)."""

import sys

from isoflow.publishing.publish import main

if __name__ == "__main__":
    sys.exit(main())
