"""The ledger's rows come from claims.yaml; a row that names a missing predicate, a duplicate
id, an unknown field or a wrong paper is refused with the claim named."""

from __future__ import annotations

import pytest

from sharpness.claims.catalog import PAPERS, load_claims, predicates
from sharpness.errors import SharpnessError

ROW = {"id": "x-1", "paper": "eos", "source": "test", "claim": "words", "predicate": "p",
       "items": ["eos/fig_phase"], "test": "band", "params": {"eos_factor": 1.2, "band": 0.1}}


def test_packaged_rows_bind_every_predicate_once_in_paper_order():
    claims = load_claims()
    assert [c.paper for c in claims] == sorted((c.paper for c in claims), key=PAPERS.index)
    named = {(c.paper, c.test) for c in claims if c.test is not None}
    every = {(p, f) for p, table in predicates().items() for f in table.values()}
    assert named == every  # no predicate unused, none missing


@pytest.mark.parametrize(("change", "message"), [
    ({"test": "no_such"}, "no predicate 'no_such'"),
    ({"paper": "other"}, "paper must be one of"),
    ({"colour": "red"}, "unknown field(s) ['colour']"),
])
def test_bad_rows_are_refused_with_the_claim_named(change, message):
    with pytest.raises(SharpnessError, match="x-1") as err:
        load_claims([{**ROW, **change}])
    assert message in str(err.value)


@pytest.mark.parametrize(("change", "message"), [
    ({"params": None}, "reads registered params but the row has none"),
    ({"test": "toy_numbers", "params": None}, "reads registered params"),
    ({"params": {"eos_factor": 1.2, "band": 0.1, "rules": {"colour": 1}}},
     "params.rules: unknown key(s) ['colour']"),
])
def test_registered_params_match_the_predicate(change, message):
    """A predicate that reads registered thresholds needs them in its row (no default in
    code), and a rules override names only known rules."""
    with pytest.raises(SharpnessError, match="x-1") as err:
        load_claims([{**ROW, **change}])
    assert message in str(err.value)


def test_duplicate_ids_are_refused():
    with pytest.raises(SharpnessError, match="duplicate claim ids"):
        load_claims([ROW, dict(ROW)])


def test_optional_fields():
    (claim,) = load_claims([{**ROW, "sets_level": False, "paper_only": "paper profile"}])
    assert claim.sets_level is False and claim.paper_only == "paper profile"
    (bare,) = load_claims([{k: v for k, v in ROW.items() if k not in ("test", "params")}])
    assert bare.test is None and bare.sets_level is True
