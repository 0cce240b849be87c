"""Models of published shapes with random weights, built in code (nothing downloaded): what sizes a run of a large
model before one is fetched (issue "Every layer of a 1B–8B model in bounded memory": its memory and time formula, the
GPU check's 1B run).

Each shape is its model card's config (architecture, widths, layers, heads, vocabulary, tied embeddings), so that the
parameter count, the weights' bytes and the forward pass's FLOPs are the real model's; the weights are drawn as
transformers initialises them, in the dtype asked for (a bf16 model is built in bf16, never a float32 copy first). The
tokenizer is a byte-level BPE trained on the given text (a real model's is not installable offline); its vocabulary is
smaller than the shape's, whose embedding rows it then never reads — the shape, not the tokenizer, sets the weights.

    python benchmarks/model_shapes.py llama-3.2-1b --dtype bfloat16 --text corpus.txt --out /tmp/llama-1b
    python benchmarks/model_shapes.py --counts          # every shape's parameters, on the meta device (no memory)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# name -> (model family, config): each the published model's config.json, as its model card gives it
SHAPES = {
    "smollm2-135m": ("llama", dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                   num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
                                   rope_theta=100000.0, max_position_embeddings=8192)),
    "qwen2.5-0.5b": ("qwen2", dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                                   num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True,
                                   rope_theta=1000000.0, max_position_embeddings=32768)),
    "llama-3.2-1b": ("llama", dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                   num_attention_heads=32, num_key_value_heads=8, head_dim=64, tie_word_embeddings=True,
                                   rope_theta=500000.0, max_position_embeddings=131072)),
    "llama-3.1-8b": ("llama", dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                   num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False,
                                   rope_theta=500000.0, max_position_embeddings=131072)),
    # on paper only (benchmarks/large_on_paper.py): 141 GB of bf16 weights, more than one 80 GB GPU holds
    "llama-3.1-70b": ("llama", dict(vocab_size=128256, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                                    num_attention_heads=64, num_key_value_heads=8, tie_word_embeddings=False,
                                    rope_theta=500000.0, max_position_embeddings=131072)),
    # Pythia's checkpoint series (EleutherAI/pythia-160m: GPT-NeoX, untied embeddings), for a checkpoint's cost
    "pythia-160m": ("gpt_neox", dict(vocab_size=50304, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                     num_attention_heads=12, rotary_pct=0.25, rotary_emb_base=10000,
                                     use_parallel_residual=True, tie_word_embeddings=False, layer_norm_eps=1e-5,
                                     max_position_embeddings=2048)),
    # a 2-block model of the 1B's kind, for the dry runs and the tests (no published model)
    "tiny-llama": ("llama", dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                                 max_position_embeddings=256)),
}  # fmt: skip
# The parameter counts their model cards publish (the tests hold the shapes to them)
PUBLISHED_PARAMETERS = {
    "smollm2-135m": 134_515_008,
    "qwen2.5-0.5b": 494_032_768,
    "pythia-160m": 162_322_944,
    "llama-3.2-1b": 1_235_814_400,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
}


def config(name: str):
    """The shape's transformers config."""
    from transformers import AutoConfig

    family, values = SHAPES[name]
    return AutoConfig.for_model(family, **values)


def parameters(name: str) -> int:
    """The shape's parameter count, built on the meta device (no weights allocated)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config(name))
    return sum(p.numel() for p in model.parameters())


def write_model(name: str, out: Path, dtype: str, text: Path, vocab: int = 8000) -> dict:
    """A random model of the shape in ``dtype`` and a byte-level BPE tokenizer trained on ``text``, saved to ``out``
    (``save_pretrained``); returns what was made."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    size = min(vocab, SHAPES[name][1]["vocab_size"])
    bpe.train([str(text)], vocab_size=size, min_frequency=2, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                        unk_token="<|endoftext|>", pad_token="<|endoftext|>")  # fmt: skip
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config(name), torch_dtype=getattr(torch, dtype))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"shape": name, "dtype": dtype, "parameters": sum(p.numel() for p in model.parameters()),
            "weights_bytes": weights, "tokenizer_vocab": len(tokenizer), "folder": str(out)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shape", nargs="?", choices=sorted(SHAPES))
    parser.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--text", type=Path, help="a text file the tokenizer is trained on")
    parser.add_argument("--out", type=Path, help="the model folder written")
    parser.add_argument("--counts", action="store_true", help="print every shape's parameters and stop")
    args = parser.parse_args(argv)
    if args.counts:
        for name in SHAPES:
            print(f"{name}: {parameters(name):,} parameters")
        return 0
    if not (args.shape and args.text and args.out):
        parser.error("give a shape, --text and --out (or --counts)")
    print(json.dumps(write_model(args.shape, args.out, args.dtype, args.text)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
