"""The jobs of paper ``eos``, for the build's plan (:mod:`sharpness.jobs`).

One job for the diagonal toy (``eos_toy``), one per setting that runs alone (``eos_setting``,
whether or not a figure draws it), one for the ablation variants when ``eos.ablations.one_job``
runs them together (``eos_ablations``) and one per figure the profile asks for
(``eos_figure``). Each reads the
config file the plan writes under ``results/eos/configs/`` (the toy's section, the setting as
:func:`sharpness.eos.config.expand_settings` made it, ``{name: setting}`` of the variants, or
a figure's ``{"figure", "inputs", "dropped"}``); the data folder is the command line's
``--data-root``, not part of the file. The output layout is stated here and in
:func:`sharpness.eos.config.sweep_path`: the rule file takes its patterns from this module.
Pure Python (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sharpness.eos.config import (
    check_settings,
    dropped_settings,
    expand_settings,
    figure_sweeps,
    figure_targets,
    one_job_ablations,
    setting_data_inputs,
    sweep_path,
)
from sharpness.jobs import Job, Plan

#: where the eos jobs write
RESULTS = "results/eos"
#: the toy's numbers (fig_diagonal draws them)
TOY = f"{RESULTS}/toy/toy.json"
#: a setting's sweep (its only declared output: the flow/ and runs/ folders beside it are
#: not outputs, so a cut setting resumes from its checkpoints)
SWEEP = sweep_path("{setting}", RESULTS)
#: the config files the jobs read (a setting's and a figure's by wildcard)
TOY_CONFIG = f"{RESULTS}/configs/toy.json"
SETTING_CONFIG = f"{RESULTS}/configs/settings/{{setting}}.json"
ABLATIONS_CONFIG = f"{RESULTS}/configs/ablations.json"
FIGURE_CONFIG = f"{RESULTS}/configs/figures/{{fig}}.json"
#: the id of the job that runs the ablation variants together
ABLATIONS = "ablations"


def figure_outputs(fig: str) -> tuple[str, ...]:
    """A figure's PDF, PNG and CSV (``figures/eos/<fig>.*``)."""
    return tuple(f"figures/eos/{fig}.{kind}" for kind in ("pdf", "png", "csv"))


def figure_config(eos: Mapping[str, Any], fig: str) -> dict[str, Any]:
    """What figure ``fig`` is drawn from: the toy's numbers for fig_diagonal, else the sweep
    of every setting it lists; and the settings the profile dropped, which a network figure
    names in its caption."""
    if fig == "fig_diagonal":
        return {"figure": fig, "inputs": [TOY], "dropped": {}}
    return {"figure": fig, "inputs": figure_sweeps(dict(eos), fig, RESULTS),
            "dropped": dropped_settings(dict(eos))}


def check(config: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Every eos setting as the sweep will see it (:func:`sharpness.eos.config.check_settings`)."""
    check_settings(dict(config["eos"]), dict(schema))


def jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every eos job of the resolved ``config``: the toy when it is configured, every setting
    (one job each, or the ablation variants in one), and every figure
    :func:`sharpness.eos.config.figure_targets` names. A setting that no figure draws (one
    the profile drops) has its job too, which ``all`` does not ask for: it runs when its
    sweep is asked for by path."""
    eos = dict(config["eos"])
    settings = expand_settings(eos)
    together = one_job_ablations(eos)
    specs = {fig: figure_config(eos, fig) for fig in
             (target.rsplit("/", 1)[1].removesuffix(".pdf") for target in figure_targets(eos))}
    dropped = dropped_settings(eos)
    out: list[Job] = []
    if eos.get("toy"):
        out.append(Job("eos_toy", "toy", eos["toy"], TOY_CONFIG, (TOY_CONFIG,), (TOY,),
                       "diagonal toy"))
    for name, setting in settings.items():
        if name in together:
            continue
        path = SETTING_CONFIG.format(setting=name)
        out.append(Job("eos_setting", name, setting, path,
                       (*setting_data_inputs(setting), path), (sweep_path(name, RESULTS),),
                       f"setting {name}" + (" (left out of this profile's figures "
                                            "(eos.dropped): runs only when asked for)"
                                            if name in dropped else "")))
    if together:
        data = sorted({p for name in together for p in setting_data_inputs(settings[name])})
        out.append(Job("eos_ablations", ABLATIONS, {name: settings[name] for name in together},
                       ABLATIONS_CONFIG, (*data, ABLATIONS_CONFIG),
                       tuple(sweep_path(name, RESULTS) for name in together),
                       f"{len(together)} ablation variants"))
    for fig, spec in specs.items():
        path = FIGURE_CONFIG.format(fig=fig)
        out.append(Job("eos_figure", fig, spec, path, (*spec["inputs"], path),
                       figure_outputs(fig), f"figure {fig}"))
    return out


def planned_settings(plan: Plan) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every eos setting ``plan`` runs -> (the key of the job that runs it, the setting as
    its config file holds it): each ``eos_setting`` job, then the variants of the
    ``eos_ablations`` job."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, job in plan.of_rule("eos_setting").items():
        out[name] = (job.key, job.config)
    for job in plan.of_rule("eos_ablations").values():
        out.update({name: (job.key, setting) for name, setting in job.config.items()})
    return out


def drawn_by(plan: Plan) -> dict[str, list[str]]:
    """Each eos setting some figure job of ``plan`` draws -> those figures (the ``eos_figure``
    jobs whose inputs hold its sweep), settings in the order the figures first read them."""
    by_sweep = {sweep_path(name, RESULTS): name for name in planned_settings(plan)}
    users: dict[str, list[str]] = {}
    for fig, figure in plan.of_rule("eos_figure").items():
        for name in (by_sweep[i] for i in figure.inputs if i in by_sweep):
            users.setdefault(name, []).append(fig)
    return users
