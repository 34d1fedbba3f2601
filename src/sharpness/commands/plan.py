"""``sharpness plan --gpu-hours N``: spend a GPU budget where it settles claims.

Reads the profile as the workflow does (:func:`sharpness.config.profiles.load_profile`), maps
every claim of the ledger to the runs behind its figures, prices them (the recorded wall time
of a finished CUDA run with the same settings under ``--results``, ``sharpness cost``'s price
otherwise, each labelled) and picks
the claims that settle the most expected verdicts within the budget
(:mod:`sharpness.planning`). Prints the plan and writes ``--out`` (a config overlay for
``snakemake --configfile <profile> <out>``) and its record ``<out>.json``.

``--sequential CLAIM`` runs one trained-network comparison with sequential seeds instead:
Snakemake for the minimum seeds, the ledger row, the group-sequential rule, more seeds while
it says so, and the looks written into the plan record.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sharpness.commands.cost import rates_of
from sharpness.config.profiles import DEFAULT_PROFILE, load_profile
from sharpness.errors import ConfigError, SharpnessError

if TYPE_CHECKING:
    from sharpness.claims.model import Claim

DEFAULT_OUT = "plans/plan.yaml"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plan`` subcommand."""
    from sharpness.cost import DEFAULT_TFLOPS
    from sharpness.planning import DEFAULT_POWER, SPENDING

    p = subparsers.add_parser(
        "plan", help="choose the runs that settle the most claims within a GPU budget",
        description="Choose, within --gpu-hours, the runs that settle the most claims "
                    "(shared runs paid once, cheapest information first), print the plan, "
                    "and write it as a config overlay for snakemake --configfile. With "
                    "--sequential CLAIM: add seeds to one comparison only while a "
                    "group-sequential rule says its verdict is open.")
    p.add_argument("--gpu-hours", type=float, required=True, metavar="N",
                   help="the budget in GPU-hours (with --sequential: what that comparison may "
                        "spend in all, its first seeds included)")
    p.add_argument("--configfile", action="append", default=[], metavar="FILE",
                   help="profile file(s), as snakemake --configfile (e.g. "
                        "workflow/config/paper.yaml)")
    p.add_argument("--base", default=DEFAULT_PROFILE,
                   help=f"the Snakefile's default config (default {DEFAULT_PROFILE}); 'none' to "
                        "read --configfile alone")
    p.add_argument("--claims", default=None, metavar="ID,...",
                   help="plan only these claims (comma-separated ledger ids; the totals of "
                        "the whole profile and of every claim are then not printed)")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help=f"config overlay to write (default {DEFAULT_OUT}); its record goes "
                        "beside it as .json")
    p.add_argument("--method", choices=("auto", "measured", "analytic"), default="auto",
                   help="price of runs not recorded on this machine: measured step times on "
                        "CUDA (auto with a GPU) or the analytic FLOP estimate")
    p.add_argument("--tflops", default=str(DEFAULT_TFLOPS), metavar="RATES",
                   help=f"sustained TFLOP/s of one GPU for the analytic estimate, per "
                        f"precision (fp32=20,bf16=40) or one number, the bf16 rate "
                        f"(default {DEFAULT_TFLOPS:g}, fp32 half of it); the rate of each "
                        f"run's precision is the one printed beside its price")
    p.add_argument("--measured", default=None, metavar="YAML",
                   help="step times to price from (written by `sharpness cost measure` on "
                        "the GPU; default src/sharpness/cost/measured.yaml)")
    p.add_argument("--results", default="results",
                   help="the workflow's results folder: a finished CUDA run there with the "
                        "planned settings is priced at its recorded wall time")
    p.add_argument("--finished-free", action="store_true",
                   help="price a run that finished there at 0 and one cut mid-way at the "
                        "epochs left after its checkpoint (a campaign resumed in a later "
                        "allocation: the rest was paid for already)")
    p.add_argument("--ledger", default="none", metavar="CSV",
                   help="a pilot's claims.csv built by the paper profile: its paired "
                        "intervals give each comparison's seed spread at paper scale (a "
                        "ledger of another profile is not used for spreads); default none: "
                        "the cited spreads of src/sharpness/planning/spreads.yaml")
    p.add_argument("--power", type=float, default=DEFAULT_POWER,
                   help=f"the power each seeded claim's seeds are chosen to reach at the "
                        f"paper's reported effect (default {DEFAULT_POWER:g}); a claim "
                        f"counts as settled only at this power")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="two-sided type-I error of a verdict (default 0.05)")
    seq = p.add_argument_group("sequential seeds (--sequential CLAIM)")
    seq.add_argument("--sequential", default=None, metavar="CLAIM",
                     help="run this claim's comparison with sequential seeds (calls "
                          "snakemake once per look)")
    seq.add_argument("--min-seeds", type=int, default=3, help="seeds of the first look (default 3)")
    seq.add_argument("--max-seeds", type=int, default=10, help="the most seeds ever run (default 10)")
    seq.add_argument("--seed-step", type=int, default=1, help="seeds added per look (default 1)")
    seq.add_argument("--spending", choices=SPENDING, default="pocock",
                     help="alpha-spending function: pocock (Pocock-type, early stops "
                          "possible; default) or obf (O'Brien-Fleming-type)")
    seq.add_argument("--cores", type=int, default=1, help="snakemake --cores at each look (default 1)")
    seq.add_argument("--figures", default="figures", help="the figures folder it reads (default figures)")
    seq.add_argument("--snakemake-arg", action="append", default=[], metavar="ARG",
                     help="extra argument for each snakemake call (repeatable)")
    p.set_defaults(func=run)


def _load(args: argparse.Namespace) -> tuple[dict, list]:
    from sharpness.claims.ledger import all_claims

    if not args.configfile and args.base == "none":
        raise ConfigError("sharpness plan: give --configfile or a --base config")
    config = load_profile(args.configfile, None if args.base == "none" else args.base)
    claims = all_claims()
    if args.claims:
        wanted = [c.strip() for c in args.claims.split(",") if c.strip()]
        unknown = sorted(set(wanted) - {c.id for c in claims})
        if unknown:
            raise ConfigError(f"--claims: unknown claim id(s) {unknown}")
        claims = [c for c in claims if c.id in wanted]
    return config, claims


def _prices(args: argparse.Namespace, config: dict, needs: dict) -> tuple[Any, str]:
    """Prices of every run ``needs`` names (:class:`sharpness.planning.prices.Prices`),
    priced over ``config`` (the profile with the designed seeds), and the pricing line of
    the header."""
    from sharpness.cost import rates_text
    from sharpness.cost.price import gpu_name, measured_note
    from sharpness.device import resolve_device
    from sharpness.planning.prices import run_prices

    rates = rates_of(args.tflops)
    device = resolve_device("auto")
    method = args.method
    if method == "auto":
        method = "measured" if device.type == "cuda" else "analytic"
    needed = frozenset().union(*(n.runs for n in needs.values()))
    prices = run_prices(config, method=method, device=device, rates=rates,
                        results=args.results, only=needed, measured=args.measured,
                        finished_free=bool(getattr(args, "finished_free", False)))
    used = sorted({s for s in prices.source.values()})
    estimated = any(s.startswith("analytic") for s in used)
    pricing = ("step times measured on this device" if method == "measured" else
               f"ESTIMATE: analytic FLOPs, {rates_text(rates)} assumed per GPU" if estimated
               else "step times measured by `sharpness cost measure`")
    pricing += f"; prices rest on: {'; '.join(used) or 'nothing'}"
    timed = sum(1 for s in prices.source.values() if s.startswith("measured"))
    if timed and method == "analytic":
        pricing += (f"; {timed} of {len(prices.source)} runs priced from step times measured "
                    f"on a GPU ({args.measured or 'sharpness/cost/measured.yaml'}), preferred "
                    "to the analytic estimate")
    note = measured_note(args.measured, gpu_name(device))
    return prices, pricing + (f"; {note}" if note else "")


def _totals(args: argparse.Namespace, config: dict, designed: tuple, plan: Any
            ) -> list[tuple[str, float, float, bool]]:
    """The totals printed together, each with what it includes, all by
    :func:`sharpness.cost.total_row` (each run once) at the plan's prices: the whole profile
    as configured (the README's profile price), every claim at its planned seeds, the plan."""
    from sharpness import cost
    from sharpness.device import resolve_device
    from sharpness.planning import PROFILE_TOTAL

    device = resolve_device("auto")
    method = args.method if args.method != "auto" else \
        ("measured" if device.type == "cuda" else "analytic")

    def priced(cfg: dict, only: frozenset | None = None) -> list:
        jobs = [j for j in cost.plan_jobs(cfg) if only is None or (j.paper, j.run) in only]
        return cost.price(jobs, method=method, device=device, rates=rates_of(args.tflops),
                          measured=args.measured)

    whole = cost.total_row(priced(config))
    read = frozenset().union(*(n.runs for n in designed[0].values()))
    claims = cost.total_row(priced(designed[2], read))
    return [(f"the whole profile as configured ({PROFILE_TOTAL}; the README's "
             f"profile price), {whole.runs:,} runs", whole.gpu_hours, whole.cap_hours,
             whole.bound),
            (f"every claim at its planned seeds (the runs the claims' predicates read, each "
             f"once), {claims.runs:,} runs", claims.gpu_hours, claims.cap_hours, claims.bound),
            (f"this plan ({len(plan.runs):,} runs, each once)", plan.hours, plan.cap_hours,
             plan.bound)]


def _ledger_rows(path: str | None) -> tuple[dict | None, str | None]:
    """The rows of a pilot ledger and the profile that built it (its ``.record.json``): only a
    paper-profile ledger gives a seed spread (:mod:`sharpness.planning.spread`); a ledger of
    another profile is read and said to be ignored for spreads."""
    if path is None or path == "none":
        return None, None
    import json

    from sharpness.claims.readme import read_ledger_csv

    if not Path(path).is_file():
        raise ConfigError(f"--ledger {path}: no such file")
    record = Path(path).with_suffix(".record.json")
    try:
        profile = json.loads(record.read_text()).get("profile") if record.is_file() else None
    except (OSError, ValueError) as err:
        raise ConfigError(f"--ledger {path}: its record {record} is not JSON: {err}") from err
    if profile != "paper":
        print(f"sharpness plan: --ledger {path} was built by the {profile or 'unknown'} profile: "
              "its seed spreads are not at paper scale and are not used", file=sys.stderr)
    return {str(r["id"]): r for r in read_ledger_csv(Path(path))}, profile


def run(args: argparse.Namespace) -> int:
    """Plan (or run sequential seeds), print, write."""
    from sharpness.planning import claims_plan as cp
    from sharpness.planning import output as plan_output

    if not args.gpu_hours >= 0:
        raise ConfigError(f"--gpu-hours {args.gpu_hours}: must be a number >= 0")
    if not 0 < args.alpha < 1:
        raise ConfigError(f"--alpha {args.alpha}: must be in (0, 1)")
    plan_output.record_path(args.out)  # a bad --out refused before the planning, not after
    config, claims = _load(args)
    if not 0 < args.power < 1:
        raise ConfigError(f"--power {args.power}: must be in (0, 1)")
    if args.sequential:
        claims = [c for c in claims if c.id == args.sequential] or [_claim(args.sequential)]
        prices, pricing = _prices(args, config, cp.claim_runs(claims, config))
        return _sequential(args, config, claims, prices.hours, prices.source, pricing)
    rows, ledger_profile = _ledger_rows(args.ledger)
    designed = cp.designed_needs([c for c in claims if c.kind != "check"], config,
                                 alpha=args.alpha, power=args.power, ledger=rows,
                                 ledger_profile=ledger_profile)
    prices, pricing = _prices(args, designed[2], designed[0])
    plan = cp.make_plan(claims, config, args.gpu_hours, prices.hours, prices.source,
                        pricing=pricing, alpha=args.alpha, power=args.power,
                        designed=designed, caps=prices.caps)
    record = plan.record(args.configfile or [args.base])
    out, rec = plan_output.write_plan(record, args.out)
    # the totals price the whole profile: a plan of chosen claims (--claims) leaves them out
    totals = None if args.claims else _totals(args, config, designed, plan)
    print(plan_output.render(plan, totals=totals))
    print(f"\nPlan {record['id']} written to {out} (config overlay) and {rec} (record). "
          f"Run it with:\n\n    snakemake --cores all --configfile "
          f"{' '.join(args.configfile or [args.base])} {out}")
    return 0


def _sequential(args: argparse.Namespace, config: dict, claims: list, prices: dict,
                sources: dict, pricing: str) -> int:
    from sharpness.planning import claims_plan as cp
    from sharpness.planning import output as plan_output
    from sharpness.planning.driver import (
        final_verdict,
        ledger_reader,
        run_sequential,
        seeds_for,
        snakemake_runner,
    )
    from sharpness.planning.sequential import Design

    needs = cp.claim_runs(claims, config)[args.sequential]
    if not needs.seed_paths:
        raise SharpnessError(f"--sequential {args.sequential}: its runs have no seed "
                             "replicates; sequential seeds apply to trained-network "
                             "comparisons")
    try:
        design = Design(args.min_seeds, args.max_seeds, args.seed_step, args.alpha,
                        args.spending)
    except ValueError as err:
        raise ConfigError(str(err)) from err
    base = {".".join(p): list(cp.get_path(config, p)) for p in needs.seed_paths}
    n_now = min(len(v) for v in base.values())
    hours_per_seed = sum(prices[r] for r in needs.runs) / max(n_now, 1)
    out = Path(args.out)
    runner = snakemake_runner(args.configfile or [args.base], out.with_suffix(".seeds.yaml"),
                              base, needs.targets, cores=args.cores,
                              extra_args=args.snakemake_arg)
    reader = ledger_reader(args.sequential, args.figures, str(config.get("profile", "quick")))
    print(design.describe(), flush=True)
    looks = run_sequential(design, run_seeds=runner, read_row=reader,
                           hours_per_seed=hours_per_seed, budget=args.gpu_hours)
    n = looks[-1].seeds
    seeds = {k: seeds_for(v, n) for k, v in base.items()}
    hours = n * hours_per_seed
    line = cp.ClaimLine(args.sequential, needs.claim.paper, len(needs.runs), hours, hours,
                        "+".join(sorted({sources[r] for r in needs.runs})),
                        0.0, "sequential: see the looks", True, seeds,
                        list(needs.claim.items))
    body = {"budget_gpu_hours": args.gpu_hours, "profile": config.get("profile", "?"),
            "configfiles": list(args.configfile or [args.base]), "pricing": pricing,
            "gpu_hours": hours, "runs": len(needs.runs) * n // max(n_now, 1),
            "targets": [*needs.targets, "figures/CLAIMS.md"], "seeds": seeds,
            "claims": {args.sequential: {k: v for k, v in vars(line).items() if k != "claim"}},
            "sequential": {args.sequential: {"design": design.as_dict(),
                                             "looks": [asdict(lk) for lk in looks],
                                             "verdict": final_verdict(looks)}}}
    record = {"id": cp.plan_id(body), **body}
    path, rec = plan_output.write_plan(record, out)
    for lk in looks:
        print(f"look at {lk.seeds} seeds: |T| {abs(lk.t):.2f} vs boundary {lk.boundary:.2f}, "
              f"row {lk.verdict!r} -> {lk.decision} {lk.note}".rstrip())
    print(f"verdict: {final_verdict(looks)} after {n} seeds ({hours:.3g} GPU-hours, "
          f"{line.hours_source}); plan {record['id']} written to {path} and {rec}")
    return 0


def _claim(claim_id: str) -> Claim:
    """The ledger's claim ``claim_id`` (a clear error when there is none)."""
    from sharpness.claims.ledger import all_claims

    for c in all_claims():
        if c.id == claim_id:
            return c
    raise ConfigError(f"--sequential {claim_id!r}: no such claim")
