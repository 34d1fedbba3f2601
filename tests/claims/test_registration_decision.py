"""The registration binds the whole decision: every edit that could steer a verdict after the
rules were frozen is a listed deviation (issue 48, point 2)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from sharpness.claims.ledger import adjust_multiplicity, evaluate_claim
from sharpness.claims.model import ItemData
from sharpness.claims.registration import (
    deviation_rows,
    deviations,
    load_profile_config,
    registration,
)
from sharpness.claims.registration_decision import (
    decision_changes,
    decision_files,
    input_changes,
    registration_substitution,
)
from sharpness.claims.registration_files import registration_path
from sharpness.claims.registration_report import deviations_markdown
from sharpness.claims.rules import rules_for
from sharpness.evidence.stats import INCONCLUSIVE, SUPPORTED
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "sharpness"
CLAIMS = ALL_CLAIMS
QUICK = load_profile_config(ROOT / "workflow" / "config" / "quick.yaml")


@pytest.fixture(scope="module")
def record() -> dict:
    return registration("quick", CLAIMS, QUICK)


#: (file, text before, text after): Holm made the identity, a constant of the sanity rule and
#: one of the independence check changed, a record reader loosened
EDITS = [
    ("claims/ledger.py", "zip(family, holm(ps), strict=True)", "zip(family, ps, strict=True)"),
    ("claims/rules.py", "loss_margin: float = 0.1", "loss_margin: float = 0.5"),
    ("claims/independence.py", "rel: float = 1e-9", "rel: float = 1e-15"),
    ("runs/seal.py", "if actual != recorded:", "if False:"),
]


@pytest.mark.parametrize(("name", "old", "new"), EDITS, ids=[e[0] for e in EDITS])
def test_an_edit_of_any_deciding_module_is_a_deviation(tmp_path: Path, record: dict, name: str,
                                                       old: str, new: str) -> None:
    copy = tmp_path / "sharpness"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    then = decision_files(copy)
    assert decision_changes({"decision_files": then}, decision_files(copy)) == []
    path = copy / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    (what,) = decision_changes({"decision_files": then}, decision_files(copy))
    assert f"sharpness/{name}" in what and what.startswith("decision code changed")


def test_modules_that_cannot_decide_are_not_registered() -> None:
    files = decision_files()
    assert "sharpness/evidence/stats.py" in files and "sharpness/claims/ledger.py" in files
    assert "sharpness/diagonal/regimes.py" in files  # a predicate reads it
    assert not [f for f in files if f.startswith(("sharpness/plots/", "sharpness/train/"))]


def test_a_registered_decision_file_that_differs_is_listed_in_the_ledger(record: dict) -> None:
    assert deviations(record, CLAIMS) == []
    forged = {**record, "decision_files": {**record["decision_files"],
                                           "sharpness/claims/ledger.py": "0" * 64}}
    (dev,) = deviations(forged, CLAIMS)
    assert dev["id"] == "decision code" and "sharpness/claims/ledger.py" in dev["what"][0]
    rows = deviation_rows(forged, CLAIMS, [], {}, "quick", rules_for("quick"))
    assert "| decision code | decision code changed" in deviations_markdown(rows, forged)


def _raw(claims: list, data: dict[str, ItemData], profile: str) -> list[dict]:
    return [evaluate_claim(c, data, profile, rules_for(profile)) for c in claims]


def test_relabelled_kinds_are_deviations_with_the_registered_verdict(record: dict) -> None:
    eos = [c.id for c in CLAIMS if c.id.startswith("eos-") and c.kind == "claim"][:4]
    changed = [replace(c, kind="extension") if c.id in eos else c for c in CLAIMS]
    devs = {d["id"]: d for d in deviations(record, changed)}
    assert set(eos) <= set(devs) and "holm families" in devs
    assert all("kind changed: 'claim' → 'extension'" in devs[i]["what"] for i in eos)
    assert all(f"−{i}" in devs["holm families"]["what"][0] for i in eos)
    data = {**fx.phase(False), **fx.toy(False)}
    rows = {r["id"]: r for r in deviation_rows(record, changed, _raw(changed, data, "evidence"),
                                               data, "evidence", rules_for("evidence"))}
    registered = _raw(CLAIMS, data, "evidence")
    adjust_multiplicity(registered, 0.05)
    want = {r["id"]: r["verdict"] for r in registered}
    assert all(rows[i]["verdict_registered"] == want[i] for i in eos)


def test_runs_removed_is_a_deviation_and_its_registered_verdict_is_smoke(record: dict) -> None:
    changed = [replace(c, runs=False, trained=False) if c.id == "ls-signal-sam" else c
               for c in CLAIMS]
    data = fx.signal(False, seeds=4)
    rows = {r["id"]: r for r in deviation_rows(record, changed, _raw(changed, data, "quick"),
                                               data, "quick", rules_for("quick"))}
    row = rows["ls-signal-sam"]
    assert "runs changed: True → False" in row["what"]
    assert row["verdict_now"] == SUPPORTED and row["verdict_registered"] == INCONCLUSIVE


def test_an_input_built_under_an_overlay_is_a_deviation(record: dict) -> None:
    item = "minorfirst/l1_maxmargin"
    block = dict(QUICK["minorfirst"]["l1_maxmargin"])
    rows = fx.l1(False)[item].rows
    same = {item: ItemData(item, rows, {**block, "figure": "x"})}
    assert input_changes(record, same) == {}
    halved = {item: ItemData(item, rows, {**block, "alphas": block["alphas"][:1]})}
    assert input_changes(record, halved) == {item: ["alphas [0.1, 1.0] → [0.1]"]}
    devs = {d["id"]: d for d in deviations(record, CLAIMS, data=halved)}
    assert devs["mf-l1"]["what"] == [f"input {item} built from other parameters than "
                                     "registered: alphas [0.1, 1.0] → [0.1]"]


def test_a_registration_of_another_profile_or_offset_is_named(record: dict,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.chdir(ROOT)
    assert registration_substitution(record, "quick", 0, registration_path("quick")) is None
    other = registration_substitution(record, "evidence", 0, registration_path("quick"))
    assert "registers profile 'quick', the build is 'evidence'" in other
    assert "is not docs/registration/evidence.json" in other
    offset = registration_substitution(record, "quick", 1000, registration_path("quick"))
    assert "is not docs/registration/quick-seed1000.json" in offset


def test_changed_rules_give_the_verdicts_of_the_registered_rules() -> None:
    record = registration("evidence", CLAIMS, QUICK)
    data = fx.cifar(False)
    loose = rules_for("evidence", min_seeds=3)  # the registered rule asks for 4
    raw = [evaluate_claim(c, data, "evidence", loose) for c in CLAIMS]
    rows = {r["id"]: r for r in deviation_rows(record, CLAIMS, raw, data, "evidence", loose)}
    assert rows["rules"]["what"] == ["rules changed: min_seeds 4 → 3"]
    assert rows["rules"]["verdict_now"] is None
    assert rows["rules"]["verdict_registered"].startswith(
        "under the registered rules: ")
    assert "ls-cifar10-sam inconclusive" in rows["rules"]["verdict_registered"]
