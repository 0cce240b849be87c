# Input functions and outputs of the istar section (rules/istar.smk): functions only, as Snakemake's linter wants them apart
# from rules.


ISTAR_SEEDS = optimize_runs.istar_seeds(ISTAR, OPTIMIZE)


def istar_trajectories():
    """Every run of the sweep (.parquet): lambda 0 is the plain run (shared with the paper's runs)."""
    return [f"{run.path(RESULTS)}.parquet" for run in optimize_runs.istar_runs(ISTAR, OPTIMIZE)]


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
    return ISTAR_REPORT if optimize_runs.istar_pairs(ISTAR) and ISTAR.get("istar_lambdas") else []


def runs_of_istar():
    return istar_trajectories()
