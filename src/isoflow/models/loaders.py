"""One loader per kind of model: what a command that takes a model asks of it, answered where the kind is decided.

:func:`isoflow.models.resolve.resolve_model` decides once what ``--model`` names and returns one of these; the
commands then ask it, never the name or the folder again:

* :meth:`Loader.sentence_embeddings` — a float32 (n, d) vector per text (``isoflow encode``);
* :meth:`Loader.transformer` — the transformer and its tokenizer, whose hidden states are the layers (``isoflow
  layers``);
* :meth:`Loader.trainable` — the parts fine-tuning trains: transformer, tokenizer, input length and pooling
  (``isoflow finetune``, the diagnoses).

=======================================  ==========================  ===================================================
kind                                     what it is                  its loader
=======================================  ==========================  ===================================================
``static``                               built-in word vectors       :class:`StaticLoader` (no layers, nothing to train)
``sentence-transformers``                a built-in SBERT name, or   :class:`SentenceTransformersLoader` (its own mean
                                         a folder with modules.json  pooling, truncation and normalisation)
``hugging-face``                         a save_pretrained folder,   :class:`HuggingFaceLoader` (pooling added: mean or
                                         a hub snapshot, a GGUF      the first token; a causal LM's last token when
                                         file de-quantised           fine-tuned)
=======================================  ==========================  ===================================================

A new kind of model (ONNX, a checkpoint series, a model split over devices) is one more subclass, and nothing else:
it says which ``--model`` values are its own (:meth:`Loader.claims`), and
:func:`~isoflow.models.resolve.resolve_model` asks every subclass that says so before the built-in kinds (found when
asked, among the subclasses defined: none is registered anywhere).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from .sbert import ENCODE_BATCH_SIZE

# Byte-level BPE tokenizers need a prefix space to take words that are already split (the layers' input)
PREFIX_SPACE_MODELS = ("gpt2", "roberta", "gpt_neo", "gptj", "bart")
# How fine-tuning pools a sentence: auto (a causal LM's last token, else the mean), the mean, the last token
TRAINING_POOLINGS = ("auto", "mean", "last")


@dataclass(frozen=True)
class TrainableParts:
    """What fine-tuning trains: a transformer and its tokenizer, inputs cut at ``max_length`` tokens, the sentence
    pooled by ``pooling`` (``mean`` over the non-padding tokens, ``last``: the last non-padding token's state)."""

    model: object
    tokenizer: object
    max_length: int
    pooling: str


@dataclass(frozen=True)
class Loader:
    """``load``: a built-in name or a local folder; ``name``: what outputs go under; ``source``: what a run record says
    of a folder (None for a built-in SBERT or static model); ``cache``, ``mirror``: where a built-in model's files
    are, or go. This base is a name no kind claims: asked anything, it says which names are known."""

    load: str
    name: str
    source: dict | None
    cache: str | os.PathLike | None = None
    mirror: object = None
    dtype: str = "auto"  # its weights' dtype (local.MODEL_DTYPES); another than auto for a Hugging Face model only
    device_map: str | None = None  # its weights' placement over devices (resolve.DEVICE_MAPS); Hugging Face only
    kind: ClassVar[str] = "unknown"
    batched: ClassVar[bool] = True  # whether it encodes texts in batches (a record's batch_size)

    @classmethod
    def claims(cls, model: str) -> bool:
        """Whether ``model`` (what ``--model`` says) is of this kind. The built-in kinds are decided by
        :func:`~isoflow.models.resolve.resolve_model`'s own order; a new kind says it here, and is asked first."""
        return False

    @classmethod
    def resolved(cls, model: str, model_name: str | None, *, cache=None, mirror=None) -> Loader:
        """The loader of a ``model`` this kind claims: named ``model_name``, else the path's last part without its
        suffix; its ``source`` (what a run record says of it) the path."""
        from pathlib import Path

        path = Path(model).expanduser()
        return cls(model, model_name or path.stem, {"path": str(path), "kind": cls.kind}, cache=cache, mirror=mirror)

    @property
    def local(self) -> bool:
        return self.source is not None

    @property
    def origin(self):
        """What an embeddings record names as the vectors' source: a folder's record, a built-in model's origin."""
        if self.local:
            return self.source
        self._refuse()

    def sentence_embeddings(
        self, texts: list[str], *, device="auto", batch_size: int = ENCODE_BATCH_SIZE, pooling="mean", progress=False
    ):
        """(float32 (len(texts), d) array, the device it was computed on)."""
        self._refuse()

    def _refuse(self):
        """A name no kind claims: one line naming the known models (a static name: that it is no sentence encoder)."""
        from . import sentence_model

        sentence_model(self.load)  # raises for every name that reaches here
        raise AssertionError(f"{self.load!r} resolved to no kind of model")

    def transformer(self, device, *, split_words: bool = False):
        """(model, tokenizer) in evaluation mode on ``device``; ``split_words``: the tokenizer takes words already
        split (byte-level BPE gets its prefix space)."""
        from .hub import hub_folder

        return _from_pretrained(str(hub_folder(self.load)), device, split_words)

    def trainable(self, device, pooling: str = "auto") -> TrainableParts:
        self._refuse()


class StaticLoader(Loader):
    """Built-in static word vectors (GloVe, word2vec; or words each encoded alone by an SBERT model)."""

    kind = "static"
    batched = False

    @property
    def origin(self):
        from . import static_model

        return static_model(self.load).source

    def sentence_embeddings(
        self, texts, *, device="auto", batch_size=ENCODE_BATCH_SIZE, pooling="mean", progress=False
    ):
        from ..devices import resolve_device
        from . import static_model

        spec = static_model(self.load)
        emb = spec.load(self.cache, self.mirror).lookup(texts)
        return emb, "cpu" if spec.encoder is None else str(resolve_device(device))

    def transformer(self, device, *, split_words: bool = False):
        raise ValueError(f"{self.name} is a static word-vector model: it has no layers")

    def trainable(self, device, pooling: str = "auto") -> TrainableParts:
        raise ValueError(f"{self.name} is a static word-vector model: there is no encoder to fine-tune")


class SentenceTransformersLoader(Loader):
    """A sentence-transformers model: a built-in SBERT name (from the package index, a mirror, or the hub), or a
    local folder that ``SentenceTransformer.save`` wrote; used as it was saved."""

    kind = "sentence-transformers"

    @property
    def origin(self):
        from . import sentence_model

        return self.source if self.local else sentence_model(self.load).hub_id

    def open(self, device):
        """The SentenceTransformer on ``device``."""
        if self.local:
            from sentence_transformers import SentenceTransformer

            from .local import check_local

            return SentenceTransformer(str(check_local(self.load)), device=str(device))
        from . import sentence_model
        from .sbert import load_sentence_model

        return load_sentence_model(sentence_model(self.load), str(device), self.cache, self.mirror)

    def sentence_embeddings(
        self, texts, *, device="auto", batch_size=ENCODE_BATCH_SIZE, pooling="mean", progress=False
    ):
        from ..devices import resolve_device
        from .local import POOLINGS, check_local, warn_unknown_tokens
        from .sbert import encode_sentences

        if self.local and pooling not in POOLINGS:  # a folder's option, although its own pooling is used
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}; got {pooling!r}")
        dev = str(resolve_device(device))
        st = self.open(dev)
        if self.local:
            warn_unknown_tokens(st.tokenizer, texts, str(check_local(self.load)))
        return encode_sentences(st, texts, batch_size=batch_size, progress=progress), dev

    def transformer(self, device, *, split_words: bool = False):
        module = self.open(device)[0]
        return module.auto_model, module.tokenizer

    def trainable(self, device, pooling: str = "auto") -> TrainableParts:
        """Its own transformer, tokenizer and input length, with its pooling, which must be the mean."""
        if pooling == "last":
            raise ValueError(
                f"{self.name}: a sentence-transformers model is fine-tuned with its mean pooling, not last"
            )
        return sentence_transformer_parts(self.open(device))


class HuggingFaceLoader(Loader):
    """A Hugging Face model folder (``save_pretrained``; a hub snapshot; a GGUF file de-quantised into one): its
    transformer, with a pooling added."""

    kind = "hugging-face"

    def sentence_embeddings(
        self, texts, *, device="auto", batch_size=ENCODE_BATCH_SIZE, pooling="mean", progress=False
    ):
        from ..devices import resolve_device
        from .local import encode_local

        dev = str(resolve_device(device))
        return encode_local(
            self.load, texts, device=dev, pooling=pooling, batch_size=batch_size, progress=progress, dtype=self.dtype
        ), dev

    def transformer(self, device, *, split_words: bool = False):
        from .local import check_local

        return _from_pretrained(str(check_local(self.load)), device, split_words, self.dtype, self.device_map)

    def trainable(self, device, pooling: str = "auto") -> TrainableParts:
        from .local import load_hf

        return transformer_parts(*load_hf(self.load, str(device), self.dtype), pooling)


def sentence_transformer_parts(st) -> TrainableParts:
    """A SentenceTransformer's transformer, tokenizer and input length; its pooling must be the mean."""
    modules = list(st)
    found = [m for m in modules if type(m).__name__ == "Pooling"]
    mode = found[0].get_config_dict().get("pooling_mode") if found else None
    if mode != "mean":
        raise ValueError(
            f"pooling {mode!r} is not supported for fine-tuning (mean pooling only: all-MiniLM-L6-v2, "
            "all-mpnet-base-v2)"
        )
    return TrainableParts(modules[0].auto_model, modules[0].tokenizer, int(st.max_seq_length), "mean")


def transformer_parts(model, tokenizer, pooling: str = "auto") -> TrainableParts:
    """A Hugging Face model and tokenizer with ``pooling`` (``auto``: ``last`` for a causal LM, whose last token has
    read the whole sentence, else ``mean``), inputs cut where both the model and the tokenizer allow."""
    from .local import max_sequence_length

    if pooling not in TRAINING_POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(TRAINING_POOLINGS)}; got {pooling!r}")
    if pooling == "auto":
        pooling = "last" if is_causal_lm(model.config) else "mean"
    tokenizer.padding_side = "right"
    return TrainableParts(model, tokenizer, max_sequence_length(model, tokenizer), pooling)


# Decoder-only families by model type, for folders saved from their base model (GPT2Model names no LM head).
DECODER_TYPES = frozenset(
    "gpt2 gpt_neo gpt_neox gptj llama mistral mixtral gemma gemma2 gemma3_text qwen2 qwen3 phi phi3 falcon opt bloom "
    "olmo olmo2 stablelm starcoder2 smollm3".split()
)


def is_causal_lm(config) -> bool:
    """Whether a model configuration is a causal (decoder-only) language model's: a decoder, an architecture ending in
    ``ForCausalLM`` or ``LMHeadModel``, or a decoder-only family (:data:`DECODER_TYPES`)."""
    names = getattr(config, "architectures", None) or []
    return (
        bool(getattr(config, "is_decoder", False))
        or getattr(config, "model_type", None) in DECODER_TYPES
        or any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in names)
    )


def _from_pretrained(where: str, device, split_words: bool, dtype: str = "auto", device_map: str | None = None):
    """(model, tokenizer) of a Hugging Face model folder, its weights in ``dtype``: on ``device``, or spread over the
    devices by ``device_map`` (accelerate places each block as it loads it: no copy of the whole model on one)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from .local import weights_dtype

    config = AutoConfig.from_pretrained(where)
    extra = {"add_prefix_space": True} if split_words and config.model_type in PREFIX_SPACE_MODELS else {}
    if device_map is not None:
        model = AutoModel.from_pretrained(where, device_map=device_map, **weights_dtype(dtype))
    else:
        model = AutoModel.from_pretrained(where, **weights_dtype(dtype)).to(device)
    return model, AutoTokenizer.from_pretrained(where, **extra)


def claiming_kinds() -> list[type[Loader]]:
    """The subclasses of :class:`Loader` (at any depth) that claim models of their own (override :meth:`Loader.claims`),
    in the order they were defined."""
    found, todo = [], list(Loader.__subclasses__())
    while todo:
        cls = todo.pop(0)
        todo += cls.__subclasses__()
        if cls.claims.__func__ is not Loader.claims.__func__:
            found.append(cls)
    return found
