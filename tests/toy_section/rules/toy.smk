rule toy_runs:
    input:
        runs_of_toy(),


rule toy:
    input:
        toy_files(),


rule toy_run:
    output:
        f"{ToyRun.pattern(RESULTS)}.json",
    shell:
        "isoflow toy --seed {wildcards.seed} {TOY_OPTIONS} --out {output}"


rule toy_report:
    input:
        runs_of_toy(),
    output:
        toy_files(),
    shell:
        "isoflow toy-report {input} --table {output[0]} --figure {output[1]}"
