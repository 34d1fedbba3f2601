"""Nothing reaches the README from an unverified file: a record merely present beside a ledger
never replaces its check (``sharpness.claims.snapshot_trust``).

The attack: a one-line record planted beside an edited ``figures/claims.csv``, so that a
reader which took the record's word for the ledger's would write a flipped verdict into
``README.md``. ``sharpness claims readme`` verifies the ledger whatever sits beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sharpness.claims import readme
from sharpness.claims.snapshot_trust import write_record
from sharpness.cli import main
from sharpness.plots.save import write_csv
from sharpness.runs.provenance import write_artifact_provenance
from tests.claims.fixtures import phase


def _built(tmp_path: Path) -> tuple[Path, Path]:
    """A built ledger (`figures/claims.csv`, as the claims job writes it) and a README with
    an old findings block."""
    fig = tmp_path / "figures"
    for name, data in phase(False).items():
        write_csv(fig / f"{name}.csv", data.rows.to_dict("records"))
        write_artifact_provenance(fig / f"{name}.csv", kind="figure", params={"item": name})
    assert main(["claims", "build", "--figures", str(fig), "--profile", "quick"]) == 0
    page = tmp_path / "README.md"
    page.write_text(f"intro\n{readme.BEGIN}\nold\n{readme.END}\n")
    return fig / "claims.csv", page


def _flip(ledger: Path) -> None:
    ledger.write_text(ledger.read_text().replace("inconclusive at this scale", "supported"))


@pytest.mark.parametrize("planted", [
    {"profile": "evidence"},  # a one-line record
    {"profile": "evidence", "ledger_sha256": "0" * 64},  # a hash, unsigned
])
def test_a_planted_record_beside_an_edited_ledger_never_reaches_the_readme(
        tmp_path, capsys, planted) -> None:
    """An edited `claims.csv` with a record planted beside it: `claims readme` refuses it in
    one line naming the ledger, and the README keeps its old block."""
    ledger, page = _built(tmp_path)
    _flip(ledger)
    readme.record_path(ledger).write_text(json.dumps(planted))
    capsys.readouterr()
    assert main(["claims", "readme", "--ledger", str(ledger), "--readme", str(page)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{ledger} is not used" in err
    assert "old" in page.read_text()


def test_a_signed_record_vouches_only_for_the_ledger_it_was_signed_with(tmp_path,
                                                                         capsys) -> None:
    """A snapshot written by `claims readme --snapshot` carries a signed record with its hash:
    it renders; edited afterwards (record untouched), it is refused."""
    ledger, page = _built(tmp_path)
    snap = tmp_path / "docs" / "claims_quick.csv"
    snap.parent.mkdir()
    assert main(["claims", "readme", "--ledger", str(ledger), "--readme", str(page),
                 "--snapshot", str(snap)]) == 0
    assert main(["claims", "readme", "--ledger", str(snap), "--readme", str(page),
                 "--check"]) == 0
    before = page.read_text()
    _flip(snap)
    capsys.readouterr()
    assert main(["claims", "readme", "--ledger", str(snap), "--readme", str(page)]) == 2
    assert "is not used" in capsys.readouterr().err
    assert page.read_text() == before
    # re-signing by whoever holds a trusted key is what vouches for it again
    write_record(snap, json.loads(readme.record_path(snap).read_text()))
    assert main(["claims", "readme", "--ledger", str(snap), "--readme", str(page)]) == 0
