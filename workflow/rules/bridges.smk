# Bridges between the papers: LE-SAM on the minorfirst diagonal networks, and the
# eos learning-rate sweep repeated with SAM and LE-SAM as the full-batch optimizer.
# Each bridge is computed (`sharpness bridges <bridge> run`), then drawn from its run folder
# (`sharpness bridges <bridge> plot`). The jobs, their outputs and each run's config file
# (results/bridges/configs/<bridge>.json, its bridges.<bridge> section, written by the plan)
# come from the plan (sharpness.bridges.jobs); the command line names the file, and the run
# records its SHA-256 in its provenance. The data folder is `--data-root`.

from sharpness.eos.config import setting_gpu

BRIDGES = config.get("bridges")

if BRIDGES:
    BRIDGE_LESAM = PLAN.job("bridges_lesam_diagonal_run", "lesam_diagonal")
    BRIDGE_SAM_EOS = PLAN.job("bridges_sam_eos_run", "sam_eos")

    rule bridges_lesam_diagonal_run:
        input:
            unpack(plan_inputs("bridges_lesam_diagonal_run")),
        output:
            arrays=BRIDGE_LESAM.outputs[0],
            summary=BRIDGE_LESAM.outputs[1],
        message:
            "bridges: LE-SAM on diagonal networks, compute ({output.summary})"
        log: "logs/bridges/lesam_diagonal_run.log"
        benchmark: "benchmarks/results/bridges/lesam_diagonal_run.tsv"
        resources: mem_mb=1500, runtime=20
        conda: ENV
        params:
            code=code("bridges", "sharpness.bridges.lesam_diagonal"),
            outdir=subpath(output.arrays, parent=True),
        shell:
            "sharpness bridges lesam-diagonal run --config-file {input.config:q}"
            " --out {params.outdir:q} > {log:q} 2>&1"

    rule bridges_sam_eos_run:
        input:
            unpack(plan_inputs("bridges_sam_eos_run")),
        output:
            # its only declared output: the flow and run folders beside it are not outputs,
            # so a cut sweep resumes from its checkpoints (--forcerun/-R, which removes the
            # sealed sweep.json, starts them over: sharpness.runs.restart)
            sweep=BRIDGE_SAM_EOS.outputs[0],
        message:
            "bridges: eos sweep with GD, SAM and LE-SAM ({output.sweep})"
        log: "logs/bridges/sam_eos_run.log"
        benchmark: "benchmarks/results/bridges/sam_eos_run.tsv"
        resources:
            mem_mb=3000,
            runtime=60,
            gpu=setting_gpu(BRIDGE_SAM_EOS.config["setting"]),
            gpu_mem_mb=job_gpu_mem("bridges_sam_eos_run"),
        conda: ENV
        params:
            code=code("bridges", "sharpness.bridges.sam_eos"),
            outdir=subpath(output.sweep, parent=True),
            root=config["data"]["root"],
        shell:
            "sharpness bridges sam-eos run --config-file {input.config:q}"
            " --data-root {params.root:q} --out {params.outdir:q}"
            " --threads {threads:q} > {log:q} 2>&1"

    rule bridges_lesam_diagonal_figure:
        input:
            PLAN.job("bridges_lesam_diagonal_figure", "lesam_diagonal").inputs,
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
            PLAN.job("bridges_sam_eos_figure", "sam_eos").inputs,
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
