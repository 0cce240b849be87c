"""The pretrain section's published runs, each one value (:class:`isoflow.layout.RunId`): a pretrained model's records
(no weights), which its report copies to ``<results>/pretrain/runs/<name>/`` (``pretrain-report --copy-records``).

Examples
--------
>>> from isoflow.pretrain.runs import PretrainedRecords
>>> PretrainedRecords("plain-gpt2").path("results")
'results/pretrain/runs/plain-gpt2'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..layout import RunId


@dataclass(frozen=True)
class PretrainedRecords(RunId):
    """One pretrained model's records."""

    SECTION: ClassVar[str] = "pretrain"
    TEMPLATE: ClassVar[str] = "{pretrained}"
    pretrained: str
