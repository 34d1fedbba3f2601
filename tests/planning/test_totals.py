"""One total: the README's whole-profile price and the planner's totals are the same sum
(:func:`sharpness.cost.total_row`, each run once), printed together, each saying what it
includes."""

from __future__ import annotations

import re

from sharpness import cost
from sharpness.planning import PROFILE_TOTAL


def _hours(text: str) -> float:
    return float(text.replace(",", ""))


#: a printed total: the expected GPU-hours and, where some run stops before its caps, the
#: hours at the step caps (``≤ X`` alone: every full-batch run priced at its caps)
HOURS = r"(?:≤ )?([\d,.]+)(?: \(≤ ([\d,.]+) at the step cap\))?"


def test_the_readme_price_and_the_plans_whole_profile_total_agree(repo):
    readme = (repo / "README.md").read_text()
    plan = (repo / "docs/planning.md").read_text()
    profile = re.search(HOURS + r" GPU-hours for ([\d,]+) training runs \(" +
                        re.escape(PROFILE_TOTAL), readme)
    totals = re.findall(r"^\* (.+?), ([\d,]+) runs?: " + HOURS + "$", plan, re.M) + \
        re.findall(r"^\* (this plan) \(([\d,]+) runs, each once\): " + HOURS + "$", plan, re.M)
    assert profile and len(totals) == 3, totals
    whole, claims, mine = totals
    assert PROFILE_TOTAL in whole[0] and "README" in whole[0]
    assert (whole[1], whole[2], whole[3]) == (profile.group(3), profile.group(1),
                                              profile.group(2) or "")
    # the whole profile is priced at its configured seeds, the claims at their planned ones
    # (a cited paper-scale spread can ask for more): only this plan is bounded by both
    assert _hours(claims[2]) >= _hours(mine[2]) and _hours(whole[2]) > 0
    caps = [_hours(t[3] or t[2]) for t in totals]  # at the caps: never below the expected
    assert caps[1] >= caps[2]
    assert all(_hours(t[3] or t[2]) >= _hours(t[2]) for t in totals)


def test_the_table_total_is_the_total_row():
    job = cost.Job("p", ["a", "b"], "r", "fcn", "mnist", 1.0, {}, 10, 10, 5, 1.0, 0)
    priced = [cost.Priced(job, 2.0, None), cost.Priced(job, 3.0, None)]
    rows, total = cost.table(priced)
    assert total == cost.total_row(priced) and total.gpu_hours == 5.0 and total.runs == 2
    assert sum(r.gpu_hours for r in rows) == 10.0  # shared runs count in each item's row
