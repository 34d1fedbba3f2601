"""The screen a build ends with: what it made, or which job failed and how to go on.

The workflow's ``onsuccess:`` and ``onerror:`` handlers print :func:`finished` and
:func:`failed`; both take plain paths and the command line that ran (this module knows nothing
of Snakemake's objects) and never raise: a missing or unreadable file is said, not fatal.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RULE = "=" * 78
CRATE = "results/build.crate.zip"  # the workflow's rule `crate` writes it
#: Snakemake's job-error block: "Error in rule NAME:" ... "    log: PATH (check log file(s) ..."
JOB_ERROR = re.compile(r"^Error in rule (\S+):\n((?:[ \t]+.*\n)*)", re.M)
JOB_LOG = re.compile(r"^\s+log: (.*?) \(check log file", re.M)


def _ledger(root: Path, build: str = "snakemake --cores all") -> list[str]:
    """The ledger's verdict counts per paper, with the profile's evidence level (``build``:
    the command that makes it)."""
    path = root / "figures" / "claims.json"
    if not path.is_file():
        return [f"ledger:   none yet (figures/CLAIMS.md is built by `{build}`)"]
    try:
        ledger = json.loads(path.read_text())
        counts: dict[str, dict[str, int]] = ledger["counts"]
        rows: list[dict[str, Any]] = ledger["claims"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"ledger:   {path} cannot be read ({type(exc).__name__}: {exc})"]
    profile = ledger.get("profile", "?")
    smoke = bool((ledger.get("rules") or {}).get("smoke"))
    lines = [f"ledger:   figures/CLAIMS.md, profile {profile}"
             + (": a smoke test; its trained-network rows decide nothing (evidence level "
                "smoke), run the evidence profile for verdicts" if smoke else "")]
    for paper, verdicts in counts.items():
        levels: dict[str, int] = {}
        for row in rows:
            if isinstance(row, dict) and str(row.get("paper")) == paper.split(" ")[0]:
                levels[str(row.get("level") or "-")] = levels.get(str(row.get("level") or "-"),
                                                                  0) + 1
        shown = ", ".join(f"{n} {v}" for v, n in verdicts.items() if n)
        level = ", ".join(f"{n} {lv}" for lv, n in sorted(levels.items()))
        lines.append(f"  {paper:<22} {shown or 'no claims'}"
                     + (f"  [level: {level}]" if level and "(" not in paper else ""))
    return lines


#: the files of a build a person opens: figures (PDF) and tables (Markdown) of each paper
ITEM = re.compile(r"^figures/[^/]+/[^/.]+\.(?:pdf|md)$")


def built_since(root: Path, started: float | None) -> list[str]:
    """The figures and tables under ``root/figures`` written at or after ``started`` (the
    Snakefile's parse time: what this run built); every one when ``started`` is None."""
    folder = root / "figures"
    if not folder.is_dir():
        return []
    found = [p for p in folder.rglob("*") if p.is_file()
             and ITEM.match(p.relative_to(root).as_posix())
             and (started is None or p.stat().st_mtime >= started - 1)]
    return sorted(p.relative_to(root).as_posix() for p in found)


def _targets(command: Sequence[str]) -> list[str]:
    """The targets of the ``snakemake`` command line that ran (none: the default ``all``)."""
    from sharpness.config.targets import positional_targets

    return positional_targets(list(command[1:]))


def next_commands(root: Path, command: Sequence[str], built: list[str],
                  crate: str = CRATE, crate_built: bool = False,
                  variant: str | None = None) -> list[tuple[str, str]]:
    """``[(command, what it does)]`` to run after this build, computed from its targets: the
    report of the same targets (a report of ``all`` after a one-figure build fails on every
    figure not built), the crate (the rule's when this run made it, else a crate of what is
    on disk) and an audit of a figure this run built."""
    targets = _targets(command)
    configs = [w for i, w in enumerate(command) if w.startswith("--configfile")
               or (i and command[i - 1] == "--configfile")]
    here = f"{variant}/" if variant else ""
    report = shlex.join(["snakemake", *targets, *configs, "--report", "report.html"])
    out = [(report, f"then open {here}report.html in a browser")]
    figures = [b for b in built if b.endswith(".pdf")] or built
    if crate_built:
        example = figures[0] if figures else "figures/<paper>/<fig>.pdf"
        out.append((shlex.join(["sharpness", "audit", "--crate", here + crate, here + example]),
                    "a figure checked against the build's crate alone"))
    else:
        words = ["sharpness", "crate", *(["--root", variant] if variant else []), "--out",
                 f"{here}results/part.crate.zip"]
        out.append((shlex.join(words),
                    "the figures and runs on disk as an RO-Crate (the whole build's crate "
                    f"is {here}{crate}, made by `snakemake --cores all`)"))
    if figures:
        out.append((shlex.join(["sharpness", "audit", here + figures[0]]),
                    "where a figure came from, checked on disk"))
    if variant and figures:
        name = variant.rsplit("/", 1)[-1]
        out.append((shlex.join(["sharpness", "diff", figures[0], "--variant", name, "--out",
                                "compare.png"]),
                    "this variant's figure against the default build's (build that one with "
                    "the same command without your config)"))
    return out


def finished(root: str | Path, command: Sequence[str], crate: str = CRATE,
             started: float | None = None, variant: str | None = None) -> str:
    """The screen after a successful build in ``root``, run as ``command`` and started at
    ``started`` (seconds since the epoch; None: every file counts as this run's).
    ``variant``: the variant's folder relative to the checkout (``variants/<name>``) when the
    build is one (:mod:`sharpness.config.variant`); every path shown is then from the
    checkout, where the commands run."""
    root = Path(root)
    here = f"{variant}/" if variant else ""
    built = built_since(root, started)
    everything = built_since(root, None)
    lines = [RULE, "The build is done."]
    if variant:
        from sharpness.config.variant import RECORD, describe, read_record

        record = read_record(root / RECORD)
        lines.append(f"variant:  {describe(record) if record else variant}")
        lines.append(f"          built in {variant}/; the default build was left as it is")
    if built:
        shown = [here + b for b in built[:8]]
        shown += [f"... and {len(built) - 8} more"] if len(built) > 8 else []
        lines.append(f"built:    {len(built)} figure(s) and table(s) in this run "
                     "(each with its CSV, caption and provenance record):")
        lines += [f"  {b}" for b in shown]
    else:
        lines.append("built:    nothing new: every target was up to date")
    lines.append(f"on disk:  {sum(e.endswith('.pdf') for e in everything)} figures and "
                 f"{sum(e.endswith('.md') for e in everything)} tables under {here}figures/; "
                 f"runs under {here}results/")
    configs = [w for i, w in enumerate(command) if w.startswith("--configfile")
               or (i and command[i - 1] == "--configfile")]
    lines += [line.replace("figures/CLAIMS.md", f"{here}figures/CLAIMS.md", 1)
              for line in _ledger(root, shlex.join(["snakemake", "--cores", "all", *configs]))]
    crate_path = root / crate
    crate_built = crate_path.is_file() and (started is None
                                            or crate_path.stat().st_mtime >= started - 1)
    lines.append(f"crate:    {here}{crate}" if crate_built else "crate:    not built by this run")
    lines.append("next:")
    lines += [f"  {cmd}   # {why}" for cmd, why in next_commands(root, command, built, crate,
                                                                crate_built, variant)]
    lines.append(RULE)
    return "\n".join(lines)


#: where the last successful build's screen is kept (relative to the build's folder)
SAVED = "logs/end_screen.txt"


def show(screen: str, save: str | Path | None = SAVED) -> None:
    """Print the closing screen and keep a copy in ``save`` (None: not kept), so that it can be
    read again after the console has scrolled, and its commands tested after a full build."""
    print(screen)
    if save is not None:
        from sharpness.io import atomic_write_text

        try:
            Path(save).parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(save, screen + "\n")
        except OSError as exc:  # the screen was shown; a copy that cannot be kept is said
            print(f"(the screen could not be kept in {save}: {exc})")


def failed_jobs(snakemake_log: str) -> list[tuple[str, list[str]]]:
    """``[(rule, [its log files])]`` of every job error in a Snakemake log's text."""
    jobs = []
    for match in JOB_ERROR.finditer(snakemake_log):
        logs = JOB_LOG.search(match.group(2))
        jobs.append((match.group(1), logs.group(1).split(", ") if logs else []))
    return jobs


def failed(logfiles: str | Sequence[str] | None, command: Sequence[str],
           variant: str | None = None) -> str:
    """The screen after a failed build: each failed job's own log (from the checkout: a
    variant's under ``variant``), and how to resume."""
    paths = [logfiles] if isinstance(logfiles, str) else list(logfiles or [])
    text = ""
    for path in paths:
        try:
            text += Path(path).read_text(errors="replace")
        except OSError:
            continue
    jobs = [(rule, [f"{variant}/{log}" if variant else log for log in logs])
            for rule, logs in failed_jobs(text)]
    lines = [RULE, "The build stopped: a job failed."]
    for rule, logs in jobs:
        lines.append(f"  rule {rule}: its log {', '.join(logs)}" if logs
                     else f"  rule {rule}: no log file (its error is above)")
    if not jobs:
        lines.append("  (no job error found in Snakemake's log"
                     + (f" {', '.join(paths)}" if paths else "") + "; the error is above)")
    lines += ["resume, once it is fixed (finished jobs are kept, only what is missing reruns):",
              f"  {shlex.join(command) if command else 'snakemake --cores all'}",
              "  (add --rerun-incomplete if Snakemake names incomplete files; `sharpness "
              "locks` lists the run folders still being written)", RULE]
    return "\n".join(lines)
