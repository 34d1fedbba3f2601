"""The ledger's rows come from claims.yaml; a row that names a missing predicate, a duplicate
id, an unknown field or a wrong paper is refused with the claim named."""

from __future__ import annotations

import pytest

from sharpness.claims.catalog import PAPERS, load_claims, predicates
from sharpness.errors import SharpnessError

ROW = {"id": "x-1", "paper": "eos", "source": "test", "claim": "words", "predicate": "p",
       "items": ["eos/fig_phase"], "test": "band"}


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


def test_duplicate_ids_are_refused():
    with pytest.raises(SharpnessError, match="duplicate claim ids"):
        load_claims([ROW, dict(ROW)])


def test_optional_fields():
    (claim,) = load_claims([{**ROW, "sets_level": False, "paper_only": "paper profile"}])
    assert claim.sets_level is False and claim.paper_only == "paper profile"
    (bare,) = load_claims([{k: v for k, v in ROW.items() if k != "test"}])
    assert bare.test is None and bare.sets_level is True
