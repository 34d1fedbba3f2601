"""The ``lesam`` section checked as the runs it expands to, with errors that name the key.

The schema (``workflow/config/config.schema.yaml``) checks each part of a run's settings on
its own: the base, a group's overrides, an optimizer entry, the seeds. What only their
combination can get wrong is checked here, when the plan is built
(:func:`sharpness.jobs.check_sections`, called by
:func:`sharpness.jobs.check_workflow_config`): what overrides may set, named optimizer entries
and ``init_from`` that exist, every run's required settings, its model and the model's
options (:func:`sharpness.models.model_problem`), every run as the engine will validate it
(:func:`sharpness.train.config.validate_config`: what only a whole run can get wrong, such
as label smoothing with an MSE loss), and in the paper profile a source beside every
setting. Each run is validated once per process (:func:`checked_runs`), and the plan's job
files hold what that validation returned. Expanding the run list here also resolves every run's
hyper-parameters through its optimizer's spec (the one place:
:func:`sharpness.lesam.experiments.resolved_hparams`, whose ``ConfigError`` names the key).
Pure Python (no torch).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from sharpness.errors import ConfigError
from sharpness.frozen import freeze, thaw
from sharpness.lesam.experiments import (
    canonical,
    glmc_runs,
    missing_sources,
    signal_runs,
    training_runs,
)
from sharpness.models import model_problem
from sharpness.train.config import validate_config

#: run settings a lesam group sets itself (from its optimizer entries, seeds and init_from)
GROUP_SET = {"optimizer": "the group's `optimizers` entries",
             "opt_hparams": "lesam.optimizers and the entries' `hparams`",
             "seed": "the group's `seeds`", "init_from": "the group's `init_from`",
             "tags": "the group's name and its entries' labels"}


def check_section(section: dict[str, Any], paper: bool = False) -> None:
    """The lesam section as runs (:func:`checked_runs`) and, in the paper profile
    (``paper``), a source for every setting."""
    checked_runs(section)
    if paper:
        unsourced = missing_sources(section)
        if unsourced:
            raise ConfigError("config key lesam: settings without a source (add `source:` "
                              "beside them in the config):\n  " + "\n  ".join(unsourced))


def checked_runs(section: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """Every run of the section as the engine validates it, by ``"<kind> <id>"`` (``run
    cifar-sam-s0``, ``glmc run ...``, ``signal run ...``): what overrides may set, named
    optimizers and ``init_from`` that exist, every run's required settings, its model's
    options, then the run itself through :func:`sharpness.train.config.validate_config`
    (every key there, defaults filled, hyper-parameters as the run list resolved them; a GLMC
    run's ``glmc`` settings beside). Checked once per process and section, read-only: the
    plan's job files are these configs (:func:`sharpness.lesam.jobs.run_file_config`)."""
    return _checked(canonical(section))


@lru_cache(maxsize=16)
def _checked(text: str) -> Mapping[str, Mapping[str, Any]]:
    section = json.loads(text)
    studies = {f"lesam.groups.{name}": spec for name, spec in section["groups"].items()}
    studies.update({f"lesam.{key}": section[key] for key in ("glmc", "signal")
                    if section.get(key)})
    for where, spec in studies.items():
        for key in spec.get("overrides") or {}:
            if key in GROUP_SET:
                raise ConfigError(f"config key {where}.overrides.{key}: set per run by "
                                  f"{GROUP_SET[key]}, not by overrides")
        for index, entry in enumerate(spec["optimizers"]):
            if isinstance(entry, str) and entry not in section["optimizers"]:
                raise ConfigError(f"config key {where}.optimizers[{index}]: {entry!r} is not "
                                  f"in lesam.optimizers (known: {', '.join(section['optimizers'])})")
    for name, spec in section["groups"].items():
        if spec.get("init_from"):
            group, label = spec["init_from"]
            labels = group_labels(section, group)
            if label not in labels:
                raise ConfigError(f"config key lesam.groups.{name}.init_from: no label "
                                  f"{label!r} in group {group!r} (known: {sorted(labels)})")
    runs = {f"run {rid}": (f"lesam.groups.{r['group']}", r["config"])
            for rid, r in training_runs(section).items()}
    runs.update({f"glmc run {rid}": ("lesam.glmc", r["config"])
                 for rid, r in glmc_runs(section).items()})
    runs.update({f"signal run {label}": ("lesam.signal", r["config"])
                 for label, r in signal_runs(section).items()})
    checked = {}
    for where, (study, cfg) in runs.items():
        for key in ("dataset", "model"):
            if key not in cfg:
                raise ConfigError(f"config key lesam.base.{key}: required (lesam {where})")
        found = model_problem(cfg["model"], cfg.get("model_kwargs"))
        if found:  # named here, where the run's origin of the setting is known
            key, why = found
            overrides = studies[study].get("overrides") or {}
            origin = f"{study}.overrides" if key in overrides else "lesam.base"
            raise ConfigError(f"config key {origin}.{key}: {why} (lesam {where})")
        run = thaw(cfg)
        glmc = {"glmc": run.pop("glmc")} if "glmc" in run else {}
        try:  # as the engine will: what only a whole run can get wrong
            checked[where] = {**validate_config(run, resolved=True), **glmc}
        except ConfigError as exc:
            raise ConfigError(f"config key lesam.base or {study}.overrides (lesam {where}): "
                              f"{exc}") from None
    return freeze(checked)  # type: ignore[no-any-return]


def group_labels(section: dict[str, Any], group: str) -> set[str]:
    """The labels of group ``group``'s optimizer entries (``ConfigError`` when it has none)."""
    spec = section["groups"].get(group)
    if spec is None:
        raise ConfigError(f"config key lesam.groups: no group {group!r} for init_from "
                          f"(known: {sorted(section['groups'])})")
    return {e if isinstance(e, str) else e["label"] for e in spec["optimizers"]}
