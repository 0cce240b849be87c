# Input functions and outputs of the istar section (rules/istar.smk): functions only, as Snakemake's linter wants them apart
# from rules.


ISTAR_SEEDS = ISTAR.get("seeds") or OPTIMIZE["seeds"]


def istar_pairs():
    return [(t, m) for t in ISTAR.get("tasks", []) for m in ISTAR.get("models", [])]


def istar_lambdas(task):
    """The sweep's weights for one task: istar.task_istar_lambdas[task] where given, else istar.istar_lambdas."""
    return (ISTAR.get("task_istar_lambdas") or {}).get(task, ISTAR.get("istar_lambdas", []))


def istar_trajectories():
    """Every run of the sweep: lambda 0 is the plain run (shared with the paper's runs), others under istar<lambda>/."""
    out = []
    for t, m in istar_pairs():
        for lam in istar_lambdas(t):
            sub = "" if float(lam) == 0 else f"{lambda_dir(float(lam))}/"
            where = f"{run_dir('istar', t, m)}/{sub}" if sub else f"{run_dir('optimize', t, m)}/"
            out += [f"{where}seed{s}.parquet" for s in ISTAR_SEEDS]
    return out


ISTAR_AGGREGATE = [f"{section_dir('istar')}/aggregate/{name}" for name in ("trajectories.parquet", "runs.csv")]
# A baseline sweep to compare with (istar.baseline: a runs.csv, e.g. docs/results/istar/runs.csv, the linear head's):
# its runs aggregated beside this sweep's, and the table and figure istar_heads.
ISTAR_BASELINE = ISTAR.get("baseline")
ISTAR_BASELINE_AGGREGATE = [
    f"{section_dir('istar')}/aggregate/baseline/{f}" for f in ("trajectories.parquet", "runs.csv")
]
_ISTAR_TABLES, _ISTAR_FIGURES = istar_report_outputs(bool(ISTAR_BASELINE), OPTIMIZE["head"] != "linear")
ISTAR_TABLES = tables_of("istar", _ISTAR_TABLES)
ISTAR_FIGURES = figures_of("istar", _ISTAR_FIGURES)
ISTAR_REPORT = ISTAR_TABLES + ISTAR_FIGURES


def baseline_records():
    """The baseline sweep's run records (.json and .parquet), as its runs.csv lists them."""
    import csv

    if not ISTAR_BASELINE:
        return []
    with open(ISTAR_BASELINE, newline="", encoding="utf-8") as fh:
        stems = [re.sub(r"\.(json|parquet)$", "", row["record"]) for row in csv.DictReader(fh)]
    return [f"{stem}{suffix}" for stem in stems for suffix in (".json", ".parquet")]


def istar_files():
    return ISTAR_REPORT if istar_pairs() and ISTAR.get("istar_lambdas") else []


def runs_of_istar():
    return istar_trajectories()
