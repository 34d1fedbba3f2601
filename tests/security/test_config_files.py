"""Config files are data: read with a safe loader, never evaluated by this project.

Snakemake 9 reads a ``--configfile`` through yte, which runs the Python of a file that says
``__use_yte__: true``; a second reading with Snakemake's loader would run its code twice,
even under ``snakemake -n``. Every reader of config files goes through
:mod:`sharpness.config.plain` (no yte construct, YAML tag or repeated key, the key named),
``sharpness config check`` checks a file before Snakemake sees it, and
the Snakefile stops at a file holding a template, saying what already ran.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.config.plain import load_plain, read_plain_config
from sharpness.config.profiles import load_profile
from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, snakemake

# a yte config whose code appends to a file each time it is evaluated
YTE = """\
__use_yte__: true
__definitions__:
  - "open({marker!r}, 'a').write('ran\\\\n')"
minorfirst:
  ?if True:
    l1_maxmargin: {{steps: 10}}
"""


def _yte_file(folder: Path) -> tuple[Path, Path]:
    marker = folder / "ran.txt"
    path = folder / "evil.yaml"
    path.write_text(YTE.format(marker=str(marker)))
    return path, marker


@pytest.mark.parametrize(("text", "named"), [
    ("__use_yte__: true\na: 1\n", "key __use_yte__: the key '__use_yte__' is a yte template"),
    ("a:\n  __definitions__: ['import os']\n", "key a.__definitions__:"),
    ("a:\n  __variables__: {x: 1}\n", "key a.__variables__:"),
    ("eos:\n  settings:\n    ?if True: {lrs: [1]}\n", "key eos.settings.?if True:"),
    ("eos:\n  settings:\n    ?for x in range(3): {lrs: [1]}\n", "key eos.settings.?for x"),
    ("lesam:\n  base: {epochs: \"?__import__('os').system('id')\"}\n",
     "key lesam.base.epochs: the value \"?__import__('os').system('id')\" is a yte expression"),
    ("a: [1, '?x']\n", "key a[1]: the value '?x' is a yte expression"),
    ("a: !!python/object/apply:os.system ['id']\n", "key a: the YAML tag"),
    ("a:\n  b: !!binary aGk=\n", "key a.b: the YAML tag tag:yaml.org,2002:binary"),
    ("a: !custom 3\n", "key a: the YAML tag !custom"),
    ("a: [1, !!str 2]\n", "key a[1]: the YAML tag"),
    ("seed_offset: 0\nseed_offset: 1000\n", "key seed_offset: the key 'seed_offset' is given twice"),
])
def test_a_config_that_is_not_plain_data_is_refused_naming_the_key(text, named) -> None:
    with pytest.raises(Exception) as info:
        load_plain(text, "my.yaml")
    assert type(info.value).__name__ == "ConfigError"
    assert str(info.value).startswith("config file 'my.yaml', ") and named in str(info.value)


def test_aliases_are_data_until_they_expand_past_the_bound() -> None:
    """The paper profile shares one list of sources by an alias; a billion laughs is refused
    after a bounded walk, not expanded."""
    assert load_plain("a: &x [1, 2]\nb: *x\n", "ok.yaml") == {"a": [1, 2], "b": [1, 2]}
    laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9))
    with pytest.raises(Exception, match="more than 1,000,000 values once its aliases"):
        load_plain(laughs, "lol.yaml")


def test_reading_a_yte_file_runs_nothing(tmp_path) -> None:
    path, marker = _yte_file(tmp_path)
    with pytest.raises(Exception, match="__use_yte__"):
        read_plain_config(path)
    with pytest.raises(Exception, match="__use_yte__"):
        load_profile([path], REPO / "workflow/config/quick.yaml")  # sharpness cost / plan
    assert not marker.exists()


def test_config_check_refuses_a_yte_file_and_runs_nothing(tmp_path, capsys) -> None:
    path, marker = _yte_file(tmp_path)
    assert main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"config file '{path}', key __use_yte__" in err
    assert "Check a config from elsewhere with `sharpness config check FILE`" in err
    assert not marker.exists()


def test_config_check_passes_the_profiles_and_names_a_bad_key(tmp_path, capsys) -> None:
    profiles = sorted((REPO / "workflow/config").glob("*.yaml"))
    profiles = [p for p in profiles if p.name != "config.schema.yaml"]
    assert len(profiles) == 3
    for profile in profiles:
        assert main(["config", "check", str(profile),
                     "--base", str(REPO / "workflow/config/quick.yaml"),
                     "--schema", str(REPO / "workflow/config/config.schema.yaml")]) == 0
    mine = tmp_path / "my.yaml"
    mine.write_text("minorfirst:\n  l1_maxmargin: {steps: -1}\n")
    assert main(["config", "check", str(mine), "--base",
                 str(REPO / "workflow/config/quick.yaml"),
                 "--schema", str(REPO / "workflow/config/config.schema.yaml")]) == 2
    assert "config key minorfirst.l1_maxmargin.steps: -1 is less than" in capsys.readouterr().err


def test_config_check_plain_reads_a_snakemake_profile(capsys) -> None:
    for profile in sorted((REPO / "workflow/profiles").glob("*/config.yaml")):
        assert main(["config", "check", "--plain", str(profile)]) == 0
    assert "plain data:" in capsys.readouterr().out


def test_the_snakefile_reads_config_files_as_plain_data_only() -> None:
    """The one place the workflow re-reads --configfile uses the plain reader, never
    Snakemake's loader (which evaluates yte)."""
    text = (REPO / "Snakefile").read_text()
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "load_configfile" in line or "yte" in line]
    assert "read_plain_config(f, loaded_by_snakemake=True)" in text


@pytest.mark.workflow
def test_a_yte_configfile_is_refused_at_planning_and_its_code_runs_only_once(
        tmp_path, bin_dir) -> None:
    """Snakemake itself evaluates the file once before the Snakefile runs (the project cannot
    stop that); the workflow then stops, names the key and what ran, and never evaluates it
    again (before: twice, and planning went on)."""
    work = tmp_path / "w"
    work.mkdir()
    copy_workflow(REPO, work)
    path, marker = _yte_file(tmp_path)
    proc = snakemake(bin_dir, work, "-n", "--configfile", str(path), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"config file '{path}', key __use_yte__" in out
    assert "its code has run once" in out
    assert marker.read_text() == "ran\n"


def test_make_with_a_config_checks_it_before_snakemake_reads_it(tmp_path) -> None:
    """`make CONFIG=my.yaml` runs `sharpness config check` first, as its own recipe line, so
    a refusal stops make before Snakemake loads the file (`make -n` prints, runs nothing)."""
    proc = subprocess.run(["make", "-n", "-C", str(REPO), "run", "CONFIG=my.yaml",
                           f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True,
                          check=True)
    lines = [shlex.split(line) for line in proc.stdout.splitlines() if "sharpness" in line
             or "snakemake" in line]
    assert lines == [[f"{tmp_path / 'venv'}/bin/sharpness", "config", "check", "my.yaml"],
                     [f"{tmp_path / 'venv'}/bin/snakemake", "--cores", "all", "--configfile",
                      "my.yaml"]]
