# Input functions and outputs of the pretrain section (rules/pretrain.smk): functions only, as Snakemake's linter wants them apart
# from rules.


PRETRAIN_TABLES = tables_of("pretrain", PRETRAIN_REPORT_TABLES)
PRETRAIN_FIGURES = figures_of("pretrain", PRETRAIN_REPORT_FIGURES)
PRETRAIN_REPORT = PRETRAIN_TABLES + PRETRAIN_FIGURES


def pretrain_options(wildcards):
    """The model's settings (the section's shared `training` ones, overridden by its own entry) as options, in the
    class's order (the command, hence the job's params, does not depend on how a config orders its keys)."""
    return command_line(PretrainSettings, PRETRAINED[wildcards.pretrained])


PRETRAIN_SOURCES = [
    s if s in BUILT_IN_SOURCES else home(s) for s in (PRETRAIN.get("corpus") or {}).get("sources", BUILT_IN_SOURCES)
]


def pretrain_excluded():
    """The tasks kept out of the corpus: built-in ones by name, own ones by their prepared folder."""
    return [
        f"{DATA}/tasks/{t}" if t in OWN_TASKS else t for t in (PRETRAIN.get("corpus") or {}).get("exclude_tasks", [])
    ]


def pretrain_corpus_inputs(wildcards):
    """Text files among the sources, and the own tasks whose text is excluded."""
    own = [f"{path}/meta.json" for path in pretrain_excluded() if path.startswith(f"{DATA}/tasks/")]
    return [s for s in PRETRAIN_SOURCES if s not in BUILT_IN_SOURCES] + own


def pretrain_corpus_options(wildcards):
    corpus = PRETRAIN.get("corpus") or {}
    sources = " ".join(f"--source {shlex.quote(s)}" for s in PRETRAIN_SOURCES)
    excluded = " ".join(f"--exclude-task {shlex.quote(t)}" for t in pretrain_excluded())
    settings = command_line(CorpusSettings, corpus)
    return " ".join(part for part in (sources, excluded, settings) if part)


def pretrain_files():
    return PRETRAIN_REPORT if PRETRAINED else []


def runs_of_pretrain():
    return [pretrained_folder(name) for name in PRETRAINED]
