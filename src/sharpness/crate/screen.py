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


def _ledger(root: Path) -> list[str]:
    """The ledger's verdict counts per paper, with the profile's evidence level."""
    path = root / "figures" / "claims.json"
    if not path.is_file():
        return ["ledger:   none yet (figures/CLAIMS.md is built by `snakemake --cores all`)"]
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


def finished(root: str | Path, command: Sequence[str], crate: str = CRATE) -> str:
    """The screen after a successful build in ``root``, run as ``command``."""
    root = Path(root)
    folder = root / "figures"
    figures = sorted(folder.rglob("*.pdf")) if folder.is_dir() else []
    tables = sorted(p for p in folder.rglob("*.md") if p.parent != folder) if figures else []
    configs = [w for i, w in enumerate(command) if w.startswith("--configfile")
               or (i and command[i - 1] == "--configfile")]
    report = shlex.join(["snakemake", *configs, "--report", "report.html"])
    lines = [RULE, "The build is done.",
             f"figures:  {len(figures)} PDF figures, {len(tables)} tables under figures/ "
             "(each with its CSV and provenance record); runs under results/"]
    lines += _ledger(root)
    lines.append(f"crate:    {crate} (`sharpness audit --crate {crate} FIGURE` checks a "
                 "figure against it)" if (root / crate).is_file()
                 else f"crate:    not built by this run (`snakemake --cores 1 {crate}`)")
    example = figures[0].relative_to(root).as_posix() if figures else "figures/<paper>/<fig>.pdf"
    lines += ["next:", f"  {report}   # then open report.html in a browser",
              f"  sharpness audit {example}   # where a figure came from, checked on disk",
              RULE]
    return "\n".join(lines)


def failed_jobs(snakemake_log: str) -> list[tuple[str, list[str]]]:
    """``[(rule, [its log files])]`` of every job error in a Snakemake log's text."""
    jobs = []
    for match in JOB_ERROR.finditer(snakemake_log):
        logs = JOB_LOG.search(match.group(2))
        jobs.append((match.group(1), logs.group(1).split(", ") if logs else []))
    return jobs


def failed(logfiles: str | Sequence[str] | None, command: Sequence[str]) -> str:
    """The screen after a failed build: each failed job's own log, and how to resume."""
    paths = [logfiles] if isinstance(logfiles, str) else list(logfiles or [])
    text = ""
    for path in paths:
        try:
            text += Path(path).read_text(errors="replace")
        except OSError:
            continue
    jobs = failed_jobs(text)
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
