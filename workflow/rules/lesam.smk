# Paper `lesam` (paper 002): Loss-Equated SAM, every table and figure of the catalog.
#
# Runs are shared across items: the CIFAR-10 group feeds table_cifar, table_robustness,
# fig_flatness and fig_dynamics; table_cost is measured in one process. The run list comes
# from the config through sharpness.lesam.experiments (pure Python), so adding a seed, an
# optimizer or an ablation variant is a config edit. Training asks for a GPU (gpu=1) unless
# the run is pinned to the CPU (the quick profile), so quick jobs are not serialised on it;
# a run with `gpus: N` (ImageNet in the paper profile) asks for N GPUs and is launched as N
# DistributedDataParallel processes by torchrun (sharpness.launch, sharpness.train.distributed).
# Settings (and, in the paper profile, their sources) are checked while the workflow plans
# (sharpness.config.check, called by the Snakefile). User-provided data (ImageNet at
# data.imagenet, PACS/VLCS under data.root): a run whose folder is missing stops the workflow
# while it plans the jobs (run_inputs raises with what to put where), so nothing runs for
# hours first; asking only for other targets is not affected. ImageNet runs read data.imagenet (lesam_exp.data_root) and also depend on
# lesam_check_imagenet, which checks the class folders before training.
# A training, GLMC or signal job reads its run's config from a file written while the
# workflow plans (lesam_steps.write_job_configs: results/lesam/configs/<run>.json, glmc/ and
# signal/<run>.json; rewritten only when its content changes): the file is an input of the
# job, so a changed setting reruns exactly the runs whose config changed, and the command
# line names the file, not the config (the job records the file's SHA-256 in its
# provenance). The data folder is `--data-root`, as in the eos rules. The eval and build
# jobs read theirs likewise (configs/eval/<what>.json, configs/build/<item>.json): only the
# part of the lesam section they read (lesam_steps.step_section) and the files they draw, so
# a setting change reruns only what reads it.

from sharpness.launch import cpus as launch_cpus
from sharpness.launch import launch_words
from sharpness.launch import mem_mb as launch_mem_mb
from sharpness.lesam import experiments as lesam_exp
from sharpness.lesam import steps as lesam_steps

LESAM = config.get("lesam")

if LESAM:
    LESAM_RUNS = lesam_exp.training_runs(LESAM)
    LESAM_GLMC = lesam_exp.glmc_runs(LESAM)
    LESAM_SIGNAL = lesam_exp.signal_runs(LESAM)
    LESAM_RES = "results/lesam"
    LESAM_TABLES = [
        "table_cifar",
        "table_imagenet",
        "table_transfer",
        "table_domain_gen",
        "table_robustness",
        "table_long_tail",
        "table_cost",
    ]
    LESAM_FIGURES = ["fig_flatness", "fig_dynamics", "fig_signal", "fig_ablation"]

    # {what} is only lesam_eval's: the evaluations some items read
    wildcard_constraints:
        what=one_of(lesam_steps.EVAL_ITEMS),

    rule lesam_check_imagenet:
        output:
            f"{LESAM_RES}/imagenet_check.json",
        message:
            "lesam: check the ImageNet folders ({output})"
        log: "logs/lesam/imagenet_check.log"
        benchmark: "benchmarks/results/lesam/imagenet_check.tsv"
        resources: mem_mb=500, runtime=5
        conda: ENV
        params:
            code=code("lesam"),
            path=config["data"].get("imagenet") or "",
        shell:
            "sharpness lesam check-imagenet --path {params.path:q} --out {output:q} > {log:q} 2>&1"

    rule lesam_train:
        input:
            lesam_run_inputs,
            config=lesam_exp.TRAIN_CONFIG,
        output:
            final=f"{LESAM_RES}/runs/{{run}}/final.json",
            model=f"{LESAM_RES}/runs/{{run}}/model.pt",
        message:
            "lesam: train run {wildcards.run} ({output.final})"
        log: "logs/lesam/train_{run}.log"
        benchmark: "benchmarks/results/lesam/train_{run}.tsv"
        wildcard_constraints:
            run=one_of(LESAM_RUNS),
        threads: lambda w: launch_cpus(lesam_run(w))
        resources:
            mem_mb=lambda w: launch_mem_mb(lesam_run(w)),
            runtime=lambda w: 60 * 24 if lesam_run(w).get("device") != "cpu" else 30,
            gpu=lambda w: lesam_steps.gpu(lesam_run(w)),
        conda: ENV
        params:
            code=code("train", "sharpness.train"),
            outdir=subpath(output.final, parent=True),
            root=lambda w: lesam_exp.data_root(config["data"], lesam_run(w)),
            launch=lambda w: launch_words(lesam_run(w)),
        shell:
            "{params.launch:q} sharpness train --config-file {input.config:q}"
            " --data-root {params.root:q} --out {params.outdir:q}"
            " --threads {threads:q} > {log:q} 2>&1"

    # the GLMC long-tail runs and the signal probes: one job a run, `sharpness lesam <step>`
    rule lesam_glmc:
        input:
            lesam_probe_data,
            config=lesam_exp.output(lesam_exp.STEP_CONFIG, step="glmc", run="{run}"),
        output:
            f"{LESAM_RES}/glmc/{{run}}/final.json",
        message:
            "lesam: {params.step} run {wildcards.run} ({output})"
        log: "logs/lesam/glmc_{run}.log"
        benchmark: "benchmarks/results/lesam/glmc_{run}.tsv"
        wildcard_constraints:
            run=one_of(LESAM_GLMC),
        resources: mem_mb=4000, runtime=30, gpu=lesam_probe_gpu
        conda: ENV
        params:
            step="glmc",
            code=code("lesam", "sharpness.lesam.experiments", "sharpness.lesam.glmc"),
            outdir=subpath(output[0], parent=True),
            root=config["data"]["root"],
        shell:
            "sharpness lesam {params.step:q} --run {wildcards.run:q}"
            " --config-file {input.config:q} --data-root {params.root:q}"
            " --out {params.outdir:q} --threads {threads:q} > {log:q} 2>&1"

    use rule lesam_glmc as lesam_signal with:
        input:
            lesam_probe_data,
            config=lesam_exp.output(lesam_exp.STEP_CONFIG, step="signal", run="{run}"),
        output:
            f"{LESAM_RES}/signal/{{run}}/signal.jsonl",
        log: "logs/lesam/signal_{run}.log"
        benchmark: "benchmarks/results/lesam/signal_{run}.tsv"
        wildcard_constraints:
            run=one_of(LESAM_SIGNAL),
        params:
            step="signal",
            code=code("lesam", "sharpness.lesam.experiments", "sharpness.lesam.signal"),
            outdir=subpath(output[0], parent=True),
            root=config["data"]["root"],

    rule lesam_eval:
        input:
            runs=lesam_eval_runs,
            config=lesam_exp.output(lesam_exp.STEP_CONFIG, step="eval", run="{what}"),
        output:
            f"{LESAM_RES}/eval/{{what}}.json",
        message:
            "lesam: evaluate {wildcards.what} of the trained models ({output})"
        log: "logs/lesam/eval_{what}.log"
        benchmark: "benchmarks/results/lesam/eval_{what}.tsv"
        resources: mem_mb=4000, runtime=60, gpu=lesam_eval_gpu
        conda: ENV
        params:
            code=code("lesam", "sharpness.lesam.experiments", "sharpness.lesam.evaluate"),
            root=config["data"]["root"],
        shell:
            "sharpness lesam eval {wildcards.what:q} --config-file {input.config:q}"
            " --data-root {params.root:q} --out {output:q} --threads {threads:q} > {log:q} 2>&1"

    # a table and a figure are built by one command (`sharpness lesam build`); they differ
    # only in what they write. The job reads which run each folder holds, with what
    # settings, from the folder's record; its config file holds only the item's own
    # settings, the run files and the evaluation file it draws (also its inputs).
    rule lesam_table:
        input:
            runs=lesam_build_runs,
            evaluation=lesam_build_evaluation,
            config=lesam_exp.output(lesam_exp.STEP_CONFIG, step="build", run="{item}"),
        output:
            **tabled("lesam", "{item}"),
        message:
            "lesam: build {wildcards.item} ({output[0]})"
        log: "logs/lesam/build_{item}.log"
        benchmark: "benchmarks/results/lesam/build_{item}.tsv"
        wildcard_constraints:
            item=one_of(LESAM_TABLES),
        resources: **DRAWING
        conda: ENV
        params:
            code=code("lesam", "sharpness.lesam.figures", "sharpness.lesam.tables"),
            caption=caption_text("lesam", "item"),
            profile=PROFILE,
            out=lambda w, output: output[0],  # the .md of a table, the .pdf of a figure
        shell:
            "sharpness --profile {params.profile:q} lesam build {wildcards.item:q}"
            " --config-file {input.config:q} --out {params.out:q} > {log:q} 2>&1"

    use rule lesam_table as lesam_figure with:
        output:
            **drawn("lesam", "{item}"),
        wildcard_constraints:
            item=one_of(LESAM_FIGURES),

    ALL_TARGETS.extend(expand("figures/lesam/{item}.md", item=LESAM_TABLES))
    ALL_TARGETS.extend(expand("figures/lesam/{item}.pdf", item=LESAM_FIGURES))
