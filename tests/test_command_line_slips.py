"""Command-line slips caught with a message that says the fix: a mistyped target names the
nearest figures, tables and rules; a target written after --configfile is shown in the right
order before Snakemake reads a PDF as YAML; a command run from a subfolder says where to run
from (sharpness.config.targets, ``sharpness build``, ``sharpness config check``)."""

from __future__ import annotations

import pytest

from sharpness.cli import main
from sharpness.config.targets import (
    TargetError,
    check_targets,
    misplaced_targets,
    reordered,
    subfolder_hint,
)
from tests.conftest import REPO

ITEMS = ["figures/minorfirst/l1_maxmargin.pdf", "figures/minorfirst/l2_limit.pdf",
         "figures/lesam/table_cifar.md", "figures/eos/fig_phase.pdf", "figures/CLAIMS.md"]
RULES = ["all", "eos_all", "lesam_all", "minorfirst_all", "eos_figure"]


def test_a_mistyped_target_names_the_nearest_items_and_rules(tmp_path):
    with pytest.raises(TargetError) as info:
        check_targets(["figures/minorfirst/l1_maxmargn.pdf", "eos_al", "table_cifr"],
                      ITEMS, RULES, root=tmp_path)
    text = str(info.value)
    assert "figures/minorfirst/l1_maxmargn.pdf: no figure, table or rule" in text
    assert "did you mean figures/minorfirst/l1_maxmargin.pdf" in text
    assert "eos_al: no figure" in text and "did you mean eos_all" in text
    assert "table_cifr: " in text and "figures/lesam/table_cifar.md" in text
    assert "eos_all, lesam_all, minorfirst_all" in text


def test_valid_targets_pass(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures/README.md").write_text("x")
    check_targets(["figures/minorfirst/l1_maxmargin.png", "figures/lesam/table_cifar.tex",
                   "figures/CLAIMS.md", "figures/claims.csv", "eos_all", "all",
                   "results/lesam/runs/x/final.json", "figures/README.md"],
                  ITEMS, RULES, root=tmp_path)


def test_a_target_after_configfile_is_shown_in_the_right_order():
    argv = ["-n", "--configfile", "my.yaml", "figures/eos/fig_phase.pdf", "--cores", "2"]
    assert misplaced_targets(argv) == ["figures/eos/fig_phase.pdf"]
    assert reordered(argv) == ("snakemake figures/eos/fig_phase.pdf -n --configfile my.yaml "
                               "--cores 2")
    assert misplaced_targets(["figures/eos/fig_phase.pdf", "--configfile", "my.yaml"]) == []


def test_sharpness_build_refuses_the_wrong_order_before_snakemake(capsys):
    code = main(["build", "--configfile", "my.yaml", "figures/eos/fig_phase.pdf"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Put targets first" in err
    assert "snakemake figures/eos/fig_phase.pdf --configfile my.yaml" in err


def test_config_check_of_a_figure_says_it_is_a_target(capsys):
    assert main(["config", "check", "my.yaml", "figures/eos/fig_phase.pdf"]) == 2
    assert "snakemake figures/eos/fig_phase.pdf --configfile my.yaml" in capsys.readouterr().err


def test_a_command_from_a_subfolder_says_where_to_run_from(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(REPO / "docs")
    assert main(["config", "check", "my.yaml"]) == 2
    err = capsys.readouterr().err
    assert "you are in docs/ of the repository: run from the repository root" in err
    assert main(["build", "-n"]) == 2
    assert "run from the repository root" in capsys.readouterr().err
    monkeypatch.chdir(REPO)
    assert subfolder_hint() == ""
    monkeypatch.chdir(tmp_path)
    assert subfolder_hint() == ""
