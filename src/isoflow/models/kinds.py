"""What kind of model a name is, read from the registry without loading anything: a paper's claim is about models
of some kinds, and a verdict on a model of another kind is **untested** (docs/verdicts.md, "Whose claim it is").

>>> model_kind("minilm"), model_kind("smollm2-135m")
('sentence encoder', 'causal language model')
>>> model_kind("plain-bert", config={"architectures": ["BertForMaskedLM"]})
'masked language model'
"""

from __future__ import annotations

from .gguf import GGUF_MODELS
from .sbert import SENTENCE_MODELS
from .static import STATIC_MODELS

SENTENCE_ENCODER = "sentence encoder"  # a language model trained further on sentence pairs to embed sentences
STATIC = "static word vectors"
MASKED_LM = "masked language model"
CAUSAL_LM = "causal language model"
KINDS = (SENTENCE_ENCODER, STATIC, MASKED_LM, CAUSAL_LM)
# A Hugging Face config's architecture names end in the head its pretraining trained.
_HEADS = {"ForMaskedLM": MASKED_LM, "ForPreTraining": MASKED_LM, "ForCausalLM": CAUSAL_LM, "LMHeadModel": CAUSAL_LM}


def model_kind(name: str, config: dict | None = None) -> str:
    """The kind of the model ``name``: a registered name's from the registry (the GGUF models are decoder LMs), any
    other from its Hugging Face ``config`` (config.json's ``architectures``), e.g. a model this project pretrained."""
    if name in SENTENCE_MODELS:
        return SENTENCE_ENCODER
    if name in STATIC_MODELS:
        return STATIC
    if name in GGUF_MODELS:
        return CAUSAL_LM
    for architecture in (config or {}).get("architectures", []):
        for head, kind in _HEADS.items():
            if architecture.endswith(head):
                return kind
    raise ValueError(
        f"{name}: no kind known (a registered name, or config.json's architectures ending in one of "
        f"{', '.join(_HEADS)}); give the model's config.json"
    )
