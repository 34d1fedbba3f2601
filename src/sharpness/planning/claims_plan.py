"""From a workflow config and the claims ledger to a GPU-budgeted plan.

* :func:`claim_runs`: the priced runs (``sharpness.cost`` jobs) behind each claim's items,
  and the seed lists of the config that replicate them.
* :func:`run_prices`: GPU-hours of each run: recorded on this machine where the run's folder
  says how long it took on CUDA with the settings planned now, else ``sharpness cost``'s
  price (measured step times on CUDA, otherwise the analytic estimate), each labelled.
* :func:`claim_power`: the power with which a claim's verdict is expected to be decided.
* :func:`make_plan`: the greedy selection (:mod:`sharpness.planning.select`) and the plan as
  data (:class:`Plan`), rendered by :func:`render` and written by :func:`write_plan` as a JSON
  record plus a config overlay that ``snakemake --configfile`` takes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scipy import stats

from sharpness.claims.model import Claim
from sharpness.claims.stats import paired_t_power
from sharpness.planning import DEFAULT_EFFECT
from sharpness.planning.select import Candidate, Pick, greedy

#: claim items whose runs the cost model files under another item name
ITEM_ALIASES = {"minorfirst/gradcam_table": "minorfirst/gradcam"}

RunKey = tuple[str, str]  # (paper, run)
SeedPath = tuple[str, ...]  # where in the config a seed list lives


def seed_path(job: Any, lesam_runs: Mapping[str, Any]) -> SeedPath | None:
    """The config path of the seed list that replicates ``job`` (None: not seeded)."""
    if job.paper == "lesam" and job.run in lesam_runs:
        return ("lesam", "groups", lesam_runs[job.run]["group"], "seeds")
    if job.paper == "lesam" and job.run.startswith("glmc/"):
        return ("lesam", "glmc", "seeds")
    if job.paper == "minorfirst" and job.run.startswith("gradcam/"):
        return ("gradcam", "seeds")
    return None


def get_path(config: Mapping[str, Any], path: SeedPath) -> Any:
    node: Any = config
    for key in path:
        node = node[key]
    return node


@dataclass
class ClaimNeeds:
    """What one claim needs: its runs, their seed lists, and its figure/table targets."""

    claim: Claim
    runs: frozenset[RunKey]
    seed_paths: tuple[SeedPath, ...]
    targets: tuple[str, ...]


def claim_runs(claims: Sequence[Claim], config: Mapping[str, Any]) -> dict[str, ClaimNeeds]:
    """Each claim's runs (every job of every item it reads) and the seed lists behind them."""
    from sharpness.cost import plan_jobs
    from sharpness.lesam.experiments import training_runs

    jobs = plan_jobs(dict(config))
    lesam_runs = training_runs(config["lesam"]) if config.get("lesam") else {}
    by_item: dict[str, list[Any]] = {}
    for job in jobs:
        for item in job.items:
            by_item.setdefault(f"{job.paper}/{item}", []).append(job)
    out = {}
    for claim in claims:
        runs: set[RunKey] = set()
        paths: set[SeedPath] = set()
        for item in claim.items:
            for job in by_item.get(ITEM_ALIASES.get(item, item), []):
                runs.add((job.paper, job.run))
                path = seed_path(job, lesam_runs)
                if path is not None:
                    paths.add(path)
        out[claim.id] = ClaimNeeds(claim, frozenset(runs), tuple(sorted(paths)),
                                   tuple(f"figures/{item}.csv" for item in claim.items))
    return out


#: settings a recorded run must share with the planned one before its time is reused
CORE_KEYS = ("model", "dataset", "optimizer", "epochs", "batch_size", "seed")


def recorded_hours(job: Any, planned: Mapping[str, Any] | None, results: Path) -> float | None:
    """GPU-hours a lesam training run took on this machine: ``wall_s`` x its GPUs from the
    run folder's ``provenance.json``, where the run finished (``ok``) on CUDA with the
    settings planned now (the core settings present and every setting both records hold
    equal). None otherwise: a CPU run of the quick profile never prices a paper run."""
    if job.paper != "lesam" or planned is None:
        return None
    from sharpness.lesam.experiments import RUNS_DIR

    path = results / Path(RUNS_DIR).relative_to("results") / job.run / "provenance.json"
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    params = record.get("params") or {}
    if record.get("status") != "ok" or not str(record.get("device_used", "")).startswith("cuda"):
        return None
    wanted = json.loads(json.dumps(dict(planned), default=str))
    if any(k not in params or params[k] != wanted.get(k, params[k]) for k in CORE_KEYS) or \
            any(params[k] != v for k, v in wanted.items() if k in params):
        return None
    try:
        return float(record["wall_s"]) * job.gpus / 3600.0
    except (KeyError, TypeError, ValueError):
        return None


def run_prices(config: Mapping[str, Any], *, method: str, tflops: float, device: Any = None,
               results: str | Path = "results",
               only: frozenset[RunKey] | None = None) -> tuple[dict[RunKey, float],
                                                              dict[RunKey, str]]:
    """GPU-hours of every run (or of the runs ``only`` names) and where each number comes
    from (``recorded`` on this machine, ``measured`` step times, ``estimate``)."""
    from sharpness.cost import plan_jobs, price
    from sharpness.lesam.experiments import training_runs

    jobs = [j for j in plan_jobs(dict(config)) if only is None or (j.paper, j.run) in only]
    planned = {rid: r["config"] for rid, r in training_runs(config["lesam"]).items()} \
        if config.get("lesam") else {}
    hours: dict[RunKey, float] = {}
    source: dict[RunKey, str] = {}
    todo = []
    for job in jobs:
        took = recorded_hours(job, planned.get(job.run), Path(results))
        if took is not None:
            hours[(job.paper, job.run)], source[(job.paper, job.run)] = took, "recorded"
        else:
            todo.append(job)
    label = "measured" if method == "measured" else "estimate"
    for p in price(todo, method=method, tflops=tflops, device=device):
        key = (p.job.paper, p.job.run)
        hours[key], source[key] = p.gpu_hours, label
    return hours, source


def observed_effect(row: Mapping[str, Any]) -> float | None:
    """Standardised effect (mean / sd of the per-seed differences) an earlier ledger row
    measured, from its t interval; None if the row has none."""
    from sharpness.planning.sequential import t_from_row

    try:
        t, n = t_from_row(row)
    except ValueError:
        return None
    return t / math.sqrt(n) if n >= 2 and math.isfinite(t) else None


def claim_power(needs: ClaimNeeds, config: Mapping[str, Any], *, alpha: float = 0.05,
                effect: float = DEFAULT_EFFECT, ledger: Mapping[str, Mapping[str, Any]] | None
                = None) -> tuple[float, str]:
    """Expected power of the claim's verdict and its basis, in words.

    A claim on runs without seed replicates (theory on the CPU, full-batch sweeps) is decided
    by its runs (power 1: deterministic). A seeded comparison: the power of the two-sided
    paired t test at level ``alpha`` on the profile's seeds, at the effect an earlier ledger
    row measured or else at the assumed standardised effect ``effect``."""
    if not needs.seed_paths:
        basis = "deterministic (no seed replicates)" if needs.runs else "CPU only"
        return 1.0, basis
    n = min(len(get_path(config, p)) for p in needs.seed_paths)
    if n < 2:
        return 0.0, f"{n} seed: no interval"
    d, basis = effect, f"assumed d={effect:g}"
    seen = observed_effect(ledger[needs.claim.id]) if ledger and needs.claim.id in ledger \
        else None
    if seen is not None:
        d, basis = seen, f"observed d={seen:.2f}"
    crit = float(stats.t.ppf(1 - alpha / 2, n - 1))
    return paired_t_power(d, n, crit), f"t test, {n} seeds, {basis}"


@dataclass
class ClaimLine:
    """One claim of the plan (planned or left out)."""

    claim: str
    paper: str
    runs: int
    gpu_hours: float          # all its runs
    added_hours: float        # what it added to the plan (0 if its runs came with others)
    hours_source: str
    power: float
    basis: str
    planned: bool
    seeds: dict[str, list[int]] = field(default_factory=dict)
    items: list[str] = field(default_factory=list)


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

    def record(self, configfiles: Sequence[str]) -> dict[str, Any]:
        """The plan as JSON-able data, with its content id."""
        body = {"budget_gpu_hours": self.budget, "profile": self.profile,
                "configfiles": list(configfiles), "pricing": self.pricing,
                "gpu_hours": round(self.hours, 6), "runs": len(self.runs),
                "targets": self.targets, "seeds": self.seeds,
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


def make_plan(claims: Sequence[Claim], config: Mapping[str, Any], budget: float,
              prices: Mapping[RunKey, float], sources: Mapping[RunKey, str], *,
              pricing: str, alpha: float = 0.05, effect: float = DEFAULT_EFFECT,
              ledger: Mapping[str, Mapping[str, Any]] | None = None) -> Plan:
    """Choose the claims to settle within ``budget`` GPU-hours (see the module)."""
    if not budget >= 0:
        raise ValueError(f"--gpu-hours {budget}: must be a number >= 0")
    # rows of kind `check` test the pipeline's own construction, not a paper: no budget for them
    claims = [c for c in claims if c.kind != "check"]
    needs = claim_runs(claims, config)
    power = {cid: claim_power(n, config, alpha=alpha, effect=effect, ledger=ledger)
             for cid, n in needs.items()}
    cands = [Candidate(cid, n.runs, power[cid][0]) for cid, n in needs.items()]
    picks: list[Pick] = greedy(cands, prices, budget)
    added = {}
    for pick in picks:
        for cid in pick.settled:
            added[cid] = pick.hours if cid == pick.claim else 0.0
    chosen = frozenset().union(*(p.new_runs for p in picks)) if picks else frozenset()
    lines = []
    for cid, n in needs.items():
        planned = cid in added
        extra = added[cid] if planned else sum(prices[r] for r in n.runs - chosen)
        seeds = {".".join(p): list(get_path(config, p)) for p in n.seed_paths}
        lines.append(ClaimLine(cid, n.claim.paper, len(n.runs),
                               sum(prices[r] for r in n.runs), extra,
                               _source(n.runs, sources), power[cid][0], power[cid][1],
                               planned, seeds, list(n.claim.items)))
    order = {cid: i for i, cid in enumerate(added)}  # pick order: cheapest information first
    lines.sort(key=lambda ln: (not ln.planned, order.get(ln.claim, 0)))
    planned_needs = [needs[ln.claim] for ln in lines if ln.planned]
    targets = sorted({t for n in planned_needs for t in n.targets}) + ["figures/CLAIMS.md"]
    seeds = {".".join(p): list(get_path(config, p))
             for n in planned_needs for p in n.seed_paths}
    return Plan(budget, str(config.get("profile", "?")), pricing, lines, sorted(chosen),
                sum(prices[r] for r in chosen), targets, dict(sorted(seeds.items())))


def overlay(record: Mapping[str, Any], plan_file: str) -> dict[str, Any]:
    """The config overlay of a plan: its ``plan`` section (id, record file, targets) and the
    seed lists it runs, nested as the config nests them."""
    out: dict[str, Any] = {"plan": {"id": record["id"], "file": plan_file,
                                    "targets": list(record["targets"])}}
    for dotted, seeds in record["seeds"].items():
        node = out
        keys = dotted.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = list(seeds)
    return out


def write_plan(record: Mapping[str, Any], out: str | Path) -> tuple[Path, Path]:
    """Write ``<out>`` (the config overlay, YAML) and ``<out stem>.json`` (the record)."""
    import yaml

    from sharpness.io import atomic_write_text

    out = Path(out)
    record_path = out.with_suffix(".json")
    head = (f"# GPU-budget plan {record['id']} ({record['budget_gpu_hours']:g} GPU-hours, "
            f"written by `sharpness plan`). Run it over the profile it was made from:\n"
            f"#   snakemake --cores all --configfile "
            f"{' '.join(record['configfiles'])} {out}\n")
    atomic_write_text(record_path, json.dumps(record, indent=1, default=str) + "\n")
    atomic_write_text(out, head + yaml.safe_dump(overlay(record, str(record_path)),
                                                 sort_keys=False))
    return out, record_path


def render(plan: Plan, limit_left_out: int | None = None) -> str:
    """The plan as Markdown: planned claims, totals, targets, and what the rest would add."""
    def hours(h: float) -> str:
        return f"{h:,.1f}" if h >= 0.1 else (f"{h:.2g}" if h > 0 else "0")

    planned = [ln for ln in plan.lines if ln.planned]
    lines = [f"Plan for {plan.budget:g} GPU-hours, profile `{plan.profile}` ({plan.pricing}).",
             f"Settles {len(planned)} of {len(plan.lines)} claims with {len(plan.runs)} runs, "
             f"{hours(plan.hours)} GPU-hours; expected decided verdicts "
             f"{sum(ln.power for ln in planned):.1f}.", "",
             "| claim | runs | GPU-hours (its runs) | added by it | expected verdict power |",
             "|---|---:|---:|---:|---|"]
    for ln in planned:
        lines.append(f"| {ln.claim} | {ln.runs} | {hours(ln.gpu_hours)} ({ln.hours_source}) | "
                     f"{hours(ln.added_hours)} | {ln.power:.2f} ({ln.basis}) |")
    left = sorted((ln for ln in plan.lines if not ln.planned), key=lambda ln: ln.added_hours)
    if left:
        lines += ["", f"Unspent: {hours(plan.budget - plan.hours)} GPU-hours; the cheapest "
                      f"claim left out would add {hours(left[0].added_hours)}."]
        lines += ["", "Left out (would add GPU-hours beyond the plan, and its verdict power):",
                  "", "| claim | runs | would add | expected verdict power |",
                  "|---|---:|---:|---|"]
        for ln in left[:limit_left_out]:
            lines.append(f"| {ln.claim} | {ln.runs} | {hours(ln.added_hours)} "
                         f"({ln.hours_source}) | {ln.power:.2f} ({ln.basis}) |")
    lines += ["", "Targets:", "", *(f"    {t}" for t in plan.targets)]
    return "\n".join(lines)
