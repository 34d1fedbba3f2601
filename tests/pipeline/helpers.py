"""Running the workflow on a copy of itself in a temporary directory."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import yaml

# a rule's `message:` directive and its string (an f-string too, continued over several lines)
_MESSAGE = re.compile(r"^[ \t]*message:[ \t]*\n(?:[ \t]*f?\"[^\n]*\"[ \t]*\n)+", re.M)


def copy_workflow(repo: Path, dest: Path, messages: bool = True) -> Path:
    """Copy the Snakefile, workflow/, envs/ and profiles/ (not results) into ``dest``.

    ``messages=False`` drops the rules' ``message:`` directives from the copy: Snakemake then
    prints each job's rule block (rule name, threads, resources) instead of its message, which
    is what the tests that read resources back from a dry run parse."""
    shutil.copy(repo / "Snakefile", dest / "Snakefile")
    for folder in ("workflow", "envs", "profiles"):
        shutil.copytree(repo / folder, dest / folder, symlinks=True)
    if not messages:
        for rules in (dest / "workflow/rules").glob("*.smk"):
            text, count = _MESSAGE.subn("", rules.read_text())
            assert count or not re.search(r"^\s*rule \w+:", text, re.M), rules
            rules.write_text(text)
        snakefile = dest / "Snakefile"
        snakefile.write_text(_MESSAGE.sub("", snakefile.read_text()))
    return dest


def write_config(dest: Path, overrides: dict) -> Path:
    """Write an override config file merged over the default one by Snakemake. Its settings
    differ from the profile's, which makes it a variant; these tests check the default
    folders, so it says ``variant: default`` unless ``overrides`` names one
    (sharpness.config.variant)."""
    path = dest / "test-config.yaml"
    path.write_text(yaml.safe_dump({"variant": "default", **overrides}))
    return path


def snakemake(bin_dir: Path, workdir: Path, *args: str, timeout: float = 600,
              check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the environment's snakemake in ``workdir`` and return the finished process."""
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(bin_dir / "snakemake"), *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def job_stats(output: str) -> dict[str, int]:
    """The "Job stats" table Snakemake prints before it runs (or dry-runs) a DAG: rule ->
    job count, ``total`` left out; empty when there is nothing to do."""
    if "Job stats:" not in output:
        return {}
    table = output.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, re.M)
            if rule != "total"}


def paper_with_imagenet(workdir: Path, repo: Path) -> str:
    """An override config for the paper profile pointing ``data.imagenet`` at an empty
    ``train/ val/`` layout in ``workdir``: without it the paper profile's DAG stops while it
    plans the ImageNet runs (no ImageNet here). The empty PACS/VLCS domain folders go under
    ``workdir/data`` for the same reason."""
    from sharpness.data.folders import DOMAINS

    for split in ("train", "val"):
        (workdir / "inet" / split).mkdir(parents=True, exist_ok=True)
    for base, domains in DOMAINS.items():
        for domain in domains:
            (workdir / "data" / base / domain).mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((repo / "workflow/config/paper.yaml").read_text())["data"]
    return str(write_config(workdir, {"data": {**data, "imagenet": str(workdir / "inet")}}))


def screen_commands(printed: str) -> list[str]:
    """The commands a closing screen suggests (its ``  snakemake ...`` and ``  sharpness ...``
    lines, each without its ``   # why``), read from the build's printed output."""
    screen = printed[printed.index("The build is done."):]
    return [line.split("   # ")[0].strip() for line in screen.splitlines()
            if line.startswith(("  snakemake ", "  sharpness "))]


def run_commands(commands: list[str], cwd: Path, bin_dir: Path,
                 env: dict[str, str] | None = None) -> dict[str, str]:
    """Run each suggested command in ``cwd`` as a user would (the environment's commands
    first on PATH; ``env``: another environment than the suite's); every one must succeed,
    except that ``sharpness diff`` exits 1 when the two records differ, as diff(1) does.
    Returns each command's stdout."""
    env = dict(env if env is not None else os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    out = {}
    for command in commands:
        done = subprocess.run(shlex.split(command), cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=900)
        allowed = (0, 1) if command.startswith("sharpness diff ") else (0,)
        assert done.returncode in allowed, (command, done.stdout[-2000:], done.stderr[-2000:])
        out[command] = done.stdout
    return out

