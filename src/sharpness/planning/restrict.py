"""What a plan restricts in the lesam section: the groups' optimizers and the items' rows,
groups and optimizers it did not buy, as a config overlay, so that the profile with the plan
builds exactly the runs the plan priced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sharpness.jobs import build_plan
from sharpness.lesam.jobs import train_runs

RunKey = tuple[str, str]  # (paper, run): a priced run, as the plan names it


def lesam_restriction(config: Mapping[str, Any], runs: Sequence[RunKey],
                      targets: Sequence[str]) -> dict[str, Any]:
    """The overlay that limits the planned lesam tables and figures to the runs the plan
    bought: each group's optimizer list to the labels planned in it, each targeted item's
    rows, groups and optimizers to those planned (a group with no planned run is dropped from
    its item). Empty when the plan buys whole groups and items."""
    section = config.get("lesam") or {}
    if not section:
        return {}
    known = train_runs(build_plan(config))  # the plan's lesam training jobs
    seeds_of: dict[str, dict[str, set[int]]] = {}  # group -> label -> planned seeds
    for paper, rid in runs:
        if paper == "lesam" and rid in known:
            r = known[rid]
            seeds_of.setdefault(r.group, {}).setdefault(r.label, set()).add(r.seed)
    planned = {g: set(labels) for g, labels in seeds_of.items()}
    groups: dict[str, Any] = {}
    for group, labels in seeds_of.items():
        spec = section["groups"][group]
        keep, changed = [], False
        for e in spec["optimizers"]:
            label = e if isinstance(e, str) else e.get("label", e.get("optimizer"))
            if label not in labels:
                changed = True
                continue
            own = e.get("seeds") if isinstance(e, dict) else None
            if set(own or spec["seeds"]) != labels[label]:  # this label at its planned seeds
                e = {**({"label": e, "optimizer": e} if isinstance(e, str) else e),
                     "seeds": sorted(labels[label])}
                changed = True
            keep.append(e)
        if changed:
            groups[group] = {"optimizers": keep}
    items: dict[str, Any] = {}
    wanted = {t.removeprefix("figures/lesam/").removesuffix(".csv") for t in targets
              if t.startswith("figures/lesam/")}
    for item in sorted(wanted & set(section.get("items", {}))):
        spec, change = section["items"][item], {}
        if "rows" in spec:
            rows = [r for r in spec["rows"] if r["group"] in planned]
            if len(rows) < len(spec["rows"]):
                change["rows"] = rows
        if "groups" in spec:
            kept = [g for g in spec["groups"] if g in planned]
            if len(kept) < len(spec["groups"]):
                change["groups"] = kept
        if "optimizers" in spec and spec.get("group") in planned:
            labels = planned[spec["group"]]
            opts = [o for o in spec["optimizers"] if o in labels]
            if len(opts) < len(spec["optimizers"]):
                change["optimizers"] = opts
        if change:
            items[item] = change
    out = {k: v for k, v in (("groups", groups), ("items", items)) if v}
    return {"lesam": out} if out else {}
