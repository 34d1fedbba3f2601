# Paper `minorfirst` (papers 000/001): SAM's depth-induced implicit bias on diagonal networks.


# --- end-to-end slice: L=1 GD on one example (issue 2) -------------------------------------
rule minorfirst_slice_run:
    output:
        traj="results/minorfirst/slice_l1_gd/trajectory.npz",
        prov="results/minorfirst/slice_l1_gd/provenance.json",
    log:
        "logs/minorfirst/slice_l1_gd_run.log",
    benchmark:
        "benchmarks/results/minorfirst/slice_l1_gd_run.tsv"
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    conda:
        "../../envs/environment.yaml"
    params:
        settings=as_json(section("minorfirst", "slice")),
        outdir=subpath(output.traj, parent=True),
    shell:
        "sharpness slice run --params '{params.settings}' --out {params.outdir} > {log} 2>&1"


rule minorfirst_slice_figure:
    input:
        rules.minorfirst_slice_run.output.traj,
    output:
        pdf=paper_report("figures/minorfirst/slice_l1_gd.pdf", "minorfirst", "slice_l1_gd"),
        png="figures/minorfirst/slice_l1_gd.png",
        csv="figures/minorfirst/slice_l1_gd.csv",
    log:
        "logs/minorfirst/slice_l1_gd_figure.log",
    benchmark:
        "benchmarks/results/minorfirst/slice_l1_gd_figure.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/environment.yaml"
    params:
        rundir=subpath(input[0], parent=True),
    shell:
        "sharpness slice plot --run {params.rundir} --out {output.pdf} > {log} 2>&1"


ALL_TARGETS.extend(rules.minorfirst_slice_figure.output)
