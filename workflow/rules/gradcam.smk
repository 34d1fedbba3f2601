# Paper `minorfirst`, real images: GD vs SAM attention with Grad-CAM (catalog item `gradcam`).
#
# One training job per data set trains every optimizer, init scale and seed (one process, so
# the quick profile pays the torch import once per data set, not once per run); one Grad-CAM
# job per data set explains every model on the shared panel; one job draws the grid and table.
# The jobs, their inputs, outputs and config files are the plan's (sharpness.gradcam.jobs):
# each job reads the part of the gradcam section it uses from the file the plan wrote under
# results/minorfirst/configs/gradcam/ (an input of the job: a setting change reruns only the
# jobs that read it, e.g. a data set's label reruns no training), its command line names that
# file (`--config-file`), and the job records the file's SHA-256 in its provenance. The data
# folder is `--data-root` (config data.root). A downloaded data set is prepared once
# (data_prepare, an input of its training job) before any training job reads it.
# Training asks for a GPU unless the runs are pinned to the CPU (`gradcam.train.device: cpu`,
# the quick profile), so the quick profile's jobs are not serialised on the global gpu=1.

from sharpness.gradcam import jobs as gradcam_jobs

GRADCAM = config.get("gradcam")

if PLAN.ids("gradcam_figure"):
    GRADCAM_GPU = 0 if GRADCAM["train"].get("device") == "cpu" else 1

    rule gradcam_train:
        input:
            unpack(plan_inputs("gradcam_train", "dataset")),
        output:
            # every optimizer's runs.json (written after every group has trained), not the
            # group folders: Snakemake would delete those before it reruns a cut job, so a cut
            # job resumes its runs from their checkpoints. --forcerun/-R deletes the finished
            # runs.json files, which the job reads as "start over" (sharpness.runs.restart).
            runs=gradcam_jobs.runs_files(GRADCAM, "{dataset}"),
        message:
            "minorfirst gradcam: train the models of every optimizer on {wildcards.dataset}"
            " (results/minorfirst/gradcam/runs/{wildcards.dataset}/*)"
        log: "logs/minorfirst/gradcam/train_{dataset}.log"
        benchmark: "benchmarks/results/minorfirst/gradcam/train_{dataset}.tsv"
        wildcard_constraints:
            dataset=one_of(PLAN.ids("gradcam_train")),
        resources:
            mem_mb=3000,
            runtime=240 * len(GRADCAM["optimizers"]),
            gpu=GRADCAM_GPU,
            gpu_mem_mb=job_gpu_mem("gradcam_train", "dataset"),
        conda: ENV
        params:
            code=code("gradcam", "sharpness.gradcam.study"),
            outdir=lambda w: gradcam_jobs.runs_folder(w.dataset),
            root=config["data"]["root"],
        shell:
            "sharpness gradcam train --config-file {input.config:q} --dataset {wildcards.dataset:q}"
            " --data-root {params.root:q} --out {params.outdir:q} --threads {threads:q}"
            " > {log:q} 2>&1"

    rule gradcam_maps:
        input:
            unpack(plan_inputs("gradcam_maps", "dataset")),
        output:
            maps=gradcam_jobs.MAPS,
        message:
            "minorfirst gradcam: Grad-CAM maps of every {wildcards.dataset} model ({output.maps})"
        log: "logs/minorfirst/gradcam/maps_{dataset}.log"
        benchmark: "benchmarks/results/minorfirst/gradcam/maps_{dataset}.tsv"
        wildcard_constraints:
            dataset=one_of(PLAN.ids("gradcam_maps")),
        resources: mem_mb=3000, runtime=30
        conda: ENV
        params:
            code=code("gradcam", "sharpness.gradcam.study"),
            runs=lambda w: gradcam_jobs.runs_folder(w.dataset),
            outdir=subpath(output.maps, parent=True),
            root=config["data"]["root"],
        shell:
            "sharpness gradcam maps --config-file {input.config:q} --dataset {wildcards.dataset:q}"
            " --runs {params.runs:q} --out {params.outdir:q} --data-root {params.root:q}"
            " --threads {threads:q} > {log:q} 2>&1"

    rule gradcam_figure:
        input:
            unpack(plan_inputs("gradcam_figure")),
        output:
            **drawn("minorfirst", "gradcam"),
            table=paper_report(
                "figures/minorfirst/gradcam_table.md", "minorfirst", "gradcam_table"
            ),
            table_csv="figures/minorfirst/gradcam_table.csv",
        message:
            "minorfirst gradcam: draw the Grad-CAM grid and table ({output.pdf}, {output.table})"
        log: "logs/minorfirst/gradcam/figure.log"
        benchmark: "benchmarks/results/minorfirst/gradcam/figure.tsv"
        resources: mem_mb=2000, runtime=10
        conda: ENV
        params:
            code=code("gradcam", "sharpness.gradcam.figures"),
            profile=PROFILE,
        shell:
            "sharpness --profile {params.profile:q} gradcam figure --config-file {input.config:q}"
            " --out {output.pdf:q} --table {output.table:q} > {log:q} 2>&1"

    ALL_TARGETS.extend(
        [
            "figures/minorfirst/gradcam.pdf",
            "figures/minorfirst/gradcam_table.md",
        ]
    )
