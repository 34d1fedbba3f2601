"""``sharpness claims``: the claims ledger (every claim of the papers with its verdict).

``sharpness claims`` prints ``figures/CLAIMS.md``; ``sharpness claims build`` evaluates every
claim on the CSVs under ``figures/`` and writes ``CLAIMS.md``, ``claims.csv`` and
``claims.json`` (the workflow's last rule); ``sharpness claims readme`` writes the
findings block of ``docs/findings.md`` from a ledger (and ``--check`` fails when the block is
stale); ``sharpness claims register --profile P`` writes the registration ``docs/registration/P.json`` (every claim's
predicate code and parameters, the profile's rules, seeds and sizes) before a run, and the
build compares the ledger with it; ``sharpness claims compare A.csv B.csv`` lists the rows
whose verdict or level moved between two ledgers (e.g. two runs with different seeds).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sharpness.commands import add_flags
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
                       help="the figures folder whose CSVs the claims read (default: figures), "
                            "or a snapshot's data archive (docs/claims_X.figures.tar.gz; "
                            "--out is then required)")
    build.add_argument("--profile", default="quick", help="the profile the figures come from")
    build.add_argument("--out", default=None, help="CLAIMS.md path (default: FIGURES/CLAIMS.md)")
    build.add_argument("--plan", default=None, metavar="JSON",
                       help="the plan record (`sharpness plan`) whose runs made these figures: "
                            "its id, GPU-hours and sequential verdicts enter the rows")
    build.add_argument("--min-seeds", type=int, default=None,
                       help="paired seeds a trained-network verdict needs (default: the "
                            "profile's, from sharpness/claims/rules.yaml: 3, evidence 4); under a "
                            "registration another value is listed as a deviation")
    build.add_argument("--registration", default=None, metavar="JSON",
                       help="the registration the ledger is compared with (default: "
                            "docs/registration/PROFILE.json, or PROFILE-seedN.json for "
                            "--seed-offset N, when it exists)")
    build.add_argument("--seed-offset", type=int, default=0, metavar="N",
                       help="the run's seed_offset (config key): picks its registration and "
                            "is checked against it (default 0)")
    build.add_argument("--price", action="store_true",
                       help="price what would settle each inconclusive row with the planner "
                            "(workflow/config/{evidence,paper}.yaml; imports torch)")
    build.set_defaults(func=_build)
    reg = sub.add_parser("register", help="register every claim's predicate code and "
                                          "parameters before a profile's run")
    reg.add_argument("--profile", required=True, help="the profile to register")
    reg.add_argument("--config", default=None,
                     help="its config (default: workflow/config/PROFILE.yaml)")
    reg.add_argument("--seed-offset", type=int, default=None, metavar="N",
                     help="register the run with `--config seed_offset=N` (default: the "
                          "config's own seed_offset, usually 0)")
    reg.add_argument("--confirmatory", type=int, nargs="?", const=1, default=0, metavar="K",
                     help="register confirmatory look K (default 1) at the seed offset derived "
                          "from the registration's decision id (sharpness.claims.looks)")
    reg.add_argument("--out", default=None,
                     help="where to write it (default: docs/registration/PROFILE.json, or "
                          "PROFILE-seedN.json for an offset N)")
    reg.set_defaults(func=_register)
    cmp_ = sub.add_parser("compare", help="rows whose verdict or level moved between two "
                                          "ledgers")
    cmp_.add_argument("first", help="claims.csv of one run (or a committed snapshot)")
    cmp_.add_argument("second", help="claims.csv of the other run")
    cmp_.set_defaults(func=_compare)
    readme = sub.add_parser("readme", help="write the README findings block from a ledger")
    readme.add_argument("--ledger", default="figures/claims.csv",
                        help="claims.csv of a run (or a committed snapshot of one)")
    add_flags(readme, readme="the file whose findings block is written (default: "
                             "docs/findings.md)")
    readme.set_defaults(readme="docs/findings.md")
    readme.add_argument("--snapshot", default=None,
                        help="also copy the ledger CSV here (the file the README test reads), "
                             "with its run's profile, commit and date beside it (<snapshot>.record.json)")
    readme.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if the block differs from the ledger")
    readme.set_defaults(func=_readme)
    snap = sub.add_parser("snapshot", help="copy a run's ledger to a committed snapshot, with "
                                           "its record, leaving the README as it is")
    snap.add_argument("--ledger", default="figures/claims.csv",
                      help="claims.csv of a run (default: figures/claims.csv)")
    snap.add_argument("--out", required=True,
                      help="the snapshot, e.g. docs/claims_evidence_seed1000.csv (its record "
                           "goes beside it as <out>.record.json)")
    snap.add_argument("--data", action="store_true",
                      help="also pack the figure CSVs and sidecars the ledger read beside it "
                           "(<out stem>.figures.tar.gz), from which `claims build --figures` "
                           "rebuilds the snapshot")
    snap.set_defaults(func=_snapshot)
    sup = sub.add_parser("supersede", help="mark a committed snapshot as superseded by today's "
                                            "registration (kept for `claims compare`)")
    sup.add_argument("--ledger", required=True, help="a committed snapshot, e.g. "
                                                   "docs/claims_quick.csv")
    sup.set_defaults(func=_supersede)
    settle = sub.add_parser("settle", help="recompute a committed snapshot's to_settle column "
                                           "with today's planner (verdicts untouched)")
    settle.add_argument("--ledger", required=True,
                        help="a committed snapshot, e.g. docs/claims_evidence.csv (its record "
                             "<snapshot>.record.json notes the recomputation)")
    settle.add_argument("--profile", default=None,
                        help="the profile whose rules apply (default: the snapshot record's)")
    settle.set_defaults(func=_settle)


def _show(args: argparse.Namespace) -> int:
    path = Path(args.figures) / "CLAIMS.md"
    if not path.is_file():
        raise SharpnessError(f"{path} does not exist: run `snakemake --cores all` (its last "
                             "rule writes the ledger) or `sharpness claims build`")
    print(path.read_text(), end="")
    return 0


def _build(args: argparse.Namespace) -> int:
    """Build the ledger from a figures folder, or from a snapshot's archive with the keys
    committed beside it trusted while it is read."""
    from sharpness.claims.snapshot_keys import figures_source

    with figures_source(Path(args.figures), args.out) as figures:
        return _build_from(figures, args)


def _build_from(figures: Path, args: argparse.Namespace) -> int:
    """The build of ``_build`` from a folder of figures."""
    from sharpness.claims.ledger import (
        adjust_multiplicity,
        all_claims,
        evaluate,
        load_items,
        markdown,
        write_ledger,
    )
    from sharpness.claims.looks import look_status, mark_rows
    from sharpness.claims.registration import deviation_rows, read_registration
    from sharpness.claims.registration_checks import git_check
    from sharpness.claims.registration_decision import registration_substitution
    from sharpness.claims.registration_files import existing_registration, registration_path
    from sharpness.claims.registration_report import deviations_markdown, seed_offset_mismatch
    from sharpness.claims.rules import rules_for
    from sharpness.config.variant import describe as describe_variant
    from sharpness.config.variant import read_record as read_variant
    from sharpness.planning.settle import annotate_to_settle, load_configs
    from sharpness.runs.provenance import write_artifact_provenance

    if not figures.is_dir():
        raise SharpnessError(f"--figures {figures}: no such folder")
    rules = rules_for(args.profile, min_seeds=args.min_seeds)
    claims = all_claims()
    raw = evaluate(figures, args.profile, claims=claims, rules=rules, adjust=False)
    rows = [dict(r) for r in raw]
    adjust_multiplicity(rows, 1 - rules.level)
    reg_file = (Path(args.registration) if args.registration
                else existing_registration(args.profile, args.seed_offset)
                or registration_path(args.profile, seed_offset=args.seed_offset))
    record = None
    if args.registration or reg_file.is_file():
        if not reg_file.is_file():
            raise SharpnessError(f"--registration {reg_file}: no such file (write it with "
                                 f"`sharpness claims register --profile {args.profile}`)")
        record = read_registration(reg_file)
    data = load_items(figures, claims)
    git = None
    if record:
        devs = deviation_rows(record, claims, raw, data, args.profile, rules,
                              _run_config(record, args.seed_offset))
        git = git_check(reg_file, data)
        problems = [p for p in (git["problem"], registration_substitution(
            record, args.profile, args.seed_offset, reg_file)) if p]
        if problems:
            devs.insert(0, {"id": "registration", "what": problems,
                            "verdict_now": None, "verdict_registered": None,
                            "p_adj_now": None, "p_adj_registered": None})
        again = record.get("re_registered_after_data") or {}
        for row in rows:
            if row["id"] in again:
                row["note"] = "; ".join(x for x in (
                    f"re-registered after data ({again[row['id']]})", row["note"]) if x)
    else:
        devs = []
    look = look_status(record, args.seed_offset, reg_file if record else None)
    mark_rows(rows, look)
    rows = annotate_to_settle(rows, claims, rules, load_configs() if args.price else None)
    if args.plan:
        from sharpness.planning.ledger import annotate, load_plan

        rows = annotate(rows, load_plan(args.plan))
    out = Path(args.out) if args.out else figures / "CLAIMS.md"
    footer = deviations_markdown(devs, record, args.seed_offset, git, look)
    variant = read_variant()  # a build with other settings than the profile's names them
    header = (f"**Variant:** {describe_variant(variant, shown=12)}. Its figures were built "
              "with these settings, not the profile's; the registration compares each item's "
              "recorded parameters with the registered ones.\n" if variant is not None else "")
    registered = ({"id": record["id"], "file": str(reg_file), "seed_offset": args.seed_offset,
                   "git": git, "look": look,
                   "seeds": seed_offset_mismatch(record, args.seed_offset) or "as registered",
                   "deviations": [{k: d[k] for k in ("id", "what", "verdict_now",
                                                     "verdict_registered", "p_adj_now",
                                                     "p_adj_registered")} for d in devs]}
                  if record else None)
    written = write_ledger(rows, out, args.profile, header=header, rules=rules, footer=footer,
                           extra={"registration": registered,
                                  **({"variant": variant} if variant is not None else {})})
    # the ledger's record comes last; its inputs are the CSVs it read (by content and id)
    read = sorted({item for r in rows for item in str(r.get("items") or "").split(";") if item})
    write_artifact_provenance(out, kind="ledger",
                              params={"profile": args.profile, "min_seeds": rules.min_seeds,
                                      "plan": args.plan,
                                      "registration": record["id"] if record else None,
                                      "registration_file": str(reg_file) if record else None,
                                      "seed_offset": args.seed_offset,
                                      "deviations": len(devs)},
                              inputs=[c for i in read if (c := figures / f"{i}.csv").is_file()],
                              outputs=written)
    print(markdown(rows, args.profile, header=header, rules=rules, footer=footer), end="")
    return 0


def _run_config(record: dict, seed_offset: int) -> dict | None:
    """The registered profile config file as it reads now, seeds moved by the run's offset
    (None when the file is not there: the items' config is then not compared)."""
    import copy

    from sharpness.config.variant import in_checkout
    from sharpness.mappings import offset_seeds

    path = in_checkout(str((record.get("config") or {}).get("path") or ""))
    if not path.is_file():
        return None
    from sharpness.claims.registration import load_profile_config

    config = copy.deepcopy(load_profile_config(path))
    config["seed_offset"] = seed_offset
    offset_seeds(config)
    return config


def _register(args: argparse.Namespace) -> int:
    from sharpness.claims.ledger import all_claims
    from sharpness.claims.registration import load_profile_config, registration
    from sharpness.claims.registration_files import registration_path
    from sharpness.io import atomic_write_json

    config_path = args.config or f"workflow/config/{args.profile}.yaml"
    config = load_profile_config(config_path)
    if config.get("profile") not in (None, args.profile):
        raise SharpnessError(f"--config {config_path} is the {config.get('profile')!r} "
                             f"profile, not {args.profile!r}")
    if args.seed_offset is not None:
        config["seed_offset"] = args.seed_offset
    record = registration(args.profile, all_claims(), config, config_path, checkout=Path.cwd(),
                          confirmatory=args.confirmatory)
    offset = record["config"]["seed_offset"]
    out = Path(args.out) if args.out else registration_path(args.profile, seed_offset=offset)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, record)
    print(f"{out}: registration {record['id']} of {len(record['claims'])} claims "
          f"(profile {args.profile}, seed offset {offset}, commit {str(record['git_commit'] or '?')[:7]}"
          f"{', uncommitted changes' if record['dirty'] else ''})")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from sharpness.claims.compare import compare_ledgers, compare_text
    from sharpness.claims.readme import read_ledger_csv

    paths = [Path(args.first), Path(args.second)]
    for path in paths:
        if not path.is_file():
            raise SharpnessError(f"{path}: no such ledger CSV")
    moved = compare_ledgers(read_ledger_csv(paths[0]), read_ledger_csv(paths[1]))
    print(compare_text(moved, str(paths[0]), str(paths[1])), end="")
    return 0


def _readme(args: argparse.Namespace) -> int:
    from sharpness.claims import readme as findings
    from sharpness.io import atomic_write_text

    ledger = Path(args.ledger)
    if not ledger.is_file():
        raise SharpnessError(f"--ledger {ledger}: no such file (build the ledger first)")
    # a snapshot counts only when its record vouches for it (committed, or signed with the
    # ledger's hash): a record merely present beside a ledger never replaces the check
    vouched = findings.read_record(ledger)
    if vouched is None:  # a run's ledger: checked against the hash its build recorded
        ledger = _run_ledger(args.ledger)
    rows = findings.read_ledger_csv(ledger)
    readme = Path(args.readme)
    text = readme.read_text()
    # a snapshot carries its record beside it; a run's ledger has its files
    record = ((None if args.snapshot else vouched) or findings.snapshot_record(ledger))
    new = findings.replace_block(text, findings.readme_block(
        rows, source=str(args.snapshot or ledger), record=record))
    if args.check:
        if new != text:
            print(f"{readme}: the findings block differs from {ledger}; rerun "
                  "`sharpness claims readme`")
            return 1
        return 0
    atomic_write_text(readme, new)
    if args.snapshot:
        _write_snapshot(ledger, Path(args.snapshot), record)
    return 0


def _run_ledger(path: str) -> Path:
    """A run's ledger CSV, checked against the hash its build recorded."""
    from sharpness.runs.seal import verify_result

    ledger = Path(path)
    if not ledger.is_file():
        raise SharpnessError(f"--ledger {ledger}: no such file (build the ledger first)")
    verify_result(ledger, what="claims ledger")
    return ledger


def _write_snapshot(ledger: Path, out: Path, record: dict) -> None:
    from sharpness.claims.snapshot_trust import write_record
    from sharpness.io import atomic_write_text

    atomic_write_text(out, ledger.read_text())
    write_record(out, record)


def _snapshot(args: argparse.Namespace) -> int:
    from sharpness.claims.readme import snapshot_record

    ledger = _run_ledger(args.ledger)
    record = snapshot_record(ledger)
    _write_snapshot(ledger, Path(args.out), record)
    if args.data:
        from sharpness.claims.snapshot_data import archive_path, pack
        from sharpness.claims.snapshot_keys import write_keys

        packed = pack(ledger, ledger.parent, archive_path(args.out))
        keys = write_keys(packed)
        print(f"{packed}: the ledger's data, {packed.stat().st_size} bytes; {keys}: the public "
              "keys that signed it (commit both: a clone trusts the committed keys for it)")
    print(f"{args.out}: snapshot of {ledger} (profile {record.get('profile')}, seed offset "
          f"{record.get('seed_offset', 0)}, commit {str(record.get('git_commit') or '?')[:7]})")
    return 0


def _snapshot_record(ledger: Path) -> dict:
    """The record of a committed snapshot (``docs/claims_*.csv``); a run's ledger has none,
    and a record that does not vouch for its snapshot counts as none."""
    from sharpness.claims.readme import read_record, record_path

    record = read_record(ledger) if ledger.is_file() else None
    if record is None:
        raise SharpnessError(f"--ledger {ledger}: not a snapshot vouched for by its record "
                             f"({record_path(ledger)}: absent, or neither committed nor signed "
                             "with the ledger's hash); a run's ledger is rebuilt with "
                             "`sharpness claims build`")
    return record


def _settle(args: argparse.Namespace) -> int:
    from sharpness.claims.ledger import all_claims, to_csv
    from sharpness.claims.readme import read_ledger_csv
    from sharpness.claims.rules import rules_for
    from sharpness.claims.snapshot_trust import write_record
    from sharpness.io import atomic_write_text
    from sharpness.planning.settle import annotate_to_settle, load_configs
    from sharpness.runs.environment import code_version, now_iso

    ledger = Path(args.ledger)
    record = _snapshot_record(ledger)
    profile = args.profile or record.get("profile") or "quick"
    rows = read_ledger_csv(ledger)
    new = annotate_to_settle(rows, all_claims(), rules_for(profile), load_configs())
    changed = sum(a.get("to_settle") != b["to_settle"] for a, b in zip(rows, new, strict=True))
    code = code_version()
    atomic_write_text(ledger, to_csv(new))
    record["to_settle_recomputed"] = {"git_commit": code.get("git_commit"),
                                      "dirty": code.get("dirty"), "at": now_iso(),
                                      "rows_changed": changed}
    write_record(ledger, record)
    print(f"{ledger}: to_settle recomputed for {profile} ({changed} row(s) changed); the "
          "verdicts, estimates and p-values are those of its run")
    return 0


def _supersede(args: argparse.Namespace) -> int:
    from sharpness.claims.registration import read_registration
    from sharpness.claims.registration_files import existing_registration
    from sharpness.claims.snapshot_trust import write_record
    from sharpness.runs.environment import now_iso

    ledger = Path(args.ledger)
    record = _snapshot_record(ledger)
    reg = existing_registration(str(record.get("profile")), int(record.get("seed_offset") or 0))
    current = read_registration(reg)["id"] if reg else None
    record["superseded"] = {"registration": record.get("registration"), "by": current,
                            "at": now_iso(), "look": "exploratory: not a look of today's "
                            "rules on seeds derived from their registration"}
    write_record(ledger, record)
    print(f"{ledger}: superseded (built under registration {record.get('registration')}, "
          f"today's {current}); kept for `sharpness claims compare`")
    return 0
