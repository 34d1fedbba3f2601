"""Expected steps of a full-batch eos run: measured step counts scaled to the planned setting.

A full-batch GD run of the eos sweep trains until its loss goal or ``max_steps``; pricing it
at ``max_steps`` prices a run that stops at step 1,500 as one of 100,000. This module
predicts when the goal comes, from the counts of ``eos_steps.yaml`` (runs of the quick and
evidence settings; each entry names how it was measured):

* **P**, the steps at ``eta_c = 2 / s_GF`` to the loss goal: ``t_goal * s_GF / 2``, where
  ``t_goal`` is the gradient flow's time to the goal (GD at ``eta`` follows the flow at
  ``t = step * eta``). It is measured per data set x model x loss at a small train size and
  scaled to the planned one as ``P * (n / n_measured) ** b``; ``b`` is the slope of log P on
  log n over the measured data-size ablation (:func:`power_slope`; 0.29). Width, init scale
  and loss goal are not scaled: the ablations measured wider nets and larger inits reaching
  the goal sooner and a smaller goal later, so the expectation is not a bound, and the cap
  stays stated beside it.
* **A run at factor f = eta / eta_c**: below ``eta_c`` GD follows the flow, ``P / f`` steps
  (each measured run at 0.5-0.85 eta_c took 0-2 % more: ``below_eta_c``); above it the edge of stability slows it,
  ``P / f ** a`` steps, ``a`` the least-squares slope through the origin of ``log(P / steps)``
  on ``log f`` over the measured runs above ``eta_c`` that reached the goal
  (:func:`origin_slope`; 0.77). Above ``goal_reached_up_to`` (4: the largest factor at which
  every measured run reached its goal; at 8 eta_c MSE runs blew up and CE runs ran to their
  caps) a run is priced at its cap. Each run at most its ``max_steps``.
* **The flow**: its RK45 gradients to the goal scale with P (an explicit step is held to
  about ``3 / S`` by stability, so the gradients grow as ``t_goal * S``): the measured
  gradients per step of P times the planned P, at most the flow's ``max_evals``.

A setting with no measured data set x model x loss, or a grid point given as an absolute
``lrs`` value (no factor), is priced at its cap.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from sharpness.eos.setting import resolve_setting

#: where the measured counts live (beside this module)
STEPS_FILE = "eos_steps.yaml"
#: the basis a price at expected steps names
EXPECTED_BASIS = "at expected steps (cost/eos_steps.yaml)"


def power_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` on ``log x`` (``y ~ x ** slope``)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / \
        sum((a - mx) ** 2 for a in lx)


def origin_slope(points: Sequence[Sequence[float]]) -> float:
    """The exponent ``a`` of ``steps = P / f ** a`` that fits ``[f, steps, P]`` points
    best on the log scale (least squares through the origin)."""
    xy = [(math.log(f), math.log(p / s)) for f, s, p in points]
    return sum(x * y for x, y in xy) / sum(x * x for x, _ in xy)


def base_dataset(name: str) -> str:
    """The data set a subset is cut from (``mnist_embedded`` -> ``mnist``)."""
    return name.removesuffix("_embedded")


@dataclass(frozen=True)
class StepModel:
    """Measured P per data set x model x loss and the two fitted exponents."""

    entries: tuple[Mapping[str, Any], ...]
    size_exponent: float  # b of P ~ n ** b
    eos_exponent: float   # a of steps = P / f ** a above eta_c
    goal_reached_up_to: float = math.inf  # a run at a larger factor is priced at its cap

    def measured(self, setting: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The entry measured for ``setting``'s data set x model x loss, if any."""
        key = (base_dataset(str(setting.get("dataset"))), setting.get("model"),
               setting.get("loss", "mse"))
        return next((e for e in self.entries
                     if (e["dataset"], e["model"], e["loss"]) == key), None)

    def steps_at_eta_c(self, entry: Mapping[str, Any], n_train: int) -> float:
        """P of ``entry`` scaled to ``n_train`` examples."""
        return float(entry["P"]) * (n_train / float(entry["train_size"])) ** self.size_exponent

    def run_steps(self, p: float, factor: float, cap: int) -> int:
        """Expected steps of one GD run at ``factor`` x eta_c: ``P / f`` below eta_c,
        ``P / f ** a`` above it, at most ``cap``; ``cap`` above ``goal_reached_up_to``."""
        if factor > self.goal_reached_up_to:
            return int(cap)
        exponent = 1.0 if factor <= 1.0 else self.eos_exponent
        return min(int(cap), math.ceil(p / factor ** exponent))

    def flow_gradients(self, entry: Mapping[str, Any], p: float, cap: float) -> float:
        """Expected RK45 gradients of the flow at P = ``p`` (``cap`` when none measured)."""
        if entry.get("flow_gradients") is None:
            return float(cap)
        return min(float(cap), float(entry["flow_gradients"]) / float(entry["P"]) * p)


def model_from(data: Mapping[str, Any], where: str = STEPS_FILE) -> StepModel:
    """The :class:`StepModel` of the parsed counts ``data`` (a clear error naming ``where``
    and the key when a part is missing)."""
    try:
        sizes = data["data_size"]
        return StepModel(tuple(data["settings"]),
                         power_slope(sizes["train_size"], sizes["P"]),
                         origin_slope(data["above_eta_c"]), float(data["goal_reached_up_to"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        raise ValueError(f"{where}: needs settings, data_size.train_size/P, above_eta_c "
                         f"([factor, steps, P] rows) and goal_reached_up_to "
                         f"({type(err).__name__}: {err})") from err


@functools.cache
def default_model() -> StepModel:
    """The model of the packaged ``eos_steps.yaml``."""
    text = resources.files("sharpness.cost").joinpath(STEPS_FILE).read_text("utf-8")
    return model_from(yaml.safe_load(text) or {})


@dataclass(frozen=True)
class Expected:
    """Expected steps and extra full-set passes of one setting's sweep, and the measurement
    they were scaled from (``note``)."""

    steps: int
    lanczos_passes: float
    flow_passes: float
    note: str


def expected_sweep(setting: Mapping[str, Any], n_train: int, lanczos_per_check: float,
                   model: StepModel | None = None) -> Expected | None:
    """Expected GD steps (every factor of ``lr_factors``, each at most ``max_steps``), their
    Lanczos passes (``lanczos_per_check`` per ``sharpness_every`` steps) and the flow's
    passes, for ``setting`` at ``n_train`` examples; None when nothing measured matches
    (the sweep is then priced at its caps). A key ``setting`` leaves out counts at the
    value the run uses (:func:`sharpness.eos.setting.resolve_setting`)."""
    model = model or default_model()
    setting = resolve_setting(dict(setting))
    entry = model.measured(setting)
    if entry is None:
        return None
    p = model.steps_at_eta_c(entry, n_train)
    cap = int(setting["max_steps"])
    every = setting["sharpness_every"] or 0
    runs = [model.run_steps(p, float(f), cap) for f in setting["lr_factors"]]
    runs += [cap] * len(setting["lrs"])  # absolute rates: no factor, priced at the cap
    lanczos = sum(s // every for s in runs) * lanczos_per_check if every else 0.0
    flow = model.flow_gradients(entry, p, float(setting["flow"]["max_evals"]))
    return Expected(sum(runs), lanczos, flow,
                    f"expected {sum(runs):,} steps: P = {p:,.0f} at eta_c, scaled from "
                    f"{entry['dataset']} {entry['model']} {entry['loss']} at "
                    f"n = {entry['train_size']}")
