"""Every file written from the section registry, written by one command: ``python scripts/generate.py`` (``make
generated``) — dvc.yaml's stages (:mod:`.dvc_stages`), docs/README.md's glossary (:mod:`.glossary`) and the import
contract's sections tier in pyproject.toml (:mod:`.contract`). The suite
checks each against what this writes and names this command when one is stale, so adding a section, a command, a
module or a publication leaves one thing to run, whatever it changed."""

from __future__ import annotations

import sys

COMMAND = "python scripts/generate.py"  # what a stale file's test says to run


def main() -> int:
    from . import contract, dvc_stages, glossary

    failed = [step.__name__ for step in (dvc_stages.main, glossary.main, contract.main) if step() != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
