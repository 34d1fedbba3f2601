"""`sharpness audit` from anywhere: paths resolve from the repository root wherever it runs,
a broken chain exits 1, a figure copied out of the tree is identified by the provenance id
stamped into it and checked against its record, a mistyped path says "no such file", and
output into a closed pipe ends without a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from sharpness.cli import main  # noqa: E402
from sharpness.io import atomic_write_json  # noqa: E402
from sharpness.plots.save import save_figure  # noqa: E402
from sharpness.runs.run_record import RunRecord  # noqa: E402
from tests.conftest import REPO  # noqa: E402


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A repository-shaped folder with one run and one figure drawn from it, built from its
    root as the workflow builds (records name inputs relative to the root)."""
    root = tmp_path / "repo"
    (root / "workflow/config").mkdir(parents=True)
    (root / "Snakefile").write_text("# the workflow\n")
    (root / "workflow/config/quick.yaml").write_text("profile: quick\n")
    monkeypatch.chdir(root)
    with RunRecord(Path("results/run"), params={"lr": 0.1}, seed=0):
        atomic_write_json(Path("results/run/sweep.json"), {"loss": 0.5})
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, Path("figures/p/fig.pdf"), rows=[{"x": 1, "y": 1}], caption="test",
                inputs=[Path("results/run")], params={"figure": "fig"})
    return root


def test_audit_from_a_subfolder_follows_the_chain(tree, monkeypatch, capsys):
    monkeypatch.chdir(tree / "figures")
    assert main(["audit", "p/fig.pdf"]) == 0
    out = capsys.readouterr().out
    assert "results/run" in out and "no provenance record" not in out
    assert main(["audit", "figures/p/fig.pdf"]) == 0  # as written from the root
    assert Path.cwd() == tree / "figures"  # the audit went back where it was started


def test_a_broken_chain_exits_1_from_anywhere(tree, monkeypatch, capsys):
    (tree / "results/run/provenance.json").unlink()
    monkeypatch.chdir(tree / "figures")
    assert main(["audit", "p/fig.pdf"]) == 1
    captured = capsys.readouterr()
    assert "BROKEN CHAIN: results/run was made with record" in captured.out + captured.err


def test_a_loose_copy_is_identified_by_its_stamp(tree, tmp_path, capsys):
    copy = tmp_path / "elsewhere" / "mine.pdf"
    copy.parent.mkdir()
    shutil.copy(tree / "figures/p/fig.pdf", copy)
    assert main(["audit", str(copy)]) == 0
    out = capsys.readouterr().out
    assert "identified by its stamp" in out and "as figures/p/fig.pdf" in out
    assert "its SHA-256 is the one its record holds" in out
    copy.write_bytes(copy.read_bytes() + b"\n% edited\n")
    assert main(["audit", str(copy)]) == 1
    assert "COPY CHANGED" in capsys.readouterr().out


def test_a_missing_path_says_no_such_file(tree, capsys):
    assert main(["audit", "figures/p/fgi.pdf"]) == 2
    assert "figures/p/fgi.pdf: no such file or folder" in capsys.readouterr().err


@pytest.mark.e2e  # a command in a fresh interpreter
def test_output_into_a_closed_pipe_ends_quietly(tree):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before a line is written, as `| head` after its line
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]))
    done = subprocess.run([sys.executable, "-m", "sharpness.cli", "audit", "figures/p/fig.pdf"],
                          cwd=tree, env=env, stdout=write, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
    assert done.returncode == 141
