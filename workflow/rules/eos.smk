# Paper `eos` (paper 003): norm vs sharpness at the edge of stability, every figure.
#
# Compute, then draw. `eos_toy` runs the diagonal toy; `eos_setting` runs one setting (the
# gradient-flow reference from the setting's init, then full-batch GD over the learning-rate
# grid) into results/eos/settings/<name>/sweep.json. The jobs come from the plan
# (sharpness.eos.jobs, built once by the Snakefile): a setting per job that some figure draws
# (main settings plus one per ablation value, sharpness.eos.config.expand_settings), so adding
# a setting, a learning rate or an ablation value is a config edit. Each job reads its config
# file, which the plan writes under results/eos/configs/ (the setting, the variants, the toy's
# section, or a figure's inputs and dropped settings): the file is an input of the job, so a
# changed setting reruns exactly the jobs whose file changed, and the command line names the
# file, not the config (a run records the file's SHA-256 in its provenance). The data folder
# is `--data-root`. One sweep feeds every figure that lists it (fig_phase, fig_test_vs_lr,
# fig_trajectories, fig_measures). Training asks for a GPU (gpu=1) unless the setting is
# pinned to the CPU (the quick profile).

import os

from sharpness.eos import jobs as eos_jobs
from sharpness.eos.config import figure_targets, setting_gpu

EOS = config.get("eos")

if EOS:
    # eos.ablations.one_job: the ablation variants run in one job (eos_ablations), the other
    # settings one job each (eos_setting)
    EOS_TOGETHER = PLAN.of_rule("eos_ablations").get(eos_jobs.ABLATIONS)

    # {setting} is only eos_setting's: the settings that run one job each
    wildcard_constraints:
        setting=one_of(PLAN.ids("eos_setting")),

    if PLAN.ids("eos_toy"):

        rule eos_toy:
            input:
                config=eos_jobs.TOY_CONFIG,
            output:
                eos_jobs.TOY,
            message:
                "eos: diagonal toy, closed forms, flow and GD over the learning rates ({output})"
            log: "logs/eos/toy.log"
            benchmark: "benchmarks/results/eos/toy.tsv"
            resources: mem_mb=500, runtime=10
            conda: ENV
            params:
                code=code("eos", "sharpness.eos.toy"),
                outdir=subpath(output[0], parent=True),
            shell:
                "sharpness eos toy --config-file {input.config:q} --out {params.outdir:q}"
                " > {log:q} 2>&1"

    rule eos_setting:
        input:
            unpack(plan_inputs("eos_setting", "setting")),
        output:
            # only sweep.json (written last), not the flow/ and runs/ folders: Snakemake would
            # delete those before it reruns a cut job, so a cut setting resumes its runs from
            # their checkpoints. --forcerun/-R deletes the finished sweep.json, which the job
            # reads as "start over" (sharpness.runs.restart): its folders are deleted then.
            sweep=eos_jobs.SWEEP,
        message:
            "eos: gradient flow and learning-rate sweep of setting {wildcards.setting} ({output.sweep})"
        log: "logs/eos/setting_{setting}.log"
        benchmark: "benchmarks/results/eos/setting_{setting}.tsv"
        resources:
            mem_mb=4000,
            runtime=240,
            gpu=eos_setting_gpu,
            gpu_mem_mb=job_gpu_mem("eos_setting", "setting"),
        conda: ENV
        params:
            code=code("eos", "sharpness.eos.sweep"),
            outdir=subpath(output.sweep, parent=True),
            root=config["data"]["root"],
        shell:
            "sharpness eos run --config-file {input.config:q} --out {params.outdir:q}"
            " --data-root {params.root:q} --threads {threads:q} > {log:q} 2>&1"

    if EOS_TOGETHER:

        rule eos_ablations:
            input:
                unpack(plan_inputs("eos_ablations")),
            output:
                # as eos_setting's: the sweeps, not the run folders (a cut variant resumes;
                # the variants that finished before the cut wrote their sweep.json, which
                # --rerun-incomplete deletes, so those start over)
                sweeps=list(EOS_TOGETHER.outputs),
            message:
                f"eos: gradient flow and learning-rate sweep of the {len(EOS_TOGETHER.config)} "
                f"ablation variants, one after the other (results/eos/settings/abl_*/sweep.json)"
            log: "logs/eos/setting_ablations.log"
            benchmark: "benchmarks/results/eos/setting_ablations.tsv"
            resources:
                mem_mb=4000,
                runtime=240,
                gpu=max(setting_gpu(s) for s in EOS_TOGETHER.config.values()),
                gpu_mem_mb=job_gpu_mem("eos_ablations"),
            conda: ENV
            params:
                code=code("eos", "sharpness.eos.sweep"),
                outdir=lambda w, output: os.path.dirname(os.path.dirname(output.sweeps[0])),
                root=config["data"]["root"],
            shell:
                "sharpness eos run-many --config-file {input.config:q} --out {params.outdir:q}"
                " --data-root {params.root:q} --threads {threads:q} > {log:q} 2>&1"

    rule eos_figure:
        input:
            unpack(plan_inputs("eos_figure", "fig")),
        output:
            **drawn("eos", "{fig}"),
        message:
            "eos: draw figure {wildcards.fig} ({output.pdf})"
        log: "logs/eos/{fig}.log"
        benchmark: "benchmarks/results/eos/{fig}.tsv"
        wildcard_constraints:
            fig=one_of(PLAN.ids("eos_figure")),
        resources: mem_mb=2000, runtime=10
        conda: ENV
        params:
            code=code("eos", "sharpness.eos.figures"),
            caption=caption_text("eos", "fig"),
            profile=PROFILE,
        shell:
            "sharpness --profile {params.profile:q} eos figure --id {wildcards.fig:q}"
            " --config-file {input.config:q} --out {output.pdf:q} > {log:q} 2>&1"

    ALL_TARGETS.extend(figure_targets(EOS))
