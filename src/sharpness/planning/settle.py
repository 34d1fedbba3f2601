"""What would settle an inconclusive ledger row: the runs it needs, the profile that has them, the price.

Every inconclusive row of the ledger, and every row not run in its profile, gets a
``to_settle`` cell (:func:`to_settle`):

* a row decided by a paired t interval: the paired seeds
  :func:`~sharpness.evidence.stats.seeds_to_settle` finds for the observed effect and spread
  (the spread read back from the interval); without an observed effect, or with one too
  small to settle at any count, the paper's reported effect
  (:func:`sharpness.planning.power.reported_effect`) at the observed spread;
* a count rule ("in k of n settings"): the settings at which the observed share's Wilson
  interval would clear the registered ``share`` (:func:`settings_to_settle`);
* a row below the ``min_runs`` standard (a row not run: all of them): the independent runs it
  lacks;
* a deterministic row (no seeds): that more runs cannot settle it, the note says what is
  missing;

and, with configs to price against (``sharpness claims build --price``), the profile whose
config has that many seeds for the claim's runs and the planner's price of the claim's runs
at that many seeds (:func:`price_claim`: :func:`sharpness.planning.claims_plan.claim_runs`,
``with_seeds`` and :func:`sharpness.planning.prices.run_prices`): CPU-hours measured on this machine for the evidence
profile, the analytic GPU-hours for the paper profile, each with the basis the planner
states.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from scipy import stats as st

from sharpness.claims.model import Claim
from sharpness.claims.rules import SeedRules
from sharpness.evidence.stats import (
    INCONCLUSIVE,
    MAX_SEEDS,
    NOT_RUN,
    count_rule,
    seeds_to_settle,
)
from sharpness.planning.claims_plan import claim_runs, get_path, with_seeds
from sharpness.planning.power import reported_effect
from sharpness.planning.prices import Prices, run_prices

#: profiles the planner is asked about, smallest first
PROFILES = ("evidence", "paper")


def _num(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v


def spread_from_interval(low: float, high: float, n: int, level: float) -> float:
    """The per-seed standard deviation behind a Student-t interval ``[low, high]`` of ``n``
    values at ``level`` (``nan`` when it cannot be read back)."""
    if n < 2 or not (math.isfinite(low) and math.isfinite(high)):
        return float("nan")
    return (high - low) / 2 / float(st.t.ppf(0.5 + level / 2, n - 1)) * math.sqrt(n)


def settings_to_settle(share_observed: float, share: float, level: float, have: int,
                       maximum: int = 1000) -> int | None:
    """The fewest settings (at least ``have + 1``) at which a count with the observed share
    ``share_observed`` decides under the ledger's count rule (the exact binomial test at
    ``level``, :func:`~sharpness.evidence.stats.count_rule`) against the registered ``share``;
    None when the observed share equals it or more than ``maximum`` settings would be
    needed."""
    if not math.isfinite(share_observed) or share_observed == share:
        return None
    for n in range(max(1, have + 1), maximum + 1):
        ok = round(share_observed * n)
        if count_rule(ok, n - ok, share, level).verdict != INCONCLUSIVE:
            return n
    return None


def _reported(claim_id: str) -> tuple[float, str] | None:
    try:
        return reported_effect(claim_id)
    except (ValueError, KeyError):
        return None


def runs_needed(row: Mapping[str, Any], claim: Claim, rules: SeedRules
                ) -> tuple[int | None, str]:
    """``(runs, words)``: the independent runs (paired seeds, settings) that would settle
    the inconclusive ``row``, and how that number was found (``runs`` None: not computable,
    the words say why)."""
    n = int(_num(row.get("n"))) if math.isfinite(_num(row.get("n"))) else 0
    est, low, high = _num(row.get("estimate")), _num(row.get("low")), _num(row.get("high"))
    alpha = 1 - rules.level
    if claim.runs and n < rules.min_runs and not (n >= 2 and math.isfinite(low)):
        return rules.min_runs, (f"at least {rules.min_runs} independent runs (has {n}); then "
                                "the spread they show says whether more are needed")
    if "share" in claim.params:
        need = settings_to_settle(est, float(claim.params["share"]), rules.level, n)
        if need is None:
            return None, (f"the observed share {est:.2f} of {n} settings does not separate "
                          f"from {claim.params['share']:g} at any count up to 1000"
                          if math.isfinite(est) else "no setting decided: rerun the settings")
        return max(need, rules.min_runs), (f"about {need} settings at the observed share "
                                           f"{est:.2f} (Wilson {rules.level:.0%} against "
                                           f"{claim.params['share']:g}; has {n})")
    sd = spread_from_interval(low, high, n, rules.level)
    paper = _reported(claim.id)
    beyond = ""  # the observed effect too small to settle at any count: said, then the paper's
    if math.isfinite(est) and est != 0 and math.isfinite(sd):
        need = seeds_to_settle(est, sd, alpha, rules.power, rules.min_seeds)
        if need is not None:
            return need, (f"about {need} paired seeds at the observed effect {est:+.3g}, spread "
                          f"{sd:.3g} ({rules.power:.0%} power, α = {alpha:.2g}; has {n})")
        beyond = (f"observed effect {est:+.3g} with spread {sd:.3g}: more than {MAX_SEEDS} "
                  "paired seeds (not there at a replication's scale)")
        if paper is None:
            return None, beyond
        beyond += "; "
    if paper is not None and math.isfinite(sd):
        need = seeds_to_settle(paper[0], sd, alpha, rules.power, rules.min_seeds)
        if need is not None:
            return need, (f"{beyond}about {need} paired seeds at the paper's effect "
                          f"{paper[0]:g} ({paper[1]}) and the observed spread {sd:.3g}")
    if paper is not None:
        return rules.min_seeds, (f"{beyond}{rules.min_seeds} paired seeds to measure the "
                                 f"spread, then the seeds for the paper's effect {paper[0]:g} "
                                 f"({paper[1]})")
    if not claim.runs:
        return None, ("deterministic (no seeds): more runs cannot settle it; the figure must "
                      "record what the note says is missing, at the price of rerunning it")
    return None, "no interval and no reported effect: the runs needed cannot be computed"


#: profiles that run on a CPU: priced in CPU-hours, step times measured on this machine
CPU_PROFILES = ("evidence",)


def _prices(config: Mapping[str, Any], runs: frozenset, cpu: bool) -> Prices:
    """The planner's hours of ``runs``: on a CPU profile, step times measured on this CPU
    (CPU-hours, one thread: the profile's jobs run single-threaded); else the analytic
    GPU estimate."""
    if not cpu:
        return run_prices(config, method="analytic", only=runs)
    import torch  # lazy: torch; only a CPU profile prices measured steps

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return run_prices(config, method="measured", device=torch.device("cpu"), only=runs)
    finally:
        torch.set_num_threads(threads)


def price_claim(claim: Claim, runs: int, configs: Mapping[str, Mapping[str, Any]]) -> str:
    """The smallest profile of ``configs`` that runs the claim with ``runs`` seeds (a claim
    whose runs take no seed list: the first that runs it), else the first that runs it at all
    with its seed lists grown to ``runs``, and the planner's price of the claim's runs there:
    CPU-hours measured on this machine for a CPU profile (:data:`CPU_PROFILES`), the analytic
    GPU-hours otherwise (full-batch eos runs at their expected steps, ``(≤ Y at the step
    cap)`` beside them; ``≤ X``: runs priced at their step caps)."""
    first = None
    for name, config in configs.items():
        needs = claim_runs([claim], config)[claim.id]
        if not needs.runs:
            continue
        have = min((len(get_path(config, p)) for p in needs.seed_paths), default=None)
        if have is None or have >= runs:
            return _priced(name, config, needs, "has them")
        first = first or (name, config, needs, have)
    if first is None:
        return "no priced run in any profile (CPU only)"
    name, config, needs, have = first
    grown = with_seeds(config, dict.fromkeys(needs.seed_paths, runs))
    return _priced(name, grown, claim_runs([claim], grown)[claim.id],
                   f"with {runs} seeds (has {have})")


def _priced(name: str, config: Mapping[str, Any], needs: Any, has: str) -> str:
    cpu = name in CPU_PROFILES
    prices = _prices(config, needs.runs, cpu)
    hours = f"{math.fsum(prices.hours.values()):.3g}"
    cap = f"{math.fsum(prices.caps.values()):.3g}"
    hours = f"{hours} (≤ {cap} at the step caps)" if cap != hours else \
        ("≤ " if needs.bound else "") + hours
    return (f"{name} profile {has}: {hours} {'CPU' if cpu else 'GPU'}-h for its "
            f"{len(needs.runs)} runs ({'; '.join(sorted(set(prices.source.values())))})")


def load_configs(folder: str | Path = "workflow/config") -> dict[str, dict[str, Any]]:
    """The profile configs the planner prices (``PROFILES`` that exist under ``folder``)."""
    out = {}
    for name in PROFILES:
        path = Path(folder) / f"{name}.yaml"
        if path.is_file():
            out[name] = yaml.safe_load(path.read_text()) or {}
    return out


def to_settle(row: Mapping[str, Any], claim: Claim, rules: SeedRules,
              configs: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The ``to_settle`` cell of one row: empty unless the row is inconclusive or not run in
    this profile (then: the runs the profile that has them would need, and their price)."""
    if row.get("verdict") not in (INCONCLUSIVE, NOT_RUN):
        return ""
    runs, words = runs_needed(row, claim, rules)
    if runs is None or not configs:
        return words + ("" if configs else "; price: `sharpness claims build --price`")
    try:
        return f"{words}; {price_claim(claim, runs, configs)}"
    except Exception as err:  # noqa: BLE001 - a price is best effort; the row still says how
        return f"{words}; price unavailable ({type(err).__name__}: {err})"


def annotate_to_settle(rows: Sequence[Mapping[str, Any]], claims: Sequence[Claim],
                       rules: SeedRules, configs: Mapping[str, Mapping[str, Any]] | None = None
                       ) -> list[dict[str, Any]]:
    """The ledger rows with their ``to_settle`` cells (``configs``: price with the planner)."""
    by_id = {c.id: c for c in claims}
    return [{**row, "to_settle": to_settle(row, by_id[str(row["id"])], rules, configs)
             if str(row["id"]) in by_id else ""} for row in rows]
