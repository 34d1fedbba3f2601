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
import re

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

    rule eos_toy:
        output:
            f"{EOS_RES}/toy/toy.json",
        message:
            "eos: diagonal toy, closed forms, flow and GD over the learning rates ({output})"
        log:
            "logs/eos/toy.log",
        benchmark:
            "benchmarks/results/eos/toy.tsv"
        threads: 1
        resources:
            mem_mb=500,
            runtime=10,
        conda:
            "../../envs/environment.yaml"
        params:
            code=code("eos", "sharpness.eos.toy"),
            settings=as_json(section("eos", "toy")),
            outdir=subpath(output[0], parent=True),
        shell:
            "sharpness eos toy --params {params.settings:q} --out {params.outdir:q} > {log:q} 2>&1"

    rule eos_setting:
        input:
            lambda w: setting_data_inputs(EOS_SETTINGS[w.setting]),
        output:
            # the run folders are outputs: --forcerun/-R deletes them, so a rerun starts over
            sweep=f"{EOS_RES}/settings/{{setting}}/sweep.json",
            flow=directory(f"{EOS_RES}/settings/{{setting}}/flow"),
            runs=directory(f"{EOS_RES}/settings/{{setting}}/runs"),
        message:
            "eos: gradient flow and learning-rate sweep of setting {wildcards.setting} ({output.sweep})"
        log:
            "logs/eos/setting_{setting}.log",
        benchmark:
            "benchmarks/results/eos/setting_{setting}.tsv"
        wildcard_constraints:
            setting="|".join(map(re.escape, EOS_ALONE)) or "NONE",
        threads: 1
        resources:
            mem_mb=4000,
            runtime=240,
            gpu=lambda w: setting_gpu(EOS_SETTINGS[w.setting]),
        conda:
            "../../envs/environment.yaml"
        params:
            code=code("eos", "sharpness.eos.sweep"),
            settings=lambda w: as_json(EOS_SETTINGS[w.setting]),
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
                sweeps=[f"{EOS_RES}/settings/{name}/sweep.json" for name in EOS_TOGETHER],
                flows=[directory(f"{EOS_RES}/settings/{name}/flow") for name in EOS_TOGETHER],
                runs=[directory(f"{EOS_RES}/settings/{name}/runs") for name in EOS_TOGETHER],
            message:
                f"eos: gradient flow and learning-rate sweep of the {len(EOS_TOGETHER)} ablation "
                f"variants, one after the other ({EOS_RES}/settings/abl_*/sweep.json)"
            log:
                "logs/eos/setting_ablations.log",
            benchmark:
                "benchmarks/results/eos/setting_ablations.tsv"
            threads: 1
            resources:
                mem_mb=4000,
                runtime=240,
                gpu=max(setting_gpu(EOS_SETTINGS[name]) for name in EOS_TOGETHER),
            conda:
                "../../envs/environment.yaml"
            params:
                code=code("eos", "sharpness.eos.sweep"),
                settings=as_json({name: EOS_SETTINGS[name] for name in EOS_TOGETHER}),
                outdir=lambda w, output: os.path.dirname(os.path.dirname(output.sweeps[0])),
                root=config["data"]["root"],
            shell:
                "sharpness eos run-many --params {params.settings:q} --out {params.outdir:q}"
                " --data-root {params.root:q} --threads {threads:q} > {log:q} 2>&1"

    rule eos_figure_diagonal:
        input:
            rules.eos_toy.output,
        output:
            pdf=paper_report("figures/eos/fig_diagonal.pdf", "eos", "fig_diagonal"),
            png="figures/eos/fig_diagonal.png",
            csv="figures/eos/fig_diagonal.csv",
        message:
            "eos: draw figure fig_diagonal ({output.pdf})"
        log:
            "logs/eos/fig_diagonal.log",
        benchmark:
            "benchmarks/results/eos/fig_diagonal.tsv"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        conda:
            "../../envs/environment.yaml"
        params:
            code=code("eos", "sharpness.eos.figures"),
        shell:
            "sharpness eos figure --id fig_diagonal --inputs {input:q} --out {output.pdf:q} > {log:q} 2>&1"

    rule eos_figure:
        input:
            lambda w: figure_sweeps(EOS, w.fig, EOS_RES),
        output:
            pdf=paper_report("figures/eos/{fig}.pdf", "eos", "{fig}"),
            png="figures/eos/{fig}.png",
            csv="figures/eos/{fig}.csv",
        message:
            "eos: draw figure {wildcards.fig} ({output.pdf})"
        log:
            "logs/eos/{fig}.log",
        benchmark:
            "benchmarks/results/eos/{fig}.tsv"
        wildcard_constraints:
            fig="fig_phase|fig_test_vs_lr|fig_trajectories|fig_measures|fig_ablations",
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            "../../envs/environment.yaml"
        params:
            code=code("eos", "sharpness.eos.figures"),
            caption=caption_text("eos", "fig"),
            dropped=as_json(dropped_settings(EOS)),
        shell:
            "sharpness eos figure --id {wildcards.fig:q} --inputs {input:q} --out {output.pdf:q}"
            " --dropped {params.dropped:q} > {log:q} 2>&1"

    ALL_TARGETS.extend(figure_targets(EOS))
