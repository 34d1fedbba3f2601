"""One entry of ``optimizers.yaml`` and one module per optimizer: what the entry declares is
what the registry, the planner, the methods table, the config schema and its reference use,
and the optimizer checks every value against what its entry accepts. (CONTRIBUTING.md's recipe
is followed on a copy of the repository by ``tests/recipes/test_recipe_optimizer.py``.)"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from sharpness.config.check import load_schema
from sharpness.config.doc import render
from sharpness.optim import OPTIMIZERS, build_optimizer
from sharpness.optim.base import SharpnessOptimizer
from sharpness.optim.spec import (
    CATALOG,
    OPTIM_DIR,
    HParam,
    OptimizerSpec,
    optimizer_spec,
    optimizer_specs,
    passes_per_step,
    read_catalog,
)
from sharpness.plots.methods import COLOURS, FIXED, METHODS, method, method_colours

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "config" / "config.schema.yaml"
SOURCE = re.compile(r"^(official|paper|choice): .+")


def test_every_entry_is_the_one_class_of_its_module():
    assert list(OPTIMIZERS) == list(optimizer_specs())
    for name, cls in OPTIMIZERS.items():
        assert cls.__module__ == f"sharpness.optim.{name}"
        assert cls.spec is optimizer_spec(name)
        assert (cls.name, cls.hparam_defaults) == (name, cls.spec.defaults)
        assert cls.two_pass == (cls.spec.passes_per_step > 1)


def test_every_optimizer_class_of_the_package_is_declared():
    declared = set(optimizer_specs())
    for path in OPTIM_DIR.glob("*.py"):
        module = importlib.import_module(f"sharpness.optim.{path.stem}")
        for c in vars(module).values():
            if isinstance(c, type) and issubclass(c, SharpnessOptimizer) and c.spec:
                assert c.spec.name in declared and c.__module__.endswith(c.spec.name), c
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
        assert spec.colour, f"pin {name}'s colour in {CATALOG.name}: colour: {m.colour!r}"
        assert m.colour == spec.colour
        for alias in spec.aliases:
            assert method(alias) is m


def test_an_unpinned_new_optimizer_recolours_no_existing_one():
    specs = list(optimizer_specs().values())
    before = method_colours(specs)
    taken = {*FIXED.values(), *before.values()}
    new = [OptimizerSpec(n, n.upper(), "choice: a test's") for n in ("samon", "aaa", "zzz_sam")]
    for k in range(1, len(new) + 1):
        after = method_colours(specs + new[:k])
        assert {n: after[n] for n in before} == before
        fresh = [after[s.name] for s in new[:k]]
        assert len(set(fresh)) == k and not set(fresh) & taken


def test_schema_enum_and_config_reference_name_every_optimizer():
    schema = load_schema(SCHEMA)
    assert sorted(schema["$defs"]["optimizer"]["enum"]) == sorted(OPTIMIZERS)
    reference = render(schema)
    for line in reference.splitlines():
        if line.startswith("| `") and "the optimizer |" in line:
            assert all(name in line for name in OPTIMIZERS), line


def test_a_malformed_entry_names_the_key(tmp_path):
    bad = tmp_path / "optimizers.yaml"
    for text, says in (("adam:\n  label: A\n", "adam needs label and reference"),
                       ("adam: {label: A, reference: r, color: '#000000'}\n", "color"),
                       ("adam: {label: A, reference: r, hparams: {lr: 0.1}}\n", "hparams.lr"),
                       ("Adam-W: {label: A, reference: r}\n", "module names"),
                       ("adam:\n  reference: a: b\n", "not valid YAML")):
        bad.write_text(text)
        with pytest.raises(ValueError, match=re.escape(says)):
            read_catalog(bad)
    assert read_catalog(CATALOG) == optimizer_specs()


def test_each_value_is_checked_against_what_its_entry_accepts():
    interval = HParam("beta", 0.6, "choice: x", "(0, 1]")
    assert [interval.problem(v) is None for v in (0, 0.5, 1, 1.5, None, True)] == \
        [False, True, True, False, False, False]
    assert HParam("r", 0.3, "choice: x", "(0, inf] or None").problem(None) is None
    assert "one of" in HParam("m", "a", "choice: x", ("a", "b")).problem("c")
    with pytest.raises(ValueError, match="interval"):
        HParam("x", 1, "choice: x", "0 to 1")
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(3, 2)
    for name, bad in (("esam", {"beta": 0.0}), ("fsam", {"lmbda": 1.0}), ("sam", {"rho": -1.0}),
                      ("eigensam", {"power_iters": 0}), ("lesam", {"schedule": "daily"}),
                      ("asam", {"bn_second_pass": "never"})):
        key = next(iter(bad))
        with pytest.raises(ValueError, match=f"optimizer '{name}': {key} must be"):
            build_optimizer(name, model, total_steps=4, **bad)
    assert build_optimizer("lesam", model, total_steps=4, rho_max=None).hparams["rho_max"] is None


def test_a_run_config_and_its_optimizer_check_hparams_through_the_one_resolver():
    """The spec's resolve validates and defaults; the training config refuses at load what
    the optimizer would refuse at build, with the same words, and the optimizer's settings are
    exactly the spec's resolve of what the run gives."""
    torch = pytest.importorskip("torch")
    from sharpness.errors import ConfigError
    from sharpness.train.config import validate_config

    spec = optimizer_spec("lesam")
    assert spec.resolve({"sigma": 0.2}) == {**spec.defaults, "sigma": 0.2}
    with pytest.raises(ValueError, match="unknown hyper-parameter.s. nope"):
        spec.resolve({"nope": 1})
    run = {"dataset": "mnist_embedded", "model": "cnn", "optimizer": "sam"}
    with pytest.raises(ConfigError, match=r"'opt_hparams': optimizer 'sam': rho must be in"):
        validate_config({**run, "opt_hparams": {"rho": -1.0}})
    opt = build_optimizer("lesam", torch.nn.Linear(3, 2), total_steps=4, sigma=0.2)
    assert opt.hparams == spec.resolve({"sigma": 0.2})


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_distributed_says_whether_a_step_is_one_clean_and_one_perturbed_call(name):
    """A multi-process run splits a step into its clean and its perturbed closure call, so an
    entry may say ``distributed`` only when a step makes exactly its declared passes."""
    torch = pytest.importorskip("torch")
    from sharpness.optim import BatchClosure

    class Counting(BatchClosure):
        """Counts the whole-batch loss Hessian products are taken from, as a forward pass."""

        def loss(self):  # noqa: ANN202
            self.calls += 1
            return super().loss()

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    spec = optimizer_spec(name)
    every = {spec.hvp_every[1]: 1} if spec.hvp_every else {}
    opt = build_optimizer(name, model, total_steps=4, **{**spec.tiny_hparams, **every})
    calls = []
    for _ in range(3):
        closure = Counting(model, x, y)
        opt.step(closure)
        calls.append(closure.calls)  # every forward pass of the batch
    assert spec.distributed == (calls == [spec.passes_per_step] * 3), (name, calls)
