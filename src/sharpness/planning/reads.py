"""Which lesam runs a claim's predicate reads (``reads.yaml`` beside this module).

A claim buys only the runs its predicate reads. ``reads.yaml`` gives, per claim, selectors
``{group, labels}`` (``labels`` absent: every run of the group; ``exclude``: every run but
those labels; ``param: <name>``: the labels the claim registers in its own ``params[name]``,
e.g. ``ls-ablation``'s ``variants``, so the plan follows the predicate's registration). Groups
are the lesam groups of ``lesam.groups``, plus ``glmc`` (the long-tail runs, by optimizer
label) and ``signal`` (the ``fig_signal`` probe runs). A claim not listed reads every run of
its items.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from typing import Any

import yaml

#: keys a claim's entry in reads.yaml may hold
ENTRY_KEYS = {"runs", "effect", "sd_from", "spread", "units"}
#: keys of one run selector
SELECTOR_KEYS = {"group", "labels", "exclude", "param"}


@functools.lru_cache(maxsize=1)
def reads() -> dict[str, dict[str, Any]]:
    """``reads.yaml``: claim id -> {runs, effect, sd_from, spread, units}."""

    text = resources.files("sharpness.planning").joinpath("reads.yaml").read_text("utf-8")
    data = yaml.safe_load(text) or {}
    for cid, spec in data.items():
        unknown = set(spec) - ENTRY_KEYS
        if unknown:
            raise ValueError(f"sharpness/planning/reads.yaml: {cid}: unknown keys "
                             f"{sorted(unknown)}")
        for sel in spec.get("runs") or []:
            if "group" not in sel or set(sel) - SELECTOR_KEYS:
                raise ValueError(f"sharpness/planning/reads.yaml: {cid}: a run selector needs "
                                 f"a 'group' and only {sorted(SELECTOR_KEYS)}: {sel}")
    return data


def selector_labels(selector: Mapping[str, Any], params: Mapping[str, Any] | None
                    ) -> set[str] | None:
    """The labels one selector names (None: every label of its group)."""
    if "param" in selector:
        name = selector["param"]
        if not params or name not in params:
            raise ValueError(f"sharpness/planning/reads.yaml: a selector reads the claim's "
                             f"params[{name!r}], which the claim does not register")
        return {str(v) for v in params[name]}
    return {str(v) for v in selector["labels"]} if "labels" in selector else None


def reads_run(claim_id: str, group: str, label: str,
              params: Mapping[str, Any] | None = None) -> bool:
    """Whether the claim's predicate reads the lesam run of ``group``/``label`` (``params``:
    the claim's registered params, for a selector that names them)."""
    selectors = reads().get(claim_id, {}).get("runs")
    if selectors is None:
        return True
    for s in selectors:
        labels = selector_labels(s, params)
        if s["group"] == group and (labels is None or label in labels) \
                and label not in s.get("exclude", ()):
            return True
    return False


def run_labels(config: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Every labelled lesam run of ``config`` as the cost model names it -> (group, label):
    the training runs (``lesam.groups``), the long-tail runs (group ``glmc:<factor>``, read by
    a selector of group ``glmc``) and the ``fig_signal`` runs (group ``signal``), read from the
    jobs of the build's plan (:func:`sharpness.jobs.build_plan`): each run's label is its
    config's ``tags.label``."""
    from sharpness.jobs import build_plan  # lazy: the plan's lesam readers
    from sharpness.lesam.jobs import train_runs

    if not config.get("lesam"):
        return {}
    plan = build_plan(config)
    out = {rid: (r.group, r.label) for rid, r in train_runs(plan).items()}
    for rid, job in plan.of_rule("lesam_glmc").items():
        cfg = job.config["config"]
        out[f"glmc/{rid}"] = (f"glmc:{cfg['glmc']['imbalance_factor']:g}", cfg["tags"]["label"])
    for key, job in plan.of_rule("lesam_signal").items():
        out[f"signal/{key}"] = ("signal", job.config["config"]["tags"]["label"])
    return out


def selector_group(group: str) -> str:
    """The group a selector names for a run's group (``glmc:<factor>`` -> ``glmc``)."""
    return group.partition(":")[0]


def comparison_parts(read: set[tuple[str, str]]) -> int:
    """Paired comparisons a claim's rule needs over the (group, label) pairs it reads: one per
    label beyond the first in each group (LE-SAM against each other optimizer of a group, per
    network, data set, domain or imbalance factor); when some group holds a single label (a
    reference run in another group, as the ablation's default LE-SAM), one per label beyond
    the reference over all groups. At least 1."""
    by_group: dict[str, set[str]] = {}
    for group, label in read:
        by_group.setdefault(group, set()).add(label)
    if not by_group:
        return 1
    if all(len(labels) == 1 for labels in by_group.values()):  # one number per group
        return len(by_group)
    if all(len(labels) >= 2 for labels in by_group.values()):
        return max(1, sum(len(labels) - 1 for labels in by_group.values()))
    return max(1, len(read) - 1)
