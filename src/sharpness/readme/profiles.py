"""The README's table of the three profiles with their measured time and cost (block
``profiles``), assembled from the committed measurements and the cost block.

It reads the **all** row of ``benchmarks/measured/<profile>_budget.md`` (written by
``benchmarks/quick_budget.sh``), the time of ``make test-paper``
(``benchmarks/measured/test_paper.md``) and the total of the ``cost`` block (``docs/gpus.md``), so the
numbers in the table are the ones those blocks show, never typed twice.
"""

from __future__ import annotations

import re
from pathlib import Path

from sharpness.planning import PROFILE_TOTAL
from sharpness.readme.blocks import MEASURED_DIR, blocks_in, documents

ALL_ROW = re.compile(r"^\| \*\*all\*\* \| \*\*(?P<wall>[\d:]+)\*\* \| (?P<cpu>\d+) \| "
                     r"(?P<rss>\d+) \| (?P<exit>\d+) \| (?P<jobs>\d+) \|", re.MULTILINE)
STAMP = re.compile(r"Measured on (?P<date>\d{4}-\d\d-\d\d) .*?at commit (?P<commit>[0-9a-f]+)",
                   re.DOTALL)
TOTAL = re.compile(r"^\| \*\*all\*\* \| \*\*total[^|]*\*\* \| (?P<runs>[\d,]+) \| [^|]+ \| "
                   r"(?P<hours>[^|]+) \|", re.MULTILINE)
BUSY = re.compile(r"Cores busy on average: (?P<busy>[\d.]+) of (?P<cores>\d+)")
TEST_PAPER = re.compile(r"in (?P<time>\d+ min \d+ s)")
#: a tier's row of ``benchmarks/measured/test_suite.md``: its result, wall time and CPU time
TIER_ROW = re.compile(r"^\| `(?P<tier>make [\w-]+)` \| [^|]+ \| (?P<result>[^|]+) \| [^|]+ \| "
                      r"(?P<wall>[\d:.]+) \| (?P<cpu>[\d.]+) \|", re.MULTILINE)


def _budget(root: Path, profile: str) -> str:
    path = root / MEASURED_DIR / f"{profile}_budget.md"
    text = path.read_text() if path.is_file() else ""
    row, stamp = ALL_ROW.search(text), STAMP.search(text)
    if not row or not stamp:
        return "not measured yet"
    busy = BUSY.search(text)  # below the core count: the machine was shared during the run
    return (f"{row['wall']} (m:ss) on 2 cores, {int(row['cpu']):,} CPU-s, {row['jobs']} jobs"
            + (f"; {busy['busy']} of {busy['cores']} cores busy on average" if busy else "")
            + f" (measured {stamp['date']} at `{stamp['commit']}`)")


def _paper(root: Path) -> str:
    cost = next((b.body for doc in documents(root) for b in blocks_in(doc.read_text())
                 if b.name == "cost"), "")
    total = TOTAL.search(cost)
    test = (root / MEASURED_DIR / "test_paper.md")
    timed = TEST_PAPER.search(test.read_text()) if test.is_file() else None
    stamp = STAMP.search(test.read_text()) if test.is_file() else None
    parts = []
    if total:
        parts.append(f"{total['hours'].strip()} GPU-hours for {total['runs']} training runs "
                     f"({PROFILE_TOTAL}; an estimate: [docs/gpus.md]"
                     "(docs/gpus.md#the-price-before-it-starts); `sharpness plan` prints the "
                     "same total beside the plan's)")
    if timed and stamp:
        parts.append(f"its whole DAG on synthetic data (`make test-paper`): {timed['time']} "
                     f"on 2 CPU cores (measured {stamp['date']} at `{stamp['commit']}`)")
    return "; ".join(parts) or "not measured yet"


def profiles_block(root: Path) -> str:
    """The table's Markdown."""
    rows = [
        ("`quick` (default)", "`workflow/config/quick.yaml`",
         "smoke test: every figure and table on the CPU from the embedded data at reduced "
         "scale, stand-ins labelled; its trained-network rows never decide a verdict",
         _budget(root, "quick")),
        ("`evidence`", "`workflow/config/evidence.yaml`",
         "settles on a CPU what a CPU can: the minorfirst theory, Grad-CAM, the eos network "
         "settings and the lesam mechanism with enough seeds for a verdict",
         _budget(root, "evidence")),
        ("`paper`", "`workflow/config/paper.yaml`",
         "the papers' scale and real data sets, on GPUs, locally or on SLURM; never "
         "substitutes a data set", _paper(root)),
    ]
    lines = ["| profile | config | what | time and cost |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines) + "\n"


def _seconds(wall: str) -> float:
    """``m:ss.cc`` or ``h:mm:ss`` (GNU time's elapsed wall clock) in seconds."""
    total = 0.0
    for part in wall.split(":"):
        total = total * 60 + float(part)
    return total


def _suite(root: Path) -> dict[str, str]:
    """``make test`` and ``make test-workflow``: each tier's cost, from the committed test-suite
    measurement (``benchmarks/time_test_suite.sh``), with its date and commit. A tier of
    several pytest calls (``make test-workflow``: its end-to-end tests, then the workflow's)
    is their sum: tests passed and failed, wall time and CPU time."""
    path = root / MEASURED_DIR / "test_suite.md"
    text = path.read_text() if path.is_file() else ""
    stamp = STAMP.search(text)
    if not stamp:
        return {}
    sums: dict[str, list[float]] = {}
    for row in TIER_ROW.finditer(text):
        tier = sums.setdefault(row["tier"], [0.0, 0.0, 0.0, 0.0])
        for k, word in enumerate(("passed", "failed")):
            found = re.search(rf"(\d+) {word}", row["result"])
            tier[k] += int(found.group(1)) if found else 0
        tier[2] += _seconds(row["wall"])
        tier[3] += float(row["cpu"])
    out = {}
    for tier, (passed, failed, wall, cpu) in sums.items():
        result = f"{passed:.0f} passed" + (f", {failed:.0f} failed" if failed else "")
        minutes, secs = divmod(int(wall), 60)
        out[tier] = (f"{result} in {minutes}:{secs:02d} (m:ss) on 2 cores, {cpu:,.0f} CPU-s "
                     f"(measured {stamp['date']} at `{stamp['commit']}`)")
    return out


def commands_block(root: Path) -> str:
    """The README's first table: what ``make`` and ``make test`` cost today, read from the
    committed measurements of the quick profile and the test suite (never typed), each with
    the commit and date it was measured at, so a reader sees how current it is."""
    suite = _suite(root)
    rows = [("`make`", "builds every figure and table of the quick profile, and its ledger",
             _budget(root, "quick")),
            ("`make test`", "the fast tier of the tests",
             suite.get("make test", "not measured yet")),
            ("`make test-workflow`", "the second tier: end-to-end tests, then those that plan "
             "or run the workflow",
             suite.get("make test-workflow", "not measured yet"))]
    lines = ["| command | what it does | cost today |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += ["", "Fewer cores busy on average than the machine has means other work shared it "
              "during the measurement: the wall time is then an upper bound, the CPU-s the "
              "steadier number.",
              "Re-measure with `bash benchmarks/quick_budget.sh` and "
              "`bash benchmarks/time_test_suite.sh`; per paper and per part in "
              "[docs/performance.md](docs/performance.md)."]
    return "\n".join(lines) + "\n"
