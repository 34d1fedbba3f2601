"""The ledger's intervals and decisions, against scipy and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    bootstrap_interval,
    decide,
    paired_differences,
    seed_level_interval,
    t_interval,
    wilson_interval,
)


def test_t_interval_matches_scipy() -> None:
    v = [0.3, 0.5, 0.4, 0.45]
    iv = t_interval(v)
    lo, hi = stats.t.interval(0.95, len(v) - 1, loc=np.mean(v), scale=stats.sem(v))
    assert (iv.low, iv.high, iv.n) == (pytest.approx(lo), pytest.approx(hi), 4)


def test_one_value_has_no_interval_and_is_inconclusive() -> None:
    iv = t_interval([0.7])
    assert not iv.has_interval and decide(iv) == INCONCLUSIVE and "no interval" in iv.text()


@pytest.mark.parametrize(("values", "direction", "verdict"), [
    ([1.0, 1.2, 0.9], 1, SUPPORTED), ([1.0, 1.2, 0.9], -1, CONTRADICTED),
    ([-1.0, -1.2, -0.9], -1, SUPPORTED), ([1.0, -1.2, 0.3], 1, INCONCLUSIVE)])
def test_decide_needs_the_interval_to_exclude_zero(values: list[float], direction: int,
                                                   verdict: str) -> None:
    assert decide(t_interval(values), direction) == verdict


def test_seed_level_interval_counts_seeds_not_images() -> None:
    # 2 seeds x 100 images: per-seed means 0.0 and 0.138; pooled, the t
    # interval over 200 values would exclude 0; over 2 seed means it must not
    rng = np.random.default_rng(0)
    groups = [rng.normal(0.0, 0.01, 100), rng.normal(0.138, 0.01, 100)]
    pooled = t_interval(np.concatenate(groups))
    iv, means = seed_level_interval(groups)
    assert pooled.low > 0 and iv.n == 2 and iv.low < 0 < iv.high
    assert means == pytest.approx([0.0, 0.138], abs=0.005)


def test_seed_level_interval_drops_nan_maps() -> None:
    iv, means = seed_level_interval([[0.1, float("nan"), 0.3], [float("nan")], [0.4]])
    assert means[0] == pytest.approx(0.2) and math.isnan(means[1]) and iv.n == 2


def test_bootstrap_is_reproducible_and_brackets_the_mean() -> None:
    v = np.arange(10.0)
    a, b = bootstrap_interval(v), bootstrap_interval(v)
    assert a == b and a.low < 4.5 < a.high


def test_wilson_against_known_value() -> None:
    lo, hi = wilson_interval(10, 100)
    assert (lo, hi) == (pytest.approx(0.0552, abs=1e-4), pytest.approx(0.1744, abs=1e-4))


def test_paired_differences_use_common_seeds() -> None:
    assert paired_differences({0: 2.0, 1: 3.0, 2: 5.0}, {1: 1.0, 2: 1.0}) == [2.0, 4.0]


def test_observed_effect_feeds_seeds_to_settle() -> None:
    from sharpness.evidence.stats import observed_effect, seeds_to_settle

    mean, sd, n = observed_effect([1.0, 1.1, float("nan")])
    assert (mean, n) == (pytest.approx(1.05), 2) and sd == pytest.approx(0.0707, abs=1e-4)
    assert seeds_to_settle(mean, sd) == 3  # a tight difference: the seed rule's minimum
    mean, sd, _ = observed_effect([1.0, -0.5, 2.0])
    assert seeds_to_settle(mean, sd) > 10


@pytest.mark.parametrize(("effect", "n"), [(1.0, 10), (0.5, 34), (-0.8, 15)])
def test_seeds_to_settle_matches_the_paired_t_test_table(effect: float, n: int) -> None:
    """Cohen's paired-t sample sizes (two-sided 5 %, 80 % power): d=1 → 10, 0.5 → 34,
    0.8 → 15; checked here against the achieved power at n and n − 1."""
    from sharpness.evidence.stats import seeds_to_settle

    got = seeds_to_settle(effect, 1.0)
    assert got == n

    def achieved(m: int) -> float:
        crit = stats.t.ppf(0.975, m - 1)
        nc = abs(effect) * math.sqrt(m)
        return stats.nct.sf(crit, m - 1, nc) + stats.nct.cdf(-crit, m - 1, nc)

    assert achieved(n) >= 0.8 > achieved(n - 1)


def test_seeds_to_settle_edges() -> None:
    from sharpness.evidence.stats import seeds_to_settle

    assert seeds_to_settle(1.0, 0.0) == 3 and seeds_to_settle(1.0, 0.0, minimum=5) == 5
    assert seeds_to_settle(0.0, 1.0) is None and seeds_to_settle(1e-3, 1.0) is None
    assert seeds_to_settle(float("nan"), 1.0) is None
    assert seeds_to_settle(10.0, 1.0, minimum=5) == 5
    with pytest.raises(ValueError, match="alpha"):
        seeds_to_settle(1.0, 1.0, alpha=1.5)


def test_range_pvalue_matches_the_interval_inside_a_range() -> None:
    from sharpness.evidence.stats import range_pvalue, t_interval

    inside = [0.69, 0.70, 0.71, 0.695]
    iv = t_interval(inside, 0.95)
    p = range_pvalue(inside, 0.4, 0.9)
    assert iv.low > 0.4 and iv.high < 0.9 and p is not None and p < 0.05
    wide = [0.3, 0.9, 0.6]
    assert range_pvalue(wide, 0.4, 0.9) > 0.05  # the interval straddles an end
    assert range_pvalue([1.2, 1.25, 1.22], 0.4, 0.9) < 0.05  # wholly above
    assert range_pvalue([0.5, 0.5], 0.4, 0.9) is None
