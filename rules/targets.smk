# Targets across sections (each section's own targets are in its file); `all` (the Snakefile) is the default.


# ----- Across sections (targets.smk) --------------------------------------------------------------------------


rule datasets:
    input:
        [f"{DATA}/tasks/{t}/meta.json" for t in all_tasks()],


rule embeddings:
    input:
        embedding_files(all_task_model_pairs()),


# Every section's runs (each section's alone: <section>_runs).
rule runs:
    input:
        all_trajectories(),
        layer_runs(),
        finetune_records(),
        [pretrained_folder(name) for name in PRETRAINED],


rule report:
    input:
        report_files(),
