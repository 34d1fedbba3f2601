"""Diagonal linear networks under GD and SAM: discrete optimizers, flows, closed forms, max-margin.

The engine behind the ``minorfirst`` figures. Everything is computed three ways where possible
(closed form, ODE flow with ``solve_ivp``, discrete optimizer) so that each derivation carries a
numerical certificate. See ``docs/api_diagonal.md`` for an example.
"""

from sharpness.diagonal.closed_form import (
    l1_original,
    l1_rescaled,
    linf_blowup_times,
    linf_limit,
    linf_predictor,
    linf_weight,
    linf_zero_times,
)
from sharpness.diagonal.discrete import Trajectory, sam_step, simulate
from sharpness.diagonal.flows import FlowResult, flow_field, integrate_flow
from sharpness.diagonal.maxmargin import cosine, l1_max_margin, l2_max_margin
from sharpness.diagonal.model import (
    METHODS,
    Dataset,
    gaussian_classes,
    grad,
    init_batch,
    init_theta,
    loss,
    margins,
    perturbation,
    predictor,
    sam_direction,
    single_example,
)
from sharpness.diagonal.regimes import (
    REGIMES,
    RegimeInfo,
    classify_regime,
    dominant,
    dominant_sequence,
    refine_boundary,
    regime_changes,
    shares,
)

__all__ = [
    "METHODS", "REGIMES", "Dataset", "FlowResult", "RegimeInfo", "Trajectory",
    "classify_regime", "cosine", "dominant", "dominant_sequence", "flow_field",
    "gaussian_classes", "grad", "init_batch", "init_theta", "integrate_flow",
    "l1_max_margin", "l1_original", "l1_rescaled", "l2_max_margin", "linf_blowup_times",
    "linf_limit", "linf_predictor", "linf_weight", "linf_zero_times", "loss", "margins",
    "perturbation", "predictor", "refine_boundary", "regime_changes", "sam_direction",
    "sam_step", "shares", "simulate", "single_example",
]
