"""One module per optimizer: what each module's ``SPEC`` declares is what the registry, the
planner, the methods table, the config schema and its reference use; and a new optimizer is
picked up everywhere from its module alone (CONTRIBUTING.md's recipe, followed on a copy)."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from sharpness.config.check import load_schema
from sharpness.config.doc import render
from sharpness.optim import OPTIMIZERS, build_optimizer
from sharpness.optim.spec import (
    OPTIM_DIR,
    OptimizerSpec,
    optimizer_spec,
    optimizer_specs,
    passes_per_step,
    read_spec,
    spec_modules,
)
from sharpness.plots.methods import COLOURS, METHODS, method

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "config" / "config.schema.yaml"
SOURCE = re.compile(r"^(official|paper|choice): .+")


def test_the_source_reading_is_the_imported_spec():
    assert set(spec_modules()) == set(OPTIMIZERS)
    for name, stem in spec_modules().items():
        module = importlib.import_module(f"sharpness.optim.{stem}")
        assert optimizer_specs()[name] == module.SPEC, stem
        cls = OPTIMIZERS[name]
        assert cls.spec is module.SPEC
        assert (cls.name, cls.hparam_defaults) == (name, module.SPEC.defaults)
        assert cls.two_pass == (module.SPEC.passes_per_step > 1)


def test_modules_without_spec_are_not_optimizers():
    declared = set(spec_modules().values())
    for path in OPTIM_DIR.glob("*.py"):
        assert (read_spec(path) is not None) == (path.stem in declared), path.name
    assert {"base", "spec", "registry", "closures", "schedules"}.isdisjoint(declared)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_hparam_default_has_a_source_and_is_accepted(name):
    spec = optimizer_spec(name)
    for h in spec.hparams:
        assert SOURCE.match(h.source), (name, h.name, h.source)
    torch = pytest.importorskip("torch")
    opt = build_optimizer(name, torch.nn.Linear(3, 2), total_steps=4, **spec.tiny_hparams)
    assert opt.hparams == {**spec.defaults, **spec.tiny_hparams}


def test_the_planner_reads_passes_from_the_specs():
    from sharpness.cost import PASSES

    assert {n: s.passes_per_step for n, s in optimizer_specs().items()} == PASSES
    assert passes_per_step("sgd") == 1.0
    assert passes_per_step("sam") == 2.0
    eig = optimizer_spec("eigensam")
    every, iters = eig.defaults["eig_every"], eig.defaults["power_iters"]
    assert passes_per_step("eigensam") == pytest.approx(2.0 + 2.0 * iters / every)
    assert passes_per_step("eigensam", {"eig_every": 10, "power_iters": 5}) == pytest.approx(3.0)
    with pytest.raises(KeyError, match="sgdd"):
        passes_per_step("sgdd")  # no silent default


def test_the_methods_table_reads_label_text_and_colour_from_the_specs():
    colours = [m.colour for m in METHODS]
    assert len(set(colours)) == len(colours)
    assert set(colours) <= set(COLOURS)
    for name, spec in optimizer_specs().items():
        m = method(name)
        assert (m.label, m.text, m.optimizer) == (spec.label, spec.text, name)
        if spec.colour:
            assert m.colour == spec.colour
        for alias in spec.aliases:
            assert method(alias) is m


def test_schema_enum_and_config_reference_name_every_optimizer():
    schema = load_schema(SCHEMA)
    assert sorted(schema["$defs"]["optimizer"]["enum"]) == sorted(OPTIMIZERS)
    reference = render(schema)
    for line in reference.splitlines():
        if line.startswith("| `") and "the optimizer |" in line:
            assert all(name in line for name in OPTIMIZERS), line


def test_a_spec_holds_literals_only(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from sharpness.optim.spec import OptimizerSpec\n"
                   "SPEC = OptimizerSpec(name=make(), label='x', text='x', reference='x')\n")
    with pytest.raises(ValueError, match="literals"):
        read_spec(bad)
    assert isinstance(read_spec(OPTIM_DIR / "sam.py"), OptimizerSpec)


#: the recipe's new optimizer module (CONTRIBUTING.md, "A new optimizer")
NEW_MODULE = '''
"""Half-SAM: SAM with half the radius along the gradient (a recipe test's variant)."""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from sharpness.optim.base import NORM_GUARD, SharpnessOptimizer
from sharpness.optim.spec import HParam, OptimizerSpec

SPEC = OptimizerSpec(
    name="halfsam",
    label="half-SAM",
    text="half-SAM",
    reference="choice: a variant of the recipe test",
    hparams=(HParam("rho", 0.1, "choice: twice SAM's"),
             HParam("bn_second_pass", "freeze", "choice: as SAM")),
    tiny_hparams={"rho": 0.02},
)


class HalfSAM(SharpnessOptimizer):
    """``eps = rho g / (2 ||g||)``."""

    spec: ClassVar[OptimizerSpec] = SPEC

    def _perturbation(self, params: list[Tensor], grads: list[Tensor],
                      grad_norm: Tensor) -> list[Tensor]:
        return torch._foreach_mul(grads, 0.5 * self.hparams["rho"] / (grad_norm + NORM_GUARD))
'''

#: what the rest of the project derives, read in a fresh interpreter on the copy
PROBE = '''
import json, sys
import torch, yaml
from sharpness.config.check import check_config, load_schema
from sharpness.errors import ConfigError
from sharpness.config.doc import render
from sharpness.cost import PASSES
from sharpness.optim import OPTIMIZERS, build_optimizer
from sharpness.optim.spec import passes_per_step
from sharpness.plots.methods import METHODS, method

opt = build_optimizer("halfsam", torch.nn.Linear(3, 1), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
def closure():
    loss = ((opt.model(x) - y) ** 2).mean()
    loss.backward()
    return loss
opt.step(closure)
schema = load_schema(sys.argv[1])
config = yaml.safe_load(open(sys.argv[2]))
try:
    check_config(config, schema)
    checked = "ok"
except ConfigError as err:
    checked = str(err)
print(json.dumps({
    "registry": sorted(OPTIMIZERS), "rho": opt.hparams["rho"],
    "radius": opt.diagnostics["radius"], "passes": PASSES.get("halfsam"),
    "planner": passes_per_step("halfsam"), "label": method("halfsam").label,
    "colours": [m.colour for m in METHODS], "colour": method("halfsam").colour,
    "enum": sorted(schema["$defs"]["optimizer"]["enum"]),
    "reference": "halfsam" in render(schema), "config": checked,
}))
'''


def _probe(src: Path, schema: Path, config: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(schema), str(config)],
                         capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(src), "PATH": ""},
                         cwd=src).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_new_optimizer_is_its_module_and_its_config_entry(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "sharpness", src / "sharpness",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    schema = tmp_path / "config.schema.yaml"
    shutil.copy(SCHEMA, schema)
    before = {p.relative_to(src): p.read_bytes() for p in src.rglob("*.py")}
    # step 1: the module
    (src / "sharpness" / "optim" / "halfsam.py").write_text(textwrap.dedent(NEW_MODULE))
    profile = tmp_path / "quick.yaml"
    config = yaml.safe_load((ROOT / "workflow" / "config" / "quick.yaml").read_text())
    profile.write_text(yaml.safe_dump(config))
    found = _probe(src, schema, profile)
    assert found["registry"] == sorted([*OPTIMIZERS, "halfsam"])
    assert found["rho"] == 0.1 and found["radius"] == pytest.approx(0.05, rel=1e-5)
    assert found["passes"] == found["planner"] == 2.0
    assert found["label"] == "half-SAM"
    assert found["colour"] not in [m.colour for m in METHODS]  # a free colour of its own
    assert len(set(found["colours"])) == len(found["colours"]) == len(METHODS) + 1
    # the schema and its reference name it already: their list is the registry's
    assert found["enum"] == found["registry"] and found["reference"]
    assert found["config"] == "ok"
    # step 2: the config entry (its hyper-parameters in a profile), valid as written
    config["lesam"]["optimizers"]["halfsam"] = {"rho": 0.1}
    profile.write_text(yaml.safe_dump(config))
    found = _probe(src, schema, profile)
    assert found["config"] == "ok"
    # a name no module declares is still refused, naming the key
    config["lesam"]["optimizers"]["nosuchsam"] = {"rho": 0.1}
    profile.write_text(yaml.safe_dump(config))
    assert "lesam.optimizers" in _probe(src, schema, profile)["config"]
    # the schema file itself was not edited
    assert schema.read_bytes() == SCHEMA.read_bytes()
    # nothing else of the package was edited
    after = {p.relative_to(src): p.read_bytes() for p in src.rglob("*.py")}
    assert set(after) - set(before) == {Path("sharpness/optim/halfsam.py")}
    assert all(after[p] == before[p] for p in before)
