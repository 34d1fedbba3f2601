# Paper `lesam` (paper 002): Loss-Equated SAM, every table and figure of the catalog.
#
# Runs are shared across items: the CIFAR-10 group feeds table_cifar, table_robustness,
# fig_flatness and fig_dynamics; table_cost is measured in one process. Every job (its id,
# config file, inputs and outputs) comes from the build's plan (PLAN, sharpness.jobs, built
# once by the Snakefile; lesam's jobs are listed by sharpness.lesam.jobs from the run list of
# sharpness.lesam.experiments, which also holds the output layout), so adding a seed, an
# optimizer or an ablation variant is a config edit. Each job reads its settings from the
# file the plan wrote (results/lesam/configs/...; rewritten only when its content changes, so
# a changed setting reruns exactly the jobs whose file changed); the command line names the
# file and the job records its SHA-256 in its provenance. The data folder is `--data-root`.
# Training asks for a GPU (gpu=1) unless the run is pinned to the CPU (the quick profile);
# a run with `gpus: N` (ImageNet in the paper profile) asks for N GPUs and is launched as N
# DistributedDataParallel processes by torchrun (sharpness.launch). User-provided data
# (ImageNet at data.imagenet, PACS/VLCS under data.root): a run whose folder is missing stops
# the workflow while it plans the jobs (lesam_run_inputs raises with what to put where), so
# nothing runs for hours first; asking only for other targets is not affected. ImageNet runs
# also depend on lesam_check_imagenet, which checks the class folders before training.

from sharpness.launch import cpus as launch_cpus
from sharpness.launch import launch_words
from sharpness.launch import mem_mb as launch_mem_mb
from sharpness.lesam import experiments as lesam_exp
from sharpness.lesam import steps as lesam_steps

LESAM = config.get("lesam")

if LESAM:
    LESAM_RES = lesam_exp.RESULTS

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
            unpack(lesam_run_inputs),
        output:
            final=lesam_exp.TRAIN_FINAL,
            model=lesam_exp.TRAIN_MODEL,
        message:
            "lesam: train run {wildcards.run} ({output.final})"
        log: "logs/lesam/train_{run}.log"
        benchmark: "benchmarks/results/lesam/train_{run}.tsv"
        wildcard_constraints:
            run=one_of(PLAN.ids("lesam_train")),
        threads: lambda w: launch_cpus(lesam_run(w))
        resources:
            mem_mb=lambda w: launch_mem_mb(lesam_run(w)),
            runtime=lambda w: 60 * 24 if lesam_run(w).get("device") != "cpu" else 30,
            gpu=lambda w: lesam_steps.gpu(lesam_run(w)),
            gpu_mem_mb=job_gpu_mem("lesam_train", "run"),
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
            unpack(plan_inputs("lesam_glmc", "run")),
        output:
            lesam_exp.GLMC_FINAL,
        message:
            "lesam: {params.step} run {wildcards.run} ({output})"
        log: "logs/lesam/glmc_{run}.log"
        benchmark: "benchmarks/results/lesam/glmc_{run}.tsv"
        wildcard_constraints:
            run=one_of(PLAN.ids("lesam_glmc")),
        resources:
            mem_mb=4000,
            runtime=30,
            gpu=lesam_probe_gpu,
            gpu_mem_mb=job_gpu_mem("lesam_glmc", "run"),
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
            unpack(plan_inputs("lesam_signal", "run")),
        output:
            lesam_exp.SIGNAL_PROBES,
        log: "logs/lesam/signal_{run}.log"
        benchmark: "benchmarks/results/lesam/signal_{run}.tsv"
        wildcard_constraints:
            run=one_of(PLAN.ids("lesam_signal")),
        resources:
            mem_mb=4000,
            runtime=30,
            gpu=lesam_probe_gpu,
            gpu_mem_mb=job_gpu_mem("lesam_signal", "run"),
        params:
            step="signal",
            code=code("lesam", "sharpness.lesam.experiments", "sharpness.lesam.signal"),
            outdir=subpath(output[0], parent=True),
            root=config["data"]["root"],

    rule lesam_eval:
        input:
            unpack(plan_inputs("lesam_eval", "what")),
        output:
            lesam_exp.EVALUATION,
        message:
            "lesam: evaluate {wildcards.what} of the trained models ({output})"
        log: "logs/lesam/eval_{what}.log"
        benchmark: "benchmarks/results/lesam/eval_{what}.tsv"
        resources:
            mem_mb=4000,
            runtime=60,
            gpu=lesam_eval_gpu,
            gpu_mem_mb=job_gpu_mem("lesam_eval", "what"),
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
            unpack(plan_inputs("lesam_table", "item")),
        output:
            **tabled("lesam", "{item}"),
        message:
            "lesam: build {wildcards.item} ({output[0]})"
        log: "logs/lesam/build_{item}.log"
        benchmark: "benchmarks/results/lesam/build_{item}.tsv"
        wildcard_constraints:
            item=one_of(PLAN.ids("lesam_table")),
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
        input:
            unpack(plan_inputs("lesam_figure", "item")),
        output:
            **drawn("lesam", "{item}"),
        wildcard_constraints:
            item=one_of(PLAN.ids("lesam_figure")),

    ALL_TARGETS.extend(PLAN.job(rule, item).outputs[0]
                       for rule in ("lesam_table", "lesam_figure") for item in PLAN.ids(rule))
