"""From a workflow config and the claims ledger to a GPU-budgeted plan.

* :func:`claim_runs`: the priced runs (``sharpness.cost`` jobs) its predicate reads (every
  run of its items, or those ``reads.yaml`` names), and the seed lists that replicate them.
* :func:`designed_needs`: each claim with the seeds that reach the stated power at the paper's
  effect and a measured spread (:mod:`sharpness.planning.power`), and the profile with those
  seeds (what the plan prices and its overlay runs).
* :func:`sharpness.planning.prices.run_prices`: GPU-hours of each run, each labelled, with
  its price at its step caps.
* :func:`claim_design`: the seeds and power with which a claim's verdict is expected to be
  decided (a run without seed replicates decides only when its quantity is deterministic).
* :func:`make_plan`: the greedy selection (:mod:`sharpness.planning.select`) and the plan as
  data (:class:`Plan`), limited to the lesam runs it bought (:mod:`sharpness.planning.restrict`);
  :mod:`sharpness.planning.output` renders it and writes it as a JSON record plus a config
  overlay that ``snakemake --configfile`` takes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sharpness.claims.eos_common import network_of
from sharpness.claims.model import Claim
from sharpness.claims.rules import rules_for
from sharpness.cost import plan_jobs
from sharpness.eos.jobs import planned_settings
from sharpness.jobs import build_plan
from sharpness.lesam.jobs import TrainRun, train_runs
from sharpness.planning.power import DEFAULT_POWER, Design, design, holm_family
from sharpness.planning.reads import (
    comparison_parts,
    reads,
    reads_run,
    run_labels,
    selector_group,
)
from sharpness.planning.restrict import RunKey, lesam_restriction
from sharpness.planning.spend import choose
from sharpness.planning.units import claim_units

#: claim items whose runs the cost model files under another item name
ITEM_ALIASES = {"minorfirst/gradcam_table": "minorfirst/gradcam"}

SeedPath = tuple[str, ...]  # where in the config a seed list lives


def seed_path(job: Any, lesam_runs: Mapping[str, TrainRun]) -> SeedPath | None:
    """The config path of the seed list that replicates ``job`` (None: not seeded);
    ``lesam_runs``: the plan's lesam training runs (:func:`sharpness.lesam.jobs.train_runs`)."""
    if job.paper == "lesam" and job.run in lesam_runs:
        return ("lesam", "groups", lesam_runs[job.run].group, "seeds")
    if job.paper == "lesam" and job.run.startswith("glmc/"):
        return ("lesam", "glmc", "seeds")
    if job.paper == "minorfirst" and job.run.startswith("gradcam/"):
        return ("gradcam", "seeds")
    if job.paper == "lesam" and job.run.startswith("signal/"):
        return ("lesam", "signal", "seeds")
    return None


def get_path(config: Mapping[str, Any], path: SeedPath) -> Any:
    """The value at ``path``; a seed list a study gives as its one ``seed`` (``lesam.signal``
    without ``seeds``) reads as ``[seed]``."""
    node: Any = config
    for k, key in enumerate(path):
        if key == "seeds" and k == len(path) - 1 and key not in node:
            return [node.get("seed", 0)]
        node = node[key]
    return node


@dataclass
class ClaimNeeds:
    """What one claim needs: its runs, their seed lists, and its figure/table targets;
    ``bound``: its runs priced at their step caps (no expected count: an upper limit);
    ``replicates``: how its runs decide
    (``seeds``, ``deterministic`` full-batch runs, timing ``rounds``, a ``single`` stochastic
    run, or ``none``: CPU only)."""

    claim: Claim
    runs: frozenset[RunKey]
    seed_paths: tuple[SeedPath, ...]
    targets: tuple[str, ...]
    bound: frozenset[RunKey] = frozenset()
    replicates: str = "none"
    parts: int = 1  # paired comparisons its rule needs (see reads.comparison_parts)


def _replicates(jobs: Sequence[Any], paths: set[SeedPath]) -> str:
    if paths:
        return "seeds"
    if not jobs:
        return "none"
    if all(j.until_goal for j in jobs):  # full-batch gradient descent from a fixed init
        return "deterministic"
    if all(j.run.startswith("cost/") for j in jobs):  # interleaved timing rounds
        return "rounds"
    return "single"


def eos_networks(config: Mapping[str, Any]) -> dict[str, str]:
    """Each eos setting job (``setting/<name>``) -> the network family its label names
    (:func:`sharpness.claims.eos_common.network_of`, the function the predicates filter
    their rows with, so a claim buys exactly the settings it reads); the settings are the
    plan's (:func:`sharpness.eos.jobs.planned_settings`)."""
    if not config.get("eos"):
        return {}
    return {f"setting/{name}": network_of(str(s.get("label") or name))
            for name, (_, s) in planned_settings(build_plan(config)).items()}


def claim_runs(claims: Sequence[Claim], config: Mapping[str, Any]) -> dict[str, ClaimNeeds]:
    """Each claim's runs (the jobs of its items that its predicate reads, see
    :func:`sharpness.planning.power.reads_run`) and the seed lists behind them."""

    jobs = plan_jobs(dict(config))
    lesam_runs = train_runs(build_plan(config)) if config.get("lesam") else {}
    labels = run_labels(config)
    networks = eos_networks(config)
    by_item: dict[str, list[Any]] = {}
    for job in jobs:
        for item in job.items:
            by_item.setdefault(f"{job.paper}/{item}", []).append(job)
    out = {}
    for claim in claims:
        mine: dict[RunKey, Any] = {}
        read: set[tuple[str, str]] = set()
        left_out = {str(n) for n in claim.params.get("leave_out") or ()}
        for item in claim.items:
            for job in by_item.get(ITEM_ALIASES.get(item, item), []):
                if job.paper == "eos" and networks.get(job.run, "") in left_out:
                    continue  # a setting of a network the claim leaves to its extension row
                r = labels.get(job.run) if job.paper == "lesam" else None
                if r is None or reads_run(claim.id, selector_group(r[0]), r[1], claim.params):
                    mine[(job.paper, job.run)] = job
                    if r is not None:
                        read.add(r)
        todo = [k for k in mine if k[0] == "lesam" and k[1] in lesam_runs]
        while todo:  # the runs they fine-tune from
            for dep in lesam_runs[todo.pop()[1]].depends:
                dep_job = next((j for j in jobs if j.paper == "lesam" and j.run == dep), None)
                if dep_job is not None and ("lesam", dep) not in mine:
                    mine[("lesam", dep)] = dep_job
                    todo.append(("lesam", dep))
        paths = {p for j in mine.values() if (p := seed_path(j, lesam_runs)) is not None}
        out[claim.id] = ClaimNeeds(
            claim, frozenset(mine), tuple(sorted(paths)),
            tuple(f"figures/{item}.csv" for item in claim.items),
            frozenset(k for k, j in mine.items() if j.bound),
            _replicates(list(mine.values()), paths), comparison_parts(read))
    return out


def with_seeds(config: Mapping[str, Any], seeds: Mapping[SeedPath, int]) -> dict[str, Any]:
    """A copy of ``config`` whose seed lists at ``seeds``' paths hold that many seeds (the
    profile's own first, then the next unused integers)."""

    out = copy.deepcopy(dict(config))
    for path, n in seeds.items():
        node = get_path(out, path[:-1])
        have = list(get_path(out, path))
        extra = (s for s in range(10 ** 6) if s not in have)
        node[path[-1]] = have[:n] + [next(extra) for _ in range(max(0, n - len(have)))]
    return out


def claim_design(needs: ClaimNeeds, config: Mapping[str, Any], *, alpha: float = 0.05,
                 power: float = DEFAULT_POWER,
                 ledger: Mapping[str, Mapping[str, Any]] | None = None,
                 min_seeds: int = 3, ledger_profile: str | None = None,
                 family: int | None = None) -> Design:
    """The seeds and expected power of a claim's verdict (see :mod:`sharpness.planning.power`);
    ``family``: the rows of Holm's family (:func:`holm_family` when not given: a caller that
    designs many claims reads the claims catalog once and passes it).

    Runs without seed replicates decide only when their quantity is deterministic (full-batch
    gradient descent from a fixed init, over at least the rules' ``min_runs`` settings) or
    carries its own interval (timing rounds); one run of a stochastic quantity (minibatch
    training) is not settled: the ledger's standard needs independent runs."""

    if needs.replicates == "none":
        return Design(None, 1.0, True, "CPU only")
    if needs.replicates == "deterministic":
        rules = rules_for(str(config.get("profile", "default")))
        need = rules.min_runs
        if len(needs.runs) < need:
            return Design(None, 0.0, False, f"deterministic runs, but {len(needs.runs)} < the "
                          f"{need} independent runs the ledger's standard needs")
        units = claim_units(reads().get(needs.claim.id, {}).get("units"), needs.claim.params,
                            config, level=rules.level, min_runs=need)
        if units is not None and not units.decidable:
            return Design(None, 0.0, False, f"deterministic, but too few settings to decide: "
                          f"{units.why}")
        return Design(None, 1.0, True, f"deterministic: full-batch gradient descent from a "
                      f"fixed init, {len(needs.runs)} independent settings"
                      + (f"; {units.why}" if units is not None else ""))
    if needs.replicates == "rounds":
        return Design(None, 1.0, True, "decided by its interval over interleaved timing "
                      "rounds in one process")
    if needs.replicates == "single":
        return Design(None, 0.0, False, "one run of a stochastic quantity (minibatch "
                      "training): no interval; the ledger's standard needs independent runs")
    now = min(len(get_path(config, p)) for p in needs.seed_paths)
    return design(needs.claim.id, now, ledger, alpha=alpha, power=power, min_seeds=min_seeds,
                  parts=needs.parts, family=family if family is not None else holm_family(),
                  ledger_profile=ledger_profile)


def designed_needs(claims: Sequence[Claim], config: Mapping[str, Any], *, alpha: float = 0.05,
                   power: float = DEFAULT_POWER,
                   ledger: Mapping[str, Mapping[str, Any]] | None = None,
                   ledger_profile: str | None = None
                   ) -> tuple[dict[str, ClaimNeeds], dict[str, Design], dict[str, Any]]:
    """Each claim's runs at its designed seeds, its design, and the profile with the most
    seeds any claim asks of each seed list (every run a plan may buy); ``ledger_profile``:
    the profile that built ``ledger`` (only a paper-scale ledger gives a spread)."""
    base = claim_runs(claims, config)
    family = holm_family()
    designs = {cid: claim_design(n, config, alpha=alpha, power=power, ledger=ledger,
                                 ledger_profile=ledger_profile, family=family)
               for cid, n in base.items()}
    needs = dict(base)
    most: dict[SeedPath, int] = {}
    for cid, n in base.items():
        seeds = designs[cid].seeds
        if seeds is None or not n.seed_paths:
            continue
        wanted = dict.fromkeys(n.seed_paths, seeds)
        needs[cid] = claim_runs([n.claim], with_seeds(config, wanted))[cid]
        for path in n.seed_paths:
            most[path] = max(most.get(path, 0), seeds)
    return needs, designs, with_seeds(config, most)


@dataclass
class ClaimLine:
    """One claim of the plan (planned or left out)."""

    claim: str
    paper: str
    runs: int
    gpu_hours: float          # all its runs
    added_hours: float        # what it added to the plan (0 if its runs came with others)
    hours_source: str         # what the price rests on (measured where, or analytic at a rate)
    power: float
    basis: str
    planned: bool
    seeds: dict[str, list[int]] = field(default_factory=dict)
    items: list[str] = field(default_factory=list)
    bound: bool = False       # some run priced at its step caps (no expected count)
    cap_hours: float = 0.0    # all its runs at their step caps (max_steps, flow max_evals)
    settled: bool = False     # reaches the stated power (or is deterministic)
    effect: str = ""          # the effect size planned for, with its source
    reads: dict[str, int] = field(default_factory=dict)  # runs per group/optimizer (runs_read)
    spread: str = ""          # the seed spread planned with, with its source (or why none)
    readings: dict[str, float] = field(default_factory=dict)  # power: effect/half x SD/SE


@dataclass
class Plan:
    """A plan: the claims it settles, those left out, its runs, targets and seeds."""

    budget: float
    profile: str
    pricing: str
    lines: list[ClaimLine]
    runs: list[RunKey]
    hours: float
    targets: list[str]
    seeds: dict[str, list[int]]
    bound: bool = False  # some planned run is priced at its step caps (an upper limit)
    restrict: dict[str, Any] = field(default_factory=dict)  # overlay limiting groups/items
    cap_hours: float = 0.0  # its runs at their step caps: the most ``hours`` can grow to

    def record(self, configfiles: Sequence[str]) -> dict[str, Any]:
        """The plan as JSON-able data, with its content id."""
        body = {"budget_gpu_hours": self.budget, "profile": self.profile,
                "configfiles": list(configfiles), "pricing": self.pricing,
                "gpu_hours": round(self.hours, 6), "runs_priced_at_step_caps": self.bound,
                "gpu_hours_at_step_caps": round(self.cap_hours, 6),
                "runs": len(self.runs),
                "run_keys": [f"{paper}:{run}" for paper, run in self.runs],
                "targets": self.targets, "seeds": self.seeds, "restrict": self.restrict,
                "claims": {ln.claim: {k: v for k, v in vars(ln).items() if k != "claim"}
                           for ln in self.lines}}
        return {"id": plan_id(body), **body}


def plan_id(body: Mapping[str, Any]) -> str:
    """Content hash of a plan record (without its ``id``)."""
    text = json.dumps({k: v for k, v in body.items() if k != "id"}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _source(keys: frozenset[RunKey], sources: Mapping[RunKey, str]) -> str:
    kinds = sorted({sources[k] for k in keys})
    return "+".join(kinds) if kinds else "none"


def runs_read(runs: frozenset[RunKey], config: Mapping[str, Any]) -> dict[str, int]:
    """A claim's runs, counted per ``paper:group/optimizer`` for lesam training runs and per
    ``paper:kind`` otherwise (``eos:setting``, ``lesam:glmc``...): what the record lists."""

    known = train_runs(build_plan(config)) if config.get("lesam") else {}
    out: dict[str, int] = {}
    for paper, rid in runs:
        r = known.get(rid) if paper == "lesam" else None
        key = f"{paper}:{r.group}/{r.label}" if r else f"{paper}:{rid.split('/')[0]}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def make_plan(claims: Sequence[Claim], config: Mapping[str, Any], budget: float,
              prices: Mapping[RunKey, float], sources: Mapping[RunKey, str], *,
              pricing: str, alpha: float = 0.05, power: float = DEFAULT_POWER,
              ledger: Mapping[str, Mapping[str, Any]] | None = None,
              designed: tuple[dict[str, ClaimNeeds], dict[str, Design], dict[str, Any]]
              | None = None, caps: Mapping[RunKey, float] | None = None) -> Plan:
    """Choose the claims to settle within ``budget`` GPU-hours (see the module): each claim
    costs the runs its predicate reads at its designed seeds that the plan does not hold yet;
    its value is its expected power where that reaches ``power`` (else 0: it may still be
    bought with budget left, and is not counted as settled). ``prices`` cover every run of
    ``designed`` (default :func:`designed_needs` of the arguments); the choice spends them
    (expected steps for a full-batch run that has them), and ``caps`` (default ``prices``)
    are the same runs at their step caps, stated beside them."""
    if not budget >= 0:
        raise ValueError(f"--gpu-hours {budget}: must be a number >= 0")
    # rows of kind `check` test the pipeline's own construction, not a paper: no budget for them
    claims = [c for c in claims if c.kind != "check"]
    needs, designs, union = designed or designed_needs(claims, config, alpha=alpha, power=power,
                                                   ledger=ledger)
    needs = {c.id: needs[c.id] for c in claims}
    caps = caps if caps is not None else prices
    def runs_at(n: ClaimNeeds, seeds: int) -> ClaimNeeds:
        return claim_runs([n.claim], with_seeds(config, dict.fromkeys(n.seed_paths, seeds)))[
            n.claim.id]

    picks, needs, designs = choose(needs, designs, runs_at, prices, budget)
    added = {}
    for pick in picks:
        for cid in pick.settled:
            added[cid] = pick.hours if cid == pick.claim else 0.0
    chosen = frozenset().union(*(p.new_runs for p in picks)) if picks else frozenset()
    lines = []
    claim_seeds: dict[str, dict[str, list[int]]] = {}
    for cid, n in needs.items():
        planned = cid in added
        extra = added[cid] if planned else math.fsum(prices[r] for r in n.runs - chosen)
        d = designs[cid]
        mine = with_seeds(config, dict.fromkeys(n.seed_paths, d.seeds)) \
            if d.seeds is not None else config
        claim_seeds[cid] = {".".join(p): list(get_path(mine, p)) for p in n.seed_paths}
        if n.replicates == "single":  # what the independent runs of the standard would cost
            k = rules_for(str(config.get("profile", "default"))).min_runs
            d = replace(d, basis=f"{d.basis}; {k} independent runs of each would cost "
                                 f"{k * math.fsum(prices[r] for r in n.runs):,.1f} GPU-hours")
        lines.append(ClaimLine(cid, n.claim.paper, len(n.runs),
                               math.fsum(prices[r] for r in n.runs), extra,
                               _source(n.runs, sources), d.power, d.basis,
                               planned, claim_seeds[cid], list(n.claim.items),
                               bool(n.bound), math.fsum(caps[r] for r in n.runs), d.settled,
                               d.effect, runs_read(n.runs, union), d.spread, d.readings))
    order = {cid: i for i, cid in enumerate(added)}  # pick order: cheapest information first
    lines.sort(key=lambda ln: (not ln.planned, order.get(ln.claim, 0)))
    planned_needs = [needs[ln.claim] for ln in lines if ln.planned]
    targets = sorted({t for n in planned_needs for t in n.targets}) + ["figures/CLAIMS.md"]
    seeds: dict[str, list[int]] = {}
    for ln in lines:
        for dotted, values in claim_seeds[ln.claim].items() if ln.planned else ():
            if len(values) > len(seeds.get(dotted, [])):
                seeds[dotted] = values
    designed_config = with_seeds(config, {tuple(k.split(".")): len(v) for k, v in seeds.items()})
    return Plan(budget, str(config.get("profile", "?")), pricing, lines, sorted(chosen),
                math.fsum(prices[r] for r in chosen), targets, dict(sorted(seeds.items())),
                any(r in n.bound for n in planned_needs for r in n.runs),
                lesam_restriction(designed_config, sorted(chosen), targets),
                math.fsum(caps[r] for r in chosen))
