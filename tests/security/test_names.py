"""Names are data, never code or paths.

Every name a config chooses (a Grad-CAM data-set key, an eos setting or ablation factor, a
lesam group or optimizer label, the names that refer to them) becomes a path component, a job
wildcard or a command word. Each must match the schema's one ``$defs/name`` pattern, checked
while the workflow plans, with the key named; nothing runs and nothing is written first. The
cases reproduced here each ran or planned on the code before this check:
the Grad-CAM key was run by the shell, ``../../../../x`` planned ``--out`` outside
``results/``, and a ``/`` in a group name crashed planning with a ``KeyError``.
"""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from sharpness.config.check import NAME_RULE, load_schema, name_pattern
from sharpness.errors import ConfigError
from sharpness.jobs import check_workflow_config
from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, snakemake, write_config

SCHEMA = load_schema(REPO / "workflow/config/config.schema.yaml")
QUICK = yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())
SHELL = "& touch FILE &"
UP = "../../../../x"
MNIST = QUICK["gradcam"]["datasets"]["mnist"]
SETTING = {"lrs": [0.1]}
GROUP = {"optimizers": ["sgd"], "seeds": [0]}


def _refused(config: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_workflow_config(config, SCHEMA)
    return str(info.value)


def _with(dotted: str, value) -> dict:
    """The quick profile with ``value`` set at ``dotted`` (a key holding dots is written
    ``a.b.[KEY]``)."""
    config = copy.deepcopy(QUICK)
    parts = re.findall(r"\[([^\]]*)\]|([^.\[\]]+)", dotted)
    keys = [bracketed or plain for bracketed, plain in parts]
    node = config
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(keys[-1])] = value
    else:
        node[keys[-1]] = value
    return config


@pytest.mark.parametrize(("where", "value", "message"), [
    # keys of mappings (a key is named with the mapping that holds it)
    (f"gradcam.datasets.[{SHELL}]", MNIST, f"config key gradcam.datasets: the key {SHELL!r}"),
    (f"eos.settings.[{UP}]", SETTING, f"config key eos.settings: the key {UP!r}"),
    (f"lesam.groups.[{UP}]", GROUP, f"config key lesam.groups: the key {UP!r}"),
    ("lesam.groups.[a/b]", GROUP, "config key lesam.groups: the key 'a/b'"),
    ("gradcam.optimizers.[sam x]", {"name": "sam", "label": "x"},
     "config key gradcam.optimizers: the key 'sam x'"),
    ("eos.ablations.factors.[$(id)]", {"key": "seed", "values": [1]},
     "config key eos.ablations.factors: the key '$(id)'"),
    ("eos.dropped.[a;b]", "why", "config key eos.dropped: the key 'a;b'"),
    # names as values: labels and references
    ("lesam.groups.cifar10_wrn.optimizers.0", {"label": "../sam", "optimizer": "sam"},
     "config key lesam.groups.cifar10_wrn.optimizers[0].label: the name '../sam'"),
    ("lesam.groups.cifar10_wrn.optimizers.0", "sam;id",
     "config key lesam.groups.cifar10_wrn.optimizers[0]: the name 'sam;id'"),
    ("lesam.groups.transfer_finetune.init_from", ["../transfer_pretrain", "sam"],
     "config key lesam.groups.transfer_finetune.init_from[0]: the name"),
    ("eos.figures.fig_phase.0", UP, f"config key eos.figures.fig_phase[0]: the name {UP!r}"),
    ("lesam.items.table_cifar.rows.0.group", "a b",
     "config key lesam.items.table_cifar.rows[0].group: the name 'a b'"),
    ("gradcam.claim.dataset", "`id`", "config key gradcam.claim.dataset: the name '`id`'"),
    # the edges of the pattern
    ("eos.settings.[-rf]", SETTING, "config key eos.settings: the key '-rf'"),
    ("eos.settings.[.hidden]", SETTING, "config key eos.settings: the key '.hidden'"),
    ("eos.settings.[a..b]", SETTING, "config key eos.settings: the key 'a..b'"),
    ("eos.settings.[a-b]", SETTING, "config key eos.settings: the key 'a-b'"),
    (f"eos.settings.[{'a' * 65}]", SETTING, "config key eos.settings: the key 'aaaa"),
])
def test_a_name_that_is_not_data_is_refused_naming_the_key(where, value, message):
    text = _refused(_with(where, value))
    assert message in text
    assert NAME_RULE in text


@pytest.mark.parametrize("name", ["mnist", "sigma_0.02", "lesam_rmax0.3", "A1", "a" * 64])
def test_names_of_letters_digits_underscores_and_dots_pass(name):
    check_workflow_config(_with(f"eos.settings.[{name}]", SETTING), SCHEMA)


def test_the_name_pattern_is_defined_once_and_used_for_every_name():
    """One pattern (``$defs/name``); no other pattern in the schema restates it, and every
    mapping whose keys become paths or wildcards checks its keys with it."""
    text = (REPO / "workflow/config/config.schema.yaml").read_text()
    assert text.count(name_pattern(SCHEMA)) == 1
    keyed = {"gradcam.datasets": SCHEMA["properties"]["gradcam"]["properties"]["datasets"],
             "gradcam.optimizers": SCHEMA["properties"]["gradcam"]["properties"]["optimizers"],
             "eos.settings": SCHEMA["properties"]["eos"]["properties"]["settings"],
             "eos.dropped": SCHEMA["properties"]["eos"]["properties"]["dropped"],
             "eos.ablations.factors": SCHEMA["properties"]["eos"]["properties"]["ablations"][
                 "properties"]["factors"],
             "lesam.groups": SCHEMA["properties"]["lesam"]["properties"]["groups"]}
    for where, node in keyed.items():
        assert node.get("propertyNames") == {"$ref": "#/$defs/name"}, where


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, repo):
    return copy_workflow(repo, tmp_path_factory.mktemp("names"))


def _plan(workdir, bin_dir, overrides: dict, *args: str):
    cfg = write_config(workdir, overrides)
    return snakemake(bin_dir, workdir, *args, "--configfile", str(cfg), check=False,
                     timeout=300)


@pytest.mark.workflow
def test_a_gradcam_key_holding_shell_words_is_refused_and_nothing_runs(workdir, bin_dir):
    """The first case, as a real invocation (not a dry run): the key `& touch FILE &` in the
    Grad-CAM train and maps rules would run `touch FILE` if it reached the shell unquoted.
    Planning stops, naming the key; no job starts, nothing is written."""
    target = f"results/minorfirst/gradcam/runs/{SHELL}/sgd/runs.json"
    proc = _plan(workdir, bin_dir, {"gradcam": {"datasets": {SHELL: MNIST}}}, target,
                 "--cores", "1")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"config key gradcam.datasets: the key {SHELL!r} is not allowed" in out
    assert not (workdir / "FILE").exists()
    assert not any((workdir / d).exists() for d in ("results", "logs", "figures"))


@pytest.mark.workflow
@pytest.mark.parametrize(("overrides", "message"), [
    ({"eos": {"settings": {UP: SETTING}}}, f"config key eos.settings: the key {UP!r}"),
    ({"lesam": {"groups": {UP: GROUP}}}, f"config key lesam.groups: the key {UP!r}"),
    # a `/` in a group name once crashed planning with a KeyError instead of a config error
    ({"lesam": {"groups": {"a/b": GROUP}}},
     "config key lesam.groups: the key 'a/b'"),
], ids=["eos-setting-up", "lesam-group-up", "lesam-group-slash"])
def test_a_name_that_is_a_path_is_a_config_error_at_planning(workdir, bin_dir, overrides,
                                                             message):
    """`../../../../x` as an eos setting or a lesam group would plan `--out
    results/.../../../../../x`, a run folder outside results/: planning refuses it."""
    proc = _plan(workdir, bin_dir, overrides, "-n", "-p")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert message in out and "ConfigError" in out
    assert "KeyError" not in out and "--out" not in out


@pytest.mark.workflow
def test_wildcard_constraints_match_names_literally(workdir, bin_dir):
    """A name's `.` is a dot, not a regex wildcard: with the key `mnist.x`, the maps of
    `mnist.x` are planned and those of `mnistAx` have no rule (the constraint escapes the
    names it joins)."""
    overrides = {"gradcam": {"datasets": {"mnist.x": MNIST}}}
    ok = _plan(workdir, bin_dir, overrides, "-n",
               "results/minorfirst/gradcam/maps/mnist.x/maps.npz")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    other = _plan(workdir, bin_dir, overrides, "-n",
                  "results/minorfirst/gradcam/maps/mnistAx/maps.npz")
    assert other.returncode != 0
    assert "MissingRuleException" in other.stdout + other.stderr
