"""What writes each generated block of the README and ``docs/`` (see :mod:`.blocks`).

Two kinds of block:

* **computed** blocks are regenerated from the repository itself (a config, a committed
  ledger snapshot, the gallery's manifest, a deterministic computation): a test regenerates
  each one and compares it with the committed text, so they are never stale;
* **measured** blocks (wall times, CPU seconds, memory) cannot be regenerated in a test: the
  script that measures writes a committed file under ``benchmarks/measured/``, with the
  commit, date and machine of the measurement, and the block is that file's text. The test
  checks the block equals the file; re-measuring is the script named in :data:`MEASURED`.

``sharpness readme refresh`` rewrites every block of every document from these sources.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sharpness.claims.compare import compare_ledgers, compare_text
from sharpness.claims.readme import describe_run, read_ledger_csv, readme_block
from sharpness.claims.snapshot_trust import checkout_record as read_record  # the checkout's docs/
from sharpness.errors import SharpnessError
from sharpness.optim.spec import specs_table
from sharpness.readme.blocks import MEASURED_DIR
from sharpness.readme.gallery import gallery_block
from sharpness.readme.lesam_items import lesam_items_block
from sharpness.readme.profiles import commands_block, profiles_block
from sharpness.readme.toy import toy_block


@dataclass(frozen=True)
class Source:
    """How block ``name`` is written: ``render(root)`` returns its body; ``how`` is the
    command a person runs to renew what it shows; ``seconds`` a rough cost of ``render``."""

    name: str
    render: Callable[[Path], str]
    how: str
    seconds: float = 0.0
    measured: bool = False


def _measured(name: str, filename: str, how: str, optional: bool = False) -> Source:
    """A block that is the committed file ``filename`` of :data:`MEASURED_DIR`; ``optional``:
    until the first measurement, a line saying how to make it (else a missing file is an
    error)."""
    def render(root: Path) -> str:
        path = root / MEASURED_DIR / filename
        if not path.is_file():
            if optional:
                return f"Not measured yet: `{how}` writes `{MEASURED_DIR / filename}`.\n"
            raise SharpnessError(f"{path} is missing: measure it with `{how}`")
        return path.read_text()

    return Source(name, render, how, measured=True)


def _cli(root: Path, *args: str) -> str:
    """Stdout of ``sharpness ARGS`` run in ``root`` with this interpreter (the tree's code)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-m", "sharpness.cli", *args], cwd=root, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SharpnessError(f"`sharpness {' '.join(args)}` failed: {done.stderr.strip()}")
    return done.stdout


def snakemake_executable() -> str:
    """The ``snakemake`` beside this interpreter (the project's venv), else the one on PATH."""
    here = Path(sys.executable).parent / "snakemake"
    found = str(here) if here.is_file() else shutil.which("snakemake")
    if not found:
        raise SharpnessError("snakemake is not installed in this environment")
    return found


def _cost(root: Path) -> str:
    table = _cli(root, "cost", "--configfile", "workflow/config/paper.yaml",
                 "--method", "analytic")
    return ("Written by `sharpness cost --configfile workflow/config/paper.yaml --method "
            "analytic` (a test checks it is current):\n\n" + table)


#: the worked example of docs/planning.md: the budget and the profile it plans
PLAN_EXAMPLE = ("plan", "--gpu-hours", "100", "--configfile", "workflow/config/paper.yaml",
                "--method", "analytic")


def _plan(root: Path) -> str:
    """``sharpness plan``'s printout for 100 GPU-hours of the paper profile, without its last
    lines (they name the temporary files it wrote)."""

    with tempfile.TemporaryDirectory() as tmp:
        text = _cli(root, *PLAN_EXAMPLE, "--out", str(Path(tmp) / "plan.yaml"))
    body = text.split("\nPlan ", 1)[0].rstrip()
    return (f"Written by `sharpness {' '.join(PLAN_EXAMPLE)}` on a machine without a GPU (a "
            "test checks it is current):\n\n" + body + "\n")


def dag_outputs(root: Path, *args: str) -> tuple[int, list[str]]:
    """Jobs (``snakemake -n --forceall``) and declared outputs (``snakemake --summary
    --forceall``: rules print their ``message:`` in a dry run, not their outputs) of the whole
    DAG, so files a run already made count too."""
    def run(*flags: str) -> str:
        done = subprocess.run([snakemake_executable(), *flags, "--forceall", *args], cwd=root,
                              capture_output=True, text=True)
        if done.returncode:
            raise SharpnessError(f"snakemake {flags[0]} failed: {done.stderr.strip()[-2000:]}")
        return done.stdout

    total = re.search(r"^total\s+(\d+)$", run("-n"), re.MULTILINE)
    if total is None:
        raise SharpnessError("snakemake -n printed no job count")
    outputs = [line.split("\t", 1)[0] for line in run("--summary").splitlines()[1:] if line]
    return int(total[1]), outputs


def _counts(root: Path) -> str:
    jobs, outputs = dag_outputs(root)
    items = sorted({o for o in outputs if re.fullmatch(r"figures/[a-z]+/\w+\.(pdf|md)", o)})
    per = Counter(item.split("/")[1] for item in items)
    figures = sum(item.endswith(".pdf") for item in items)
    ledger = "figures/CLAIMS.md" in outputs
    lines = [f"The quick profile is {jobs} Snakemake jobs (`snakemake -n`, the `all` target "
             f"included) and makes {len(items)} report items, {figures} figures and "
             f"{len(items) - figures} tables"
             + (", plus the claims ledger `figures/CLAIMS.md`" if ledger else "") + ":", "",
             "| paper | figures and tables |", "|---|---:|"]
    lines += [f"| `{paper}` | {n} |" for paper, n in sorted(per.items())]
    return "\n".join(lines) + "\n"


def _eos_toy(root: Path) -> str:
    return toy_block(root)


def _gallery(root: Path) -> str:
    return gallery_block(root / "docs" / "gallery")


def _claims(root: Path) -> str:
    snapshot = claims_snapshot(root)
    return readme_block(read_ledger_csv(root / snapshot), snapshot, read_record(root / snapshot))


def claims_snapshot(root: Path) -> str:
    """The committed ledger the findings come from: the evidence profile's first confirmatory
    look when it is committed (``docs/claims_evidence_look1.csv``), else the evidence
    profile's earlier ledger, else the quick profile's."""
    for name in (CONFIRMATORY[0], "docs/claims_evidence.csv", "docs/claims_quick.csv"):
        if (root / name).is_file():
            return name
    raise SharpnessError("no committed ledger snapshot (docs/claims_evidence_look1.csv, "
                         "docs/claims_evidence.csv or docs/claims_quick.csv): `sharpness claims "
                         "readme --snapshot ...`")


#: the evidence profile's two confirmatory looks (seeds drawn from their registration)
CONFIRMATORY = ("docs/claims_evidence_look1.csv", "docs/claims_evidence_look2.csv")
#: its two exploratory looks before them: seeds 0... and every seed moved by 1000
EXPLORATORY = ("docs/claims_evidence.csv", "docs/claims_evidence_seed1000.csv")


def second_look_pair(root: Path) -> tuple[str, str]:
    """The two looks the second-look block compares: the confirmatory ones once both are
    committed, else the exploratory ones."""
    if all((root / p).is_file() for p in CONFIRMATORY):
        return CONFIRMATORY
    return EXPLORATORY


def _second_look(root: Path) -> str:
    first, second = second_look_pair(root)
    if not (root / second).is_file():
        return (f"No second run is committed yet (`{second}`): run the evidence profile with "
                "`--config seed_offset=1000`, then `sharpness claims snapshot --out "
                f"{second}`.\n")
    runs = "; ".join(f"A = `{p}`: {describe_run(read_record(root / p))}" if k == 0 else
                     f"B = `{p}`: {describe_run(read_record(root / p))}"
                     for k, p in enumerate((first, second)))
    moved = compare_ledgers(read_ledger_csv(root / first), read_ledger_csv(root / second))
    return f"{runs}.\n\n" + compare_text(moved, first, second, heading=False)


def _optimizers(root: Path) -> str:
    return specs_table()


def _profiles(root: Path) -> str:
    return profiles_block(root)


SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("cost", _cost, "sharpness readme refresh --only cost", seconds=25),
    Source("plan", _plan, "sharpness readme refresh --only plan", seconds=15),
    Source("counts", _counts, "sharpness readme refresh --only counts", seconds=10),
    Source("eos-toy", _eos_toy, "sharpness readme refresh --only eos-toy", seconds=3),
    Source("gallery", _gallery, "sharpness gallery --figures figures --out docs/gallery"),
    Source("claims", _claims, "sharpness claims readme --ledger figures/claims.csv "
                              "--snapshot docs/claims_evidence.csv"),
    Source("second-look", _second_look, "sharpness claims snapshot --out "
                                        "docs/claims_evidence_seed1000.csv (after a run with "
                                        "--config seed_offset=1000)"),
    Source("profiles", _profiles, "sharpness readme refresh --only profiles"),
    Source("two-commands", commands_block, "bash benchmarks/quick_budget.sh; "
                                           "bash benchmarks/time_test_suite.sh"),
    Source("optimizers", _optimizers, "sharpness readme refresh --only optimizers"),
    Source("lesam-items", lesam_items_block, "sharpness readme refresh --only lesam-items"),
    _measured("budget-quick", "quick_budget.md", "bash benchmarks/quick_budget.sh"),
    _measured("budget-evidence", "evidence_budget.md",
              "PROFILE=evidence bash benchmarks/quick_budget.sh"),
    _measured("startup", "startup.md",
              "python benchmarks/bench_startup.py --out benchmarks/measured/startup.md"),
    _measured("test-paper", "test_paper.md", "bash benchmarks/time_test_paper.sh"),
    _measured("test-suite", "test_suite.md", "bash benchmarks/time_test_suite.sh",
              optional=True),
)}


def source(name: str) -> Source:
    """The source of block ``name`` (an error lists the known names)."""
    if name not in SOURCES:
        raise SharpnessError(f"no source for generated block {name!r}; known: "
                             f"{', '.join(sorted(SOURCES))}")
    return SOURCES[name]
