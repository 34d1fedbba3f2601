"""What each lesam workflow step needs: its inputs and the part of the section it reads.

The rule file (``workflow/rules/lesam.smk``) calls these at parse time to give each job its
inputs (the runs it starts from, its data, the ImageNet check), to stop the plan when a
user-provided data set is missing, and to pass each step only the settings it reads
(:func:`step_section`), so that a setting change reruns only what reads it. Pure Python (no
torch import), like :mod:`sharpness.lesam.experiments`, whose runs it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sharpness.data.registry import preparation_inputs
from sharpness.launch import gpus_requested
from sharpness.lesam.experiments import (
    EVALUATION,
    GLMC_FINAL,
    RESULTS,
    SIGNAL_PROBES,
    TRAIN_FINAL,
    base_config,
    glmc_runs,
    optimizer_hparams,
    output,
    signal_runs,
    training_runs,
)
from sharpness.mappings import deep_merge

#: the ImageNet folder check every ImageNet run waits for
IMAGENET_CHECK = f"{RESULTS}/imagenet_check.json"
EVAL_ITEMS = {"robustness": "table_robustness", "domain_gen": "table_domain_gen",
              "flatness": "fig_flatness", "cost": "table_cost"}
#: items drawn from their evaluation file alone (the robustness and domain tables also read
#: their runs' records, for the settings and sources their captions name)
EVALUATION_ONLY = ("fig_flatness", "table_cost")


def data_inputs(cfg: dict[str, Any]) -> list[str]:
    """The data-preparation output a run needs (the registry's answer: none for the committed
    embedded sets, nor for ImageNet/PACS/VLCS, which are user-provided and checked by their
    own step)."""
    return preparation_inputs(cfg["dataset"])


def user_data_problem(data: dict[str, Any], cfg: dict[str, Any]) -> str | None:
    """Why a run's user-provided data set (ImageNet, PACS, VLCS) is not usable, or None.

    Checked when the workflow plans its jobs, so a missing folder stops the run before any
    job starts (never after hours of other jobs), with what to put where.
    """
    name = cfg["dataset"]
    if name == "imagenet":
        path = data.get("imagenet")
        if not path:
            return ("ImageNet runs need `data.imagenet` in the config: a folder holding "
                    "train/<wnid>/*.JPEG and val/<wnid>/*.JPEG")
        missing = [d for d in ("train", "val") if not (Path(path) / d).is_dir()]
        if missing:
            return (f"data.imagenet = {path} lacks {' and '.join(missing)}/: it must hold "
                    "train/<wnid>/*.JPEG and val/<wnid>/*.JPEG (validation images sorted "
                    "into class folders)")
    base = name.split(":", 1)[0]
    if base in ("pacs", "vlcs"):
        domains = {"pacs": ("art_painting", "cartoon", "photo", "sketch"),
                   "vlcs": ("Caltech101", "LabelMe", "SUN09", "VOC2007")}[base]
        folder = Path(data["root"]) / base
        missing = [d for d in domains if not (folder / d).is_dir()]
        if missing:
            return (f"{base} runs need {folder}/<domain>/<class>/*.jpg; missing domain "
                    f"folders: {', '.join(missing)}")
    return None


def run_inputs(section: dict[str, Any], run: str,
               data: dict[str, Any] | None = None) -> list[str]:
    """Inputs of one training run: the runs it starts from, its data, the ImageNet check.
    With ``data`` (the config's data section) a missing user-provided data set raises
    ``FileNotFoundError`` with what to put where, at planning time."""
    spec = training_runs(section)[run]
    if data is not None:
        problem = user_data_problem(data, spec["config"])
        if problem:
            raise FileNotFoundError(f"lesam run {run}: {problem}")
    return spec_inputs(spec)


def spec_inputs(spec: Mapping[str, Any]) -> list[str]:
    """Inputs of the training run ``spec`` (an entry of the run list): the runs it starts
    from, its data, the ImageNet check."""
    deps = [output(TRAIN_FINAL, run=d) for d in spec["depends"]]
    deps += data_inputs(spec["config"])
    if spec["config"]["dataset"] == "imagenet":
        deps.append(IMAGENET_CHECK)
    return deps


def item_groups(section: dict[str, Any], item: str) -> list[str]:
    """The run groups an item reads."""
    spec = section["items"].get(item, {})
    groups = [row["group"] for row in spec.get("rows", [])]
    groups += [spec[key] for key in ("group", "reference_group") if key in spec]
    groups += list(spec.get("groups", []))  # table_domain_gen on PACS/VLCS: one per source
    return groups


def runs_of(section: dict[str, Any], groups: list[str]) -> list[str]:
    """``final.json`` of every training run of ``groups``."""
    return [output(TRAIN_FINAL, run=rid) for rid, r in training_runs(section).items()
            if r["group"] in groups]


def build_runs(section: dict[str, Any], item: str) -> list[str]:
    """A file of each run folder the table or figure ``item`` draws (``final.json``, a signal
    run's ``signal.jsonl``): the job reads which run each folder holds from its record. None
    for the items drawn from their evaluation file alone (:data:`EVALUATION_ONLY`)."""
    if item == "table_long_tail":
        return [output(GLMC_FINAL, run=rid) for rid in glmc_runs(section)]
    if item == "fig_signal":
        return [output(SIGNAL_PROBES, run=lab) for lab in signal_runs(section)]
    if item in EVALUATION_ONLY:
        return []
    return runs_of(section, item_groups(section, item))


def build_evaluation(item: str) -> list[str]:
    """The evaluation file the table or figure ``item`` draws (none for most items)."""
    evals = {v: k for k, v in EVAL_ITEMS.items()}
    return [output(EVALUATION, what=evals[item])] if item in evals else []


def step_section(section: dict[str, Any], step: str, item: str | None = None) -> dict[str, Any]:
    """The part of the ``lesam`` section that one workflow step reads.

    The rules pass this, not the whole section, as the step's params, so that a setting
    change reruns only the steps that read it: editing ``items.table_robustness`` redoes the
    robustness evaluation and its table, not the GLMC and signal runs. ``step`` is ``glmc``,
    ``signal``, ``eval`` or ``build``; ``eval`` and ``build`` need the ``item`` they serve
    (an ``EVAL_ITEMS`` value or a catalog id) and get the item's own settings alone
    (``items.<item>``): what each run was, they read from the runs' records. The cost
    evaluation, which reads no run, gets its resolved training config and optimizer
    hyper-parameters beside them (``config``, ``optimizer_hparams``)."""
    shared = ("base", "optimizers")
    if step in ("glmc", "signal"):
        return {k: section[k] for k in (*shared, step) if k in section}
    if step not in ("eval", "build"):
        raise ValueError(f"unknown lesam step {step!r}: glmc, signal, eval or build")
    items = section.get("items", {})
    if item not in items:
        raise ValueError(f"lesam.items has no {item!r}; known: {', '.join(items)}")
    spec = dict(items[item])
    if step == "eval" and item == EVAL_ITEMS["cost"]:
        # the cost table times fresh steps of every optimizer it names (no run read): it
        # needs their resolved settings, which no run record holds
        spec["config"] = deep_merge(base_config(section), spec.get("overrides", {}))
        spec["optimizer_hparams"] = {name: optimizer_hparams(section, name)
                                     for name in spec["optimizers"]}
    return spec


def eval_runs(section: dict[str, Any], what: str) -> list[str]:
    """``final.json`` of every run the evaluation ``what`` may read (the runs of its item's
    groups; the job keeps those of the item's optimizers and seeds, by their records)."""
    return runs_of(section, item_groups(section, EVAL_ITEMS[what]))


def gpu(cfg: dict[str, Any]) -> int:
    """GPUs of a training job: its ``gpus`` (default 1), 0 when pinned to the CPU."""
    return gpus_requested(cfg)
