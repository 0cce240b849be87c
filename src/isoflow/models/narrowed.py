"""A Hugging Face folder saved in float32, loaded in a narrower dtype (``--dtype bfloat16`` / ``float16``) without
the float32 file in memory: its weights are written once, tensor by tensor, into a copy in that dtype under the cache,
which then loads as a checkpoint saved in it does.

Why: transformers converts a float32 checkpoint while it maps the whole file, so a run loading a 1B model's 4.9 GB
float32 file in bf16 holds the file's pages beside the 2.5 GB copy (7.6 GB at the load: docs/performance.md). Here
each tensor is read with plain file reads, 64 MiB at a time, and converted by the same rounding ``Tensor.to`` applies
(round to nearest even), so the loaded weights are bit for bit the ones loading the float32 folder with that dtype
gives (tests/test_narrowed.py), and the copy costs its own size in disk once.

Examples
--------
>>> import tempfile, torch
>>> from pathlib import Path
>>> from safetensors.torch import save_file, load_file
>>> from isoflow.models.narrowed import narrowed_file
>>> d = Path(tempfile.mkdtemp())
>>> save_file({"w": torch.tensor([1.0, 1 / 3, 65504.5]), "i": torch.tensor([7])}, d / "a.safetensors")
>>> narrowed_file(d / "a.safetensors", d / "b.safetensors", "bfloat16")
>>> {k: (v.dtype, v.tolist()) for k, v in sorted(load_file(d / "b.safetensors").items())}
{'i': (torch.int64, [7]), 'w': (torch.bfloat16, [1.0, 0.333984375, 65536.0])}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import struct
from pathlib import Path

from .shapes import BYTES, safetensors_header

NARROW = {
    "bfloat16": "BF16",
    "float16": "F16",
}  # the dtypes a float32 checkpoint is narrowed to, as safetensors names them
CHUNK_BYTES = 64 * 2**20  # float32 bytes read and converted at once: a tensor larger than this is converted in parts
RECORD = "narrowed.json"

logger = logging.getLogger(__name__)


def saved_wider(folder: str | os.PathLike, dtype: str) -> bool:
    """Whether ``folder``'s safetensors hold float32 weights that loading in ``dtype`` would narrow."""
    if dtype not in NARROW:
        return False
    return any(
        t["dtype"] == "F32"
        for f in sorted(Path(folder).glob("*.safetensors"))
        for t in safetensors_header(f)[0].values()
    )


def narrowed_folder(
    folder: str | os.PathLike, dtype: str, cache: str | os.PathLike = "data/raw", progress=None
) -> Path:
    """The copy of the Hugging Face ``folder`` with its float32 weights in ``dtype``, made once under ``cache``
    (``<cache>/models/narrowed/<name>-<dtype>-<key>``, the key naming the folder's path and its weight files' sizes and
    times); every other file copied as it is. ``progress``: a function given one line before the copy is made
    (default: the log)."""
    from ..atomic import atomic_dir

    folder = Path(folder).resolve()
    weights = sorted(folder.glob("*.safetensors"))
    stamp = [str(folder), dtype] + [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in weights]
    key = hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:12]
    dest = Path(cache) / "models" / "narrowed" / f"{folder.name}-{dtype}-{key}"
    if (dest / RECORD).is_file():
        return dest
    (progress or logger.warning)(f"{folder}: its float32 weights written in {dtype} once, into {dest}")
    with atomic_dir(dest, kind="narrowed model") as tmp:
        for path in sorted(folder.iterdir()):
            if path.suffix == ".safetensors":
                narrowed_file(path, tmp / path.name, dtype)
            elif path.is_file():
                shutil.copy2(path, tmp / path.name)
        (tmp / RECORD).write_text(json.dumps({"from": str(folder), "dtype": dtype, "stamp": stamp}, indent=1) + "\n")
    return dest


def narrowed_file(source: str | os.PathLike, dest: str | os.PathLike, dtype: str) -> None:
    """``source`` (a safetensors file) written to ``dest`` with its float32 tensors in ``dtype``; the others, and the
    metadata, as they are."""
    import torch

    header, start, metadata = safetensors_header(source)
    order = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    out_header, offset = {}, 0
    for name in order:
        t = header[name]
        size = t["data_offsets"][1] - t["data_offsets"][0]
        kept = NARROW[dtype] if t["dtype"] == "F32" else t["dtype"]
        size = size * BYTES[kept] // BYTES["F32"] if kept != t["dtype"] else size
        out_header[name] = {**t, "dtype": kept, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps({**({"__metadata__": metadata} if metadata is not None else {}), **out_header}).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as safetensors writes it
    target = getattr(torch, dtype)
    with open(source, "rb") as src, open(dest, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for name in order:
            begin, end = header[name]["data_offsets"]
            src.seek(start + begin)
            for part in range(begin, end, CHUNK_BYTES):
                data = bytearray(src.read(min(CHUNK_BYTES, end - part)))
                if out_header[name]["dtype"] != header[name]["dtype"]:
                    data = torch.frombuffer(data, dtype=torch.float32).to(target).view(torch.uint8).numpy().tobytes()
                out.write(data)
