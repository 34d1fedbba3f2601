"""Bad configuration stops `snakemake -n` while it plans, with the key and the reason
(sharpness.config.check, called by the Snakefile; tests/test_config_check.py covers each
check on the function itself)."""

from __future__ import annotations

import pytest

from tests.pipeline.helpers import copy_workflow, snakemake, write_config

pytestmark = pytest.mark.workflow  # plans the workflow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, repo):
    return copy_workflow(repo, tmp_path_factory.mktemp("cfg"))


@pytest.mark.parametrize(("override", "message"), [
    # a NaN would run "ok" and become a verdict; a lesam override of the seed would be
    # replaced silently by the group's seed
    ({"minorfirst": {"l1_maxmargin": {"h": float("nan")}}},
     "config key minorfirst.l1_maxmargin.h: nan is not a finite number"),
    ({"lesam": {"groups": {"cifar10_wrn": {"overrides": {"seed": 5}}}}},
     "config key lesam.groups.cifar10_wrn.overrides.seed: set per run by the group's `seeds`"),
])
def test_invalid_value_names_key(workdir, bin_dir, override, message):
    cfg = write_config(workdir, override)
    proc = snakemake(bin_dir, workdir, "-n", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr


def test_valid_config_lists_dag(workdir, bin_dir):
    proc = snakemake(bin_dir, workdir, "-n")
    assert "minorfirst_diagonal_figure" in proc.stdout


def test_a_mistyped_target_names_the_nearest_figure(workdir, bin_dir):
    """Snakemake's own MissingRuleException names no target; the Snakefile does."""
    proc = snakemake(bin_dir, workdir, "-n", "figures/minorfirst/l1_maxmargn.pdf", "eos_al",
                     check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "MissingRuleException" not in out
    assert "did you mean figures/minorfirst/l1_maxmargin.pdf" in out
    assert "eos_al: no figure, table or rule" in out and "did you mean eos_all" in out
