"""A plan written out: the config overlay ``snakemake --configfile`` takes, the JSON record
beside it, and the Markdown table ``sharpness plan`` prints (the plan itself is made by
:func:`sharpness.planning.claims_plan.make_plan`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sharpness.cost.price import hours_text
from sharpness.errors import ConfigError
from sharpness.io import atomic_write_text
from sharpness.mappings import deep_merge
from sharpness.planning.claims_plan import ClaimLine, Plan
from sharpness.planning.spend import SD_ONLY, leftover


def overlay(record: Mapping[str, Any], plan_file: str) -> dict[str, Any]:
    """The config overlay of a plan: its ``plan`` section (id, record file, targets), the
    seed lists it runs, nested as the config nests them, and the restriction of the lesam
    groups and items to the runs it bought (:func:`sharpness.planning.restrict.lesam_restriction`), so that it builds
    exactly the runs it priced."""
    out: dict[str, Any] = {"plan": {"id": record["id"], "file": plan_file,
                                    "targets": list(record["targets"])}}
    for dotted, seeds in record["seeds"].items():
        node = out
        keys = dotted.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = list(seeds)
    return deep_merge(out, record.get("restrict") or {})


def record_path(out: str | Path) -> Path:
    """Where the record of the plan whose overlay is ``out`` goes: ``<out stem>.json``
    beside it. An overlay named ``.json`` is refused (the record would overwrite it): the
    command asks before it plans, the writer again before it writes."""
    out = Path(out)
    if out.suffix == ".json":
        raise ConfigError(f"--out {out}: the plan's record is written beside the overlay as "
                          "<name>.json; name the overlay .yaml (plans/plan.yaml)")
    return out.with_suffix(".json")


def write_plan(record: Mapping[str, Any], out: str | Path) -> tuple[Path, Path]:
    """Write ``<out>`` (the config overlay, YAML) and ``<out stem>.json`` (the record)."""
    out, record_file = Path(out), record_path(out)
    head = (f"# GPU-budget plan {record['id']} ({record['budget_gpu_hours']:g} GPU-hours, "
            f"written by `sharpness plan`). Run it over the profile it was made from:\n"
            f"#   snakemake --cores all --configfile "
            f"{' '.join(record['configfiles'])} {out}\n")
    atomic_write_text(record_file, json.dumps(record, indent=1, default=str) + "\n")
    atomic_write_text(out, head + yaml.safe_dump(overlay(record, str(record_file)),
                                                 sort_keys=False))
    return out, record_file


def by_reading(settled: list[ClaimLine]) -> str:
    """How many settled seeded claims reach their power only under the SD reading."""
    sd_only = [ln.claim for ln in settled if ln.basis.startswith(SD_ONLY)]
    return (f" ({len(sd_only)} of them only under the SD reading of the cited ±, the budget "
            f"allowing no more seeds: {', '.join(sd_only)})" if sd_only else "")


def render(plan: Plan, limit_left_out: int | None = None,
           totals: list[tuple[str, float, float, bool]] | None = None) -> str:
    """The plan as Markdown: per claim its runs, seeds, price with its basis (at expected
    steps with ``(≤ Y at the step cap)`` beside it; ``≤ X``: at the caps, an upper limit),
    effect size with its source and power; totals (``(what, hours, at the caps, bound)``),
    targets, what the rest would add. The budget is spent at the expected prices."""
    hours = hours_text

    def capped(ln: ClaimLine) -> bool:  # every run of the claim priced at its caps
        return ln.bound and ln.cap_hours <= ln.gpu_hours

    def seeds(ln: ClaimLine) -> str:
        counts = sorted({len(v) for v in ln.seeds.values()})
        return "/".join(map(str, counts)) if counts else "–"

    def row(ln: ClaimLine, added: str) -> str:
        return (f"| {ln.claim} | {ln.runs} | {seeds(ln)} | {ln.spread or '–'} | "
                f"{hours(ln.gpu_hours, ln.bound, ln.cap_hours)} ({ln.hours_source}) | {added} | "
                f"{ln.effect or '–'} | {ln.power:.2f} ({ln.basis}) |")

    head = ("| claim | runs | seeds | seed spread (source) | GPU-hours (its runs; basis) | "
            "{added} | effect size (source) | claim-level power |")
    rule = "|---|---:|---:|---|---:|---:|---|---|"
    planned = [ln for ln in plan.lines if ln.planned]
    on_gpu = [ln for ln in planned if ln.settled and ln.runs]
    cpu_only = [ln for ln in planned if ln.settled and not ln.runs]
    sequential = [ln for ln in planned if "sequential" in ln.basis]
    spent = (f"{hours(plan.hours)} GPU-hours expected, at most {hours(plan.cap_hours)} at "
             "the step caps" if hours(plan.cap_hours) != hours(plan.hours)
             else f"{hours(plan.hours, plan.bound)} GPU-hours")
    lines = [f"Plan for {plan.budget:g} GPU-hours, profile `{plan.profile}` ({plan.pricing}).",
             f"Buys the runs of {len(planned)} of {len(plan.lines)} claims: {len(plan.runs)} "
             f"runs, {spent} (each run paid once). Settled "
             f"at their stated power by this GPU budget: {len(on_gpu)} claims"
             f"{by_reading(on_gpu)}; CPU-only "
             f"claims (no GPU run, free): {len(cpu_only)}; bought at the standard's minimum, "
             f"seeds to follow a pilot (sequential): {len(sequential)}.", "",
             head.format(added="added by it"), rule]
    for ln in planned:
        lines.append(row(ln, hours(ln.added_hours, capped(ln))))
    left = sorted((ln for ln in plan.lines if not ln.planned), key=lambda ln: ln.added_hours)
    if left:
        lines += ["", leftover(plan.budget, plan.hours, left)]
        lines += ["", "Left out (the runs it reads that the plan does not hold, at its seeds):",
                  "", head.format(added="would add"), rule]
        for ln in left[:limit_left_out]:
            lines.append(row(ln, hours(ln.added_hours, capped(ln))))
    if totals:
        lines += ["", "Totals, in GPU-hours at the prices above (full-batch eos runs at their "
                      "expected steps, `(≤ Y at the step cap)` beside them; `≤ X`: runs priced "
                      "at their step caps):", ""]
        lines += [f"* {what}: {hours(h, bound, cap)}" for what, h, cap, bound in totals]
    lines += ["", "Targets:", "", *(f"    {t}" for t in plan.targets)]
    return "\n".join(lines)
