"""Publishing results: a section's finished results copied into docs/results/<publication> (``publish``), a sweep
saved between machines and resumed (``partial``), the committed tables and figures redrawn from their runs
(``redraw``), dvc.yaml and docs/README.md's glossary written from the section registry (``dvc_stages``,
``glossary``). The make targets run them through thin wrappers in scripts/ (``make reproduce-<publication>``,
``make save-partial-<publication>``, ``make resume-<publication>``, ``make redraw``).

They act on a source checkout (the workflow, its configs and docs/results): :data:`ROOT` is the repository this
package is installed from in editable mode.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
