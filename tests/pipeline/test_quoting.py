"""Every path in every rule's shell command is quoted: a data folder with a space in its name
reaches each command as one argument (a dry run prints the commands; shlex splits them as
the shell would)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.pipeline.helpers import copy_workflow, snakemake, write_config

ROOT, MIRROR = "my data", "my mirror"


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory, repo, bin_dir):
    """The dry run of the quick profile's DAG (all jobs forced), plus one data preparation,
    with data.root and data.mirror holding spaces, commands printed."""
    workdir = copy_workflow(repo, tmp_path_factory.mktemp("quoting"))
    cfg = write_config(workdir, {"data": {"root": ROOT, "mirror": MIRROR}})
    proc = snakemake(bin_dir, workdir, "all", "results/data/mnist.json", "-n", "-p",
                     "--forceall", "--configfile", str(cfg))
    return proc.stdout


@pytest.fixture(scope="module")
def commands(dry_run):
    """Every shell command of the dry run, split into words as the shell would."""
    lines = [line.split("Shell command:", 1)[1] for line in dry_run.splitlines()
             if "Shell command:" in line and line.split("Shell command:", 1)[1].strip() != "None"]
    assert len(lines) > 50, dry_run[-2000:]
    return [shlex.split(line) for line in lines]


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_every_job_says_what_it_makes(dry_run, commands):
    """Each job that runs a command prints its rule's message (`paper: what (output)`) instead
    of the bare rule block; only the aggregate `all` has none."""
    messages = re.findall(r"^Job \d+: (\w+)(?: \w+)?: .+\((\S+)[,)]", dry_run, flags=re.M)
    assert len(messages) == len(commands)
    assert {paper for paper, _ in messages} == {"data", "minorfirst", "lesam", "eos", "bridges",
                                                "claims"}
    assert all(out.startswith(("results/", "figures/")) for _, out in messages)
    assert re.findall(r"^(?:local)?rule (\w+):", dry_run, flags=re.M) == ["all"]


def _value(words, flag):
    return words[words.index(flag) + 1]


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_data_folders_stay_one_argument(commands):
    """Each rule that passes the data folder (data prepare, eos run and run-many, lesam train,
    gradcam maps) gets it whole, and no command splits it."""
    seen = set()
    for words in commands:
        assert "my" not in words, words
        action = " ".join(words[1:3])
        if action == "data prepare":
            assert (_value(words, "--root"), _value(words, "--mirror")) == (ROOT, MIRROR)
        elif action in ("eos run", "eos run-many"):
            assert _value(words, "--data-root") == ROOT
            action = "eos run"
        elif action == "gradcam maps":
            assert _value(words, "--root") == ROOT
        elif words[:2] == ["sharpness", "train"]:
            action = "train"
            assert _value(words, "--set") == f"data_root={ROOT}"
        elif words[:2] == ["sharpness", "train-many"]:  # lesam.one_job_per_group
            action = "train"
            runs = json.loads(_value(words, "--runs"))
            assert {cfg["data_root"] for cfg in runs.values()} == {ROOT}
        else:
            continue
        seen.add(action)
    assert seen == {"data prepare", "eos run", "gradcam maps", "train"}


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_list_params_quote_each_item(commands):
    """A list param (gradcam's KEY=DIR maps, eos figure inputs) becomes one word per item."""
    figure = next(w for w in commands if w[1:3] == ["gradcam", "figure"])
    maps = figure[figure.index("--maps") + 1:figure.index("--out")]
    assert [m.split("=")[0] for m in maps] == ["mnist", "svhn", "cifar10"]
    phase = next(w for w in commands if w[1:3] == ["eos", "figure"] and "fig_phase" in w)
    inputs = phase[phase.index("--inputs") + 1:phase.index("--out")]
    assert len(inputs) > 1 and all(i.endswith("/sweep.json") for i in inputs)
