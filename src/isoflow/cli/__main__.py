"""`python -m isoflow.cli`: the same as the `isoflow` command."""

import sys

from . import main

sys.exit(main())
