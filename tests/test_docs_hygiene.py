"""Code, rules and docs describe the project as it is: no issue tags, no dated work logs and no
paths of the machine something was measured on; docs and tests tell no history ("used to",
"the old code", "before, ...; now ...").

History lives in git; a reader of ``docs/``, ``src/`` or ``workflow/`` should not need to know
which issue or day produced a line, nor the folder a measurement was taken in. Dates belong in
generated blocks (a measurement's date, written by its script) and in committed records and
snapshots (``docs/claims_*.csv``, ``*.record.json``, ``docs/gallery/manifest.json``), which
this scan skips."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sharpness.readme.blocks import blocks_in

ROOT = Path(__file__).resolve().parents[1]
#: the trees a contributor reads as reference, and the file kinds scanned in them
TREES = ("docs", "src", "workflow")
SUFFIXES = {".md", ".py", ".smk", ".yaml", ".yml", ".rst", ".txt", ".toml", ".sh", ".cfg"}
#: committed records and snapshots: written by a run, dated by nature
RECORDS = re.compile(r"(^docs/claims_[a-z]+\.csv$|\.record\.json$|^docs/gallery/manifest\.json$"
                     r"|^src/sharpness/cost/(?:measured[\w.-]*|eos_steps)\.yaml$|\.egg-info/)")

ISSUE_TAG = re.compile(r"\bissues?\s+#?\d+\b|(?<![\w&#/])#\d{1,4}\b(?![\w-])", re.IGNORECASE)
DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")
MACHINE_PATH = re.compile(r"(?<![\w.~$}])/(?:work|tmp|home|root|Users|scratch|mnt)/[\w.-]")
#: a sentence that tells what the code did once instead of what it does
HISTORY = re.compile(r"\bthe issue'?s (?:case|row)\b|\bused to\b|\bthe old\b|\btoday'?s "
                     r"(?:format|code)\b|\bbefore, [^;]{0,200}; now\b|\bpreviously\b|"
                     r"\bformerly\b|(?-i:\bOld(?: \([^)]*\))?:|\bBefore: |\. Now )", re.IGNORECASE)
#: the trees scanned for history, and the kinds of file in them
HISTORY_TREES = ("docs", "tests")


def scanned() -> list[Path]:
    """Every text file of :data:`TREES` with a scanned suffix, records left out, plus the
    Snakefile."""
    files = [ROOT / "Snakefile"]
    for tree in TREES:
        files += [p for p in (ROOT / tree).rglob("*") if p.is_file() and p.suffix in SUFFIXES
                  and "__pycache__" not in p.parts]
    return sorted(p for p in files if not RECORDS.search(p.relative_to(ROOT).as_posix()))


def _outside_blocks(path: Path) -> str:
    """The text of ``path`` with its generated blocks' bodies removed (their dates are the
    measurements' own, written by the scripts that measured them)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        for block in blocks_in(text):
            text = text.replace(block.body, "")
    return text


def _hits(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for path in scanned():
        for number, line in enumerate(_outside_blocks(path).splitlines(), 1):
            for match in pattern.finditer(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    return found


@pytest.mark.parametrize(("what", "pattern"), [("issue tags", ISSUE_TAG),
                                               ("dated work logs", DATE),
                                               ("machine paths", MACHINE_PATH)])
def test_reference_trees_hold_no_history(what: str, pattern: re.Pattern[str]) -> None:
    found = _hits(pattern)
    assert not found, f"{what} in docs/, src/ or workflow/:\n" + "\n".join(found)


def test_docs_and_tests_tell_no_history() -> None:
    """A doc or a test's docstring says what the code does and why; what it once did is in
    git (this file, which spells the phrases out, is left out)."""
    files = [p for tree in HISTORY_TREES for p in (ROOT / tree).rglob("*")
             if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
             and p != Path(__file__).resolve()
             and not RECORDS.search(p.relative_to(ROOT).as_posix())]
    found = [f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}"
             for path in sorted(files)
             for number, line in enumerate(_outside_blocks(path).splitlines(), 1)
             for match in HISTORY.finditer(line)]
    assert not found, "history told in docs/ or tests/:\n" + "\n".join(found)


def test_the_scan_sees_what_it_forbids() -> None:
    assert {"docs", "src", "workflow"} <= {p.relative_to(ROOT).parts[0] for p in scanned()}
    assert not any(RECORDS.search(p.relative_to(ROOT).as_posix()) for p in scanned())
    assert ISSUE_TAG.search("the ledger (issue 19)") and ISSUE_TAG.search("see #23.")
    assert not ISSUE_TAG.search('colour="#949494"') and not ISSUE_TAG.search("[a](#setup)")
    assert DATE.search("Measured (quick profile, 2026-11-29)")
    assert MACHINE_PATH.search("groups of `/tmp/qm3/benchmarks/x.yaml`")
    assert MACHINE_PATH.search("cd /work/main && make")
    assert not MACHINE_PATH.search("results/tmp/x") and not MACHINE_PATH.search("$TMPDIR/x")
    assert HISTORY.search("The issue's case, a file") and HISTORY.search("it used to skip")
    assert HISTORY.search("before, its code ran twice; now it runs once")
    assert HISTORY.search("Old (epoch 1 alone): `contradicted`")
    assert HISTORY.search("Before: exit 0. Now the figure is checked")
    assert not HISTORY.search("params: list, old: list") and not HISTORY.search("no longer ok")


def test_readme_troubleshooting_names_only_errors_that_exist() -> None:
    """Each exception the README's troubleshooting table names is one something raises: a
    builtin, one of :mod:`sharpness.errors` or one of Snakemake's."""
    import builtins

    import snakemake.exceptions

    import sharpness.errors

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Troubleshooting"):]
    table = table[:table.index("\n## ", 1)]
    named = set(re.findall(r"\b([A-Z]\w*(?:Error|Exception))\b", table))
    assert named, "the troubleshooting table names no exception"
    unknown = {n for n in named if not any(hasattr(m, n) for m in
                                           (builtins, sharpness.errors, snakemake.exceptions))}
    assert not unknown, f"the README's troubleshooting names exceptions nothing raises: {unknown}"


#: a time, size, share or count as prose would type it (as the README's own check)
MEASURE = re.compile(r"\d[\d,.]*\s*(?:min\b|minutes?\b|s\b|seconds|hours?\b|GPU-hours|CPU-s|%|"
                     r"jobs\b|runs\b|GB\b|MB\b|KB\b|items\b)")
#: numbers docs/ may type: the code's fixed settings they describe (interval level, power,
#: exclusion share, heartbeat and timeouts), not measurements
SETTINGS = {"95%", "95 %", "80 %", "34 %", "10 minutes", "30 s", "300 s", "15 s"}


def _doc_prose(path: Path) -> str:
    """``path``'s prose: without generated blocks, fenced or indented code, quotes, comments
    and inline code (where numbers are a command's or an example's)."""
    text = _outside_blocks(path)
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = re.sub(r"(?m)^(?: {4}|>).*$", "", text)
    return re.sub(r"`[^`]*`", "", text)


def test_docs_type_no_measurement_outside_generated_blocks() -> None:
    """A time, size, share or count measured by a run belongs in a generated block (or a
    caption, or the ledger): typed in a doc's prose it goes stale with the next run."""
    found = [f"{doc.relative_to(ROOT)}: {m.group(0)!r}"
             for doc in sorted((ROOT / "docs").glob("*.md"))
             for m in MEASURE.finditer(_doc_prose(doc)) if m.group(0) not in SETTINGS]
    assert not found, "typed measurements in docs/ prose:\n" + "\n".join(found)
