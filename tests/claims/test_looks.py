"""Confirmatory looks run at seeds derived from their registration; a look at seeds already
seen is exploratory, and every row of its ledger says so (issue 48, point 1)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from sharpness.claims.looks import (
    OFFSET_BITS,
    confirmatory_offset,
    look_status,
    mark_rows,
    seed_span,
)
from sharpness.claims.registration import registration
from sharpness.claims.registration_checks import re_registered
from tests.catalog import CLAIMS as ALL_CLAIMS

CLAIMS = ALL_CLAIMS
CONFIG = {"profile": "evidence", "minorfirst": {"cnn_synthetic": {"seeds": [0, 1, 2, 3]},
                                                "l1_maxmargin": {"multi": {"seed": 4}}}}


@pytest.fixture(scope="module")
def confirmatory() -> dict:
    return registration("evidence", CLAIMS, CONFIG, confirmatory=1)


def test_the_offset_is_drawn_from_what_decides(confirmatory: dict) -> None:
    look = confirmatory["look"]
    offset = look["confirmatory_offset"]
    assert offset == confirmatory_offset(look["decision_id"], 1) < 2 ** OFFSET_BITS
    assert look["look"] == 1
    second = registration("evidence", CLAIMS, CONFIG, confirmatory=2)
    assert second["look"]["decision_id"] == look["decision_id"]
    assert abs(second["config"]["seed_offset"] - offset) > seed_span(confirmatory)
    assert look_status(second, second["config"]["seed_offset"], None)["confirmatory"]
    assert confirmatory["config"]["seed_offset"] == offset
    assert confirmatory["config"]["seeds"]["minorfirst.cnn_synthetic.seeds"] == \
        [offset, offset + 1, offset + 2, offset + 3]
    # the same decision registered at another offset derives the same seeds ...
    plain = registration("evidence", CLAIMS, CONFIG)
    assert plain["look"]["decision_id"] == look["decision_id"] and plain["id"] != confirmatory["id"]
    moved = registration("evidence", CLAIMS, {**CONFIG, "seed_offset": 1000})
    assert moved["look"]["decision_id"] == look["decision_id"]
    # ... and any change to what decides draws others: a tolerance, a kind, a design
    tol = [replace(c, params={**c.params, "tol": 1e-4}) if c.id == "mf-l1" else c for c in CLAIMS]
    kind = [replace(c, kind="extension") if c.id == "eos-band" else c for c in CLAIMS]
    design = {**CONFIG, "minorfirst": {**CONFIG["minorfirst"],
                                       "cnn_synthetic": {"seeds": [0, 1, 2]}}}
    offsets = {registration("evidence", tol, CONFIG)["look"]["confirmatory_offset"],
               registration("evidence", kind, CONFIG)["look"]["confirmatory_offset"],
               registration("evidence", CLAIMS, design)["look"]["confirmatory_offset"], offset}
    assert len(offsets) == 4


def test_only_the_derived_unseen_seeds_are_confirmatory(confirmatory: dict) -> None:
    offset = confirmatory["look"]["confirmatory_offset"]
    assert seed_span(confirmatory) == 4
    assert look_status(confirmatory, offset, None)["confirmatory"]
    at_zero = look_status(confirmatory, 0, None)
    assert not at_zero["confirmatory"] and f"is not {offset}" in at_zero["why"]
    plain = registration("evidence", CLAIMS, {**CONFIG, "seed_offset": 1000})
    assert not look_status(plain, 1000, None)["confirmatory"]  # a hand-picked offset
    assert not look_status(None, 0, None)["confirmatory"]
    # a look that used overlapping seeds, listed when the registration was written
    seen = {**confirmatory, "look": {**confirmatory["look"], "used": [
        {"ledger": "docs/claims_evidence.csv", "seed_offset": offset - 3,
         "registration": "0123456789abcdef"}]}}
    status = look_status(seen, offset, None)
    assert not status["confirmatory"] and "docs/claims_evidence.csv" in status["why"]
    # a rebuild of the look's own ledger is not an earlier look
    own = {**seen, "look": {**seen["look"], "used": [{**seen["look"]["used"][0],
                                                       "registration": confirmatory["id"]}]}}
    assert look_status(own, offset, None)["confirmatory"]


def test_a_committed_look_at_the_same_seeds_makes_the_next_exploratory(
        tmp_path: Path, confirmatory: dict) -> None:
    offset = confirmatory["look"]["confirmatory_offset"]
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "claims_evidence.record.json").write_text(json.dumps(
        {"profile": "evidence", "git_commit": "a" * 40, "seed_offset": offset,
         "registration": "feedfacefeedface"}))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c",
                                                "user.email=t@t.example", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    status = look_status(confirmatory, offset, repo / "docs")
    assert not status["confirmatory"] and "already seen" in status["why"]
    rows = [{"id": "a", "note": ""}, {"id": "b", "note": "n"}]
    mark_rows(rows, status)
    assert all(r["note"].startswith("exploratory look (its seeds overlap") for r in rows)
    assert rows[1]["note"].endswith("; n")


def test_the_committed_re_registration_list_is_complete() -> None:
    """The rows easy to miss: a row new since a look, the rule min_seeds 5 → 4 and
    the CNN draws' design, read from this checkout's history."""
    again = re_registered(CLAIMS, "evidence", Path(__file__))
    if not again:
        pytest.skip("not in a git checkout with the committed ledgers' history")
    assert "new row" in again["mf-linf-gd-limit"]
    assert "rules (min_seeds 5 → 4)" in again["mf-cnn"]
    assert "design of minorfirst/cnn_synthetic" in again["mf-cnn"]


def test_the_cli_registers_look_k_at_its_derived_offset(tmp_path: Path,
                                                        confirmatory: dict) -> None:
    import yaml

    from sharpness.claims.registration import read_registration
    from sharpness.cli import main

    config = tmp_path / "evidence.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    assert main(["claims", "register", "--profile", "evidence", "--config", str(config),
                 "--confirmatory", "--out", str(tmp_path / "reg.json")]) == 0
    record = read_registration(tmp_path / "reg.json")
    offset = record["config"]["seed_offset"]
    assert record["look"]["look"] == 1 and offset == record["look"]["confirmatory_offset"]
    assert offset == confirmatory_offset(record["look"]["decision_id"], 1)
