"""One Grad-CAM run of the grid, as data: its folder name and its :mod:`sharpness.train`
config, read from the section's entries. Torch-free, so the planner prices a run from the same
config the study trains it with (:func:`sharpness.cost.plan.gradcam_jobs`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sharpness.errors import ConfigError


def run_name(alpha: float, seed: int) -> str:
    """Folder name of one run: ``alpha<a>_seed<s>`` (``a`` written with ``%g``)."""
    return f"alpha{alpha:g}_seed{seed}"


def _entry(params: Mapping[str, Any], section: str, key: str, what: str) -> dict[str, Any]:
    try:
        return dict(params[section][key])
    except KeyError:
        raise ConfigError(f"gradcam: unknown {what} {key!r}; known: "
                          f"{', '.join(params[section])}") from None


def dataset_spec(params: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The config entry of data set ``key`` (error naming the known keys)."""
    return _entry(params, "datasets", key, "data set")


def optimizer_spec(params: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The config entry of optimizer ``key`` (error naming the known keys)."""
    return _entry(params, "optimizers", key, "optimizer")


def stand_ins(spec: Mapping[str, Any]) -> list[str]:
    """``[stand_in]`` for a substituted data set, else ``[]``."""
    return [spec["stand_in"]] if spec.get("stand_in") else []


def run_config(params: Mapping[str, Any], dataset: str, optimizer: str, alpha: float,
               seed: int) -> dict[str, Any]:
    """The :mod:`sharpness.train` config of one run of the grid."""
    ds, opt = dataset_spec(params, dataset), optimizer_spec(params, optimizer)
    cfg = copy.deepcopy(dict(params["train"]))
    cfg["model_kwargs"] = {**cfg.get("model_kwargs", {}), "alpha": float(alpha)}
    cfg.update(dataset=ds["name"], optimizer=opt["name"], opt_hparams=dict(opt.get("hparams", {})),
               seed=int(seed), stand_ins=stand_ins(ds))
    for key in ("train_size", "test_size", "data_root"):
        if ds.get(key) is not None:
            cfg[key] = ds[key]
    return cfg
