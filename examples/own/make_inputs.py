"""The example's stand-ins for what a researcher brings: a model folder (a tiny random BERT knowing the example's
words, saved with ``save_pretrained``), a GGUF file (a tiny random Llama-architecture LM, quantised as llama.cpp's
releases are) and vectors made elsewhere (hashed bags of words, one row per sentence of reviews.csv, in the file's
order). Real use: point ``own.models`` in the config at your folder, your GGUF file and your vectors.

    python examples/own/make_inputs.py [OUT]      # default OUT: data/own-example
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from _tiny_model import tiny_bert, tiny_gguf  # noqa: E402

DIM = 32


def bag_of_words(sentences: list[str], dim: int = DIM) -> np.ndarray:
    """Each word hashed (crc32) to one of ``dim`` counters: a deterministic vector per sentence."""
    out = np.zeros((len(sentences), dim), dtype=np.float32)
    for i, sentence in enumerate(sentences):
        for word in sentence.split():
            out[i, zlib.crc32(word.encode()) % dim] += 1.0
    return out


def main(out: Path) -> None:
    sentences = pd.read_csv(HERE / "reviews.csv")["sentence"].tolist()
    corpus = (HERE / "corpus.txt").read_text(encoding="utf-8").split()
    words = sorted({w for s in sentences for w in s.split()} | set(corpus))
    model = tiny_bert(out / "models" / "tiny-bert", words=words)
    gguf, _ = tiny_gguf(out / "models" / "tiny-llama.gguf", words=words)
    (out / "vectors").mkdir(parents=True, exist_ok=True)
    np.save(out / "vectors" / "reviews.npy", bag_of_words(sentences))  # one row per distinct sentence, first-seen order
    print(
        f"model folder {model}; GGUF file {gguf}; vectors {out / 'vectors' / 'reviews.npy'} ({len(sentences)} x {DIM})"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/own-example"))
