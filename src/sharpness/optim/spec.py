"""What an optimizer module declares, and the torch-free reading of those declarations.

Each optimizer of :mod:`sharpness.optim` lives in one module that defines ``SPEC =
OptimizerSpec(...)``: its registry name, its hyper-parameters (default and where the default
comes from), the forward+backward passes one step makes, its figure label, table text and
colour. Everything else derives from the specs: the registry
(:data:`sharpness.optim.OPTIMIZERS`), the config schema's optimizer enum and the generated config
reference (checked by ``tests/optim/test_spec.py``), the cost planner's passes per step
(:func:`passes_per_step`), the methods table of the figures (:mod:`sharpness.plots.methods`)
and the mechanism tests' tiny-run settings (:attr:`OptimizerSpec.tiny_hparams`).

The planner and the figure jobs must not pay torch's import (several CPU-seconds a process),
so :func:`optimizer_specs` reads the ``SPEC`` assignments from the modules' source with
:mod:`ast` instead of importing them: a spec is written with literals, :class:`HParam` calls,
constants imported from :mod:`sharpness.optim.radius` (numpy only) and the fields of another
optimizer module's ``SPEC`` (``from sharpness.optim.sam import SPEC as SAM_SPEC``). The registry imports the
modules and ``tests/optim/test_spec.py`` checks that both readings agree.
"""

from __future__ import annotations

import ast
import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the folder of the optimizer modules (this package)
OPTIM_DIR = Path(__file__).resolve().parent
#: modules whose constants a ``SPEC`` may name (imported by the torch-free reader)
CONSTANT_MODULES = ("sharpness.optim.radius",)


@dataclass(frozen=True)
class HParam:
    """One hyper-parameter: its name, default and where the default comes from
    (``"official: <repo> <file>"``, ``"paper: <where>"`` or ``"choice: <why>"``)."""

    name: str
    default: Any
    source: str


@dataclass(frozen=True)
class OptimizerSpec:
    """What the rest of the project knows of one optimizer.

    ``passes_per_step`` counts forward+backward passes of one step (1 for SGD, 2 for the SAM
    family); ``hvp_every`` names two hyper-parameters ``(iterations, every)`` when the
    optimizer also runs ``iterations`` Hessian-vector products (about 2 passes each) every
    ``every`` steps (Eigen-SAM's power iteration). ``colour`` is a ``#rrggbb`` code; ``None``
    takes the next free colour of :data:`sharpness.plots.methods.COLOURS`. ``aliases`` are other
    spellings (configs, the diagonal-network vocabulary). ``tiny_hparams`` are the settings with
    which the optimizer trains the mechanism tests' tiny CNN above chance in a few steps
    (``tests/lesam/test_mechanism.py``)."""

    name: str
    label: str
    text: str
    reference: str
    hparams: tuple[HParam, ...] = ()
    passes_per_step: float = 2.0
    hvp_every: tuple[str, str] | None = None
    colour: str | None = None
    aliases: tuple[str, ...] = ()
    tiny_hparams: Mapping[str, Any] = field(default_factory=dict)

    @property
    def defaults(self) -> dict[str, Any]:
        """``{name: default}`` of the hyper-parameters (what the optimizer class accepts)."""
        return {h.name: h.default for h in self.hparams}

    @property
    def sources(self) -> dict[str, str]:
        """``{name: source}`` of the hyper-parameters' defaults."""
        return {h.name: h.source for h in self.hparams}

    def passes(self, hparams: Mapping[str, Any] | None = None) -> float:
        """Forward+backward passes of one step with ``hparams`` (defaults for the rest)."""
        if self.hvp_every is None:
            return self.passes_per_step
        settings = {**self.defaults, **(hparams or {})}
        iterations, every = (settings[k] for k in self.hvp_every)
        return self.passes_per_step + 2.0 * iterations / (every or self.defaults[self.hvp_every[1]])


class _SpecReader:
    """Evaluates the ``SPEC = OptimizerSpec(...)`` expression of one module's syntax tree."""

    CALLS = {"OptimizerSpec": OptimizerSpec, "HParam": HParam}

    def __init__(self, tree: ast.Module, path: Path) -> None:
        self.path = path
        self.names: dict[str, Any] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module in CONSTANT_MODULES:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    self.names[alias.asname or alias.name] = getattr(module, alias.name)
            elif (isinstance(node, ast.ImportFrom) and node.module
                  and node.module.startswith("sharpness.optim.")):
                # another optimizer's SPEC (a variant reuses its hyper-parameters), read the same way
                for alias in node.names:
                    if alias.name == "SPEC":
                        other = OPTIM_DIR / f"{node.module.rsplit('.', 1)[1]}.py"
                        self.names[alias.asname or alias.name] = read_spec(other)

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple | ast.List):
            items = [self.value(e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict):
            return {self.value(k): self.value(v)  # type: ignore[arg-type]
                    for k, v in zip(node.keys, node.values, strict=True)}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.value(node.operand)
        if isinstance(node, ast.Name) and node.id in self.names:
            return self.names[node.id]
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and isinstance(self.names.get(node.value.id), OptimizerSpec)):
            return getattr(self.names[node.value.id], node.attr)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self.CALLS):
            args = [self.value(a) for a in node.args]
            kwargs = {k.arg: self.value(k.value) for k in node.keywords if k.arg}
            return self.CALLS[node.func.id](*args, **kwargs)
        raise ValueError(f"{self.path.name}:{node.lineno}: a SPEC holds literals, HParam(...), "
                         f"constants of {', '.join(CONSTANT_MODULES)} and fields of another "
                         f"optimizer's SPEC; got {ast.unparse(node)!r}")


def read_spec(path: Path) -> OptimizerSpec | None:
    """The ``SPEC`` a module's source declares at top level (``None`` when it has none)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if (isinstance(node, ast.Assign | ast.AnnAssign)
                and any(isinstance(t, ast.Name) and t.id == "SPEC"
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
                and node.value is not None):
            spec = _SpecReader(tree, Path(path)).value(node.value)
            if not isinstance(spec, OptimizerSpec):
                raise ValueError(f"{Path(path).name}: SPEC is not an OptimizerSpec")
            return spec
    return None


@functools.cache
def _declarations() -> tuple[tuple[str, OptimizerSpec], ...]:
    """``(module stem, spec)`` of every module of this package that declares a ``SPEC``."""
    found: list[tuple[str, OptimizerSpec]] = []
    for path in sorted(OPTIM_DIR.glob("*.py")):
        spec = read_spec(path)
        if spec is None:
            continue
        if spec.name in {s.name for _, s in found}:
            raise ValueError(f"two optimizer modules declare the name {spec.name!r}")
        found.append((path.stem, spec))
    return tuple(found)


def optimizer_specs() -> dict[str, OptimizerSpec]:
    """Every optimizer's spec by name, read from the modules of this package (no torch)."""
    return {spec.name: spec for _, spec in _declarations()}


def spec_modules() -> dict[str, str]:
    """``{optimizer name: module stem}``: where each optimizer is declared."""
    return {spec.name: stem for stem, spec in _declarations()}


def optimizer_spec(name: str) -> OptimizerSpec:
    """The spec of optimizer ``name`` (or one of its aliases); ``KeyError`` naming the known."""
    specs = optimizer_specs()
    for spec in specs.values():
        if name == spec.name or name in spec.aliases:
            return spec
    raise KeyError(f"unknown optimizer {name!r}; the optimizer modules declare "
                   f"{', '.join(specs)}")


def passes_per_step(name: str, hparams: Mapping[str, Any] | None = None) -> float:
    """Forward+backward passes of one step of optimizer ``name`` (an unknown name raises)."""
    return optimizer_spec(name).passes(hparams)


def _value(value: Any) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def specs_table() -> str:
    """The optimizers' reference table in Markdown, from the specs: name, figure label, passes
    per step, and each hyper-parameter's default with where it comes from (the ``optimizers``
    block of ``docs/api_optim_curvature.md``)."""
    lines = ["| name | label | passes per step | hyper-parameter: default (source) |",
             "|---|---|---:|---|"]
    for name, spec in sorted(optimizer_specs().items()):
        passes = _value(spec.passes_per_step)
        if spec.hvp_every:
            iterations, every = spec.hvp_every
            passes += f" + 2 `{iterations}` / `{every}`"
        settings = "; ".join(f"`{h.name}={_value(h.default)}` ({h.source})" for h in spec.hparams)
        lines.append(f"| `{name}` | {spec.text} | {passes} | {settings or 'none'} |")
    return "\n".join(lines) + "\n"
