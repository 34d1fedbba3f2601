"""Names match in full and every seed, count and size has an upper bound in the schema.

Before, the name pattern ended in ``$``, which Python's ``re`` also matches before a final
newline: ``"mnist\\n"`` was a valid name and planned paths held a line break. And
``seed_offset`` had no upper bound: ``10**30`` passed planning and failed at run time. Both
are refused while the workflow plans, with the key named.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from sharpness.config.check import load_schema
from sharpness.errors import ConfigError
from sharpness.jobs import check_workflow_config
from sharpness.mappings import offset_seeds
from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, snakemake

SCHEMA = load_schema(REPO / "workflow/config/config.schema.yaml")
QUICK = yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())
SEED_MAX = 2**31 - 1


def _refused(config: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_workflow_config(config, SCHEMA)
    return str(info.value)


@pytest.mark.parametrize("name", ["mnist\n", "mnist\r", "mnist\n\n", "\nmnist", "mni\nst"])
def test_a_name_with_a_line_break_is_refused_naming_the_key(name) -> None:
    config = copy.deepcopy(QUICK)
    config["gradcam"]["datasets"] = {name: QUICK["gradcam"]["datasets"]["mnist"]}
    assert _refused(config).startswith(f"config key gradcam.datasets: the key {name!r} is "
                                       "not allowed")
    config = copy.deepcopy(QUICK)
    config["gradcam"]["claim"]["dataset"] = name
    assert f"the name {name!r} is not allowed" in _refused(config)


@pytest.mark.parametrize(("key", "value"), [
    ("seed_offset", 10**30), ("seed_offset", SEED_MAX + 1), ("seed_offset", -1)])
def test_seed_offset_is_bounded(key, value) -> None:
    config = dict(copy.deepcopy(QUICK), **{key: value})
    assert _refused(config).startswith(f"config key {key}: {value} is ")


def test_every_seed_and_its_offset_stay_below_numpys_limit() -> None:
    config = copy.deepcopy(QUICK)
    config["eos"]["defaults"]["seed"] = SEED_MAX + 1
    assert _refused(config).startswith("config key eos.defaults.seed: 2147483648 is greater")
    config = dict(copy.deepcopy(QUICK), seed_offset=SEED_MAX)
    config["eos"]["defaults"]["seed"] = SEED_MAX
    check_workflow_config(config, SCHEMA)
    offset_seeds(config)
    assert config["eos"]["defaults"]["seed"] == 2 * SEED_MAX < 2**32


@pytest.mark.parametrize("dotted", [
    "lesam.base.augment.crop", "lesam.base.augment.cutout", "lesam.base.checkpoint_every",
    "lesam.base.log_every", "eos.defaults.sharpness_every", "eos.defaults.fullbatch_chunk",
    "minorfirst.l1_maxmargin.record_every", "lesam.signal.probe_every"])
def test_counts_and_sizes_have_upper_bounds(dotted) -> None:
    config = copy.deepcopy(QUICK)
    *parents, last = dotted.split(".")
    node = config
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = 10**30
    assert _refused(config).startswith(f"config key {dotted}: {10**30} is greater than")


def _integer_leaves(node, path=()):
    if isinstance(node, dict):
        types = node.get("type")
        types = types if isinstance(types, list) else [types]
        if "integer" in types and "enum" not in node:
            yield path, node
        for key, child in node.items():
            yield from _integer_leaves(child, (*path, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _integer_leaves(child, (*path, index))


def test_every_integer_of_the_schema_has_an_upper_bound() -> None:
    unbounded = ["/".join(map(str, path)) for path, node in _integer_leaves(SCHEMA)
                 if "maximum" not in node and "exclusiveMaximum" not in node]
    assert not unbounded


@pytest.mark.workflow
def test_snakemake_refuses_a_huge_seed_offset_at_planning(tmp_path, bin_dir) -> None:
    copy_workflow(REPO, tmp_path)
    proc = snakemake(bin_dir, tmp_path, "-n", "--config", f"seed_offset={10**30}", check=False)
    assert proc.returncode != 0
    assert f"config key seed_offset: {10**30} is greater than the maximum" in (
        proc.stdout + proc.stderr)
