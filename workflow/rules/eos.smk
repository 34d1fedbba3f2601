# Paper `eos` (paper 003): norm vs sharpness at the edge of stability, every figure.
#
# Compute, then draw. `eos_toy` runs the diagonal toy; `eos_setting` runs one setting (the
# gradient-flow reference from the setting's init, then full-batch GD over the learning-rate
# grid) into results/eos/settings/<name>/sweep.json. Settings come from the config through
# sharpness.eos.config.expand_settings (main settings plus one per ablation value), so adding a
# setting, a learning rate or an ablation value is a config edit. One sweep feeds every figure
# that lists it (fig_phase, fig_test_vs_lr, fig_trajectories, fig_measures). Training asks for
# a GPU (gpu=1) unless the setting is pinned to the CPU (the quick profile).

import os

from sharpness.eos.config import (
    dropped_settings,
    expand_settings,
    figure_sweeps,
    figure_targets,
    one_job_ablations,
    setting_data_inputs,
    setting_gpu,
)

EOS = config.get("eos")

if EOS:
    EOS_SETTINGS = expand_settings(EOS)
    EOS_RES = "results/eos"
    # eos.ablations.one_job: the ablation variants run in one job (eos_ablations), the other
    # settings one job each (eos_setting)
    EOS_TOGETHER = one_job_ablations(EOS)
    EOS_ALONE = [name for name in EOS_SETTINGS if name not in EOS_TOGETHER]
    EOS_FIGURES = ["fig_diagonal", "fig_phase", "fig_test_vs_lr", "fig_trajectories",
                   "fig_measures", "fig_ablations"]

    # {setting} is only eos_setting's: the settings that run one job each
    wildcard_constraints:
        setting=one_of(EOS_ALONE),

    rule eos_toy:
        output:
            f"{EOS_RES}/toy/toy.json",
        message:
            "eos: diagonal toy, closed forms, flow and GD over the learning rates ({output})"
        log: "logs/eos/toy.log"
        benchmark: "benchmarks/results/eos/toy.tsv"
        resources: mem_mb=500, runtime=10
        conda: ENV
        params:
            code=code("eos", "sharpness.eos.toy"),
            settings=as_json(section("eos", "toy")),
            outdir=subpath(output[0], parent=True),
        shell:
            "sharpness eos toy --params {params.settings:q} --out {params.outdir:q} > {log:q} 2>&1"

    rule eos_setting:
        input:
            eos_setting_data,
        output:
            # only sweep.json (written last), not the flow/ and runs/ folders: Snakemake would
            # delete those before it reruns a cut job, so a cut setting resumes its runs from
            # their checkpoints. --forcerun/-R deletes the finished sweep.json, which the job
            # reads as "start over" (sharpness.runs.restart): its folders are deleted then.
            sweep=f"{EOS_RES}/settings/{{setting}}/sweep.json",
        message:
            "eos: gradient flow and learning-rate sweep of setting {wildcards.setting} ({output.sweep})"
        log: "logs/eos/setting_{setting}.log"
        benchmark: "benchmarks/results/eos/setting_{setting}.tsv"
        resources: mem_mb=4000, runtime=240, gpu=eos_setting_gpu
        conda: ENV
        params:
            code=code("eos", "sharpness.eos.sweep"),
            settings=eos_setting_json,
            outdir=subpath(output.sweep, parent=True),
            root=config["data"]["root"],
        shell:
            "sharpness eos run --params {params.settings:q} --out {params.outdir:q}"
            " --data-root {params.root:q} --threads {threads:q} > {log:q} 2>&1"

    if EOS_TOGETHER:

        rule eos_ablations:
            input:
                sorted({p for name in EOS_TOGETHER for p in setting_data_inputs(EOS_SETTINGS[name])}),
            output:
                # as eos_setting's: the sweeps, not the run folders (a cut variant resumes;
                # the variants that finished before the cut wrote their sweep.json, which
                # --rerun-incomplete deletes, so those start over)
                sweeps=[f"{EOS_RES}/settings/{name}/sweep.json" for name in EOS_TOGETHER],
            message:
                f"eos: gradient flow and learning-rate sweep of the {len(EOS_TOGETHER)} ablation "
                f"variants, one after the other ({EOS_RES}/settings/abl_*/sweep.json)"
            log: "logs/eos/setting_ablations.log"
            benchmark: "benchmarks/results/eos/setting_ablations.tsv"
            resources:
                mem_mb=4000,
                runtime=240,
                gpu=max(setting_gpu(EOS_SETTINGS[name]) for name in EOS_TOGETHER),
            conda: ENV
            params:
                code=code("eos", "sharpness.eos.sweep"),
                settings=as_json({name: EOS_SETTINGS[name] for name in EOS_TOGETHER}),
                outdir=lambda w, output: os.path.dirname(os.path.dirname(output.sweeps[0])),
                root=config["data"]["root"],
            shell:
                "sharpness eos run-many --params {params.settings:q} --out {params.outdir:q}"
                " --data-root {params.root:q} --threads {threads:q} > {log:q} 2>&1"

    rule eos_figure:
        input:
            eos_figure_inputs,
        output:
            **drawn("eos", "{fig}"),
        message:
            "eos: draw figure {wildcards.fig} ({output.pdf})"
        log: "logs/eos/{fig}.log"
        benchmark: "benchmarks/results/eos/{fig}.tsv"
        wildcard_constraints:
            fig=one_of(EOS_FIGURES),
        resources: mem_mb=2000, runtime=10
        conda: ENV
        params:
            code=code("eos", "sharpness.eos.figures"),
            caption=caption_text("eos", "fig"),
            profile=PROFILE,
            dropped=eos_dropped,
        shell:
            "sharpness --profile {params.profile:q} eos figure --id {wildcards.fig:q}"
            " --inputs {input:q} --out {output.pdf:q} --dropped {params.dropped:q} > {log:q} 2>&1"

    ALL_TARGETS.extend(figure_targets(EOS))
