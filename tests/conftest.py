"""Shared point clouds for the metric tests: random, clustered, low-rank, near-degenerate."""

from __future__ import annotations

import atexit
import functools
import os
import re
from pathlib import Path

# Under pytest-xdist (make test: TEST_WORKERS processes) each worker computes on one thread, so that the workers share
# the cores instead of each taking them all: its own torch, BLAS and OpenMP (set before they load, below), and every
# process a test starts (isoflow, benchmarks, make, dvc: they inherit it; Snakemake gives its jobs their rule's threads,
# which the tests cap with ONE_THREAD_PER_JOB). A process that takes more threads beside the other worker waits on its
# own descheduled threads: with OpenMP's default active wait it spins as it waits (seen: a tiny GPT-2's `isoflow layers`
# in a subprocess 27 s on a quiet neighbour, 118 s beside a busy one); a passive wait yields the core instead.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")

import numpy as np  # noqa: E402  (after the thread settings: BLAS and OpenMP read them as they load)
import pytest  # noqa: E402
import torch  # noqa: E402
from forked_snakemake import ForkedSnakemake  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

# A section's files, not tests: tests/test_workflow.py copies them into a copy of the checkout. Never imported here
# (pytest's --doctest-modules would import every module under tests/, and its registry entry would register the toy
# section in this process's isoflow.sections).
collect_ignore = ["toy_section"]

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)  # as OMP_NUM_THREADS above says, whatever torch read before

# The built workflows the slow tests read (session fixtures): the tests that read one run in one xdist worker, so it is
# built once and no two processes change it at once (`--dist loadgroup`).
WORKFLOW_GROUPS = {
    "offline_checkout": "offline-workflow",
    "own_checkout": "own-workflow",
    "mine_built": "mine-workflow",  # tests/test_workflow_safety.py
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """In an xdist worker, each test that reads a built workflow is given its group as `--dist loadgroup` expects it:
    ``<node id>@<group>``. xdist 3.8 writes that suffix into ``item._nodeid``, which pytest 9 no longer reads (it reads
    ``item._id``), so its own ``xdist_group`` mark would group nothing; the suffix is set here the way pytest 9 keeps
    node ids."""
    if not getattr(config.option, "loadgroup", False):  # set in an xdist worker under --dist loadgroup
        return
    from _pytest.nodeid import coerce_node_id

    for item in items:
        groups = [g for fixture, g in WORKFLOW_GROUPS.items() if fixture in getattr(item, "fixturenames", ())]
        if groups:
            item._id = coerce_node_id(f"{item.nodeid}@{groups[0]}")


def make_cloud(kind: str, n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(X float64, labels) of a named kind; labels are 3 classes (clustered: the true clusters)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    if kind == "random":
        X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    elif kind == "clustered":
        centres = rng.normal(scale=4.0, size=(3, d))
        X = centres[labels] + rng.normal(size=(n, d))
    elif kind == "lowrank":
        r = max(2, d // 4)
        X = rng.normal(size=(n, r)) @ rng.normal(size=(r, d)) + 3.0
    elif kind == "degenerate":
        # One dominant direction plus a whisper of noise: IsoScore near 0.
        X = np.outer(rng.normal(size=n), rng.normal(size=d)) * 1e3 + rng.normal(scale=1e-3, size=(n, d))
    else:
        raise ValueError(kind)
    return X, labels


CLOUD_KINDS = ["random", "clustered", "lowrank", "degenerate"]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# Real data: ../shared/data beside the checkout (also in CI), used as a mirror exactly as a user would.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_mirror() -> Path:
    if not (SHARED_DATA / "SOURCES.md").is_file():
        pytest.fail(f"the shared data mirror {SHARED_DATA} is missing: these tests need the real files")
    return SHARED_DATA


# ----- End-to-end workflow runs (slow tests) --------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
OFFLINE_CONFIG = "config/offline.yaml"


# `snakemake` started by a test runs in a child forked from one process per worker that imported Snakemake once
# (tests/forked_snakemake.py): a dry run costs 0.7 CPU s instead of 2.5, and the suite starts some eighty
FORKED_SNAKEMAKE = ForkedSnakemake()
atexit.register(FORKED_SNAKEMAKE.close)


def sh(cmd: list[str], cwd: Path, *, timeout: float = 1800, env: dict | None = None, check: bool = True):
    """Run a command; on failure, fail with the tail of its output."""
    import subprocess

    env = {**os.environ, **(env or {})}
    if cmd[0] == "snakemake":
        p = FORKED_SNAKEMAKE.run(cmd[1:], cwd, env, timeout)
    else:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} (in {cwd}) exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


# Every workflow a test runs gives each job one thread (Snakemake's OMP_NUM_THREADS and MKL_NUM_THREADS for the job),
# as each pytest-xdist worker has one torch thread: a rule's 2 OpenMP threads beside the other worker's work
# oversubscribe 2 cores, and each parallel region then waits for a descheduled thread (seen: a tiny GPT-2's 30
# pretraining steps took 201 s with 2 threads beside a busy process, 5 s with 1; a 384 x 384 eigvalsh 5 s against
# 0.01 s). What a job computes does not depend on its threads beyond rounding (ACROSS_THREADS, below).
ONE_THREAD_PER_JOB = ("--max-threads", "1")

GIT = ["git", "-c", "user.name=isoflow tests", "-c", "user.email=tests@localhost"]
# make as a user runs it: not as a sub-make of CI's `make test` (which would print "Entering directory" lines)
MAKE = ["make", "--no-print-directory"]


def isoflow_cli(*argv, cwd: Path | None = None) -> tuple[int, str]:
    """`isoflow <argv>` through the CLI's entry point, in this process and in ``cwd`` if given (a new process spends
    seconds importing torch and transformers again; tests/test_hub.py and the workflow's tests start it as a process):
    (exit code, stderr). An option argparse refuses exits: its code is returned."""
    import contextlib
    import io

    from isoflow.cli import main

    err = io.StringIO()
    with contextlib.chdir(cwd or Path.cwd()), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def placed_where_planned(plan: str) -> int:
    """Each `isoflow finetune` / `isoflow optimize` command of a dry run (`-p`) given a results root (`--results`)
    instead of its place: where the library puts each of its runs — its run id's path under that root, worked out
    from the command's own options as the command does — is one of the plan's outputs (else the job would finish
    without the files Snakemake waits for). Returns how many commands were checked."""
    import shlex

    from isoflow.cli import build_parser
    from isoflow.cli.finetune import regulariser
    from isoflow.finetune.run import finetune_path
    from isoflow.finetune.settings import REGULARISERS
    from isoflow.optimize.run import trajectory_path
    from isoflow.optimize.runs import head_dir

    lines = [line.strip().removeprefix("Shell command: ") for line in plan.splitlines()]
    outputs = {o.split(" (")[0] for line in lines if line.startswith("output: ") for o in line[8:].split(", ")}
    commands = [
        shlex.split(line.split(" > ")[0])
        for line in lines
        if line.startswith(("isoflow finetune ", "isoflow optimize "))
    ]
    parser, checked = build_parser(), 0
    for words in (w for w in commands if "--results" in w):
        args = parser.parse_args(words[1:])
        if words[1] == "finetune":
            weights = regulariser(args)
            reg, name = weights["reg"], args.model_name or args.model
            weight = weights[REGULARISERS[reg]]
            lr = args.lr if args.lr_candidate else None
            where = {"results": args.results, "reg": reg, "weight": weight, "lr_candidate": lr}
            places = [finetune_path(args.task, name, args.seed, **where)]
        else:
            head = head_dir(args.head, args.head_layers)
            places = [
                trajectory_path(args.task, args.model, seed, args.results, args.istar_lambda, head)
                for seed in args.seeds or [args.seed]
            ]
        assert all(f"{place}.json" in outputs for place in places), (words, places)
        checked += 1
    return checked


def config_refusals(
    *entries: str, configfile: str | os.PathLike = "config.yaml", root: Path | None = None
) -> list[str]:
    """What the workflow refuses in a config (isoflow.config_checks, as rules/config.smk calls it), in this process:
    ``configfile`` (relative to ``root``, the repository by default) with ``--config`` ``entries`` on top, parsed and
    merged as Snakemake parses and merges them; [] if it would run. A Snakemake process spends seconds starting;
    test_workflow.py::test_invalid_config_is_refused and test_workflow_safety.py's config tests take the whole path
    through Snakemake."""
    import yaml
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    from isoflow.config_checks import ConfigRefused, checked_config

    root = root or ROOT
    config = yaml.safe_load((root / configfile).read_text())
    update_config(config, parse_config(list(entries)))
    try:
        checked_config(config, _workflow_schema(), root)
    except ConfigRefused as refused:
        return refused.problems
    return []


@functools.cache
def _workflow_schema() -> dict:
    from isoflow.config_checks import load_workflow_schema

    return load_workflow_schema(ROOT / "schemas/config.schema.yaml")


def job_counts(text: str) -> dict[str, int]:
    """The job table of `snakemake -n`: rule -> jobs (and `total`)."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, re.M)}


_TEMPLATE: list[Path] = []  # this process's committed copy of the working tree, made once (checkout_copy)


def _checkout_template() -> Path:
    """The working tree (tracked and untracked-but-not-ignored files) committed as a fresh git repository, once per
    test process in a temporary folder removed at exit: copying it (0.6 s) instead of copying file by file and
    committing again (7 s on 2 busy cores: `cp -a` takes 0.6) for each of the suite's checkouts."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    if _TEMPLATE:
        return _TEMPLATE[0]
    parent = Path(tempfile.mkdtemp(prefix="isoflow-checkout-"))
    atexit.register(shutil.rmtree, parent, ignore_errors=True)
    template = parent / "isoflow"
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (template / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, template / rel)
    sh(["git", "init", "-q", "-b", "main"], template)
    sh(["git", "add", "-A"], template)
    sh([*GIT, "commit", "-q", "-m", "checkout under test"], template)
    _TEMPLATE.append(template)
    return template


def checkout_copy(dest: Path, source: Path | None = None) -> Path:
    """The working tree as a fresh git repository at ``dest`` (a copy of :func:`_checkout_template`, or of ``source``,
    a checkout a session fixture built a workflow in: its files' times and Snakemake's records kept, so the copy is as
    up to date as it), with ``../shared`` beside it, as in a real checkout, so the offline config's relative mirror
    resolves."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    sh(["cp", "-a", str(source or _checkout_template()), str(dest)], dest.parent)
    shared = dest.parent / "shared"
    if not shared.exists():
        shared.symlink_to(SHARED_DATA.parent, target_is_directory=True)
    return dest


@pytest.fixture(scope="session")
def plan_checkout(tmp_path_factory) -> Path:
    """A copy of the working tree for the workflow's dry runs: Snakemake keeps its state (.snakemake/) where it runs,
    and a test leaves the repository as it found it."""
    return checkout_copy(tmp_path_factory.mktemp("plan") / "isoflow")


# What running the workflow (or isoflow, or DVC) writes in place.
WORKFLOW_STATE = (".snakemake", "data", "results", "logs", ".dvc/tmp")


def _workflow_state() -> dict[str, tuple[int, int]]:
    """Every file under the repository's workflow-state folders, with its size and modification time."""
    found = {}
    for top in WORKFLOW_STATE:
        for path in (ROOT / top).rglob("*"):
            if path.is_file():
                st = path.stat()
                found[str(path.relative_to(ROOT))] = (st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture(scope="session", autouse=True)
def checkout_left_as_found():
    """The suite writes no workflow state into the repository: no test runs the workflow (or a command with its
    default output folders) in the checkout itself. Checked once, after the last test."""
    before = _workflow_state()
    yield
    after = _workflow_state()
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if changed:
        pytest.fail(
            f"the test suite wrote into the repository's workflow state ({len(changed)} files, e.g. {changed[:5]}): "
            "run the workflow in a copy (plan_checkout, checkout_copy) and commands with tmp_path outputs"
        )


def built_once(tmp_path_factory, group: str) -> None:
    """Fail if another xdist worker of this run has built the workflow ``group`` already (each run's workers share the
    parent of their base temporary directories): the grouping above has failed, and two workers would build it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    mark = tmp_path_factory.getbasetemp().parent / f"{group}.built-by"
    try:
        with open(mark, "x") as f:
            f.write(worker)
    except FileExistsError:
        pytest.fail(f"{group} is built by {worker} and by {mark.read_text()}: tests/conftest.py's grouping failed")


# The README's quick start (config/offline.yaml) scaled down for the suite, by values only: every section, rule, model
# kind and the mirror as shipped, on smaller samples (13 min -> about 6 on 2 cores). Left out: optimize's polarity x
# MiniLM pair (its 10,662 sentences take 100 s to encode; MiniLM stays through WNLI and the other sections, polarity
# through fine-tuning) and mpnet (a second sentence-transformers model of the same kind as MiniLM, 90 s to encode
# WNLI; its packaged weights load in tests/test_models.py). The layer analysis chooses K over 2..5 on one sample with
# one start (K-means was 80 % of a layer's time). The penalty's pull is read on one batch, not 5 (its gradients took a
# third of a penalised run's time); fine-tuning's sweep is λ in {0, 1} and CosReg (λ = -1, a second penalised run of 50
# s, adds no kind of job or table). The tests that read the workflow's results assert against these values; the
# shipped quick start itself is planned by test_workflow.py::test_shipped_configs_plan and run by `make run`.
SUITE_OFFLINE = {
    "optimize": {
        "pairs": [{"task": task, "model": "glove-50d"} for task in ("pos-wordnet", "supersense")],
        "glue": {"tasks": ["glue/wnli"], "models": ["minilm"]},
    },
    "layers": {"max_tokens": 1000, "k_max": 5, "kmeans_samples": 1, "kmeans_starts": 1},
    "finetune": {
        "istar_lambdas": [0, 1],
        "max_train": 128,
        "max_heldout": 50,
        "max_validation": 50,
        "shrinkage_points": 500,
        "pull_batches": 1,
    },
    # the series' first and last checkpoints (a third, step 1, added a measurement and two comparisons of the same
    # kind: 47 s of CPU)
    "pretrain": {"training": {"checkpoints": 2}},
}


def suite_offline_config(text: str) -> str:
    """config/offline.yaml's text with SUITE_OFFLINE's values in place (a whole file, as DVC wants it)."""
    import yaml

    config = yaml.safe_load(text)
    for section, values in SUITE_OFFLINE.items():
        for key, value in values.items():  # a group of settings (pretrain.training) changed key by key
            within = config[section].get(key)
            config[section][key] = {**within, **value} if isinstance(within, dict) else value
    header = "# config/offline.yaml scaled down for the test suite (tests/conftest.py: SUITE_OFFLINE)\n"
    return header + yaml.safe_dump(config, default_flow_style=None, sort_keys=False, width=120)


@pytest.fixture(scope="session")
def offline_checkout(tmp_path_factory, shared_mirror) -> Path:
    """A copy of the repository in which the README's quick start has run, scaled down (SUITE_OFFLINE, committed in
    the copy as its config/offline.yaml), end to end."""
    built_once(tmp_path_factory, "offline-workflow")
    work = tmp_path_factory.mktemp("work")
    repo = checkout_copy(work / "isoflow")
    config = repo / OFFLINE_CONFIG
    config.write_text(suite_offline_config(config.read_text()))
    sh([*GIT, "commit", "-q", "-am", "the quick start scaled down for the suite"], repo)
    sh(["snakemake", "--cores", "2", *ONE_THREAD_PER_JOB, "--configfile", OFFLINE_CONFIG], repo, timeout=3600)
    return repo


# ----- Small models built here (random weights; no hub): your own model, as a user hands it to isoflow ----------------
WORDS = [
    "the",
    "a",
    "film",
    "plot",
    "good",
    "bad",
    "dull",
    "funny",
    "is",
    "was",
    "not",
    "very",
    "and",
    "it",
    "i",
    "loved",
    "hated",
    "cast",
    "score",
    "long",
    "short",
    "fine",
    "story",
    "actors",
    ".",
    ",",
]


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A 2-layer BERT with hidden size 32, saved with save_pretrained (a plain Hugging Face model folder)."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("models") / "tiny-bert"
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *WORDS,
        *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"),
        *"abcdefghijklmnopqrstuvwxyz",
    ]
    tokenizer = BertTokenizerFast(
        vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True
    )  # vocab=: vocab_file= is ignored
    torch.manual_seed(0)
    model = BertModel(
        BertConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
        )
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_sentence_transformer(tiny_bert, tmp_path_factory) -> Path:
    """The tiny BERT as a sentence-transformers folder (mean pooling, normalised), saved by SentenceTransformer.save."""
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(tiny_bert))
    st = SentenceTransformer(
        modules=[word, models.Pooling(word.get_word_embedding_dimension(), "mean"), models.Normalize()], device="cpu"
    )
    folder = tmp_path_factory.mktemp("models") / "tiny-st"
    st.save(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    """A 2-layer GPT-2 with hidden size 32 and a byte-level BPE tokenizer trained here on a few sentences."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2Model, GPT2TokenizerFast

    folder = tmp_path_factory.mktemp("models") / "tiny-gpt2"
    folder.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([" ".join(WORDS)] * 20, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    bpe.save_model(str(folder))
    import json

    vocab = json.loads((folder / "vocab.json").read_text())
    merges = [tuple(line.split()) for line in (folder / "merges.txt").read_text().splitlines()[1:] if line.strip()]
    # vocab=/merges=: like BertTokenizerFast's vocab_file=, the file arguments are silently ignored by the pinned
    # transformers
    tokenizer = GPT2TokenizerFast(
        vocab=vocab, merges=merges, unk_token="<|endoftext|>", bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=128)).save_pretrained(
        folder
    )
    tokenizer.save_pretrained(folder)
    return folder


# Measurements compared across thread counts, processes or machines. A BLAS product's blocking (hence the order of
# its sums) follows the thread count, so such results agree to rounding, not bit for bit:
# - float64 reductions (IsoScore, covariances, PCA shares, LID): error ~ n·2^-53 relative; rtol 1e-9 leaves a
#   million-term sum room and still catches any change of method;
# - silhouettes, mean cosines and k-means inertia come from float32 products on purpose (speed): a dot product of
#   d = 384 terms rounds to ~√d·2^-24 ≈ 1.2e-6 of its scale under a reordering (seen: 1.4e-8 on MiniLM's 7 layers,
#   tests/test_layers.py); these values are bounded by 1 (a silhouette is a difference of two such distance means
#   over their maximum), so the bound is absolute: atol 1e-6.
# - a spectrum's sizes (effective rank, participation ratio, stable rank, alpha-ReQ, also without outlier dimensions or
#   first positions) are read from float64 products even of float32 points (isoflow.metrics.spectrum.float64_scatter),
#   so they are float64 reductions too;
# A discrete outcome (a K decision, a cluster, a rank order) must be equal: ties are broken by the data, never by
# rounding (identical points get one PCA coordinate: isoflow.layers.pca).
# - states encoded at another thread count: a forward pass over a few sentences (isoflow.layers.encoder.forward_groups)
#   rounds its float32 products by blocks that follow the threads (seen: 2.4e-6 of MiniLM's last state over Brown, 2
#   threads against 3), so every measure of those states moves by 1e-7 to 1e-6 of itself (a PCA coordinate, its
#   axes turning with the states, the most): rtol and atol 1e-5 (ENCODED_ACROSS_THREADS, for runs whose encodings were
#   made at different thread counts).
ACROSS_THREADS = {"check_exact": False, "rtol": 1e-9, "atol": 1e-6}
ENCODED_ACROSS_THREADS = {"check_exact": False, "rtol": 1e-5, "atol": 1e-5}


def assert_frames_agree_across_threads(got, expected, *, encoded: bool = False) -> None:
    """``got`` and ``expected`` (DataFrames) made with other thread counts or in other processes: equal but for the
    rounding :data:`ACROSS_THREADS` allows (:data:`ENCODED_ACROSS_THREADS` where their states were ``encoded`` at
    different thread counts); every column that is not a float exactly."""
    import pandas as pd

    pd.testing.assert_frame_equal(got, expected, **(ENCODED_ACROSS_THREADS if encoded else ACROSS_THREADS))


def assert_one_record_schema(record: dict, section: str) -> None:
    """Every section's run record has the one frame isoflow.records.run_record gives it."""
    from isoflow.records import run_record

    frame = {
        "section",
        "settings",
        "diverged",
        "diverged_at",
        "diverged_unit",
        "versions",
        "code",
        "threads",
        "machine",
        "complete",
    }
    assert frame <= set(record) and frame == set(run_record(section, {}, {})), sorted(frame - set(record))
    assert record["section"] == section and record["complete"] is True and record["code"]["git_commit"] is not None
