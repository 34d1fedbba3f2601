"""From a workflow config and the claims ledger to a GPU-budgeted plan.

* :func:`claim_runs`: the priced runs (``sharpness.cost`` jobs) its predicate reads (every
  run of its items, or those ``reads.yaml`` names), and the seed lists that replicate them.
* :func:`designed_needs`: each claim with the seeds that reach the stated power at the paper's
  effect and a measured spread (:mod:`sharpness.planning.power`), and the profile with those
  seeds (what the plan prices and its overlay runs).
* :func:`run_prices`: GPU-hours of each run: recorded on this machine where the run's folder
  says how long it took on CUDA with the settings planned now, else ``sharpness cost``'s
  price (measured step times on CUDA, otherwise the analytic estimate), each labelled.
* :func:`claim_design`: the seeds and power with which a claim's verdict is expected to be
  decided (a run without seed replicates decides only when its quantity is deterministic).
* :func:`make_plan`: the greedy selection (:mod:`sharpness.planning.select`) and the plan as
  data (:class:`Plan`), rendered by :func:`render` and written by :func:`write_plan` as a JSON
  record plus a config overlay that ``snakemake --configfile`` takes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sharpness.claims.model import Claim
from sharpness.cost.price import BOUND
from sharpness.planning.power import DEFAULT_POWER, Design, design, reads_run
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
    ``bound``: its runs priced at an upper limit; ``replicates``: how its runs decide
    (``seeds``, ``deterministic`` full-batch runs, timing ``rounds``, a ``single`` stochastic
    run, or ``none``: CPU only)."""

    claim: Claim
    runs: frozenset[RunKey]
    seed_paths: tuple[SeedPath, ...]
    targets: tuple[str, ...]
    bound: frozenset[RunKey] = frozenset()
    replicates: str = "none"


def _replicates(jobs: Sequence[Any], paths: set[SeedPath]) -> str:
    if paths:
        return "seeds"
    if not jobs:
        return "none"
    if all(j.bound for j in jobs):  # full-batch gradient descent from a fixed init
        return "deterministic"
    if all(j.run.startswith("cost/") for j in jobs):  # interleaved timing rounds
        return "rounds"
    return "single"


def claim_runs(claims: Sequence[Claim], config: Mapping[str, Any]) -> dict[str, ClaimNeeds]:
    """Each claim's runs (the jobs of its items that its predicate reads, see
    :func:`sharpness.planning.power.reads_run`) and the seed lists behind them."""
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
        mine: dict[RunKey, Any] = {}
        for item in claim.items:
            for job in by_item.get(ITEM_ALIASES.get(item, item), []):
                r = lesam_runs.get(job.run) if job.paper == "lesam" else None
                if r is None or reads_run(claim.id, r["group"], r["label"]):
                    mine[(job.paper, job.run)] = job
        todo = [k for k in mine if k[0] == "lesam" and k[1] in lesam_runs]
        while todo:  # the runs they fine-tune from
            for dep in lesam_runs[todo.pop()[1]]["depends"]:
                dep_job = next((j for j in jobs if j.paper == "lesam" and j.run == dep), None)
                if dep_job is not None and ("lesam", dep) not in mine:
                    mine[("lesam", dep)] = dep_job
                    todo.append(("lesam", dep))
        paths = {p for j in mine.values() if (p := seed_path(j, lesam_runs)) is not None}
        out[claim.id] = ClaimNeeds(
            claim, frozenset(mine), tuple(sorted(paths)),
            tuple(f"figures/{item}.csv" for item in claim.items),
            frozenset(k for k, j in mine.items() if j.bound),
            _replicates(list(mine.values()), paths))
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


def run_prices(config: Mapping[str, Any], *, method: str, tflops: float = 40.0,
               device: Any = None, results: str | Path = "results",
               only: frozenset[RunKey] | None = None,
               rates: Mapping[str, float] | None = None) -> tuple[dict[RunKey, float],
                                                                 dict[RunKey, str]]:
    """GPU-hours of every run (or of the runs ``only`` names) and what each rests on: its
    recorded time on this machine, step times measured (on which GPU and when), or the
    analytic estimate at the rate of its precision (``rates``, TFLOP/s per precision)."""
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
            hours[(job.paper, job.run)], source[(job.paper, job.run)] = \
                took, "recorded on this machine"
        else:
            todo.append(job)
    for p in price(todo, method=method, tflops=tflops, device=device, rates=rates):
        key = (p.job.paper, p.job.run)
        hours[key], source[key] = p.gpu_hours, p.basis
    return hours, source


def with_seeds(config: Mapping[str, Any], seeds: Mapping[SeedPath, int]) -> dict[str, Any]:
    """A copy of ``config`` whose seed lists at ``seeds``' paths hold that many seeds (the
    profile's own first, then the next unused integers)."""
    import copy

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
                 min_seeds: int = 3) -> Design:
    """The seeds and expected power of a claim's verdict (see :mod:`sharpness.planning.power`).

    Runs without seed replicates decide only when their quantity is deterministic (full-batch
    gradient descent from a fixed init, over at least the rules' ``min_runs`` settings) or
    carries its own interval (timing rounds); one run of a stochastic quantity (minibatch
    training) is not settled: the ledger's standard needs independent runs."""
    from sharpness.claims.rules import rules_for

    if needs.replicates == "none":
        return Design(None, 1.0, True, "CPU only")
    if needs.replicates == "deterministic":
        need = rules_for(str(config.get("profile", "default"))).min_runs
        if len(needs.runs) < need:
            return Design(None, 0.0, False, f"deterministic runs, but {len(needs.runs)} < the "
                          f"{need} independent runs the ledger's standard needs")
        return Design(None, 1.0, True, f"deterministic: full-batch gradient descent from a "
                      f"fixed init, {len(needs.runs)} independent settings")
    if needs.replicates == "rounds":
        return Design(None, 1.0, True, "decided by its interval over interleaved timing "
                      "rounds in one process")
    if needs.replicates == "single":
        return Design(None, 0.0, False, "one run of a stochastic quantity (minibatch "
                      "training): no interval; the ledger's standard needs independent runs")
    now = min(len(get_path(config, p)) for p in needs.seed_paths)
    return design(needs.claim.id, now, ledger, alpha=alpha, power=power, min_seeds=min_seeds)


def designed_needs(claims: Sequence[Claim], config: Mapping[str, Any], *, alpha: float = 0.05,
                   power: float = DEFAULT_POWER,
                   ledger: Mapping[str, Mapping[str, Any]] | None = None
                   ) -> tuple[dict[str, ClaimNeeds], dict[str, Design], dict[str, Any]]:
    """Each claim's runs at its designed seeds, its design, and the profile with the most
    seeds any claim asks of each seed list (every run a plan may buy)."""
    base = claim_runs(claims, config)
    designs = {cid: claim_design(n, config, alpha=alpha, power=power, ledger=ledger)
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
    bound: bool = False       # priced at an upper limit (full-batch max_steps, flow cap)
    settled: bool = False     # reaches the stated power (or is deterministic)
    effect: str = ""          # the effect size planned for, with its source
    reads: dict[str, int] = field(default_factory=dict)  # runs per group/optimizer (runs_read)


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
    bound: bool = False  # some planned run is priced at an upper limit
    restrict: dict[str, Any] = field(default_factory=dict)  # overlay limiting groups/items

    def record(self, configfiles: Sequence[str]) -> dict[str, Any]:
        """The plan as JSON-able data, with its content id."""
        body = {"budget_gpu_hours": self.budget, "profile": self.profile,
                "configfiles": list(configfiles), "pricing": self.pricing,
                "gpu_hours": round(self.hours, 6), "gpu_hours_upper_limit": self.bound,
                "runs": len(self.runs),
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
    from sharpness.lesam.experiments import training_runs

    known = training_runs(dict(config["lesam"])) if config.get("lesam") else {}
    out: dict[str, int] = {}
    for paper, rid in runs:
        r = known.get(rid) if paper == "lesam" else None
        key = f"{paper}:{r['group']}/{r['label']}" if r else f"{paper}:{rid.split('/')[0]}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def make_plan(claims: Sequence[Claim], config: Mapping[str, Any], budget: float,
              prices: Mapping[RunKey, float], sources: Mapping[RunKey, str], *,
              pricing: str, alpha: float = 0.05, power: float = DEFAULT_POWER,
              ledger: Mapping[str, Mapping[str, Any]] | None = None,
              designed: tuple[dict[str, ClaimNeeds], dict[str, Design], dict[str, Any]]
              | None = None) -> Plan:
    """Choose the claims to settle within ``budget`` GPU-hours (see the module): each claim
    costs the runs its predicate reads at its designed seeds that the plan does not hold yet;
    its value is its expected power where that reaches ``power`` (else 0: it may still be
    bought with budget left, and is not counted as settled). ``prices`` cover every run of
    ``designed`` (default :func:`designed_needs` of the arguments)."""
    if not budget >= 0:
        raise ValueError(f"--gpu-hours {budget}: must be a number >= 0")
    # rows of kind `check` test the pipeline's own construction, not a paper: no budget for them
    claims = [c for c in claims if c.kind != "check"]
    needs, designs, union = designed or designed_needs(claims, config, alpha=alpha, power=power,
                                                   ledger=ledger)
    needs = {c.id: needs[c.id] for c in claims}
    cands = [Candidate(cid, n.runs, designs[cid].power if designs[cid].settled else 0.0)
             for cid, n in needs.items()]
    picks: list[Pick] = greedy(cands, prices, budget)
    added = {}
    for pick in picks:
        for cid in pick.settled:
            added[cid] = pick.hours if cid == pick.claim else 0.0
    chosen = frozenset().union(*(p.new_runs for p in picks)) if picks else frozenset()
    lines = []
    claim_seeds: dict[str, dict[str, list[int]]] = {}
    for cid, n in needs.items():
        planned = cid in added
        extra = added[cid] if planned else sum(prices[r] for r in n.runs - chosen)
        d = designs[cid]
        mine = with_seeds(config, dict.fromkeys(n.seed_paths, d.seeds)) \
            if d.seeds is not None else config
        claim_seeds[cid] = {".".join(p): list(get_path(mine, p)) for p in n.seed_paths}
        if n.replicates == "single":  # what the independent runs of the standard would cost
            from sharpness.claims.rules import rules_for

            k = rules_for(str(config.get("profile", "default"))).min_runs
            d = replace(d, basis=f"{d.basis}; {k} independent runs of each would cost "
                                 f"{k * sum(prices[r] for r in n.runs):,.1f} GPU-hours")
        lines.append(ClaimLine(cid, n.claim.paper, len(n.runs),
                               sum(prices[r] for r in n.runs), extra,
                               _source(n.runs, sources), d.power, d.basis,
                               planned, claim_seeds[cid], list(n.claim.items),
                               bool(n.bound), d.settled, d.effect,
                               runs_read(n.runs, union)))
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
                sum(prices[r] for r in chosen), targets, dict(sorted(seeds.items())),
                any(r in n.bound for n in planned_needs for r in n.runs),
                lesam_restriction(designed_config, sorted(chosen), targets))


def lesam_restriction(config: Mapping[str, Any], runs: Sequence[RunKey],
                      targets: Sequence[str]) -> dict[str, Any]:
    """The overlay that limits the planned lesam tables and figures to the runs the plan
    bought: each group's optimizer list to the labels planned in it, each targeted item's
    rows, groups and optimizers to those planned (a group with no planned run is dropped from
    its item). Empty when the plan buys whole groups and items."""
    from sharpness.lesam.experiments import training_runs

    section = config.get("lesam") or {}
    if not section:
        return {}
    known = training_runs(dict(section))
    seeds_of: dict[str, dict[str, set[int]]] = {}  # group -> label -> planned seeds
    for paper, rid in runs:
        if paper == "lesam" and rid in known:
            r = known[rid]
            seeds_of.setdefault(r["group"], {}).setdefault(r["label"], set()).add(r["seed"])
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


def _nest(out: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Merge ``extra`` into ``out`` (mappings recursively, anything else replaced)."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            _nest(out[key], value)
        else:
            out[key] = value


def overlay(record: Mapping[str, Any], plan_file: str) -> dict[str, Any]:
    """The config overlay of a plan: its ``plan`` section (id, record file, targets), the
    seed lists it runs, nested as the config nests them, and the restriction of the lesam
    groups and items to the runs it bought (:func:`lesam_restriction`), so that it builds
    exactly the runs it priced."""
    out: dict[str, Any] = {"plan": {"id": record["id"], "file": plan_file,
                                    "targets": list(record["targets"])}}
    for dotted, seeds in record["seeds"].items():
        node = out
        keys = dotted.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = list(seeds)
    _nest(out, record.get("restrict") or {})
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
    """The plan as Markdown: per claim its runs, seeds, price with its basis (``≤``: an
    upper limit), effect size with its source and power; totals, targets, what the rest
    would add."""
    def hours(h: float, bound: bool = False) -> str:
        text = f"{h:,.1f}" if h >= 0.1 else (f"{h:.2g}" if h > 0 else "0")
        return (BOUND if bound and h > 0 else "") + text

    def seeds(ln: ClaimLine) -> str:
        counts = sorted({len(v) for v in ln.seeds.values()})
        return "/".join(map(str, counts)) if counts else "–"

    def row(ln: ClaimLine, added: str) -> str:
        return (f"| {ln.claim} | {ln.runs} | {seeds(ln)} | {hours(ln.gpu_hours, ln.bound)} "
                f"({ln.hours_source}) | {added} | {ln.effect or '–'} | {ln.power:.2f} "
                f"({ln.basis}) |")

    planned = [ln for ln in plan.lines if ln.planned]
    settled = [ln for ln in planned if ln.settled]
    lines = [f"Plan for {plan.budget:g} GPU-hours, profile `{plan.profile}` ({plan.pricing}).",
             f"Buys the runs of {len(planned)} of {len(plan.lines)} claims: {len(plan.runs)} "
             f"runs, {hours(plan.hours, plan.bound)} GPU-hours (each run paid once); "
             f"{len(settled)} of them reach their stated power and count as settled.", "",
             "| claim | runs | seeds | GPU-hours (its runs; basis) | added by it | effect size "
             "(source) | power |", "|---|---:|---:|---:|---:|---|---|"]
    for ln in planned:
        lines.append(row(ln, hours(ln.added_hours, ln.bound)))
    left = sorted((ln for ln in plan.lines if not ln.planned), key=lambda ln: ln.added_hours)
    if left:
        lines += ["", f"Unspent: {hours(plan.budget - plan.hours)} GPU-hours; the cheapest "
                      f"claim left out would add {hours(left[0].added_hours, left[0].bound)}."]
        lines += ["", "Left out (the runs it reads that the plan does not hold, at its seeds):",
                  "", "| claim | runs | seeds | GPU-hours (its runs; basis) | would add | "
                  "effect size (source) | power |", "|---|---:|---:|---:|---:|---|---|"]
        for ln in left[:limit_left_out]:
            lines.append(row(ln, hours(ln.added_hours, ln.bound)))
    lines += ["", "Targets:", "", *(f"    {t}" for t in plan.targets)]
    return "\n".join(lines)
