# Input functions and outputs of the shared data (rules/data.smk): functions only, as Snakemake's linter wants them apart
# from rules.


def vocab_of(task):
    """A word task's words come from its (single) static model's vocabulary."""
    models = sorted({m for t, m in optimize_runs.paper_pairs(OPTIMIZE) + optimize_runs.istar_pairs(ISTAR) if t == task})
    vocabularies = sorted({VOCABULARY.get(m, m) for m in models})
    if len(vocabularies) != 1 or not set(models) <= set(STATIC_MODELS):
        raise ValueError(
            f"config: word task {task} needs static models that share one vocabulary (glove-50d and its encoded "
            f"words, or word2vec-222); got {models}"
        )
    return vocabularies[0]


def prepare_options(wildcards):
    """A word task's vocabulary, or an own task's file and columns (`isoflow prepare NAME --from-file`)."""
    entry = OWN_TASKS.get(wildcards.task)
    if entry:
        columns = {
            "from-file": entry["file"],
            "text": entry["text"],
            "text-b": entry.get("text_b"),
            "label": entry["label"],
            "label-sep": entry.get("label_sep"),
        }
        return " ".join(f"--{k} {shlex.quote(v)}" for k, v in columns.items() if v is not None)
    return f"--vocab {vocab_of(wildcards.task)}" if wildcards.task in WORD_TASKS else ""


localrules:
    prepare,
