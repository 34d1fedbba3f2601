# Paper `minorfirst` (papers 000/001): SAM's depth-induced implicit bias on diagonal networks.
# Each figure is computed (minorfirst_diagonal_run), then drawn from that run's folder
# (minorfirst_diagonal_figure); {fig} is one of MINORFIRST_DIAGONAL.

MINORFIRST_DIAGONAL = [
    "l1_maxmargin", "linf_depth", "l2_sequential", "l2_regimes", "l2_limit", "deep_l",
    "multi_example", "flow_vs_discrete", "cnn_synthetic",
]


rule minorfirst_diagonal_run:
    output:
        data="results/minorfirst/{fig}/data.npz",
        summary="results/minorfirst/{fig}/summary.json",
    wildcard_constraints:
        fig=one_of(MINORFIRST_DIAGONAL),
    message:
        "minorfirst: compute the numbers of figure {wildcards.fig} ({output.summary})"
    log: "logs/minorfirst/{fig}_run.log"
    benchmark: "benchmarks/results/minorfirst/{fig}_run.tsv"
    resources: mem_mb=1000, runtime=20
    conda: ENV
    params:
        code=code("minorfirst", "sharpness.minorfirst.compute", "sharpness.minorfirst.cnn"),
        settings=minorfirst_settings,
        outdir=subpath(output.data, parent=True),
    shell:
        "sharpness minorfirst run {wildcards.fig:q} --params {params.settings:q}"
        " --out {params.outdir:q} > {log:q} 2>&1"


rule minorfirst_diagonal_figure:
    input:
        **rules.minorfirst_diagonal_run.output,
    output:
        **drawn("minorfirst", "{fig}"),
    wildcard_constraints:
        fig=one_of(MINORFIRST_DIAGONAL),
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


ALL_TARGETS.extend(expand("figures/minorfirst/{fig}.pdf", fig=MINORFIRST_DIAGONAL))
