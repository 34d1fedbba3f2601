"""The jobs of paper ``lesam``, for the build's plan (:mod:`sharpness.jobs`).

One job per training run (``lesam_train``), GLMC long-tail run (``lesam_glmc``), signal probe
(``lesam_signal``), evaluation (``lesam_eval``) and table or figure (``lesam_table``,
``lesam_figure``); each with the config file it reads (:func:`sharpness.lesam.steps.job_configs`:
the run list is expanded once, by :mod:`sharpness.lesam.experiments`), its inputs and its
outputs, whose layout is :mod:`sharpness.lesam.experiments`'s patterns. Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sharpness.jobs import Job, Plan
from sharpness.lesam.experiments import (
    EVALUATION,
    GLMC_FINAL,
    SIGNAL_PROBES,
    STEP_CONFIG,
    TRAIN_CONFIG,
    TRAIN_FINAL,
    TRAIN_MODEL,
    glmc_runs,
    output,
    signal_runs,
    training_runs,
)
from sharpness.lesam.steps import (
    EVAL_ITEMS,
    build_evaluation,
    build_runs,
    data_inputs,
    eval_runs,
    job_configs,
    spec_inputs,
)

#: the catalog's lesam tables and figures (a build job each, when the profile lists the item)
TABLES = ("table_cifar", "table_imagenet", "table_transfer", "table_domain_gen",
          "table_robustness", "table_long_tail", "table_cost")
FIGURES = ("fig_flatness", "fig_dynamics", "fig_signal", "fig_ablation")


def item_outputs(item: str) -> tuple[str, ...]:
    """A table's Markdown, LaTeX and CSV, or a figure's PDF, PNG and CSV."""
    stem = f"figures/lesam/{item}"
    kinds = ("md", "tex", "csv") if item in TABLES else ("pdf", "png", "csv")
    return tuple(f"{stem}.{k}" for k in kinds)


def jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every lesam job of the resolved ``config``."""
    section = config["lesam"]
    files = job_configs(section)
    out: list[Job] = []
    for rid, spec in training_runs(section).items():
        path = output(TRAIN_CONFIG, run=rid)
        out.append(Job("lesam_train", rid, files[path], path, (*spec_inputs(spec), path),
                       (output(TRAIN_FINAL, run=rid), output(TRAIN_MODEL, run=rid)),
                       f"train run {rid}"))
    for step, runs, pattern in (("glmc", glmc_runs(section), GLMC_FINAL),
                                ("signal", signal_runs(section), SIGNAL_PROBES)):
        for rid, run in runs.items():
            path = output(STEP_CONFIG, step=step, run=rid)
            out.append(Job(f"lesam_{step}", rid, files[path], path,
                           (*data_inputs(dict(run["config"])), path),
                           (output(pattern, run=rid),), f"{step} run {rid}"))
    items = section.get("items", {})
    for what, item in EVAL_ITEMS.items():
        if item in items:
            path = output(STEP_CONFIG, step="eval", run=what)
            out.append(Job("lesam_eval", what, files[path], path,
                           (*eval_runs(section, what), path),
                           (output(EVALUATION, what=what),), f"evaluate {what}"))
    for item in items:
        if item not in TABLES and item not in FIGURES:
            continue
        path = output(STEP_CONFIG, step="build", run=item)
        rule = "lesam_table" if item in TABLES else "lesam_figure"
        out.append(Job(rule, item, files[path], path,
                       (*build_runs(section, item), *build_evaluation(item), path),
                       item_outputs(item), f"build {item}"))
    return out


@dataclass(frozen=True)
class TrainRun:
    """A ``lesam_train`` job of the plan, as the planner reads it: its group and label (its
    config's ``tags``), its seed, the runs it starts from and its resolved config."""

    group: str
    label: str
    seed: int
    depends: tuple[str, ...]
    config: Mapping[str, Any]


def train_runs(plan: Plan) -> dict[str, TrainRun]:
    """Every ``lesam_train`` job of ``plan`` (in plan order) -> :class:`TrainRun`, read from
    the job itself: its config file's content and, for the runs it starts from, the training
    jobs whose ``final.json`` it takes as inputs (no run list expanded again)."""
    jobs = plan.of_rule("lesam_train")
    made_by = {output(TRAIN_FINAL, run=rid): rid for rid in jobs}
    return {rid: TrainRun(str(job.config["tags"]["group"]), str(job.config["tags"]["label"]),
                          int(job.config["seed"]),
                          tuple(made_by[i] for i in job.inputs if i in made_by), job.config)
            for rid, job in jobs.items()}
