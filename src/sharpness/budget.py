"""The pipeline's time and memory budget, read from Snakemake's ``benchmark:`` files.

Every rule writes ``benchmarks/results/<paper>/<job>.tsv`` (wall seconds, peak RSS, CPU
time). Summing them per paper gives the measured budget the README reports: the compute a
paper's items need (jobs run in parallel, so the wall time of a whole run is lower).
"""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PaperBudget:
    """Totals for one paper: job count, summed wall and CPU seconds, peak memory."""

    paper: str
    jobs: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    max_rss_mb: float = 0.0
    slowest_job: str = ""
    slowest_s: float = 0.0


def _number(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def collect(root: str | os.PathLike[str] = "benchmarks/results") -> list[PaperBudget]:
    """Per-paper totals of every benchmark file under ``root`` (sorted by paper)."""
    totals: dict[str, PaperBudget] = defaultdict(lambda: PaperBudget(""))
    for tsv in sorted(Path(root).rglob("*.tsv")):
        paper = tsv.relative_to(root).parts[0]
        with open(tsv) as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        if not rows:
            continue
        row = rows[-1]
        entry = totals[paper]
        entry.paper = paper
        entry.jobs += 1
        wall = _number(row.get("s"))
        entry.wall_s += wall
        entry.cpu_s += _number(row.get("cpu_time"))
        entry.max_rss_mb = max(entry.max_rss_mb, _number(row.get("max_rss")))
        if wall > entry.slowest_s:
            entry.slowest_s, entry.slowest_job = wall, str(tsv.relative_to(root).with_suffix(""))
    return [totals[k] for k in sorted(totals)]


def markdown(budgets: list[PaperBudget]) -> str:
    """A Markdown table of the budgets with a total row."""
    lines = ["| paper | jobs | summed job wall time (s) | CPU time (s) | peak RSS of one job (MB) "
             "| slowest job (s) |", "|---|---:|---:|---:|---:|---|"]
    for b in budgets:
        lines.append(f"| {b.paper} | {b.jobs} | {b.wall_s:.0f} | {b.cpu_s:.0f} | "
                     f"{b.max_rss_mb:.0f} | {b.slowest_job} ({b.slowest_s:.0f}) |")
    if budgets:
        lines.append(f"| **all** | {sum(b.jobs for b in budgets)} | "
                     f"{sum(b.wall_s for b in budgets):.0f} | {sum(b.cpu_s for b in budgets):.0f}"
                     f" | {max(b.max_rss_mb for b in budgets):.0f} | |")
    return "\n".join(lines) + "\n"
