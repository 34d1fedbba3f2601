# Paper `minorfirst` (papers 000/001): SAM's depth-induced implicit bias on diagonal networks.
# Each figure is computed (minorfirst_diagonal_run), then drawn from that run's folder
# (minorfirst_diagonal_figure); {fig} is one of the plan's figures (sharpness.minorfirst.jobs:
# the figure list and both jobs' outputs, once). A run job reads its figure's own config
# section from the file the plan wrote (results/minorfirst/configs/diagonal/<fig>.json, an
# input: a setting change rewrites that file only, so only that figure reruns); its command
# line names the file, and the run records the file's SHA-256 in its provenance. The drawing
# job reads its settings from the run's record.

from sharpness.minorfirst import jobs as minorfirst_jobs


rule minorfirst_diagonal_run:
    input:
        unpack(plan_inputs("minorfirst_diagonal_run", "fig")),
    output:
        **dict(zip(("data", "summary"), minorfirst_jobs.run_outputs("{fig}"))),
    wildcard_constraints:
        fig=one_of(PLAN.ids("minorfirst_diagonal_run")),
    message:
        "minorfirst: compute the numbers of figure {wildcards.fig} ({output.summary})"
    log: "logs/minorfirst/{fig}_run.log"
    benchmark: "benchmarks/results/minorfirst/{fig}_run.tsv"
    resources: mem_mb=1000, runtime=20
    conda: ENV
    params:
        code=code("minorfirst", "sharpness.minorfirst.compute", "sharpness.minorfirst.cnn"),
        outdir=subpath(output.data, parent=True),
    shell:
        "sharpness minorfirst run {wildcards.fig:q} --config-file {input.config:q}"
        " --out {params.outdir:q} > {log:q} 2>&1"


rule minorfirst_diagonal_figure:
    input:
        **rules.minorfirst_diagonal_run.output,
    output:
        **drawn("minorfirst", "{fig}"),
    wildcard_constraints:
        fig=one_of(PLAN.ids("minorfirst_diagonal_figure")),
    message:
        "minorfirst: draw figure {wildcards.fig} ({output.pdf})"
    log: "logs/minorfirst/{fig}_figure.log"
    benchmark: "benchmarks/results/minorfirst/{fig}_figure.tsv"
    resources: **DRAWING
    conda: ENV
    params:
        code=code("minorfirst", "sharpness.minorfirst.plots"),
        caption=caption_text("minorfirst", "fig"),
        profile=PROFILE,
        rundir=subpath(input.data, parent=True),
    shell:
        "sharpness --profile {params.profile:q} minorfirst plot {wildcards.fig:q}"
        " --run {params.rundir:q} --out {output.pdf:q} > {log:q} 2>&1"


ALL_TARGETS.extend(
    PLAN.job("minorfirst_diagonal_figure", fig).outputs[0]
    for fig in PLAN.ids("minorfirst_diagonal_figure")
)
