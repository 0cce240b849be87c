"""`python scripts/write_glossary.py`: isoflow.publishing.glossary, which rewrites docs/README.md's glossary table from
the section registry."""

import sys

from isoflow.publishing.glossary import main

if __name__ == "__main__":
    sys.exit(main())
