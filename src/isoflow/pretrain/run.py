"""``isoflow pretrain``: a tokenizer and a plain language model trained on a pretraining corpus, written as a Hugging
Face model folder (``save_pretrained``) that every other command takes as a local model.

The folder holds the model (``BertForMaskedLM`` or ``GPT2LMHeadModel``), its tokenizer, ``pretrain.json`` (settings,
corpus, parameter and token counts, the held-out scores beside the unigram baseline, time, code version) and
``curve.csv`` (the training loss every ``log_every`` steps, the held-out scores every ``eval_every`` steps) and, with
``checkpoints``, the checkpoint series ``checkpoints/step<N>/`` (:mod:`.series`).
While it trains, its state lives in ``<out>.checkpoint/`` (resumed by the same command; removed once the folder is
written), so an interrupted or preempted run loses at most ``checkpoint_every`` steps.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from ..provenance import shown_path
from ..settings import as_dict, check
from .settings import PretrainSettings

OUTPUT_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "pretrain.json",
    "curve.csv",
)


def checkpoint_folder(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.name + ".checkpoint")


def _tokenizer(settings: PretrainSettings, corpus: Path, checkpoint, log):
    """The run's tokenizer: the checkpoint's when resuming (so that a resumed run sees the same ids), else trained."""
    from transformers import AutoTokenizer

    from .corpus import read_documents
    from .settings import TOKENIZER_OF
    from .tokenizer import train_tokenizer

    if checkpoint.tokenizer.is_dir():
        return AutoTokenizer.from_pretrained(str(checkpoint.tokenizer))
    started = time.perf_counter()
    sentences = [s for doc in read_documents(corpus / "train.txt") for s in doc]
    tokenizer = train_tokenizer(TOKENIZER_OF[settings.objective], sentences, settings.vocab_size, settings.seq_len)
    log(
        f"tokenizer ({TOKENIZER_OF[settings.objective]}): {len(tokenizer)} tokens, trained in "
        f"{time.perf_counter() - started:.0f} s"
    )
    tmp = checkpoint.folder / ".tokenizer.tmp"
    tokenizer.save_pretrained(str(tmp))
    tmp.rename(checkpoint.tokenizer)
    return tokenizer


def run_pretrain(
    corpus: str | os.PathLike,
    out: str | os.PathLike,
    settings: PretrainSettings = PretrainSettings(),
    *,
    device: str = "auto",
    force: bool = False,
    progress: bool | None = None,
    log=print,
    stop_after: int | None = None,
) -> Path | None:
    """Train the tokenizer and the model on ``corpus`` (a folder written by :func:`isoflow.pretrain.build_corpus`) and
    write the model folder ``out``. Returns ``out``, or None when ``stop_after`` left the run unfinished."""
    from ..checkpoints import SERIES
    from ..run_inputs import run_inputs
    from ..skeleton import Place, run_section

    check(settings)
    corpus, out = Path(corpus), Path(out)
    for name in ("train.txt", "heldout.txt", "corpus.json"):
        if not (corpus / name).is_file():
            raise FileNotFoundError(
                f"{corpus}: no {name}; make the corpus first with `isoflow pretrain-corpus --out {corpus}`"
            )
    expected = OUTPUT_FILES + ((SERIES,) if settings.checkpoints else ())
    place = Place(out, "pretrain.json", expected=expected, force=force, kind="pretrained model")
    written = run_section(
        "pretrain",
        place,
        lambda: _pretrained(corpus, out, settings, run_inputs(device=device).device, progress, log, stop_after),
    )
    if written is not None:
        record = json.loads((out / "pretrain.json").read_text())
        log(
            f"held-out loss {record['heldout']['loss']:.3f} (perplexity {record['heldout']['perplexity']:.1f}; "
            f"unigram {record['unigram_baseline']['perplexity']:.1f}), accuracy {record['heldout']['accuracy']:.3f} "
            f"-> {out}"
        )
    return written


def _pretrained(corpus: Path, out: Path, settings: PretrainSettings, dev, progress, log, stop_after):
    """The body of a pretraining run: the tokenizer and the model trained (resumed from ``<out>.checkpoint``), its
    outcome (:class:`isoflow.skeleton.Outcome`), or None when ``stop_after`` stopped it before its end."""
    import torch

    from ..checkpoints import SERIES
    from ..fetch import sha256_of
    from ..skeleton import Outcome
    from .corpus import read_documents
    from .train import Checkpoint, HeldOut, pack, train, write_curve

    checkpoint = Checkpoint(checkpoint_folder(out))
    checkpoint.folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(settings, corpus, checkpoint, log)
    train_seqs = pack(read_documents(corpus / "train.txt"), tokenizer, settings.objective, settings.seq_len)
    held_seqs = pack(read_documents(corpus / "heldout.txt"), tokenizer, settings.objective, settings.seq_len)
    held = HeldOut.build(held_seqs, train_seqs, settings, tokenizer)
    epochs = settings.steps * settings.batch_size * settings.seq_len / train_seqs.size
    log(
        f"pretrain {settings.objective}: {train_seqs.size:,} training tokens in {len(train_seqs):,} sequences of "
        f"{settings.seq_len}; {settings.steps} steps of {settings.batch_size} = {epochs:.2f} epochs; "
        f"{len(held.inputs)} held-out sequences; {torch.get_num_threads()} CPU thread(s), device {dev}"
    )
    corpus_sha = sha256_of(corpus / "train.txt")
    model, curve, seconds = train(
        settings,
        train_seqs,
        held,
        tokenizer,
        checkpoint,
        device=dev,
        corpus_sha256=corpus_sha,
        log=log,
        progress=progress,
        stop_after=stop_after,
    )
    if stop_after is not None and stop_after < settings.steps:
        return None
    data = (corpus, corpus_sha, train_seqs, held_seqs, held)
    measured = _measured(settings, model, tokenizer, data, curve, {"seconds": seconds, "device": str(dev)})

    def write_files(tmp: Path) -> None:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        write_curve(curve, tmp / "curve.csv")
        if checkpoint.series.is_dir():  # the series, written while it trained, goes with the model (copied: kept
            shutil.copytree(checkpoint.series, tmp / SERIES)  # for a resume until the folder has taken its place)

    return Outcome(as_dict(settings), measured, files=write_files, progress=checkpoint)


def _measured(settings: PretrainSettings, model, tokenizer, data: tuple, curve: list[dict], ran: dict) -> dict:
    """A finished pretraining run's record beyond its settings: the model, tokenizer and corpus (``data``: the corpus
    folder, its training text's sha256, the packed training and held-out sequences, the held-out set), the last
    held-out scores on ``curve`` beside the unigram model's, where and how long it ran (``ran``), its series."""
    from ..checkpoints import checkpoint_steps
    from .train import parameter_count

    corpus, corpus_sha, train_seqs, held_seqs, held = data
    final = next(row for row in reversed(curve) if "heldout_loss" in row)
    return {
        "objective": settings.objective,
        "architecture": type(model).__name__,
        "parameters": parameter_count(model),
        "tokenizer": {"kind": type(tokenizer).__name__, "vocabulary": len(tokenizer)},
        "corpus": {
            "path": shown_path(corpus),
            "train_sha256": corpus_sha,
            **json.loads((corpus / "corpus.json").read_text()),
        },
        "train_tokens": int(train_seqs.size),
        "heldout_tokens": int(held_seqs[: settings.eval_sequences].size),
        "epochs": settings.steps * settings.batch_size * settings.seq_len / train_seqs.size,
        "heldout": {k.removeprefix("heldout_"): v for k, v in final.items() if k != "step"},
        "heldout_targets": int((held.labels != -100).sum()),
        "unigram_baseline": held.unigram,
        **ran,
        **({"checkpoints": checkpoint_steps(settings.steps, settings.checkpoints)} if settings.checkpoints else {}),
    }
