"""The sequential-seed loop: run Snakemake for the current seeds, read the ledger row, decide,
extend. No scheduling of its own: each look is one ``snakemake`` call for the claim's
figures with a config overlay that lists the seeds; Snakemake reuses the runs already done
and trains only the added seeds.

:func:`run_sequential` is the loop, with the two side effects passed in (``run_seeds`` and
``read_row``) so that it is tested with simulated arms; :func:`snakemake_runner` and
:func:`ledger_reader` are the real ones the CLI uses.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from sharpness.claims.ledger import all_claims, evaluate
from sharpness.errors import SharpnessError
from sharpness.evidence.stats import INCONCLUSIVE
from sharpness.io import atomic_write_text
from sharpness.planning.sequential import Design, Look, t_from_row


def seeds_for(base: Sequence[int], n: int) -> list[int]:
    """The first ``n`` seeds: the profile's list, extended past its largest seed."""
    seeds = list(base)
    nxt = (max(seeds) + 1) if seeds else 0
    while len(seeds) < n:
        seeds.append(nxt)
        nxt += 1
    return seeds[:n]


def seed_overlay(seed_paths: Mapping[str, Sequence[int]], n: int,
                 extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A config overlay setting every seed list of ``seed_paths`` (dotted path -> the
    profile's seeds) to its first ``n`` seeds."""
    out: dict[str, Any] = dict(extra or {})
    for dotted, base in seed_paths.items():
        node = out
        keys = dotted.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = seeds_for(base, n)
    return out


def run_sequential(design: Design, *, run_seeds: Callable[[int], None],
                   read_row: Callable[[], Mapping[str, Any]], hours_per_seed: float,
                   budget: float = math.inf) -> list[Look]:
    """Look at ``design.n_min`` seeds, then at each planned look while the rule says continue.

    ``run_seeds(n)`` makes the first ``n`` seeds' runs and the claim's figures exist;
    ``read_row()`` returns the claim's ledger row on them. ``hours_per_seed``: GPU-hours one
    more seed costs (all arms); ``budget``: GPU-hours the comparison may spend in all."""
    looks: list[Look] = []
    n: int | None = design.n_min
    while n is not None:
        if n * hours_per_seed > budget + 1e-9:
            raise SharpnessError(f"sequential seeds: {n} seeds cost {n * hours_per_seed:.2f} "
                                 f"GPU-hours, over the budget of {budget:g}")
        run_seeds(n)
        row = read_row()
        problem = ""
        try:
            t, used = t_from_row(row)
        except ValueError as err:  # no interval at this look (e.g. seeds excluded): say so
            t, used, problem = math.nan, 0, str(err)
        look = design.judge(t, n, str(row.get("verdict", "")), n_used=used,
                            hours_per_seed=hours_per_seed,
                            budget_left=budget - n * hours_per_seed)
        if problem:
            look.note = "; ".join(x for x in (look.note, problem) if x)
        looks.append(look)
        if look.decision != "continue":
            break
        n = design.next_look(n)
    return looks


def final_verdict(looks: Sequence[Look]) -> str:
    """The verdict the sequential rule allows: the row's when decided, else inconclusive."""

    if looks and looks[-1].decision == "decided":
        return looks[-1].verdict
    return INCONCLUSIVE


def snakemake_runner(configfiles: Sequence[str], overlay_path: Path,
                     seed_paths: Mapping[str, Sequence[int]], targets: Sequence[str], *,
                     cores: int, snakemake: str = "snakemake",
                     extra_args: Sequence[str] = ()) -> Callable[[int], None]:
    """``run_seeds`` that writes the seed overlay and calls Snakemake for ``targets``."""
    def run(n: int) -> None:
        atomic_write_text(overlay_path, yaml.safe_dump(seed_overlay(seed_paths, n),
                                                       sort_keys=False))
        cmd = [snakemake, "--cores", str(cores), "--configfile", *configfiles,
               str(overlay_path), *extra_args, "--", *targets]
        print("+ " + " ".join(cmd), flush=True)
        done = subprocess.run(cmd, check=False)
        if done.returncode != 0:
            raise SharpnessError(f"sequential seeds: snakemake failed at {n} seeds "
                                 f"(exit {done.returncode}): {' '.join(cmd)}")
    return run


def ledger_reader(claim_id: str, figures: str | Path, profile: str
                  ) -> Callable[[], Mapping[str, Any]]:
    """``read_row`` that evaluates one claim on the figures' CSVs (as the ledger does)."""

    claims = [c for c in all_claims() if c.id == claim_id]
    if not claims:
        raise SharpnessError(f"--sequential {claim_id!r}: no such claim")

    def read() -> Mapping[str, Any]:
        return evaluate(figures, profile, claims)[0]
    return read
