"""The jobs of paper ``lesam``, for the build's plan (:mod:`sharpness.jobs`).

One job per training run (``lesam_train``), GLMC long-tail run (``lesam_glmc``), signal probe
(``lesam_signal``), evaluation (``lesam_eval``) and table or figure (``lesam_table``,
``lesam_figure``); each with its inputs, its outputs (:mod:`sharpness.lesam.experiments`'s
patterns) and the config file it reads, whose content is made here beside the job:

* a training run's: its run config as :func:`sharpness.train.train` validates it (every key
  of :mod:`sharpness.train.config`, defaults filled, checked once, when the plan is built,
  by :func:`sharpness.lesam.checks.checked_runs`; :func:`run_file_config`): the run list is
  expanded once, by :mod:`sharpness.lesam.experiments`, which resolved its
  hyper-parameters; the data folder is not in it (the job passes it as ``--data-root``);
* a GLMC run's ``{"config": ...}`` and a signal probe's ``{"config": ..., "probe_every":
  ...}``: what ``sharpness lesam glmc|signal --config-file`` runs (its config filled and
  checked the same way);
* an evaluation's and a table's or figure's ``{"params": ..., "runs": [...]}``
  (:func:`sharpness.lesam.steps.step_section` and the run files it reads; a build's also
  ``evaluation``).

The plan writes them (:meth:`sharpness.jobs.Plan.write`). Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sharpness.frozen import thaw
from sharpness.jobs import Job, Plan
from sharpness.lesam.checks import check_section, checked_runs
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
    spec_inputs,
    step_section,
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


def check(config: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """The lesam section as the runs it expands to (:func:`sharpness.lesam.checks.check_section`;
    a source beside every setting in the paper profile)."""
    check_section(dict(config["lesam"]), paper=config.get("profile") == "paper")


def run_file_config(section: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The config file of run ``where`` (``run cifar-sam-s0``, ``glmc run ...``, ``signal
    run ...``): the run as :func:`sharpness.lesam.checks.checked_runs` validated it, once, as
    the engine validates a signed job file (every key there, defaults filled, its
    hyper-parameters as the run list resolved them; a value the engine would refuse stops the
    plan naming the key), less its data folder (the job's ``--data-root``: moving the data
    changes no run's file). A GLMC run's ``glmc`` settings stay beside."""
    run = thaw(checked_runs(section)[where])
    del run["data_root"]
    return run  # type: ignore[no-any-return]


def jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every lesam job of the resolved ``config``, each with its config file's content."""
    section = config["lesam"]
    out: list[Job] = []
    for rid, spec in training_runs(section).items():
        path = output(TRAIN_CONFIG, run=rid)
        out.append(Job("lesam_train", rid, run_file_config(section, f"run {rid}"), path,
                       (*spec_inputs(spec), path),
                       (output(TRAIN_FINAL, run=rid), output(TRAIN_MODEL, run=rid)),
                       f"train run {rid}"))
    for step, runs, pattern in (("glmc", glmc_runs(section), GLMC_FINAL),
                                ("signal", signal_runs(section), SIGNAL_PROBES)):
        for rid, run in runs.items():
            path = output(STEP_CONFIG, step=step, run=rid)
            content = {"config": run_file_config(section, f"{step} run {rid}")}
            if step == "signal":
                content["probe_every"] = run["probe_every"]
            out.append(Job(f"lesam_{step}", rid, content, path,
                           (*data_inputs(dict(run["config"])), path),
                           (output(pattern, run=rid),), f"{step} run {rid}"))
    items = section.get("items", {})
    for what, item in EVAL_ITEMS.items():
        if item in items:
            path = output(STEP_CONFIG, step="eval", run=what)
            runs_read = eval_runs(section, what)
            out.append(Job("lesam_eval", what,
                           {"params": thaw(step_section(section, "eval", item)),
                            "runs": runs_read}, path, (*runs_read, path),
                           (output(EVALUATION, what=what),), f"evaluate {what}"))
    for item in items:
        if item not in TABLES and item not in FIGURES:
            continue
        path = output(STEP_CONFIG, step="build", run=item)
        rule = "lesam_table" if item in TABLES else "lesam_figure"
        runs_read, evaluation = build_runs(section, item), build_evaluation(item)
        content = {"params": thaw(step_section(section, "build", item)), "runs": runs_read,
                   "evaluation": next(iter(evaluation), None)}
        out.append(Job(rule, item, content, path, (*runs_read, *evaluation, path),
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
