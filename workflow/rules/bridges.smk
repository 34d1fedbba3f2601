# Bridges between the papers: LE-SAM on the minorfirst diagonal networks, and the
# eos learning-rate sweep repeated with SAM and LE-SAM as the full-batch optimizer.
# Each bridge is computed (`sharpness bridges <bridge> run`), then drawn from its run folder
# (`sharpness bridges <bridge> plot`).

BRIDGES = config.get("bridges")

if BRIDGES:

    rule bridges_lesam_diagonal_run:
        output:
            arrays="results/bridges/lesam_diagonal/arrays.npz",
            summary="results/bridges/lesam_diagonal/summary.json",
        message:
            "bridges: LE-SAM on diagonal networks, compute ({output.summary})"
        log: "logs/bridges/lesam_diagonal_run.log"
        benchmark: "benchmarks/results/bridges/lesam_diagonal_run.tsv"
        resources: mem_mb=1500, runtime=20
        conda: ENV
        params:
            code=code("bridges", "sharpness.bridges.lesam_diagonal"),
            settings=as_json(section("bridges", "lesam_diagonal")),
            outdir=subpath(output.arrays, parent=True),
        shell:
            "sharpness bridges lesam-diagonal run --params {params.settings:q}"
            " --out {params.outdir:q} > {log:q} 2>&1"

    rule bridges_sam_eos_run:
        output:
            # the flow and run folders are outputs: --forcerun/-R starts them over
            sweep="results/bridges/sam_eos/sweep.json",
            flow=directory("results/bridges/sam_eos/flow"),
            runs=[
                directory(f"results/bridges/sam_eos/{opt['name']}")
                for opt in BRIDGES["sam_eos"]["optimizers"]
            ],
        message:
            "bridges: eos sweep with GD, SAM and LE-SAM ({output.sweep})"
        log: "logs/bridges/sam_eos_run.log"
        benchmark: "benchmarks/results/bridges/sam_eos_run.tsv"
        resources:
            mem_mb=3000,
            runtime=60,
            gpu=0 if BRIDGES["sam_eos"]["setting"].get("device") == "cpu" else 1,
        conda: ENV
        params:
            code=code("bridges", "sharpness.bridges.sam_eos"),
            settings=as_json(
                {**section("bridges", "sam_eos"), "data_root": config["data"]["root"]}
            ),
            outdir=subpath(output.sweep, parent=True),
        shell:
            "sharpness bridges sam-eos run --params {params.settings:q} --out {params.outdir:q}"
            " --threads {threads:q} > {log:q} 2>&1"

    rule bridges_lesam_diagonal_figure:
        input:
            rules.bridges_lesam_diagonal_run.output.arrays,
        output:
            **drawn("bridges", "lesam_diagonal"),
        message:
            "bridges: draw figure {params.bridge} ({output.pdf})"
        log: "logs/bridges/lesam_diagonal_figure.log"
        benchmark: "benchmarks/results/bridges/lesam_diagonal_figure.tsv"
        resources: mem_mb=1500, runtime=10
        conda: ENV
        params:
            bridge="lesam-diagonal",
            code=code("bridges", "sharpness.bridges.lesam_diagonal_plot"),
            profile=PROFILE,
            rundir=subpath(input[0], parent=True),
        shell:
            "sharpness --profile {params.profile:q} bridges {params.bridge:q} plot"
            " --run {params.rundir:q} --out {output.pdf:q} > {log:q} 2>&1"

    use rule bridges_lesam_diagonal_figure as bridges_sam_eos_figure with:
        input:
            rules.bridges_sam_eos_run.output.sweep,
        output:
            **drawn("bridges", "sam_eos"),
        log: "logs/bridges/sam_eos_figure.log"
        benchmark: "benchmarks/results/bridges/sam_eos_figure.tsv"
        params:
            bridge="sam-eos",
            code=code("bridges", "sharpness.bridges.sam_eos_plot"),
            profile=PROFILE,
            rundir=subpath(input[0], parent=True),

    ALL_TARGETS.extend(
        [rules.bridges_lesam_diagonal_figure.output.pdf, rules.bridges_sam_eos_figure.output.pdf]
    )
