"""What a profile or a plan needs on disk: the data sets its runs read and the pretrained
weight files its models load, so that a GPU machine without network can be given them first
(``sharpness data bundle``) and the campaign's preflight can name what is missing.

The runs are those the planner prices (:func:`sharpness.cost.plan_jobs`: every training run
and sweep of the profile); a plan keeps those of its targets, as ``sharpness campaign`` runs
them. The committed CIFAR-10 subset the campaign's preflight step trains on is always
needed (:data:`sharpness.planning.preflight.STEP_CONFIG`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sharpness.config.profiles import load_profile
from sharpness.cost import Job, plan_jobs
from sharpness.data.registry import on_disk
from sharpness.data.weights import weights_for
from sharpness.errors import ConfigError
from sharpness.planning.claims_plan import ITEM_ALIASES
from sharpness.planning.preflight import STEP_CONFIG


@dataclass(frozen=True)
class Needs:
    """The registered data sets (built stand-ins replaced by what they are built from) and
    the pinned weight files a set of runs reads."""

    datasets: tuple[str, ...]
    weights: tuple[str, ...]


def plan_targets(plan: Path) -> tuple[list[str], set[str]]:
    """The profile files and targets of the plan whose overlay is ``plan`` (its record,
    ``<plan>.json``, written beside it by ``sharpness plan``)."""
    record_path = plan.with_suffix(".json")
    try:
        record = json.loads(record_path.read_text())
        return list(record["configfiles"]), set(record["targets"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"--plan {plan}: its record {record_path} is missing or not a "
                          f"plan record ({err})") from err


def in_targets(jobs: Iterable[Job], targets: set[str]) -> list[Job]:
    """The jobs whose items are among a plan's ``targets`` (``figures/<paper>/<item>.csv``)."""
    alias = {v: k for k, v in ITEM_ALIASES.items()}
    return [j for j in jobs
            if any(f"figures/{alias.get(f'{j.paper}/{it}', f'{j.paper}/{it}')}.csv" in targets
                   for it in j.items)]


def planned_jobs(configfiles: Sequence[str], plan: Path | None = None) -> list[Job]:
    """The runs of the profile ``configfiles`` (with the plan's overlay and only its targets'
    runs when ``plan`` is given; no files: the plan's own profile files)."""
    if plan is None:
        return plan_jobs(load_profile(list(configfiles), None))
    files, targets = plan_targets(plan)
    files = list(configfiles) or files
    return in_targets(plan_jobs(load_profile([*files, str(plan)], None)), targets)


def weights_of(jobs: Iterable[Job]) -> list[str]:
    """The pinned weight files the ``pretrained`` models of ``jobs`` load."""
    keys = set()
    for job in jobs:
        kwargs = {**job.model_kwargs, **(job.config.get("model_kwargs") or {})}
        if kwargs.get("pretrained"):
            try:
                keys.add(weights_for(job.model))
            except KeyError as err:
                raise ConfigError(f"{job.paper} run {job.run}: {err.args[0]}") from err
    return sorted(keys)


def needs_of(jobs: Sequence[Job], *, preflight: bool = True) -> Needs:
    """What ``jobs`` read (and the campaign's preflight step, when ``preflight``)."""
    names = [j.dataset for j in jobs] + ([STEP_CONFIG["dataset"]] if preflight else [])
    return Needs(tuple(on_disk(names)), tuple(weights_of(jobs)))
