"""The diagonal-network jobs of paper ``minorfirst``, for the build's plan (:mod:`sharpness.jobs`).

Each figure of :data:`FIGURES` is one computation (``minorfirst_diagonal_run``: its numbers
into ``results/minorfirst/<fig>/``) and one drawing (``minorfirst_diagonal_figure``: the PDF,
PNG and CSV under ``figures/minorfirst/``). A run job reads its figure's own config section
from ``results/minorfirst/configs/diagonal/<fig>.json`` (so a setting change reruns that figure
only); a drawing job reads no config file: its settings are the run's record. The figure list
and both jobs' output layout live here, once. Pure Python (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sharpness.errors import ConfigError
from sharpness.jobs import Job

#: every diagonal-network figure of the paper, in the order the workflow lists them
FIGURES: tuple[str, ...] = (
    "l1_maxmargin", "linf_depth", "l2_sequential", "l2_regimes", "l2_limit", "deep_l",
    "multi_example", "flow_vs_discrete", "cnn_synthetic",
)
#: a figure's run folder (``minorfirst run --out``), its config file and its drawn figure
RUN_DIR = "results/minorfirst/{fig}"
CONFIG = "results/minorfirst/configs/diagonal/{fig}.json"
FIGURE = "figures/minorfirst/{fig}.pdf"


def run_outputs(fig: str) -> tuple[str, str]:
    """The run's ``data.npz`` and ``summary.json`` (what its drawing job reads)."""
    folder = RUN_DIR.format(fig=fig)
    return f"{folder}/data.npz", f"{folder}/summary.json"


def figure_outputs(fig: str) -> tuple[str, str, str]:
    """The drawn figure's PDF, PNG and CSV."""
    stem = FIGURE.format(fig=fig)[: -len(".pdf")]
    return f"{stem}.pdf", f"{stem}.png", f"{stem}.csv"


def jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every diagonal-network job of the resolved ``config`` (a run and a drawing per figure
    of :data:`FIGURES`; a ``ConfigError`` names a figure whose section is missing)."""
    section = config["minorfirst"]
    missing = [fig for fig in FIGURES if fig not in section]
    if missing:
        raise ConfigError(f"config key minorfirst: no section for figure(s) "
                          f"{', '.join(missing)} (every one of {', '.join(FIGURES)} is built)")
    out: list[Job] = []
    for fig in FIGURES:
        path = CONFIG.format(fig=fig)
        out.append(Job("minorfirst_diagonal_run", fig, section[fig], path, (path,),
                       run_outputs(fig), f"compute figure {fig}"))
        out.append(Job("minorfirst_diagonal_figure", fig, None, None, run_outputs(fig),
                       figure_outputs(fig), f"draw figure {fig}"))
    return out
