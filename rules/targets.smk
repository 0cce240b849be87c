# Named targets (`snakemake <target>`); `all` (in the Snakefile) is the default.


rule datasets:
    input:
        [f"{DATA}/tasks/{t}/meta.json" for t in all_tasks()],


rule embeddings:
    input:
        embedding_files(all_task_model_pairs()),


rule runs:
    input:
        all_trajectories(),


rule paper:
    input:
        trajectories(paper_pairs()),


rule glue:
    input:
        trajectories(glue_pairs()),


rule correlations:
    input:
        main_report_files(),  # the paper's tables and figures (Mickus et al.)


rule report:
    input:
        report_files(),


rule istar:
    input:
        istar_files(),


rule layers:
    input:
        layers_files(),


rule layer_runs:
    input:
        layer_runs(),


rule finetune:
    input:
        finetune_files(),


rule finetune_runs:
    input:
        finetune_records(),
