"""`python scripts/generate.py`: isoflow.publishing.generated, which writes every file made from the section registry
(dvc.yaml, docs/README.md's glossary)."""

import sys

from isoflow.publishing.generated import main

if __name__ == "__main__":
    sys.exit(main())
