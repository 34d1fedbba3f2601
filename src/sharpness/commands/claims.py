"""``sharpness claims``: the claims ledger (every claim of the papers with its verdict).

``sharpness claims`` prints ``figures/CLAIMS.md``; ``sharpness claims build`` evaluates every
claim on the CSVs under ``figures/`` and writes ``CLAIMS.md``, ``claims.csv`` and
``claims.json`` (the workflow's last rule); ``sharpness claims readme`` writes the README's
findings block from a ledger (and ``--check`` fails when the block is stale).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sharpness.errors import SharpnessError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``claims`` subcommand."""
    parser = subparsers.add_parser(
        "claims", help="print (or build) the claims ledger figures/CLAIMS.md",
        description="Every claim of the three papers and every catalog check, with a verdict "
                    "computed from the figures' CSVs.")
    parser.add_argument("--figures", default="figures", help="the figures folder")
    parser.set_defaults(func=_show)
    sub = parser.add_subparsers(dest="action")
    build = sub.add_parser("build", help="evaluate every claim and write the ledger")
    build.add_argument("--figures", default="figures",
                       help="the figures folder whose CSVs the claims read (default: figures)")
    build.add_argument("--profile", default="quick", help="the profile the figures come from")
    build.add_argument("--out", default=None, help="CLAIMS.md path (default: FIGURES/CLAIMS.md)")
    build.add_argument("--plan", default=None, metavar="JSON",
                       help="the plan record (`sharpness plan`) whose runs made these figures: "
                            "its id, GPU-hours and sequential verdicts enter the rows")
    build.add_argument("--min-seeds", type=int, default=None,
                       help="paired seeds a trained-network verdict needs (default: the "
                            "profile's, from sharpness/claims/rules.yaml: 3, evidence 5)")
    build.set_defaults(func=_build)
    readme = sub.add_parser("readme", help="write the README findings block from a ledger")
    readme.add_argument("--ledger", default="figures/claims.csv",
                        help="claims.csv of a run (or a committed snapshot of one)")
    readme.add_argument("--readme", default="README.md",
                        help="the file whose findings block is written (default: README.md)")
    readme.add_argument("--snapshot", default=None,
                        help="also copy the ledger CSV here (the file the README test reads), "
                             "with its run's profile, commit and date beside it (<snapshot>.record.json)")
    readme.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if the block differs from the ledger")
    readme.set_defaults(func=_readme)


def _show(args: argparse.Namespace) -> int:
    path = Path(args.figures) / "CLAIMS.md"
    if not path.is_file():
        raise SharpnessError(f"{path} does not exist: run `snakemake --cores all` (its last "
                             "rule writes the ledger) or `sharpness claims build`")
    print(path.read_text(), end="")
    return 0


def _build(args: argparse.Namespace) -> int:
    from sharpness.claims.ledger import evaluate, markdown, write_ledger
    from sharpness.claims.rules import rules_for
    from sharpness.provenance import write_artifact_provenance

    figures = Path(args.figures)
    if not figures.is_dir():
        raise SharpnessError(f"--figures {figures}: no such folder")
    rules = rules_for(args.profile, min_seeds=args.min_seeds)
    rows = evaluate(figures, args.profile, rules=rules)
    if args.plan:
        from sharpness.planning.ledger import annotate, load_plan

        rows = annotate(rows, load_plan(args.plan))
    out = Path(args.out) if args.out else figures / "CLAIMS.md"
    written = write_ledger(rows, out, args.profile, rules=rules)
    # the ledger's record comes last; its inputs are the CSVs it read (by content and id)
    read = sorted({item for r in rows for item in str(r.get("items") or "").split(";") if item})
    write_artifact_provenance(out, kind="ledger",
                              params={"profile": args.profile, "min_seeds": rules.min_seeds,
                                      "plan": args.plan},
                              inputs=[c for i in read if (c := figures / f"{i}.csv").is_file()],
                              outputs=written)
    print(markdown(rows, args.profile, rules=rules), end="")
    return 0


def _readme(args: argparse.Namespace) -> int:
    from sharpness.claims.readme import (
        read_ledger_csv,
        read_record,
        readme_block,
        record_path,
        replace_block,
        snapshot_record,
    )
    from sharpness.io import atomic_write_json, atomic_write_text

    ledger = Path(args.ledger)
    if not ledger.is_file():
        raise SharpnessError(f"--ledger {ledger}: no such file (build the ledger first)")
    rows = read_ledger_csv(ledger)
    readme = Path(args.readme)
    text = readme.read_text()
    # a committed snapshot carries its record beside it; a run's ledger has its files
    record = (None if args.snapshot else read_record(ledger)) or snapshot_record(ledger)
    new = replace_block(text, readme_block(rows, source=str(args.snapshot or ledger),
                                           record=record))
    if args.check:
        if new != text:
            print(f"{readme}: the findings block differs from {ledger}; rerun "
                  "`sharpness claims readme`")
            return 1
        return 0
    atomic_write_text(readme, new)
    if args.snapshot:
        atomic_write_text(args.snapshot, ledger.read_text())
        atomic_write_json(record_path(args.snapshot), record)
    return 0
