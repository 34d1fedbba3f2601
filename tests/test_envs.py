"""One list of pins (envs/requirements.txt); the conda environment of the rules' `conda:`
directives is written from it and installs this package."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tomllib

import pytest

from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, snakemake

ENVS = REPO / "envs"


def _writer():
    spec = importlib.util.spec_from_file_location("write_environment",
                                                  ENVS / "write_environment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_environment_is_written_from_the_pins():
    writer = _writer()
    assert writer.main(["--check"]) == 0, "run `python envs/write_environment.py`"
    pins = writer.pins((ENVS / "requirements.txt").read_text())
    assert pins and all("==" in pin for pin in pins)
    env = (ENVS / "environment.yaml").read_text()
    assert [line.strip()[2:] for line in env.splitlines() if line.startswith("      - ")] == pins


def test_every_dependency_is_pinned():
    """pyproject.toml names the packages; requirements.txt pins each one (one list of pins)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    pinned = {_name(pin) for pin in _writer().pins((ENVS / "requirements.txt").read_text())}
    assert {_name(req) for req in wanted} - pinned == set()


def test_every_rule_uses_the_environment_that_installs_the_package():
    """Each declared rule names the one environment (`conda: ENV`, set once in common.smk);
    a rule declared with `use rule ... with:` inherits it from its base."""
    rules = conda = 0
    for path in (REPO / "workflow/rules").glob("*.smk"):
        text = path.read_text()
        rules += len(re.findall(r"^\s*rule(?: \w+)?:", text, re.M))
        conda += len(re.findall(r"^\s*conda: ENV$", text, re.M))
    assert rules >= 20 and conda == rules
    env = re.search(r'^ENV = "([^"]+)"', (REPO / "workflow/rules/common.smk").read_text(), re.M)
    assert env and env.group(1) == "../../envs/environment.yaml"
    deploy = ENVS / "environment.post-deploy.sh"
    assert deploy.stat().st_mode & 0o111
    assert "pip install --no-deps -e ." in deploy.read_text()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("conda") is None, reason="conda is not installed here")
def test_conda_environment_builds_and_runs_a_job(tmp_path, bin_dir):
    """Builds envs/environment.yaml with Snakemake (downloads the stack) and runs one job in
    it: the job's `sharpness` is the environment's."""
    work = copy_workflow(REPO, tmp_path)
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")
    shutil.copytree(REPO / "src", work / "src")
    target = "results/minorfirst/flow_vs_discrete/summary.json"
    snakemake(bin_dir, work, target, "--use-conda", "--cores", "1", timeout=3600)
    envs = [p for p in (work / ".snakemake/conda").iterdir() if p.is_dir()]
    out = subprocess.run([str(envs[0] / "bin/python"), "-c",
                          "import sharpness; print(sharpness.__file__)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith(str(work / "src"))
