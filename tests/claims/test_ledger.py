"""Writing the ledger, the evidence level of an item, the CLI and the README block."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sharpness.claims import readme
from sharpness.claims.ledger import all_claims, evaluate, evidence_level, write_ledger
from sharpness.plots.save import write_csv
from sharpness.runs.provenance import write_artifact_provenance
from tests.claims.fixtures import acc_rows, item, phase, trained

ROOT = Path(__file__).resolve().parents[2]


def _figures(tmp_path: Path) -> Path:
    """Each item's CSV with its sidecar, as a figure job writes them (the sidecar records the
    CSV's SHA-256, which the ledger checks)."""
    fig = tmp_path / "figures"
    for name, data in phase(False).items():
        write_csv(fig / f"{name}.csv", data.rows.to_dict("records"))
        write_artifact_provenance(fig / f"{name}.csv", kind="figure", params={"item": name})
    return fig


def test_every_claim_listed_with_a_verdict(tmp_path: Path) -> None:
    rows = evaluate(_figures(tmp_path), "quick")
    assert [r["id"] for r in rows] == [c.id for c in all_claims()]
    band = next(r for r in rows if r["id"] == "eos-band")
    # the quick profile is a smoke test: a row about runs never decides there
    assert band["verdict"] == "inconclusive at this scale" and band["level"] == "smoke"
    assert "a smoke run neither supports nor refutes" in band["note"]
    evidence = evaluate(tmp_path / "figures", "evidence")
    assert next(r for r in evidence if r["id"] == "eos-band")["verdict"] == "supported"
    ids = {n: json.loads((tmp_path / "figures" / f"{n}.provenance.json").read_text())["id"]
           for n in ("eos/fig_phase", "eos/fig_trajectories")}
    assert band["provenance"] == (f"eos/fig_phase={ids['eos/fig_phase']};"
                                  f"eos/fig_trajectories={ids['eos/fig_trajectories']}")
    assert {r["paper"] for r in rows} == {"minorfirst", "lesam", "eos"}
    out = write_ledger(rows, tmp_path / "figures" / "CLAIMS.md", "quick")
    assert [p.name for p in out] == ["CLAIMS.md", "claims.csv", "claims.json"]
    text = out[0].read_text()
    decided = [r for r in rows if r["paper"] == "eos" and r["verdict"] == "supported"
               and r["kind"] != "check"]
    assert f"| eos | {len(decided)} |" in text and "eos-band" in text
    assert "smoke profile: trained-network rows never decide" in text  # the quick rules
    data = json.loads(out[2].read_text())
    assert data["counts"]["eos"]["supported"] == len(decided) == 0
    assert data["rules"]["smoke"] is True and len(data["claims"]) == len(rows)


def test_evidence_level_of_an_item() -> None:
    level, reason = evidence_level("eos/fig_phase", phase(False)["eos/fig_phase"])
    assert level == "evidence" and "supported" in reason
    rows = acc_rows(True, level=12.0, group="cifar10_resnet18") + acc_rows(
        True, level=12.0, group="cifar10_wrn")
    for r in rows:  # every run sat at chance: no claim can be read from these numbers
        r["per_seed_train"] = trained(3, bad=(0, 1, 2))
    smoke = item("lesam/table_cifar", rows)
    assert evidence_level("lesam/table_cifar", smoke)[0] == "smoke"
    assert evidence_level("bridges/x", smoke)[0] == "weak"


def test_readme_block_round_trip() -> None:
    rows = [{"id": "eos-band", "paper": "eos", "claim": "c", "verdict": "supported",
             "level": "evidence", "value": "3/8 settings, A: 0.020"},
            {"id": "eos-x", "paper": "eos", "claim": "d", "verdict": "not run in this profile",
             "level": "", "value": ""}]
    text = readme.replace_block(f"a\n{readme.BEGIN}\nold\n{readme.END}\nb\n",
                                readme.readme_block(rows, "x.csv"))
    parsed = readme.parse_block(text)
    assert parsed == [{"id": "eos-band", "verdict": "supported", "level": "evidence",
                       "claim": "c", "value": "3/8 settings, A: 0.020"}]
    assert text.startswith("a\n") and text.endswith("b\n") and "`eos-x`" in text
    checked = readme.readme_block(rows + [{"id": "eos-c", "paper": "eos", "claim": "e",
                                           "verdict": "supported", "level": "evidence",
                                           "value": "1", "kind": "check"}], "x.csv")
    assert "| eos | 1 | 0 | 0 | 1 |" in checked and "| eos (checks) | 1 |" in checked


def test_readme_findings_match_the_ledger_csv() -> None:
    """Every finding in the findings block (docs/findings.md) quotes its row of the committed
    ledger CSV (the evidence profile's run once committed, else the quick run's), and the block
    is exactly what the generator makes of that CSV."""
    from sharpness.readme.sources import claims_snapshot

    name = claims_snapshot(ROOT)
    with (ROOT / name).open(newline="") as handle:
        ledger = {r["id"]: r for r in csv.DictReader(handle)}
    text = (ROOT / "docs/findings.md").read_text()
    bullets = readme.parse_block(text)
    assert bullets, "docs/findings.md has no generated findings"
    for b in bullets:
        row = ledger[b["id"]]
        assert b["verdict"] == row["verdict"], b["id"]
        assert readme.numbers(b["value"]) == readme.numbers(row["value"]), b["id"]
    record = json.loads(readme.record_path(ROOT / name).read_text())
    assert record["profile"] in name and len(record["git_commit"]) == 40 and record["built"]
    described = readme.describe_run(record)  # names the seed offset of a look, its commit
    assert f"commit {record['git_commit'][:7]}" in described
    assert f"Generated from `{name}` ({described}" in text
    expected = readme.replace_block(text, readme.readme_block(list(ledger.values()), name,
                                                              record))
    assert text == expected, "the findings block is stale: run `sharpness claims readme`"


def test_cli_builds_and_prints_the_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    from sharpness.cli import main

    fig = _figures(tmp_path)
    assert main(["claims", "build", "--figures", str(fig), "--profile", "evidence",
                 "--min-seeds", "7"]) == 0
    assert json.loads((fig / "claims.json").read_text())["rules"]["min_seeds"] == 7
    assert main(["claims", "build", "--figures", str(fig), "--profile", "quick"]) == 0
    capsys.readouterr()
    assert main(["claims", "--figures", str(fig)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Claims ledger") and "eos-band" in out
    with (fig / "claims.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    # the quick profile is a smoke test: its rows about runs say so instead of deciding
    assert {r["verdict"] for r in rows} >= {"inconclusive at this scale", "not run in this profile"}
    assert "smoke" in {r["level"] for r in rows}


def test_figures_readme_is_committed_and_defines_every_level() -> None:
    import subprocess

    from sharpness.claims.model import LEVELS
    from sharpness.evidence.stats import VERDICTS

    path = ROOT / "figures" / "README.md"
    text = path.read_text()
    assert all(f"`{level}`" in text for level in LEVELS)
    assert all(f"`{verdict}`" in text for verdict in VERDICTS)
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "figures"],
                             capture_output=True, text=True, check=False).stdout.split()
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q",
                              "figures/eos/fig_phase.csv"], check=False).returncode
    if tracked:  # in a git checkout: only the README is tracked, generated files are ignored
        assert tracked == ["figures/README.md"] and ignored == 0


def test_a_snapshot_keeps_the_profile_commit_and_date_of_its_run(tmp_path: Path) -> None:
    from sharpness.cli import main
    from sharpness.runs.signing import sign

    fig = _figures(tmp_path)
    assert main(["claims", "build", "--figures", str(fig), "--profile", "evidence"]) == 0
    prov = json.loads((fig / "CLAIMS.provenance.json").read_text())
    prov["code"].update(git_commit="ab" * 20, dirty=False)  # where and when: not in its id
    prov["ended"] = "2026-12-01T20:00:00"
    # as the job at that commit and time signed it (every field is signed)
    (fig / "CLAIMS.provenance.json").write_text(json.dumps(sign(prov)))
    page = tmp_path / "README.md"
    page.write_text(f"intro\n{readme.BEGIN}\nold\n{readme.END}\n")
    snap = tmp_path / "docs" / "claims_evidence.csv"
    snap.parent.mkdir()
    assert main(["claims", "readme", "--ledger", str(fig / "claims.csv"), "--readme", str(page),
                 "--snapshot", str(snap)]) == 0
    record = json.loads(readme.record_path(snap).read_text())
    # (a ledger built under a registration also names it: the real record's own fields)
    assert {k: record[k] for k in ("profile", "git_commit", "dirty", "built")} == {
        "profile": "evidence", "git_commit": "ab" * 20, "dirty": False,
        "built": "2026-12-01T20:00:00"}
    assert "evidence-profile run at commit abababa, built 2026-12-01" in page.read_text()
    # regenerating from the snapshot alone (what `sharpness readme refresh` does) agrees
    before = page.read_text()
    assert main(["claims", "readme", "--ledger", str(snap), "--readme", str(page),
                 "--check"]) == 0
    assert page.read_text() == before
    assert readme.describe_run(None) == "the claims ledger of a pipeline run"


def test_readme_findings_refuse_an_edited_run_ledger(tmp_path: Path, capsys) -> None:
    """The findings block is written from a run's ledger only while `claims.csv` is the file
    the build recorded; a committed snapshot (with its record beside it) is the checkout's."""
    from sharpness.cli import main

    fig = _figures(tmp_path)
    assert main(["claims", "build", "--figures", str(fig), "--profile", "quick"]) == 0
    page = tmp_path / "README.md"
    page.write_text(f"intro\n{readme.BEGIN}\nold\n{readme.END}\n")
    ledger = fig / "claims.csv"
    ledger.write_text(ledger.read_text().replace("supported", "contradicted"))
    capsys.readouterr()
    assert main(["claims", "readme", "--ledger", str(ledger), "--readme", str(page)]) == 2
    assert f"{ledger} is not used" in capsys.readouterr().err
    assert "old" in page.read_text()


def test_a_second_look_is_snapshotted_without_touching_the_readme(tmp_path: Path,
                                                                   capsys) -> None:
    """`claims snapshot` copies a run's ledger and its record (with the run's seed offset);
    an edited ledger is refused and nothing is written."""
    from sharpness.cli import main

    fig = _figures(tmp_path)
    assert main(["claims", "build", "--figures", str(fig), "--profile", "evidence",
                 "--seed-offset", "1000"]) == 0
    snap = tmp_path / "docs" / "claims_evidence_seed1000.csv"
    snap.parent.mkdir()
    assert main(["claims", "snapshot", "--ledger", str(fig / "claims.csv"),
                 "--out", str(snap)]) == 0
    assert snap.read_text() == (fig / "claims.csv").read_text()
    record = json.loads(readme.record_path(snap).read_text())
    assert record["profile"] == "evidence" and record["seed_offset"] == 1000
    assert "run with every seed moved by 1000" in readme.describe_run(record)
    assert "seed offset 1000" in capsys.readouterr().out
    ledger = fig / "claims.csv"
    ledger.write_text(ledger.read_text().replace("supported", "contradicted"))
    other = tmp_path / "docs" / "other.csv"
    assert main(["claims", "snapshot", "--ledger", str(ledger), "--out", str(other)]) == 2
    assert f"{ledger} is not used" in capsys.readouterr().err and not other.exists()


def test_settle_recomputes_only_the_to_settle_column(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys) -> None:
    """`claims settle` rewrites a committed snapshot's to_settle cells with today's planner,
    keeps every other cell byte for byte, and notes the recomputation in its record."""
    import csv
    import shutil

    import sharpness.planning.settle as settle
    from sharpness.claims.snapshot_trust import write_record
    from sharpness.cli import main

    monkeypatch.setattr(settle, "load_configs", lambda: {})  # no pricing: not timed here
    snap = tmp_path / "claims_evidence.csv"
    shutil.copy(ROOT / "docs" / "claims_evidence.csv", snap)
    rows = list(csv.DictReader(snap.open()))
    for row in rows:  # an old snapshot: nothing said what would settle a row
        row["to_settle"] = ""
    with snap.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    # a copy outside the checkout counts as a snapshot once its record is signed with its hash
    write_record(snap, json.loads(readme.record_path(ROOT / "docs" / "claims_evidence.csv")
                                  .read_text()))
    assert main(["claims", "settle", "--ledger", str(snap)]) == 0
    after = list(csv.DictReader(snap.open()))
    assert [{k: v for k, v in r.items() if k != "to_settle"} for r in after] == \
        [{k: v for k, v in r.items() if k != "to_settle"} for r in rows]
    unsettled = [r for r in after if r["verdict"] in ("inconclusive at this scale",
                                                      "not run in this profile")]
    assert unsettled and all(r["to_settle"] for r in unsettled)
    assert all(not r["to_settle"] for r in after if r not in unsettled)
    note = json.loads(readme.record_path(snap).read_text())["to_settle_recomputed"]
    assert note["rows_changed"] == len(unsettled) and "recomputed" in capsys.readouterr().out
    # a run's ledger is not a snapshot: refused
    assert main(["claims", "settle", "--ledger", str(tmp_path / "claims.csv")]) == 2
