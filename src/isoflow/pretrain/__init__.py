"""Plain language models of our own: a pretraining corpus that is no task's text, a tokenizer, and a BERT-style
masked or GPT-2-style causal LM trained from scratch (:mod:`.corpus`, :mod:`.tokenizer`, :mod:`.train`, :mod:`.run`;
the training curves and held-out scores: :mod:`.report`)."""

from .corpus import build_corpus
from .run import run_pretrain
from .settings import CorpusSettings, PretrainSettings

__all__ = ["CorpusSettings", "PretrainSettings", "build_corpus", "run_pretrain"]
