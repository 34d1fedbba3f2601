"""``sharpness jobs``: every job of a build's plan, one line each, or one job's config.

Reads the profile as the workflow does (``--configfile`` files merged over the quick profile,
``--config KEY=VALUE`` and ``seed_offset`` applied), builds the plan
(:func:`sharpness.jobs.build_plan`, the object the Snakefile's rules read) and prints, per
job, its rule, id, what it does and the file holding its settings::

    sharpness jobs                                   # every job of the quick profile
    sharpness jobs --rule lesam_train                # one rule's jobs
    sharpness jobs --show lesam_train/cifar10_resnet18-sam-s0   # that job's settings (JSON)
    sharpness jobs --configfile workflow/config/paper.yaml --count

Reads only; writes nothing (``snakemake`` writes the job files when it plans).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from sharpness.config.profiles import DEFAULT_PROFILE, load_profile
from sharpness.errors import SharpnessError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``jobs`` subcommand."""
    parser = subparsers.add_parser(
        "jobs", help="list every job of the build's plan (rule, id, what it does, its config "
                     "file), or print one job's settings")
    parser.add_argument("--configfile", nargs="*", default=[], metavar="FILE",
                        help="config files merged over the quick profile, as snakemake's")
    parser.add_argument("--seed-offset", type=int, default=None,
                        help="the profile's seeds moved by N (as --config seed_offset=N)")
    parser.add_argument("--rule", help="only this rule's jobs")
    parser.add_argument("--show", metavar="RULE/ID", help="print this job's settings (JSON)")
    parser.add_argument("--count", action="store_true", help="jobs per rule, and the total")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from sharpness.jobs import build_plan
    from sharpness.mappings import offset_seeds

    config = load_profile(args.configfile, DEFAULT_PROFILE)
    if args.seed_offset is not None:
        config["seed_offset"] = args.seed_offset
    offset_seeds(config)
    plan = build_plan(config)
    if args.show:
        rule, _, ident = args.show.partition("/")
        try:
            job = plan.job(rule, ident)
        except KeyError as exc:
            raise SharpnessError(str(exc.args[0])) from None
        print(json.dumps(job.config, indent=1, sort_keys=True))
        return 0
    jobs = [j for j in plan if args.rule in (None, j.rule)]
    if args.rule and not jobs:
        raise SharpnessError(f"no job of rule {args.rule!r} in the plan; its rules: "
                             f"{', '.join(plan.rules())}")
    if args.count:
        per = Counter(j.rule for j in jobs)
        width = max(map(len, per), default=4)
        for rule, n in per.items():
            print(f"{rule:<{width}}  {n:>5}")
        print(f"{'total':<{width}}  {len(jobs):>5}")
        return 0
    for job in jobs:
        where = f"  [{job.config_file}]" if job.config_file else ""
        what = job.label or (job.outputs[0] if job.outputs else "")
        print(f"{job.key}: {what}{where}")
    return 0
