"""Sequential seeds: a group-sequential paired t test with an alpha-spending function.

A trained-network comparison (SAM vs LE-SAM over seeds) is looked at after the minimum seeds
(3) and again after each added seed, up to a stated maximum. Looking more than once at a
fixed 95 % interval would let chance decide more often than 5 %; this module holds the
correction.

Design (state it wherever a verdict quotes it):

* **Looks** at ``n = n_min, n_min + step, ..., n_max`` seeds, fixed before the data
  (:func:`looks`); the information fraction of look ``k`` is ``n_k / n_max``.
* **Alpha spending** (Lan & DeMets, 1983): the two-sided type-I error ``alpha`` is spent over
  the looks by a spending function of the information fraction ``tau``:
  ``obf`` (default), the O'Brien-Fleming-type ``2 - 2 Phi(z_{1-alpha/2} / sqrt(tau))``, which
  spends almost nothing early, so a decision at 3 seeds needs a very large effect and the last
  look is close to the fixed-sample test; or ``pocock``, ``alpha ln(1 + (e - 1) tau)``, which
  spends evenly.
* **Boundaries for the t statistic** ``T_k = mean / (sd / sqrt(n_k))`` of the per-seed paired
  differences (the statistic of the ledger's t interval). The joint null distribution of
  ``(T_1, ..., T_K)`` does not depend on the unknown spread (it is pivotal for normal
  differences), so the boundaries are calibrated exactly, up to Monte-Carlo error, by
  simulating it: at look ``k`` the boundary ``c_k`` is the value that ``|T_k|`` exceeds, among
  the simulated comparisons that had not stopped before, in a fraction
  ``alpha(tau_k) - alpha(tau_{k-1})`` of all of them (:func:`t_boundaries`, 200,000 seeded
  simulations, cached). The normal-theory boundaries of the textbooks would be far too liberal
  at 3 seeds (2 degrees of freedom).
* **Stopping**: stop and decide as soon as ``|T_k| >= c_k`` (the verdict's sign as the ledger
  gives it); at ``n_max`` without crossing, stop with ``inconclusive``. Between looks, seeds
  are added only when the remaining GPU budget can pay for the seeds that the power estimate
  (:func:`seeds_for_power`, at the final boundary) asks for, capped at ``n_max``; stopping for
  budget never rejects, so it cannot raise the type-I error.

:func:`type1_rate` checks the whole rule on simulated null comparisons.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from sharpness.evidence.stats import INCONCLUSIVE, paired_t_power
from sharpness.planning import SPENDING

#: simulated comparisons behind each boundary (Monte-Carlo error of the spent alpha ~ 5e-4)
CALIBRATION_SIMS = 200_000


def looks(n_min: int = 3, n_max: int = 10, step: int = 1) -> tuple[int, ...]:
    """The planned seed counts at which the data are looked at (``n_max`` always included)."""
    if n_min < 2 or n_max < n_min or step < 1:
        raise ValueError(f"sequential seeds: need 2 <= min seeds ({n_min}) <= max seeds "
                         f"({n_max}) and step >= 1 ({step})")
    out = list(range(n_min, n_max + 1, step))
    if out[-1] != n_max:
        out.append(n_max)
    return tuple(out)


def spent(kind: str, alpha: float, tau: float) -> float:
    """Cumulative type-I error spent by information fraction ``tau`` (0 < tau <= 1)."""
    if kind == "obf":
        return float(2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(tau)))
    if kind == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * tau))
    raise ValueError(f"spending function {kind!r}: use one of {SPENDING}")


def _null_t(looks_: Sequence[int], sims: int, seed: int) -> np.ndarray:
    """``(sims, K)`` paired t statistics at each look of simulated null comparisons."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((sims, looks_[-1]))
    csum, csq = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    out = np.empty((sims, len(looks_)))
    for k, n in enumerate(looks_):
        mean = csum[:, n - 1] / n
        var = (csq[:, n - 1] - n * mean * mean) / (n - 1)
        out[:, k] = mean / np.sqrt(np.maximum(var, 1e-300) / n)
    return out


@lru_cache(maxsize=64)
def t_boundaries(looks_: tuple[int, ...], alpha: float = 0.05, kind: str = "obf",
                 sims: int = CALIBRATION_SIMS, seed: int = 20260) -> tuple[float, ...]:
    """Two-sided boundaries ``c_k`` for ``|T_k|`` at each look (see the module docstring)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha} must be in (0, 1)")
    t = np.abs(_null_t(looks_, sims, seed))
    alive = np.ones(sims, dtype=bool)
    bounds, before = [], 0.0
    for k, n in enumerate(looks_):
        now = spent(kind, alpha, n / looks_[-1])
        m = int(math.floor((now - before) * sims))
        before = now
        cand = np.sort(t[alive, k])[::-1]
        c = float(cand[m - 1]) if 0 < m <= len(cand) else math.inf
        # the fixed-sample t test at the full alpha is never less strict than a look
        c = max(c, float(stats.t.ppf(1 - alpha / 2, n - 1)))
        bounds.append(c)
        alive &= t[:, k] < c
    return tuple(bounds)


def seeds_for_power(d: float, looks_: Sequence[int], bounds: Sequence[float],
                    power: float = 0.8) -> int | None:
    """Smallest planned look whose boundary a standardised effect ``d`` crosses with
    probability ``power`` (fixed-sample power at that look's boundary); None if none does."""
    if not math.isfinite(d) or d == 0:
        return None
    for n, c in zip(looks_, bounds, strict=True):
        if paired_t_power(d, n, c) >= power:
            return n
    return None


CI_TEXT = re.compile(r"\((\d+(?:\.\d+)?)% CI, n=(\d+) seeds?\)")


def t_from_row(row: Mapping[str, Any]) -> tuple[float, int]:
    """``(T, n)`` recovered from a ledger row's t interval over seeds: the row's estimate over
    the standard error implied by its ``low``/``high`` at the level and ``n`` its value text
    states (``... (95% CI, n=5 seeds)``, as :meth:`sharpness.evidence.stats.Interval.text`)."""
    match = CI_TEXT.search(str(row.get("value", "")))
    try:
        est, low, high = float(row["estimate"]), float(row["low"]), float(row["high"])
    except (KeyError, TypeError, ValueError):
        est = low = high = math.nan
    if match is None or not all(map(math.isfinite, (est, low, high))):
        raise ValueError(f"claim {row.get('id')}: its ledger row has no t interval over seeds "
                         f"(value {row.get('value')!r}); sequential seeds apply to paired "
                         f"seed comparisons only")
    level, n = float(match.group(1)) / 100, int(match.group(2))
    if n < 2:
        return math.nan, n
    half = (high - low) / 2
    se = half / float(stats.t.ppf(0.5 + level / 2, n - 1))
    if se <= 0:
        return (math.inf if est != 0 else 0.0), n
    return est / se, n


@dataclass
class Look:
    """One look of a sequential comparison, as recorded in the plan."""

    seeds: int
    t: float
    boundary: float
    verdict: str           # the ledger row's verdict at this look
    decision: str          # "decided", "continue", "stop: maximum", "stop: budget"
    seeds_for_power: int | None = None
    note: str = ""


@dataclass
class Design:
    """A group-sequential design: its looks, spending function, alpha and boundaries."""

    n_min: int = 3
    n_max: int = 10
    step: int = 1
    alpha: float = 0.05
    spending: str = "obf"
    power: float = 0.8
    looks: tuple[int, ...] = field(init=False)
    boundaries: tuple[float, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.looks = looks(self.n_min, self.n_max, self.step)
        self.boundaries = t_boundaries(self.looks, self.alpha, self.spending)

    def describe(self) -> str:
        """The design in one sentence, for notes and provenance."""
        name = {"obf": "O'Brien-Fleming-type", "pocock": "Pocock-type"}[self.spending]
        return (f"group-sequential paired t test, Lan-DeMets {name} alpha spending, two-sided "
                f"alpha {self.alpha:g} over looks at {list(self.looks)} seeds, |T| boundaries "
                + ", ".join(f"{c:.2f}" for c in self.boundaries))

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["looks"], d["boundaries"] = list(self.looks), [round(c, 4) for c in self.boundaries]
        d["rule"] = self.describe()
        return d

    def next_look(self, n: int) -> int | None:
        """The planned look after ``n`` seeds (None at or past the last)."""
        later = [m for m in self.looks if m > n]
        return later[0] if later else None

    def boundary(self, n: int) -> float:
        """The boundary of the last planned look at or below ``n`` seeds (``inf`` below the
        first): a look whose sanity check excluded seeds is held to the stricter boundary of
        the look its remaining seeds reach."""
        earlier = [c for m, c in zip(self.looks, self.boundaries, strict=True) if m <= n]
        return earlier[-1] if earlier else math.inf

    def judge(self, t: float, n: int, verdict: str, *, n_used: int | None = None,
              hours_per_seed: float = 0.0, budget_left: float = math.inf,
              d: float | None = None) -> Look:
        """The decision at the look after ``n`` seeds ran, with statistic ``t`` over the
        ``n_used`` of them that passed the sanity check (default all); ``verdict`` is the
        ledger row's own fixed-level verdict, which gives the sign."""

        if n not in self.looks:
            raise ValueError(f"{n} seeds is not a planned look ({list(self.looks)})")
        n_used = n if n_used is None else n_used
        c = self.boundary(n_used)
        if math.isfinite(t) and abs(t) >= c and verdict != INCONCLUSIVE:
            return Look(n, t, c, verdict, "decided")
        if n >= self.n_max:
            return Look(n, t, c, verdict, "stop: maximum",
                        note=f"|T| {abs(t):.2f} < {c:.2f} at the maximum {self.n_max} seeds")
        if d is None:
            d = t / math.sqrt(n_used) if math.isfinite(t) and n_used > 0 else math.nan
        need = seeds_for_power(d, self.looks, self.boundaries, self.power)
        target = min(need, self.n_max) if need is not None else self.n_max
        target = max(target, self.next_look(n) or n)
        cost = (target - n) * hours_per_seed
        if cost > budget_left:
            return Look(n, t, c, verdict, "stop: budget", need,
                        f"the power estimate asks for {target} seeds ({cost:.2f} GPU-h more), "
                        f"the budget has {budget_left:.2f} GPU-h left")
        return Look(n, t, c, verdict, "continue", need)


def type1_rate(design: Design, comparisons: int = 4000, seed: int = 1) -> float:
    """Fraction of simulated null comparisons (normal per-seed differences, mean 0) that the
    rule decides, budget unlimited; independent of the calibration's simulations."""
    t = np.abs(_null_t(design.looks, comparisons, seed + 7919))
    crossed = (t >= np.asarray(design.boundaries)[None, :]).any(axis=1)
    return float(crossed.mean())
