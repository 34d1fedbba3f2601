"""Intervals the claims ledger decides with, counting the right unit.

* :func:`t_interval`: mean and Student-t interval of independent values (e.g. one paired
  difference per seed). With one value there is no interval (``nan`` bounds).
* :func:`bootstrap_interval`: percentile bootstrap of the mean (for larger samples whose
  distribution is far from normal); seeded, so the ledger is reproducible.
* :func:`seed_level_interval`: a two-level (hierarchical) interval. Values that share a seed
  (e.g. the Grad-CAM share of 100 panel images under one trained model) are not independent:
  they are averaged within each seed first and the interval is taken over the seed means,
  so its width reflects seed-to-seed variation, not the number of images.
* :func:`wilson_interval`: the Wilson score interval of a binomial proportion (test error
  on n examples).
* :func:`threshold_test`: the t test, over independent runs, of a per-run statistic against
  a registered bound (on the log scale), with its p-value.
* :func:`count_rule`: the exact binomial test (Clopper–Pearson interval, p-value) of a
  "many settings" claim's share against its registered share.
* :func:`seeds_to_settle`: the paired seeds a t test needs to settle an effect of a given
  size and spread (the power estimate an inconclusive row quotes; public for planners).
* :func:`decide`: the verdict of a directional claim from an interval: ``supported`` only when
  the interval excludes zero in the claimed direction, ``contradicted`` when it excludes zero
  the other way, otherwise ``inconclusive``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive at this scale"
NOT_RUN = "not run in this profile"
VERDICTS = (SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_RUN)


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval over ``n`` units (``nan`` bounds: none)."""

    estimate: float
    low: float
    high: float
    n: int
    level: float = 0.95
    unit: str = "seeds"

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def text(self, digits: int = 3) -> str:
        """``+0.012 [−0.004, +0.028] (95% CI, n=3 seeds)`` or ``+0.012 (n=1 seed, no CI)``."""
        est = f"{self.estimate:+.{digits}f}"
        unit = self.unit if self.n != 1 else self.unit.rstrip("s")
        if not self.has_interval:
            return f"{est} (n={self.n} {unit}, no interval)"
        return (f"{est} [{self.low:+.{digits}f}, {self.high:+.{digits}f}] "
                f"({self.level:.0%} CI, n={self.n} {unit})")


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    return v[np.isfinite(v)]


def t_interval(values: Sequence[float] | np.ndarray, level: float = 0.95,
               unit: str = "seeds") -> Interval:
    """Mean and Student-t interval of the finite ``values`` (independent units)."""
    v = _finite(values)
    n = len(v)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, level, unit)
    mean = float(v.mean())
    if n == 1:
        return Interval(mean, float("nan"), float("nan"), n, level, unit)
    half = float(stats.sem(v) * stats.t.ppf(0.5 + level / 2, n - 1))
    return Interval(mean, mean - half, mean + half, n, level, unit)


def bootstrap_interval(values: Sequence[float] | np.ndarray, level: float = 0.95,
                       resamples: int = 5000, seed: int = 0, unit: str = "seeds") -> Interval:
    """Mean and percentile-bootstrap interval (``resamples`` draws, fixed ``seed``)."""
    v = _finite(values)
    n = len(v)
    if n < 2:
        return t_interval(v, level, unit)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    low, high = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
    return Interval(float(v.mean()), float(low), float(high), n, level, unit)


def seed_level_interval(groups: Mapping[object, Sequence[float]] | Sequence[Sequence[float]],
                        level: float = 0.95) -> tuple[Interval, list[float]]:
    """Average the finite values within each group (seed), then a t interval over the group
    means. Returns the interval and the per-group means (``nan`` for an empty group, which is
    left out)."""
    items = groups.values() if isinstance(groups, Mapping) else groups
    means = []
    for values in items:
        v = _finite(values)
        means.append(float(v.mean()) if len(v) else float("nan"))
    return t_interval(means, level, unit="seeds"), means


def paired_differences(a: Mapping[object, float], b: Mapping[object, float]) -> list[float]:
    """``a[k] - b[k]`` over the keys (seeds) both have, in sorted key order."""
    keys = sorted(set(a) & set(b), key=str)
    return [float(a[k]) - float(b[k]) for k in keys]


def wilson_interval(errors: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``errors / n`` (``errors`` may be a fraction x n)."""
    if n <= 0:
        return float("nan"), float("nan")
    z = float(stats.norm.ppf(0.5 + level / 2))
    p = errors / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def separated_minimum(errors: Sequence[float], n: int, level: float = 0.95) -> int | None:
    """Index of the lowest error rate when it is an interior point whose Wilson interval lies
    entirely below the intervals of the first and the last entry (errors sorted by eta):
    a U-shape with a best eta that noise cannot explain. None otherwise."""
    if len(errors) < 3:
        return None
    k = int(np.argmin(errors))
    if k in (0, len(errors) - 1):
        return None
    lo_hi = [wilson_interval(e * n, n, level) for e in errors]
    return k if lo_hi[0][0] > lo_hi[k][1] and lo_hi[-1][0] > lo_hi[k][1] else None


def decide(interval: Interval, direction: int = 1) -> str:
    """Verdict of the claim "the quantity is > 0" (``direction=1``) or "< 0" (``-1``)."""
    if not interval.has_interval:
        return INCONCLUSIVE
    low, high = (interval.low, interval.high) if direction > 0 else (-interval.high,
                                                                      -interval.low)
    if low > 0:
        return SUPPORTED
    if high < 0:
        return CONTRADICTED
    return INCONCLUSIVE


def threshold(value: float, bound: float, below: bool = True) -> str:
    """Verdict of a deterministic check ``value < bound`` (``below``) or ``value > bound``."""
    if not math.isfinite(value):
        return INCONCLUSIVE
    ok = value < bound if below else value > bound
    return SUPPORTED if ok else CONTRADICTED


def combine(verdicts: Sequence[str]) -> str:
    """One verdict for a claim made of several comparisons: supported if all are,
    contradicted if any is, otherwise inconclusive."""
    if verdicts and all(v == SUPPORTED for v in verdicts):
        return SUPPORTED
    if CONTRADICTED in verdicts:
        return CONTRADICTED
    return INCONCLUSIVE


#: cap of :func:`seeds_to_settle`: beyond it a difference is, for a replication, not there
MAX_SEEDS = 1000


def paired_t_power(d: float, n: int, crit: float) -> float:
    """Power of a two-sided paired t test with critical value ``crit`` at ``n`` seeds when
    the standardised effect (mean / sd of the differences) is ``d``: the noncentral t mass
    beyond ``±crit`` (exact for normal differences)."""
    nc = abs(d) * math.sqrt(n)
    lower = float(stats.nct.cdf(-crit, n - 1, nc))  # the wrong-sign tail; scipy can give nan
    upper = float(stats.nct.sf(crit, n - 1, nc))
    return min(1.0, upper + (lower if math.isfinite(lower) else 0.0))


def seeds_to_settle(effect: float, sd: float, alpha: float = 0.05, power: float = 0.8,
                    minimum: int = 3, maximum: int = MAX_SEEDS) -> int | None:
    """Paired seeds a two-sided paired t test at level ``alpha`` needs to detect a mean
    difference ``effect`` whose per-seed spread (standard deviation) is ``sd`` with
    probability ``power``.

    Exact for normal differences: the smallest ``n`` (at least ``minimum``, the seed rule of
    the profile) at which the noncentral t distribution with ``n − 1`` degrees of freedom and
    noncentrality ``|effect| √n / sd`` puts ``power`` of its mass beyond the critical value
    ``t_{1−alpha/2, n−1}``. ``None`` when it cannot be said: ``effect`` zero or not finite,
    ``sd`` not finite, or more than ``maximum`` seeds needed. ``sd == 0`` with a non-zero
    effect: ``minimum`` (any interval would exclude 0).

    This is the number the ledger prints for an inconclusive trained-network row, and the one
    a planner (``sharpness plan``) and a sequential-seed loop read: call it with the observed
    paired mean and standard deviation (:func:`observed_effect`).
    """
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"seeds_to_settle: alpha {alpha} and power {power} must be in (0, 1)")
    minimum = max(2, int(minimum))
    if not (math.isfinite(effect) and math.isfinite(sd)) or effect == 0 or sd < 0:
        return None
    if sd == 0:
        return minimum
    d = abs(effect) / sd
    # a normal-approximation start, then walk up to the exact t-test answer
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    n = max(minimum, math.floor((z / d) ** 2))

    def achieved(m: int) -> float:
        return paired_t_power(d, m, float(stats.t.ppf(1 - alpha / 2, m - 1)))

    while n <= maximum:
        if achieved(n) >= power:
            # the normal start can overshoot by one or two: step down while power holds
            while n > minimum and achieved(n - 1) >= power:
                n -= 1
            return n
        n += 1
    return None


def observed_effect(diffs: Sequence[float] | np.ndarray) -> tuple[float, float, int]:
    """``(mean, sd, n)`` of the finite paired differences (``sd`` with ``ddof=1``; ``nan``
    below two values): the inputs :func:`seeds_to_settle` takes."""
    v = _finite(diffs)
    if len(v) == 0:
        return float("nan"), float("nan"), 0
    sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
    return float(v.mean()), sd, len(v)


def t_pvalue(values: Sequence[float] | np.ndarray) -> float:
    """Two-sided p-value of the one-sample t test "mean = 0" on the finite ``values`` (the
    test whose confidence interval :func:`t_interval` gives); ``nan`` below two values or with
    no spread and a zero mean."""
    v = _finite(values)
    if len(v) < 2:
        return float("nan")
    if float(v.std(ddof=1)) == 0.0:
        return 0.0 if float(v.mean()) != 0.0 else float("nan")
    return float(stats.ttest_1samp(v, 0.0).pvalue)


def range_pvalue(values: Sequence[float] | np.ndarray, low: float, high: float
                 ) -> float | None:
    """Two-sided-equivalent p-value of "the mean of ``values`` lies in [``low``, ``high``]"
    (the two one-sided t tests, TOST) or outside it, whichever the data favour: twice the
    smallest of the TOST p-value and the one-sided p-values of "below ``low``" and "above
    ``high``". It is below 1 − level exactly when the t interval at that level lies wholly
    inside (or wholly outside) the range. None below two values or with no spread."""
    v = _finite(values)
    if len(v) < 2 or float(v.std(ddof=1)) == 0.0:
        return None
    mean, se, df = float(v.mean()), float(stats.sem(v)), len(v) - 1
    inside = max(stats.t.sf((mean - low) / se, df), stats.t.sf((high - mean) / se, df))
    below = stats.t.sf((low - mean) / se, df)
    above = stats.t.sf((mean - high) / se, df)
    return float(min(1.0, 2 * min(inside, below, above)))


@dataclass(frozen=True)
class ThresholdTest:
    """The t test of "the typical run's statistic is on the registered side of a bound": its
    verdict, the interval of the mean log statistic minus the log bound, and its two-sided
    p-value."""

    verdict: str
    interval: Interval
    p_value: float | None


def threshold_test(values: Sequence[float] | np.ndarray, bound: float, *, below: bool,
                   margin: float, level: float = 0.95, min_runs: int = 3) -> ThresholdTest:
    """Verdict of "the runs' positive statistic (one value per independent run) lies below
    ``bound``" (``below``) or above it, with a p-value: the Student-t interval over the runs
    of ``log(value) − log(bound)`` (ratios of magnitudes are compared on the log scale, where
    run-to-run spread is about multiplicative). ``supported`` when the interval lies wholly on
    the claimed side, ``contradicted`` when wholly on the other, otherwise (or with fewer than
    ``min_runs`` finite values) ``inconclusive``. A value ≤ 0 is clipped to 1e-300 (its log is
    then far below any bound), a non-finite one is not a run's value and is left out.

    ``margin`` is the smallest effect of interest the claim registers (``params.sesoi``), as a
    ratio: ``supported`` needs the interval wholly beyond ``bound · (1 + margin)`` (above) or
    ``bound / (1 + margin)`` (below), so a tight cluster just past the bound is no verdict;
    ``contradicted`` needs it wholly on the other side of ``bound``; the p-value is that of
    the t test against the shifted bound (the claimed effect's)."""
    v = _finite(values)
    if len(v) == 0 or not (math.isfinite(bound) and bound > 0):
        return ThresholdTest(INCONCLUSIVE, t_interval([], level, "runs"), None)
    logs = np.log(np.maximum(v, 1e-300)) - math.log(bound)
    iv = t_interval(logs, level, "runs")
    if len(v) < min_runs:
        return ThresholdTest(INCONCLUSIVE, iv, None)
    shift = math.log1p(max(0.0, float(margin))) * (-1 if below else 1)
    verdict = decide(iv, -1 if below else 1)
    if verdict == SUPPORTED and not (iv.high < shift if below else iv.low > shift):
        verdict = INCONCLUSIVE  # past the bound, not by the smallest effect of interest
    p = t_pvalue(logs - shift) if verdict != CONTRADICTED else t_pvalue(logs)
    return ThresholdTest(verdict, iv, p if math.isfinite(p) else None)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control over the family
    ``pvalues``, in their order): sorted ascending, the k-th smallest (0-based) is multiplied
    by ``m − k``, made non-decreasing along the order and capped at 1. A non-finite p-value
    stays ``nan`` and is not a member of the family."""
    finite = [(p, i) for i, p in enumerate(pvalues) if math.isfinite(p)]
    out = [float("nan")] * len(pvalues)
    m, running = len(finite), 0.0
    for k, (p, i) in enumerate(sorted(finite)):
        running = max(running, min(1.0, (m - k) * p))
        out[i] = running
    return out


@dataclass(frozen=True)
class CountTest:
    """The exact binomial test of a count row: its verdict, the Clopper–Pearson interval of
    the share and the two-sided p-value (the doubled smaller one-sided exact p-value, the test
    whose acceptance region that interval is)."""

    verdict: str
    low: float
    high: float
    p_value: float | None


def count_rule(ok: int, bad: int, share: float, level: float = 0.95) -> CountTest:
    """Verdict of a claim made for "many settings" (or seeds) from ``ok`` that agree and
    ``bad`` that do not: the exact (Clopper–Pearson) interval at ``level`` of the share
    ``ok / (ok + bad)`` against the registered ``share``: ``supported`` when the whole interval
    lies above it, ``contradicted`` when below, otherwise (or with nothing decided)
    ``inconclusive``. 5 of 5 against 0.5 is inconclusive (p = 0.0625): an exact test does not
    let a handful of seeds decide at a normal approximation's margin."""
    n = ok + bad
    if n == 0:
        return CountTest(INCONCLUSIVE, float("nan"), float("nan"), None)
    test = stats.binomtest(int(ok), int(n), float(share))
    ci = test.proportion_ci(level, method="exact")
    greater = stats.binomtest(int(ok), int(n), float(share), alternative="greater").pvalue
    less = stats.binomtest(int(ok), int(n), float(share), alternative="less").pvalue
    p_value = float(min(1.0, 2 * min(greater, less)))
    low, high = float(ci.low), float(ci.high)
    verdict = SUPPORTED if low > share else CONTRADICTED if high < share else INCONCLUSIVE
    return CountTest(verdict, low, high, p_value)
