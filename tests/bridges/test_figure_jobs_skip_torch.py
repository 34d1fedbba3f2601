"""A bridges figure job imports only what it draws with: not torch (about 1.6 s per job).

Each figure command runs in a fresh interpreter, as a Snakemake job does, on a small run
directory, and reports whether torch was imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sharpness.runs.seal import seal

#: checks figure jobs' imports in fresh interpreters: second tier
pytestmark = pytest.mark.e2e

SNIPPET = """
import sys
from sharpness.cli import main
code = main(sys.argv[1:])
print("TORCH", "torch" in sys.modules)
sys.exit(code)
"""


def _sam_eos_run(run: Path) -> None:
    """A two-optimizer sweep.json as :func:`sharpness.bridges.sam_eos.run_sweep` writes it."""
    rows = []
    for name in ("gd", "sam"):
        for k, lr in enumerate((0.5, 1.0, 2.0, 4.0)):
            ok = k < 3
            row = {"optimizer": name, "lr": lr, "factor": lr, "lr_over_eta_c": lr,
                   "status": "ok" if ok else "diverged", "reason": "loss_goal" if ok else "diverged",
                   "steps": 10, "converged": ok, "diverged": not ok,
                   "diverged_step": None if ok else 3, "train_loss": 0.01 if ok else 1e5,
                   "test_error": 0.2, "l1": 3.0, "l2": 1.0, "nuclear": 2.0}
            if ok:
                row.update(sharpness=1.8 / lr, eta_s_over_2=0.9, grad_norm=0.1, edge=1.9 / lr)
            rows.append(row)
    setting = {"dataset": "mnist_embedded", "train_size": 8, "test_size": 50, "model": "fcn",
               "width": 1.0, "loss": "mse", "seed": 0, "loss_goal": 0.02, "max_steps": 10}
    sweep = {"eta_c": 1.0, "s_gf": 2.0, "setting": setting, "rows": rows,
             "optimizers": [{"name": "gd", "hparams": {}},
                            {"name": "sam", "hparams": {"rho": 0.05}}]}
    run.mkdir()
    (run / "sweep.json").write_text(json.dumps(sweep))
    seal(run, "sweep.json")  # as the run job does: the figure checks it against this hash


@pytest.mark.slow
def test_sam_eos_figure_job_does_not_import_torch(tmp_path):
    run = tmp_path / "run"
    _sam_eos_run(run)
    out = tmp_path / "fig" / "sam_eos.pdf"
    proc = subprocess.run([sys.executable, "-c", SNIPPET, "bridges", "sam-eos", "plot",
                           "--run", str(run), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "TORCH False" in proc.stdout
    assert out.with_suffix(".csv").exists()


def test_bridges_figure_modules_do_not_import_torch():
    code = ("import sys, sharpness.cli, sharpness.commands.bridges, "
            "sharpness.bridges.sam_eos_plot, sharpness.bridges.lesam_diagonal_plot; "
            "sharpness.cli.build_parser(); print('TORCH', 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "TORCH False" in proc.stdout
