# Paper `minorfirst`, real images: GD vs SAM attention with Grad-CAM (catalog item `gradcam`).
#
# One training job per data set trains every optimizer, init scale and seed (one process, so
# the quick profile pays the torch import once per data set, not once per run; the params are
# the whole section, so any setting change reruns every training job anyway); one Grad-CAM
# job per data set explains every model on the shared panel; one job draws the grid and table.
# Training asks for a GPU unless the runs are pinned to the CPU (`gradcam.train.device: cpu`,
# the quick profile), so the quick profile's jobs are not serialised on the global gpu=1.

import os

from sharpness.data.registry import preparation_inputs

GRADCAM = config.get("gradcam")

if GRADCAM:
    GRADCAM_DATASETS = list(GRADCAM["datasets"])
    GRADCAM_OPTIMIZERS = list(GRADCAM["optimizers"])
    GRADCAM_GPU = 0 if GRADCAM["train"].get("device") == "cpu" else 1
    GRADCAM_ROOT = "results/minorfirst/gradcam"
    # Downloaded data sets are prepared once (data_prepare) before any training job reads
    # them, so parallel jobs never fetch the same files; embedded ones and the stand-in need
    # nothing (the data registry says which).
    GRADCAM_DATA = {
        key: preparation_inputs(spec["name"]) for key, spec in GRADCAM["datasets"].items()
    }

    rule gradcam_train:
        input:
            gradcam_data,
        output:
            # every optimizer's runs.json (written after every group has trained), not the
            # group folders: Snakemake would delete those before it reruns a cut job, so a cut
            # job resumes its runs from their checkpoints. --forcerun/-R deletes the finished
            # runs.json files, which the job reads as "start over" (sharpness.runs.restart).
            runs=[f"{GRADCAM_ROOT}/runs/{{dataset}}/{o}/runs.json" for o in GRADCAM_OPTIMIZERS],
        message:
            "minorfirst gradcam: train the models of every optimizer on {wildcards.dataset}"
            " (results/minorfirst/gradcam/runs/{wildcards.dataset}/*)"
        log: "logs/minorfirst/gradcam/train_{dataset}.log"
        benchmark: "benchmarks/results/minorfirst/gradcam/train_{dataset}.tsv"
        wildcard_constraints:
            dataset=one_of(GRADCAM_DATASETS),
        resources:
            mem_mb=3000,
            runtime=240 * len(GRADCAM_OPTIMIZERS),
            gpu=GRADCAM_GPU,
        conda: ENV
        params:
            code=code("gradcam", "sharpness.gradcam.study"),
            settings=as_json(GRADCAM),
            outdir=lambda w, output: os.path.dirname(os.path.dirname(output.runs[0])),
            root=config["data"]["root"],
        shell:
            "sharpness gradcam train --params {params.settings:q} --dataset {wildcards.dataset:q}"
            " --data-root {params.root:q} --out {params.outdir:q} --threads {threads:q}"
            " > {log:q} 2>&1"

    rule gradcam_maps:
        input:
            runs=expand(
                f"{GRADCAM_ROOT}/runs/{{{{dataset}}}}/{{optimizer}}/runs.json",
                optimizer=GRADCAM_OPTIMIZERS,
            ),
        output:
            maps=f"{GRADCAM_ROOT}/maps/{{dataset}}/maps.npz",
        message:
            "minorfirst gradcam: Grad-CAM maps of every {wildcards.dataset} model ({output.maps})"
        log: "logs/minorfirst/gradcam/maps_{dataset}.log"
        benchmark: "benchmarks/results/minorfirst/gradcam/maps_{dataset}.tsv"
        wildcard_constraints:
            dataset=one_of(GRADCAM_DATASETS),
        resources: mem_mb=3000, runtime=30
        conda: ENV
        params:
            code=code("gradcam", "sharpness.gradcam.study"),
            settings=as_json(GRADCAM),
            runs=lambda w, input: os.path.dirname(os.path.dirname(input.runs[0])),
            outdir=subpath(output.maps, parent=True),
            root=config["data"]["root"],
        shell:
            "sharpness gradcam maps --params {params.settings:q} --dataset {wildcards.dataset:q}"
            " --runs {params.runs:q} --out {params.outdir:q} --root {params.root:q}"
            " --threads {threads:q} > {log:q} 2>&1"

    rule gradcam_figure:
        input:
            maps=expand(f"{GRADCAM_ROOT}/maps/{{dataset}}/maps.npz", dataset=GRADCAM_DATASETS),
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
            settings=as_json(GRADCAM),
            profile=PROFILE,
            maps=gradcam_maps_args,
        shell:
            "sharpness --profile {params.profile:q} gradcam figure --params {params.settings:q} --maps {params.maps:q}"
            " --out {output.pdf:q} --table {output.table:q} > {log:q} 2>&1"

    ALL_TARGETS.extend(
        [
            "figures/minorfirst/gradcam.pdf",
            "figures/minorfirst/gradcam_table.md",
        ]
    )
