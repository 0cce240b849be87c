"""``isoflow finetune-baseline``: the bag-of-words baseline of a fine-tuning sweep, on its very splits."""

from __future__ import annotations

import argparse

from .. import settings as declared
from ..finetune.runs import BASELINE_FILE
from . import options

HELP = "TF-IDF + logistic regression on a fine-tuning sweep's training examples, scored on its held-out examples"


def add_parser(sub) -> None:
    from ..finetune.settings import FinetuneSettings

    b = sub.add_parser("finetune-baseline", help=HELP)
    b.add_argument("--task", required=True, help="a prepared single-label task, e.g. polarity, glue/sst2, glue/mrpc")
    declared.add_arguments(b, FinetuneSettings)  # the runs' settings: those of their splits are what count here
    options.task_dir(b)
    options.results(b, f"; output results/finetune/runs/<task>/{BASELINE_FILE}")
    options.data(b)
    b.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..datasets import read_task, resolve_name, task_dir
    from ..finetune.baseline import bag_of_words
    from ..finetune.data import splits
    from ..finetune.runs import Baseline
    from ..finetune.settings import FinetuneSettings
    from ..skeleton import Outcome, Place, run_section

    s = declared.from_namespace(FinetuneSettings, args, task=resolve_name(args.task), model="bag-of-words")
    task = read_task(args.task_dir or task_dir(args.task, args.data_dir))
    data = splits(task, s, data_dir=args.data_dir, raw_dir=args.raw_dir, mirror=args.mirror)
    out = Path(args.out or Baseline(task.name).path(args.results) + ".json")
    result = bag_of_words(task.name, data.train, data.heldout, data.validation)
    split = {k: getattr(s, k) for k in ("heldout_fraction", "max_heldout", "validation_fraction", "max_validation")}
    outcome = Outcome({**split, "max_train": s.max_train}, {"task": task.name, **data.info, **result})
    run_section("finetune-baseline", Place(out), lambda: outcome)
    print(
        f"{task.name}: bag of words (C = {result['C']:g}, by {result['selection']}) held-out {result['metric_name']} "
        f"{result['metric']:.4f}, accuracy {result['accuracy']:.4f} on {result['n_heldout']} examples -> {out}"
    )
    return 0
