# The finetune section: the encoder fine-tuned with I-STAR and CosReg, one run per task x model x (regulariser, weight) x seed (a GPU job;
# the CPU when there is none), then the sweep's tables and figures. Held-out data: the task's validation split when it
# is in the cache or the mirror, else a fixed split of the training data, the same for every run (in each run's JSON).


# ----- Fine-tuning with I-STAR (finetune.smk) -----------------------------------------------------------------


rule finetune:
    input:
        finetune_files(),


rule finetune_runs:
    input:
        runs_of_finetune(),


# The learning rate chosen on the validation split before the sweep (finetune.lr_candidates): a plain run per
# candidate, then the choice every run of the sweep reads. (No timing file: the published choices were made without
# one, and Snakemake would take a missing one for a missing output and run them again.)
rule finetune_lr_run:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
        model=model_files,
    output:
        parquet=kept(f"{FINETUNE_LR_RUN}.parquet"),
        steps=kept(f"{FINETUNE_LR_RUN}.steps.parquet"),
        record=kept(f"{FINETUNE_LR_RUN}.json"),
    log:
        finetune_runs.LrRun.log_pattern(),
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=16000,
        runtime=720,
    params:
        **FINETUNE_PARAMS,
        weight="--istar-lambda 0",
        settings=lambda wildcards: command_line(FinetuneSettings, UNSTATED),
        lr_from=lambda wildcards: f"--lr {wildcards.lr}",
        # the candidate's run id's path under the results root (isoflow.finetune.runs.LrRun), as for the sweep's runs
        place=f"--lr-candidate --results {RESULTS}",
    shell:
        "isoflow finetune --task {wildcards.task} {params.model} {params.weight} --seed {wildcards.seed} {params.settings} "
        "{params.lr_from} --task-dir {params.task_dir} {params.place} --raw-dir {params.raw} {params.mirror} "
        "--device {params.device} > {log} 2>&1"


# A run of the sweep: the same command, its regulariser and weight, and the learning rate chosen above (where the
# config has candidates).
use rule finetune_lr_run as finetune_run with:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
        model=model_files,
        lr=lr_choice,
        pull=matched_pull,
    output:
        **FINETUNE_STATES,
        parquet=kept(f"{FINETUNE_RUN}.parquet"),
        steps=kept(f"{FINETUNE_RUN}.steps.parquet"),
        record=kept(f"{FINETUNE_RUN}.json"),
    log:
        finetune_runs.SweepRun.log_pattern(),
    benchmark:
        finetune_runs.SweepRun.benchmark_pattern(RESULTS)
    params:
        **FINETUNE_PARAMS,
        weight=lambda wildcards: weight_option(wildcards.reg, wildcards.weight),
        settings=finetune_options,
        lr_from=lambda wildcards, input: f"--lr-from {input.lr}" if input.lr else "",
        # its run id's path under the results root, which the command works out from the task, model, weight and seed it
        # is given (isoflow.finetune.runs.SweepRun), so that none of them reaches it twice
        place=f"--results {RESULTS}",


rule finetune_lr_choice:
    input:
        lr_candidate_records,
    output:
        choice=finetune_runs.LrChoice.pattern(RESULTS) + ".json",
    log:
        finetune_runs.LrChoice.log_pattern(),
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow finetune-lr {input} --out {output.choice} > {log} 2>&1"


rule finetune_baseline:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
    output:
        record=kept(finetune_runs.Baseline.pattern(RESULTS) + ".json"),
    log:
        finetune_runs.Baseline.log_pattern(),
    conda:
        "../envs/isoflow.yaml"
    params:
        **BASELINE_PARAMS,
        every="",
    shell:
        BASELINE_COMMAND


# The same on every training example, where the runs train on a subset (finetune.max_train): what the task's text
# gives a bag of words, beside what the runs' subset gives it.
rule finetune_baseline_all_training:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
    output:
        record=kept(finetune_runs.BaselineAllTraining.pattern(RESULTS) + ".json"),
    log:
        finetune_runs.BaselineAllTraining.log_pattern(),
    conda:
        "../envs/isoflow.yaml"
    params:
        **BASELINE_PARAMS,
        every="--max-train 0",
    shell:
        BASELINE_COMMAND


# The penalty's pull against the task's at the pretrained model (finetune.gradient_batches > 0): once per task x model.
rule finetune_gradients:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
        model=model_files,
    output:
        record=kept(finetune_runs.Gradients.pattern(RESULTS) + ".json"),
    log:
        finetune_runs.Gradients.log_pattern(),
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        mem_mb=16000,
        runtime=120,
    params:
        **MODEL_PARAMS,
        out=lambda wildcards, output: os.path.dirname(output.record),
        pooling=lambda wildcards: f"--pooling {FINETUNE['pooling']}",
        batches=GRADIENT_BATCHES,
        task_dir=lambda wildcards, input: os.path.dirname(input.task),
    shell:
        "isoflow finetune-diagnosis {params.model} --task {wildcards.task} --batches {params.batches} {params.pooling} "
        "--task-dir {params.task_dir} --raw-dir {params.raw} {params.mirror} --out {params.out} > {log} 2>&1"


# CKA between the seeds of one weight, per layer, from their runs' states (finetune.states_points, two seeds or more):
# the floor that CKA to the pretrained model is read against (isoflow.finetune.seed_floor).
rule finetune_seed_floor:
    input:
        seed_floor_states,
    output:
        floor=kept(finetune_runs.SeedFloor.pattern(RESULTS) + ".json"),
    log:
        finetune_runs.SeedFloor.log_pattern(),
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow finetune-seed-floor {input} --out {output.floor} > {log} 2>&1"


# Each run compared bit for bit with the run of the same identity in another runs folder (finetune.same_as): a rerun
# at the same commit (determinism), or a run made again at a later commit (isoflow.finetune.same_as).
rule finetune_same_as:
    input:
        run=f"{FINETUNE_RUN}.json",
        other=namesake,
    output:
        compared=kept(finetune_runs.SameAs.pattern(RESULTS) + ".json"),
    log:
        finetune_runs.SameAs.log_pattern(),
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow finetune-same-as {input.run} {input.other} --out {output.compared} > {log} 2>&1"


rule finetune_report:
    input:
        finetune_run_files(),
    output:
        tables=kept(reported(FINETUNE_TABLES, "finetune")),
        figures=kept(reported(FINETUNE_FIGURES, "finetune")),
    log:
        "logs/finetune_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        records=lambda wildcards, input: " ".join(p for p in input if p.endswith(".json")),
        tables=lambda wildcards, output: os.path.dirname(output.tables[0]),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
    shell:
        "isoflow finetune-report {params.records} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
