# Paper `lesam` (paper 002): Loss-Equated SAM, every table and figure of the catalog.
#
# Runs are shared across items: the CIFAR-10 group feeds table_cifar, table_robustness,
# fig_flatness and fig_dynamics; table_cost is measured in one process. The run list comes
# from the config through sharpness.lesam.experiments (pure Python), so adding a seed, an
# optimizer or an ablation variant is a config edit. Training asks for a GPU (gpu=1) unless
# the run is pinned to the CPU (the quick profile), so quick jobs are not serialised on it.
# ImageNet: the paper profile's imagenet runs depend on lesam_check_imagenet, which stops
# with a message naming data.imagenet when that key is unset or the folder is incomplete;
# the error appears only when those runs are asked for, so `snakemake -n` lists the full DAG.

import re

from sharpness.lesam.experiments import glmc_runs, signal_runs, training_runs

LESAM = config.get("lesam")

if LESAM:
    LESAM_RUNS = training_runs(LESAM)
    LESAM_GLMC = glmc_runs(LESAM)
    LESAM_SIGNAL = signal_runs(LESAM)
    LESAM_JSON = as_json(LESAM)
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

    def lesam_gpu(cfg):
        """1 GPU for a training job unless its config pins it to the CPU."""
        return 0 if cfg.get("device") == "cpu" else 1

    def lesam_data(cfg):
        """The data-preparation output a run needs (none for the committed embedded sets)."""
        name = cfg["dataset"]
        if name.endswith("_embedded") or name == "imagenet":
            return []
        return [f"results/data/{name}.json"]

    def lesam_run_inputs(wildcards):
        run = LESAM_RUNS[wildcards.run]
        deps = [f"{LESAM_RES}/runs/{d}/final.json" for d in run["depends"]]
        deps.extend(lesam_data(run["config"]))
        if run["config"]["dataset"] == "imagenet":
            deps.append(f"{LESAM_RES}/imagenet_check.json")
        return deps

    def lesam_runs_of(*groups):
        """final.json of every run of the given groups."""
        return [
            f"{LESAM_RES}/runs/{rid}/final.json"
            for rid, r in LESAM_RUNS.items()
            if r["group"] in groups
        ]

    def lesam_item_groups(item):
        spec = LESAM["items"].get(item, {})
        groups = [row["group"] for row in spec.get("rows", [])]
        for key in ("group", "reference_group"):
            if key in spec:
                groups.append(spec[key])
        return groups

    rule lesam_check_imagenet:
        output:
            f"{LESAM_RES}/imagenet_check.json",
        log:
            "logs/lesam/imagenet_check.log",
        benchmark:
            "benchmarks/results/lesam/imagenet_check.tsv"
        threads: 1
        resources:
            mem_mb=500,
            runtime=5,
        conda:
            "../../envs/environment.yaml"
        params:
            path=config["data"].get("imagenet") or "",
        shell:
            "sharpness lesam check-imagenet --path '{params.path}' --out {output} > {log} 2>&1"

    rule lesam_train:
        input:
            lesam_run_inputs,
        output:
            final=f"{LESAM_RES}/runs/{{run}}/final.json",
            model=f"{LESAM_RES}/runs/{{run}}/model.pt",
        log:
            "logs/lesam/train_{run}.log",
        benchmark:
            "benchmarks/results/lesam/train_{run}.tsv"
        wildcard_constraints:
            run="|".join(map(re.escape, LESAM_RUNS)) or "NONE",
        threads: 1
        resources:
            mem_mb=4000,
            runtime=lambda w: 60 * 24 if LESAM_RUNS[w.run]["config"].get("device") != "cpu" else 30,
            gpu=lambda w: lesam_gpu(LESAM_RUNS[w.run]["config"]),
        conda:
            "../../envs/environment.yaml"
        params:
            cfg=lambda w: as_json(LESAM_RUNS[w.run]["config"]),
            outdir=subpath(output.final, parent=True),
            root=config["data"]["root"],
        shell:
            "sharpness train --config '{params.cfg}' --set data_root={params.root}"
            " --out {params.outdir} --threads {threads} > {log} 2>&1"

    rule lesam_glmc:
        input:
            lambda w: lesam_data(LESAM_GLMC[w.run]["config"]),
        output:
            final=f"{LESAM_RES}/glmc/{{run}}/final.json",
        log:
            "logs/lesam/glmc_{run}.log",
        benchmark:
            "benchmarks/results/lesam/glmc_{run}.tsv"
        wildcard_constraints:
            run="|".join(map(re.escape, LESAM_GLMC)) or "NONE",
        threads: 1
        resources:
            mem_mb=4000,
            runtime=30,
            gpu=lambda w: lesam_gpu(LESAM_GLMC[w.run]["config"]),
        conda:
            "../../envs/environment.yaml"
        params:
            settings=LESAM_JSON,
            outdir=subpath(output.final, parent=True),
        shell:
            "sharpness lesam glmc --params '{params.settings}' --run {wildcards.run}"
            " --out {params.outdir} --threads {threads} > {log} 2>&1"

    rule lesam_signal:
        input:
            lambda w: lesam_data(LESAM_SIGNAL[w.run]["config"]),
        output:
            rows=f"{LESAM_RES}/signal/{{run}}/signal.jsonl",
        log:
            "logs/lesam/signal_{run}.log",
        benchmark:
            "benchmarks/results/lesam/signal_{run}.tsv"
        wildcard_constraints:
            run="|".join(map(re.escape, LESAM_SIGNAL)) or "NONE",
        threads: 1
        resources:
            mem_mb=4000,
            runtime=30,
            gpu=lambda w: lesam_gpu(LESAM_SIGNAL[w.run]["config"]),
        conda:
            "../../envs/environment.yaml"
        params:
            settings=LESAM_JSON,
            outdir=subpath(output.rows, parent=True),
        shell:
            "sharpness lesam signal --params '{params.settings}' --run {wildcards.run}"
            " --out {params.outdir} --threads {threads} > {log} 2>&1"

    LESAM_EVAL_ITEM = {
        "robustness": "table_robustness",
        "domain_gen": "table_domain_gen",
        "flatness": "fig_flatness",
        "cost": "table_cost",
    }

    rule lesam_eval:
        input:
            lambda w: lesam_runs_of(*lesam_item_groups(LESAM_EVAL_ITEM[w.what])),
        output:
            f"{LESAM_RES}/eval/{{what}}.json",
        log:
            "logs/lesam/eval_{what}.log",
        benchmark:
            "benchmarks/results/lesam/eval_{what}.tsv"
        wildcard_constraints:
            what="robustness|domain_gen|flatness|cost",
        threads: 1
        resources:
            mem_mb=4000,
            runtime=60,
            gpu=lambda w: lesam_gpu(LESAM["base"]) if w.what == "cost" else 0,
        conda:
            "../../envs/environment.yaml"
        params:
            settings=LESAM_JSON,
        shell:
            "sharpness lesam eval {wildcards.what} --params '{params.settings}' --out {output}"
            " --threads {threads} > {log} 2>&1"

    def lesam_build_inputs(wildcards):
        item = wildcards.item
        if item == "table_long_tail":
            return [f"{LESAM_RES}/glmc/{rid}/final.json" for rid in LESAM_GLMC]
        if item == "fig_signal":
            return [f"{LESAM_RES}/signal/{lab}/signal.jsonl" for lab in LESAM_SIGNAL]
        evals = {v: k for k, v in LESAM_EVAL_ITEM.items()}
        if item in evals:
            return [f"{LESAM_RES}/eval/{evals[item]}.json"]
        return lesam_runs_of(*lesam_item_groups(item))

    rule lesam_table:
        input:
            lesam_build_inputs,
        output:
            md="figures/lesam/{item}.md",
            tex="figures/lesam/{item}.tex",
            csv="figures/lesam/{item}.csv",
        log:
            "logs/lesam/build_{item}.log",
        benchmark:
            "benchmarks/results/lesam/build_{item}.tsv"
        wildcard_constraints:
            item="|".join(LESAM_TABLES),
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        conda:
            "../../envs/environment.yaml"
        params:
            settings=LESAM_JSON,
        shell:
            "sharpness lesam build {wildcards.item} --params '{params.settings}'"
            " --out {output.md} > {log} 2>&1"

    rule lesam_figure:
        input:
            lesam_build_inputs,
        output:
            pdf="figures/lesam/{item}.pdf",
            png="figures/lesam/{item}.png",
            csv="figures/lesam/{item}.csv",
        log:
            "logs/lesam/build_{item}.log",
        benchmark:
            "benchmarks/results/lesam/build_{item}.tsv"
        wildcard_constraints:
            item="|".join(LESAM_FIGURES),
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        conda:
            "../../envs/environment.yaml"
        params:
            settings=LESAM_JSON,
        shell:
            "sharpness lesam build {wildcards.item} --params '{params.settings}'"
            " --out {output.pdf} > {log} 2>&1"

    rule lesam_all:
        input:
            expand("figures/lesam/{item}.md", item=LESAM_TABLES),
            expand("figures/lesam/{item}.pdf", item=LESAM_FIGURES),

    ALL_TARGETS.extend(expand("figures/lesam/{item}.md", item=LESAM_TABLES))
    ALL_TARGETS.extend(expand("figures/lesam/{item}.pdf", item=LESAM_FIGURES))
