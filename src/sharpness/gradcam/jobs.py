"""The Grad-CAM jobs of paper ``minorfirst`` (catalog item ``gradcam``), for the build's plan.

Three rules (:mod:`sharpness.jobs`): ``gradcam_train`` (one job per data set: every optimizer,
init scale and seed, in one process, so the quick profile pays torch's import once per data
set), ``gradcam_maps`` (one job per data set: every model explained on the shared panel) and
``gradcam_figure`` (one job: the grid and the table). Each job reads the part of the config's
``gradcam`` section it uses, from a file under ``results/minorfirst/configs/gradcam/``:

* training: the data set's own entry, stripped to what a run's config takes from it
  (:data:`TRAIN_DATASET_KEYS`), the optimizers' names and hyper-parameters, the init scales,
  the seeds and the ``train`` settings: a label, a background rule, the panel or another data
  set's change reruns no training;
* maps: the data set's entry, the optimizers, init scales, seeds and panel (the maps record
  them all);
* figure: ``{"params": <the whole section>, "maps": ["KEY=FOLDER", ...]}`` (the figure states
  every setting in its record and draws every data set's maps in the section's order: a
  list, as a job file's keys are sorted).

The output layout (:data:`RUNS`, :data:`MAPS`, the figure and table) lives here, once. Pure
Python: importing it never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sharpness.data.registry import preparation_inputs
from sharpness.jobs import Job

#: the study's result folder
ROOT = "results/minorfirst/gradcam"
#: an optimizer's ``runs.json`` of one data set (written once every group of it has trained)
RUNS = ROOT + "/runs/{dataset}/{optimizer}/runs.json"
#: a data set's Grad-CAM maps and background shares
MAPS = ROOT + "/maps/{dataset}/maps.npz"
#: each job's config file (``{step}``: train or maps; the figure's is :data:`FIGURE_CONFIG`)
CONFIG = "results/minorfirst/configs/gradcam/{step}/{dataset}.json"
FIGURE_CONFIG = "results/minorfirst/configs/gradcam/figure.json"
#: the keys of a data set's entry a training run reads (:func:`sharpness.gradcam.study.run_config`)
TRAIN_DATASET_KEYS = ("name", "stand_in", "train_size", "test_size", "data_root")
#: the keys of an optimizer's entry a training run reads
TRAIN_OPTIMIZER_KEYS = ("name", "hparams")
#: the figure's and the table's outputs
FIGURE_OUTPUTS = ("figures/minorfirst/gradcam.pdf", "figures/minorfirst/gradcam.png",
                  "figures/minorfirst/gradcam.csv", "figures/minorfirst/gradcam_table.md",
                  "figures/minorfirst/gradcam_table.csv")


def _pick(entry: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: entry[k] for k in keys if k in entry}


def train_params(section: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """What the training job of ``dataset`` reads (the ``--params`` shape, one data set)."""
    return {"datasets": {dataset: _pick(section["datasets"][dataset], TRAIN_DATASET_KEYS)},
            "optimizers": {k: _pick(v, TRAIN_OPTIMIZER_KEYS)
                           for k, v in section["optimizers"].items()},
            "alphas": section["alphas"], "seeds": section["seeds"], "train": section["train"]}


def maps_params(section: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """What the maps job of ``dataset`` reads and records."""
    return {"datasets": {dataset: section["datasets"][dataset]},
            "optimizers": section["optimizers"], "alphas": section["alphas"],
            "seeds": section["seeds"], "panel": section["panel"]}


def runs_folder(dataset: str) -> str:
    """The folder of ``dataset``'s runs (``gradcam train --out``, ``gradcam maps --runs``):
    one ``<optimizer>/`` folder in it per optimizer."""
    return RUNS.format(dataset=dataset, optimizer="-").rsplit("/", 2)[0]


def maps_folder(dataset: str) -> str:
    """The folder of ``dataset``'s maps (``gradcam maps --out``)."""
    return MAPS.format(dataset=dataset).rsplit("/", 1)[0]


def runs_files(section: Mapping[str, Any], dataset: str) -> tuple[str, ...]:
    """Every optimizer's ``runs.json`` of ``dataset``, in the section's order."""
    return tuple(RUNS.format(dataset=dataset, optimizer=o) for o in section["optimizers"])


def jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every Grad-CAM job of the resolved ``config``."""
    section = config["gradcam"]
    datasets = list(section["datasets"])
    out: list[Job] = []
    for key in datasets:
        path = CONFIG.format(step="train", dataset=key)
        # a downloaded data set is prepared once (data_prepare) before any job reads it
        data = tuple(preparation_inputs(section["datasets"][key]["name"]))
        out.append(Job("gradcam_train", key, train_params(section, key), path,
                       (*data, path), runs_files(section, key), f"train on {key}"))
    for key in datasets:
        path = CONFIG.format(step="maps", dataset=key)
        out.append(Job("gradcam_maps", key, maps_params(section, key), path,
                       (*runs_files(section, key), path), (MAPS.format(dataset=key),),
                       f"maps of {key}"))
    figure = {"params": section, "maps": [f"{key}={maps_folder(key)}" for key in datasets]}
    out.append(Job("gradcam_figure", "gradcam", figure, FIGURE_CONFIG,
                   (*(MAPS.format(dataset=key) for key in datasets), FIGURE_CONFIG),
                   FIGURE_OUTPUTS, "draw the Grad-CAM grid and table"))
    return out
