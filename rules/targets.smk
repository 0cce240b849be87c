# Targets across sections (each section's own targets are in its file); `all` (the Snakefile) is the default.


rule datasets:
    input:
        [f"{DATA}/tasks/{t}/meta.json" for t in all_tasks()],


rule embeddings:
    input:
        embedding_files(all_task_model_pairs()),


# Every section's runs (each section's alone: <section>_runs), from the registry: a section's runs_of_<name>().
rule runs:
    input:
        [path for name in SECTIONS for path in globals()[f"runs_of_{name}"]()],


rule report:
    input:
        report_files(),
