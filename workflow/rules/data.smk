# Data sets are prepared once, by one job each, for every rule that needs them.
# The embedded subsets are committed and verified by checksum; the others resolve as
# DESIGN.md says: verified local copy -> mirror -> official download -> clear error.


rule data_prepare:
    output:
        "results/data/{dataset}.json",
    message:
        "data: verify or fetch data set {wildcards.dataset} ({output})"
    log: "logs/data/{dataset}.log"
    benchmark: "benchmarks/results/data/{dataset}.tsv"
    resources: mem_mb=2000, runtime=60
    conda: ENV
    params:
        code=code("data"),
        data_args=DATA_ARGS,
    shell:
        "sharpness data prepare {wildcards.dataset:q} {params.data_args:q} --out {output:q} > {log:q} 2>&1"
