"""`python scripts/dvc_stages.py`: isoflow.publishing.dvc_stages, which writes dvc.yaml from the section registry."""

import sys

from isoflow.publishing.dvc_stages import main

if __name__ == "__main__":
    sys.exit(main())
