"""Bad configuration fails at load time with the key and the reason."""

from __future__ import annotations

import pytest

from tests.pipeline.helpers import copy_workflow, snakemake, write_config


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, repo):
    return copy_workflow(repo, tmp_path_factory.mktemp("cfg"))


@pytest.mark.parametrize(("override", "key", "reason"), [
    ({"minorfirst": {"l1_maxmargin": {"h": -1}}}, "['minorfirst']['l1_maxmargin']['h']",
     "minimum"),
    ({"data": {"root": "data", "mirorr": "x"}}, "mirorr", "unexpected"),
    ({"profile": "fast"}, "['profile']", "is not one of"),
])
def test_invalid_value_names_key(workdir, bin_dir, override, key, reason):
    cfg = write_config(workdir, override)
    proc = snakemake(bin_dir, workdir, "-n", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    message = proc.stdout + proc.stderr
    assert key in message
    assert reason in message


def test_valid_config_lists_dag(workdir, bin_dir):
    proc = snakemake(bin_dir, workdir, "-n")
    assert "minorfirst_diagonal_figure" in proc.stdout
