# Fine-tuning the encoder with I-STAR: one run per task x model x lambda x seed (a GPU job; CPU when none), then the
# sweep's table and figures. Held-out data: the task's validation split when it is in the cache or the mirror, else a
# seeded stratified split of the training data (recorded in each run's JSON).


rule finetune:
    input:
        finetune_files(),


rule finetune_runs:
    input:
        finetune_records(),


rule finetune_run:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
    output:
        parquet=f"{RESULTS}/finetune/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.parquet",
        steps=f"{RESULTS}/finetune/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.steps.parquet",
        record=f"{RESULTS}/finetune/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.json",
    log:
        "logs/finetune/{task}/{model}/istar{lam}/seed{seed}.log",
    benchmark:
        f"{RESULTS}/finetune/benchmarks/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.tsv"
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=16000,
        runtime=720,
    params:
        task_dir=lambda wildcards, input: os.path.dirname(input.task),
        out=lambda wildcards, output: output.record[: -len(".json")],
        raw=RAW,
        mirror=MIRROR,
        device=DEVICE,
        epochs=FINETUNE.get("epochs", 3),
        batch_size=FINETUNE.get("batch_size", 32),
        lr=FINETUNE.get("lr", 2e-5),
        zeta=FINETUNE.get("zeta", 0.2),
        max_train=FINETUNE.get("max_train", 0),
        max_heldout=FINETUNE.get("max_heldout", 0),
        heldout_fraction=FINETUNE.get("heldout_fraction", 0.1),
    shell:
        "isoflow finetune --task {wildcards.task} --model {wildcards.model} --istar {wildcards.lam} --seed {wildcards.seed} "
        "--zeta {params.zeta} --epochs {params.epochs} --batch-size {params.batch_size} --lr {params.lr} "
        "--max-train {params.max_train} --max-heldout {params.max_heldout} --heldout-fraction {params.heldout_fraction} "
        "--task-dir {params.task_dir} --out {params.out} --raw-dir {params.raw} {params.mirror} --device {params.device} "
        "> {log} 2>&1"


rule finetune_report:
    input:
        finetune_run_files(),
    output:
        reported(FINETUNE_REPORT, "Fine-tuning the encoder with I-STAR"),
    log:
        "logs/finetune_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        records=lambda wildcards, input: " ".join(p for p in input if p.endswith(".json")),
        tables=lambda wildcards, output: os.path.dirname(output[0]),
        figures=lambda wildcards, output: os.path.dirname(output[-1]),
    shell:
        "isoflow finetune-report {params.records} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
