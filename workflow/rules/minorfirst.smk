# Paper `minorfirst` (papers 000/001): SAM's depth-induced implicit bias on diagonal networks.

import re

# --- diagonal-network figures: compute the numbers, then draw ------------------------------
MINORFIRST_DIAGONAL = [
    "l1_maxmargin", "linf_depth", "l2_sequential", "l2_regimes", "l2_limit", "deep_l",
    "multi_example", "flow_vs_discrete", "cnn_synthetic",
]


rule minorfirst_diagonal_run:
    output:
        data="results/minorfirst/{fig}/data.npz",
        summary="results/minorfirst/{fig}/summary.json",
    wildcard_constraints:
        fig="|".join(map(re.escape, MINORFIRST_DIAGONAL)),
    message:
        "minorfirst: compute the numbers of figure {wildcards.fig} ({output.summary})"
    log:
        "logs/minorfirst/{fig}_run.log",
    benchmark:
        "benchmarks/results/minorfirst/{fig}_run.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=20,
    conda:
        "../../envs/environment.yaml"
    params:
        code=code("minorfirst", "sharpness.minorfirst.compute", "sharpness.minorfirst.cnn"),
        settings=lambda wc: as_json(section("minorfirst", wc.fig)),
        outdir=lambda wc, output: os.path.dirname(output.data),
    shell:
        "sharpness minorfirst run {wildcards.fig:q} --params {params.settings:q} --out {params.outdir:q} > {log:q} 2>&1"


rule minorfirst_diagonal_figure:
    input:
        data="results/minorfirst/{fig}/data.npz",
        summary="results/minorfirst/{fig}/summary.json",
    output:
        pdf=paper_report("figures/minorfirst/{fig}.pdf", "minorfirst", "{fig}"),
        png="figures/minorfirst/{fig}.png",
        csv="figures/minorfirst/{fig}.csv",
    wildcard_constraints:
        fig="|".join(map(re.escape, MINORFIRST_DIAGONAL)),
    message:
        "minorfirst: draw figure {wildcards.fig} ({output.pdf})"
    log:
        "logs/minorfirst/{fig}_figure.log",
    benchmark:
        "benchmarks/results/minorfirst/{fig}_figure.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/environment.yaml"
    params:
        code=code("minorfirst", "sharpness.minorfirst.plots"),
        caption=caption_text("minorfirst", "fig"),
        rundir=lambda wc, input: os.path.dirname(input.data),
    shell:
        "sharpness minorfirst plot {wildcards.fig:q} --run {params.rundir:q} --out {output.pdf:q} > {log:q} 2>&1"


ALL_TARGETS.extend(expand("figures/minorfirst/{fig}.pdf", fig=MINORFIRST_DIAGONAL))
