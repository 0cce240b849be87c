"""A tiny random BERT and a tiny GGUF language model for the examples and tests when no model is given (they then run
anywhere, offline, in seconds)."""

from __future__ import annotations

import json
from pathlib import Path

WORDS = (
    "the a film plot good bad dull funny is was not very and it i loved hated cast score long short fine story "
    "actors . ,"
).split()


def tiny_bert(folder: Path, labels: int = 2, words: list[str] = WORDS) -> Path:
    """A 2-layer BERT (hidden size 32) knowing ``words``, saved with ``save_pretrained`` (model and tokenizer)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(words)]
    tokenizer = BertTokenizerFast(
        vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True
    )  # vocab=, not vocab_file=
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=labels,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


TEXTS = [
    "a good film",
    "a very funny plot",
    "i loved the cast",
    "fine actors and a good story",
    "a bad film",
    "a dull plot",
    "i hated the long story",
    "it was not funny",
]
LABELS = [1, 1, 1, 1, 0, 0, 0, 0]


def tiny_gguf(path: Path, words: list[str] = WORDS, quantise: bool = True):
    """A 2-layer Llama-architecture causal LM (hidden size 32) with a byte-level BPE tokenizer trained on ``words``,
    written as a GGUF file the way llama.cpp's converter writes one (its Q and K projections permuted for llama.cpp's
    rotary layout), its matrices quantised to Q8_0 (``quantise``); returns ``(path, the float model it was written
    from)``: what a real GGUF release is to its unquantised weights."""
    import gguf
    import numpy as np
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([" ".join(words)] * 20, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    vocab = bpe.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    merges = [" ".join(pair) for pair in json.loads(bpe.to_str())["model"]["merges"]]
    torch.manual_seed(0)
    heads, hidden, layers = 2, 32, 2
    config = LlamaConfig(
        vocab_size=len(tokens),
        hidden_size=hidden,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=64,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_context_length(64)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(64)
    writer.add_block_count(layers)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if quantise else gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.NORMAL] * len(tokens))
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab["<|endoftext|>"])
    writer.add_eos_token_id(vocab["<|endoftext|>"])
    writer.add_add_bos_token(False)
    names = {"model.embed_tokens.weight": "token_embd", "model.norm.weight": "output_norm", "lm_head.weight": "output"}
    per_layer = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    for i in range(layers):
        names.update({f"model.layers.{i}.{hf}.weight": f"blk.{i}.{name}" for hf, name in per_layer.items()})
    state = model.state_dict()
    for hf, name in names.items():
        tensor = state[hf].detach().numpy().astype(np.float32)
        if name.endswith(("attn_q", "attn_k")):  # llama.cpp's rotary layout (its converter's permute)
            tensor = tensor.reshape(heads, 2, tensor.shape[0] // heads // 2, -1).swapaxes(1, 2).reshape(tensor.shape)
        if quantise and tensor.ndim == 2 and tensor.shape[1] % 32 == 0:
            data = gguf.quants.quantize(tensor, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(f"{name}.weight", data, raw_shape=data.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(f"{name}.weight", tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, model
