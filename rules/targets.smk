# Targets across sections (each section's own targets are in its file); `all` (the Snakefile) is the default.


rule datasets:
    input:
        [f"{DATA}/tasks/{t}/meta.json" for t in all_tasks()],


rule embeddings:
    input:
        embedding_files(all_task_model_pairs()),


rule runs:
    input:
        all_trajectories(),


rule report:
    input:
        report_files(),
