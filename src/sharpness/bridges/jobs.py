"""The jobs of the bridges (config section ``bridges``), for the build's plan
(:mod:`sharpness.jobs`).

Each bridge is computed (``bridges_<bridge>_run``: its config section in the file the plan
writes, ``results/bridges/configs/<bridge>.json``) and drawn from its run folder
(``bridges_<bridge>_figure``: its settings are the run's, read from the run's record, so it
reads no config file). The sam_eos run's data folder is the command line's ``--data-root``,
not part of its file. The output layout of both bridges is stated here; the rule file takes
it from the plan. Pure Python (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sharpness.eos.config import setting_data_inputs
from sharpness.eos.setting import SETTING_DEFAULTS
from sharpness.errors import ConfigError
from sharpness.jobs import Job
from sharpness.models import model_problem

#: where the bridge runs write, one folder a bridge
RESULTS = "results/bridges"
#: the bridges, in the order they are built: (config section, command-line name)
BRIDGES = (("lesam_diagonal", "lesam-diagonal"), ("sam_eos", "sam-eos"))


def config_file(bridge: str) -> str:
    """The run's config file (its section of ``bridges``)."""
    return f"{RESULTS}/configs/{bridge}.json"


def run_outputs(bridge: str) -> tuple[str, ...]:
    """What a bridge's run job declares: lesam_diagonal's arrays and summary; sam_eos's
    ``sweep.json`` alone, which it writes last: its flow folder and its run folder per
    optimizer beside it are not outputs, so Snakemake leaves them when it reruns a cut job
    and the sweep resumes from their checkpoints (a forced rerun, which removes the sealed
    ``sweep.json``, starts them over: :mod:`sharpness.runs.restart`), as an eos setting
    does."""
    folder = f"{RESULTS}/{bridge}"
    if bridge == "lesam_diagonal":
        return (f"{folder}/arrays.npz", f"{folder}/summary.json")
    return (f"{folder}/sweep.json",)


def figure_outputs(bridge: str) -> tuple[str, ...]:
    """A bridge figure's PDF, PNG and CSV (``figures/bridges/<bridge>.*``)."""
    return tuple(f"figures/bridges/{bridge}.{kind}" for kind in ("pdf", "png", "csv"))


def check(config: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """The SAM bridge's eos setting names a model that takes its options
    (:func:`sharpness.models.model_problem`); ``ConfigError`` names the key."""
    del schema  # the schema checked each key already
    setting = (config["bridges"].get("sam_eos") or {}).get("setting") or {}
    found = model_problem(setting.get("model", SETTING_DEFAULTS["model"]),
                          setting.get("model_kwargs"))
    if found:
        raise ConfigError(f"config key bridges.sam_eos.setting.{found[0]}: {found[1]}")


def jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every bridges job of the resolved ``config``: a run and a figure per bridge."""
    section = config["bridges"]
    out: list[Job] = []
    for bridge, name in BRIDGES:
        settings = section[bridge]
        path = config_file(bridge)
        data = setting_data_inputs(settings.get("setting", {})) if bridge == "sam_eos" else []
        outputs = run_outputs(bridge)
        out.append(Job(f"bridges_{bridge}_run", bridge, settings, path, (*data, path),
                       outputs, f"compute {name}"))
        out.append(Job(f"bridges_{bridge}_figure", bridge, None, None, (outputs[0],),
                       figure_outputs(bridge), f"draw {name}"))
    return out
