"""The six `eos` figures, one module each, drawn from the files the compute rules wrote (never
retraining): ``toy.json`` (:func:`sharpness.eos.toy.toy_study`) for ``fig_diagonal``, and one
``sweep.json`` per setting (:func:`sharpness.eos.sweep.run_sweep`, which embeds the flow summary)
with ``flow/flow.npz`` beside it for the others. Each writes its tidy CSV, caption and provenance
through :func:`sharpness.plots.save_figure`.
"""

from __future__ import annotations

from sharpness.eos.figures.ablations import fig_ablations
from sharpness.eos.figures.common import load_sweeps
from sharpness.eos.figures.diagonal import fig_diagonal
from sharpness.eos.figures.measures import fig_measures
from sharpness.eos.figures.phase import fig_phase
from sharpness.eos.figures.test_vs_lr import fig_test_vs_lr
from sharpness.eos.figures.trajectories import fig_trajectories

FIGURES = {"fig_phase": fig_phase, "fig_test_vs_lr": fig_test_vs_lr,
           "fig_trajectories": fig_trajectories, "fig_measures": fig_measures,
           "fig_ablations": fig_ablations}

__all__ = ["FIGURES", "fig_ablations", "fig_diagonal", "fig_measures", "fig_phase",
           "fig_test_vs_lr", "fig_trajectories", "load_sweeps"]
