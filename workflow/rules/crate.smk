# The build as a Workflow Run RO-Crate (`sharpness crate`): the workflow, every job's record
# as an action, the figures, tables, ledger and registration with their SHA-256, the claims.
# Made last, from the records the other jobs wrote; docs/audit.md says how to deposit it and
# what a reader checks with `sharpness audit --crate`. Included after claims.smk, so that
# ALL_TARGETS is complete here.

CRATE_INPUTS = [str(t) for t in ALL_TARGETS]


rule crate:
    input:
        CRATE_INPUTS,
    output:
        "results/build.crate.zip",
    message:
        "crate: the build as a Workflow Run RO-Crate ({output})"
    log: "logs/crate.log"
    benchmark: "benchmarks/results/crate.tsv"
    resources: **DRAWING
    conda: ENV
    params:
        code=code("crate", "sharpness.crate.build"),
    shell:
        "sharpness crate --root . --out {output:q} > {log:q} 2>&1"


ALL_TARGETS.append("results/build.crate.zip")
