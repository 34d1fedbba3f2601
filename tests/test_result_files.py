"""Result files cannot be edited quietly: every reader checks a file against the
hash its producer recorded and stops naming the file and the command that rebuilds it; a run
record's id is recomputed from its content, so an edited setting or status is flagged; a
figure's caption is an output with a hash too."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from sharpness.cli import main  # noqa: E402
from sharpness.io import atomic_write_json, read_json  # noqa: E402
from sharpness.plots.save import save_figure  # noqa: E402
from sharpness.runs.audit import audit_report  # noqa: E402
from sharpness.runs.provenance import content_id  # noqa: E402
from sharpness.runs.run_record import RunRecord  # noqa: E402

#: builds whole figures and ledgers and edits their files: second tier
pytestmark = pytest.mark.e2e

#: the quick profile's l1_maxmargin settings, at a few seconds' size
L1 = {"mu": [1.0, 2.0], "multi": {"n": 10, "scales": [0.5, 1.0, 2.0], "noise": 0.5, "seed": 4},
      "alphas": [0.1, 1.0], "rhos": [0.1, 0.5], "h": 0.1, "steps": 400, "record_every": 40}


@pytest.fixture
def l1_built(tmp_path: Path) -> tuple[Path, Path]:
    """`minorfirst run` and `minorfirst plot` of l1_maxmargin, as the workflow runs them:
    ``(run folder, figures folder)``."""
    run = tmp_path / "results" / "minorfirst" / "l1_maxmargin"
    figures = tmp_path / "figures"
    assert main(["minorfirst", "run", "l1_maxmargin", "--params", json.dumps(L1),
                 "--out", str(run)]) == 0
    assert main(["minorfirst", "plot", "l1_maxmargin", "--run", str(run),
                 "--out", str(figures / "minorfirst" / "l1_maxmargin.pdf")]) == 0
    return run, figures


def _ledger_row(figures: Path, claim: str) -> dict[str, str]:
    with (figures / "claims.csv").open(newline="") as handle:
        return next(r for r in csv.DictReader(handle) if r["id"] == claim)


def test_an_edited_figure_csv_stops_the_claims_build_naming_it(l1_built, capsys):
    """The `mf-l1` case: the CSV of l1_maxmargin edited after the build (its final
    1 - cos made large for one curve, which flipped the verdict) stops `claims build` with the
    file's name and the command that rebuilds it; the ledger is not rewritten."""
    _, figures = l1_built
    assert main(["claims", "build", "--figures", str(figures), "--profile", "quick"]) == 0
    before = _ledger_row(figures, "mf-l1")
    ledger = (figures / "claims.csv").read_text()
    path = figures / "minorfirst" / "l1_maxmargin.csv"
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if row.get("method") == "linf":
            row["one_minus_cos"] = "0.05"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert main(["claims", "build", "--figures", str(figures), "--profile", "quick"]) == 2
    err = capsys.readouterr().err
    assert f"{path} is not used" in err and "differs from the" in err
    assert f"snakemake --cores all --forcerun {path}" in err
    assert "the job that wrote it ran `" in err  # its record's command (here: this test's)
    assert (figures / "claims.csv").read_text() == ledger  # no verdict drawn from it
    assert _ledger_row(figures, "mf-l1")["verdict"] == before["verdict"]


def test_an_edited_run_setting_with_its_id_kept_is_flagged_and_not_drawn(l1_built, capsys):
    """The case: a run's `provenance.json` params edited, its id kept. `sharpness
    audit` flags the run and the figure made from it, and redrawing the figure refuses the
    record instead of writing a caption that states the edited settings."""
    run, figures = l1_built
    fig = figures / "minorfirst" / "l1_maxmargin.pdf"
    assert main(["audit", str(run)]) == 0 and main(["audit", str(fig)]) == 0
    prov = run / "provenance.json"
    record = read_json(prov)
    record["params"]["rhos"] = [0.1, 0.9]
    prov.write_text(json.dumps(record, indent=2))  # the id kept
    capsys.readouterr()
    assert main(["audit", str(run)]) == 1
    out = capsys.readouterr()
    assert "RECORD EDITED" in out.out + out.err and record["id"] in out.out
    assert main(["audit", str(fig)]) == 1
    text = "".join(capsys.readouterr())
    assert "RECORD EDITED" in text and "INPUT CHANGED" in text
    again = figures / "again" / "l1_maxmargin.pdf"
    assert main(["minorfirst", "plot", "l1_maxmargin", "--run", str(run),
                 "--out", str(again)]) == 2
    err = capsys.readouterr().err
    assert f"{prov} is not used" in err and "is not the hash of its content" in err
    assert not again.exists() and not again.with_suffix(".caption.txt").exists()


def test_an_edited_status_is_flagged_and_a_finished_record_recomputes_to_its_id(tmp_path):
    """The status is part of the id: a diverged run whose record is edited to `ok` no longer
    matches its id."""
    with RunRecord(tmp_path / "run", params={"lr": 30.0}, seed=0) as rec:
        rec.set_status("diverged", diverged_step=3)
    record = read_json(tmp_path / "run" / "provenance.json")
    assert content_id(record) == record["id"]
    assert audit_report(tmp_path / "run")[1] == []
    record["status"] = "ok"
    atomic_write_json(tmp_path / "run" / "provenance.json", record)
    problems = audit_report(tmp_path / "run")[1]
    assert any("RECORD EDITED" in p for p in problems), problems


def _figure(out: Path) -> dict:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    return save_figure(fig, out, rows=[{"x": 1, "y": 1}], caption="a test figure",
                       params={"figure": "t"})


def test_a_figures_caption_is_an_output_with_its_hash(tmp_path):
    """The caption is recorded in the figure's sidecar with its SHA-256: an edited caption is
    caught by `audit` and refused by a reader."""
    from sharpness.runs.seal import UnverifiedResult, read_verified

    record = _figure(tmp_path / "f" / "fig.pdf")
    caption = tmp_path / "f" / "fig.caption.txt"
    assert str(caption) in record["output_sha256"]
    assert "a test figure" in read_verified(caption, Path.read_text)
    caption.write_text("a caption that says something else\n")
    problems = audit_report(tmp_path / "f" / "fig.pdf")[1]
    assert any("FILE CHANGED" in p and str(caption) in p for p in problems), problems
    with pytest.raises(UnverifiedResult, match="fig.caption.txt is not used"):
        read_verified(caption)


def test_read_verified_refuses_what_no_job_recorded_and_what_changed(tmp_path):
    """One function for every reader: a file whose producer recorded its hash is read; a file
    of which nothing records a hash, a changed one and one whose record was edited are not."""
    from sharpness.runs.seal import UnverifiedResult, read_verified, seal

    run = tmp_path / "run"
    with RunRecord(run, params={"a": 1}) as rec:
        atomic_write_json(run / "summary.json", {"value": 1})
        rec.outputs("summary.json")
    assert read_verified(run / "summary.json") == {"value": 1}
    atomic_write_json(run / "loose.json", {"value": 2})
    with pytest.raises(UnverifiedResult, match="no job recorded its SHA-256"):
        read_verified(run / "loose.json")
    seal(run, "loose.json")  # a cache's sealed hash counts as the producer's record
    assert read_verified(run / "loose.json") == {"value": 2}
    atomic_write_json(run / "summary.json", {"value": 3})
    with pytest.raises(UnverifiedResult, match="differs from the") as info:
        read_verified(run / "summary.json", what="a test reader")
    assert str(info.value).startswith(f"a test reader: {run / 'summary.json'}")
    assert "--forcerun" in str(info.value)
    atomic_write_json(run / "summary.json", {"value": 1})  # the recorded content again
    record = read_json(run / "provenance.json")
    record["params"]["a"] = 2
    atomic_write_json(run / "provenance.json", record)  # the record holding the hash, edited
    with pytest.raises(UnverifiedResult, match="was edited"):
        read_verified(run / "summary.json")
    problems = audit_report(run)[1]
    assert any("RECORD EDITED" in p for p in problems)


def test_the_report_checks_every_file_of_an_item_before_it_shows_its_id(tmp_path):
    """`snakemake --report` labels each item with its provenance id through
    `report_provenance`: an item whose CSV was edited stops the report naming the file."""
    from sharpness.runs.seal import UnverifiedResult, report_provenance

    record = _figure(tmp_path / "f" / "fig.pdf")
    assert report_provenance(tmp_path / "f" / "fig.pdf") == record["id"]
    assert report_provenance(tmp_path / "g" / "absent.pdf") == "missing"  # not built yet
    (tmp_path / "f" / "fig.csv").write_text("x,y\n1,1000\n")
    with pytest.raises(UnverifiedResult, match="fig.csv is not used"):
        report_provenance(tmp_path / "f" / "fig.pdf")
