"""Model registry: SBERT sentence encoders, static word vectors and GGUF language models, by short name."""

from __future__ import annotations

from .gguf import GGUF_MODELS, GgufModel
from .kinds import model_kind
from .sbert import SENTENCE_MODELS, ModelUnavailableError, SentenceModel
from .static import STATIC_MODELS, StaticModel, StaticVectors

MODELS: tuple[str, ...] = (*SENTENCE_MODELS, *STATIC_MODELS, *GGUF_MODELS)


def _unknown(name: str) -> ValueError:
    return ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")


def sentence_model(name: str) -> SentenceModel:
    if name not in SENTENCE_MODELS:
        raise (
            _unknown(name)
            if name not in STATIC_MODELS
            else ValueError(f"{name} is a static word-vector model, not a sentence encoder")
        )
    return SENTENCE_MODELS[name]


def static_model(name: str) -> StaticModel:
    if name not in STATIC_MODELS:
        raise (
            _unknown(name)
            if name not in SENTENCE_MODELS
            else ValueError(
                f"{name} is a sentence encoder; word tasks need static vectors ({', '.join(STATIC_MODELS)})"
            )
        )
    return STATIC_MODELS[name]


def is_static(name: str) -> bool:
    if name not in MODELS:
        raise _unknown(name)
    return name in STATIC_MODELS


__all__ = [
    "GGUF_MODELS",
    "GgufModel",
    "MODELS",
    "SENTENCE_MODELS",
    "STATIC_MODELS",
    "ModelUnavailableError",
    "SentenceModel",
    "StaticModel",
    "StaticVectors",
    "is_static",
    "model_kind",
    "sentence_model",
    "static_model",
]
