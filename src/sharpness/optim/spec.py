"""The optimizers' declarations (``optimizers.yaml``) and their torch-free reading.

Each optimizer of :mod:`sharpness.optim` is one entry of ``optimizers.yaml`` (its registry
name, hyper-parameters with default, source and accepted values, the forward+backward passes
one step makes, its figure label, table text and colour) and one module of the same name that
holds its class (``class X(SharpnessOptimizer, optimizer="<name>")``: the update rule only).
Everything else derives from the declarations: the registry (:data:`sharpness.optim.OPTIMIZERS`),
the config schema's optimizer enum and the generated config reference (checked by
``tests/optim/test_spec.py``), the cost planner's passes per step (:func:`passes_per_step`), the
methods table of the figures (:mod:`sharpness.plots.methods`) and the mechanism tests'
tiny-run settings (:attr:`OptimizerSpec.tiny_hparams`).

The planner and the figure jobs must not pay torch's import (several CPU-seconds a process), so
the declarations are data, read with :mod:`yaml`; the registry imports the modules. Keeping them
in one file keeps each optimizer module to its update rule, with no declaration block repeated
from module to module.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: the folder of the optimizer modules (this package)
OPTIM_DIR = Path(__file__).resolve().parent
#: the declarations of every optimizer
CATALOG = OPTIM_DIR / "optimizers.yaml"

#: an interval an :class:`HParam` accepts: ``"[0, inf)"``, ``"(0, 1]"``, ``"(0, inf) or None"``
INTERVAL = re.compile(r"^([\[(])\s*([^,\s]+)\s*,\s*([^\])\s]+)\s*([\])])( or None)?$")


@dataclass(frozen=True)
class HParam:
    """One hyper-parameter: its name, default and where the default comes from
    (``"official: <repo> <file>"``, ``"paper: <where>"`` or ``"choice: <why>"``), and the
    values it accepts: a tuple of choices, an interval (:data:`INTERVAL`) or ``()`` for any.
    Every value given is checked against ``accepts`` in one place
    (:meth:`OptimizerSpec.resolve`), so a module states its constraints here instead of
    coding a check."""

    name: str
    default: Any
    source: str
    accepts: tuple[Any, ...] | str = ()

    def __post_init__(self) -> None:
        if isinstance(self.accepts, str) and not INTERVAL.match(self.accepts):
            raise ValueError(f"hyper-parameter {self.name!r}: accepts {self.accepts!r} is not "
                             "an interval such as '[0, inf)' or '(0, 1] or None'")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is refused (``"must be in (0, 1]"``), or ``None`` when accepted."""
        if not self.accepts:
            return None
        if isinstance(self.accepts, tuple):
            if value in self.accepts:
                return None
            return "must be one of " + ", ".join(repr(c) for c in self.accepts)
        match = INTERVAL.match(self.accepts)
        assert match is not None  # checked in __post_init__
        left, low, high, right, none_ok = match.groups()
        if value is None and none_ok:
            return None
        inside = (isinstance(value, int | float) and not isinstance(value, bool)
                  and (value >= float(low) if left == "[" else value > float(low))
                  and (value <= float(high) if right == "]" else value < float(high)))
        return None if inside else f"must be in {self.accepts}"


#: what the hyper-parameters several optimizers share accept, unless an entry says otherwise:
#: the radius, and how the perturbed pass treats BatchNorm's running statistics ("freeze":
#: davda54/sam's ``disable_running_stats``; "update": train mode in both passes)
SHARED_ACCEPTS: dict[str, tuple[Any, ...] | str] = {"rho": "[0, inf)",
                                                   "bn_second_pass": ("freeze", "update")}


@dataclass(frozen=True)
class OptimizerSpec:
    """What the rest of the project knows of one optimizer.

    ``passes_per_step`` counts forward+backward passes of one step (1 for SGD, 2 for the SAM
    family); ``hvp_every`` names two hyper-parameters ``(iterations, every)`` when the
    optimizer also runs ``iterations`` Hessian-vector products (about 2 passes each) every
    ``every`` steps (Eigen-SAM's power iteration). ``colour`` is a ``#rrggbb`` code; ``None``
    takes one of :data:`sharpness.plots.methods.COLOURS` that no spec pins, chosen by the name
    (:func:`sharpness.plots.methods.method_colours`). ``aliases`` are other
    spellings (configs, the diagonal-network vocabulary). ``tiny_hparams`` are the settings with
    which the optimizer trains the mechanism tests' tiny CNN above chance in a few steps
    (``tests/lesam/test_mechanism.py``). ``distributed`` is false when a step calls the closure
    other than once clean and once perturbed, which a multi-process run cannot split into a
    local and a synchronised pass (:data:`sharpness.train.config.DDP_OPTIMIZERS`)."""

    name: str
    label: str
    reference: str
    hparams: tuple[HParam, ...] = ()
    text: str = ""
    passes_per_step: float = 2.0
    hvp_every: tuple[str, str] | None = None
    colour: str | None = None
    aliases: tuple[str, ...] = ()
    tiny_hparams: Mapping[str, Any] = field(default_factory=dict)
    distributed: bool = True

    def __post_init__(self) -> None:
        if not self.text:  # the table text is the figure label unless the label needs mathtext
            object.__setattr__(self, "text", self.label)

    @property
    def defaults(self) -> dict[str, Any]:
        """``{name: default}`` of the hyper-parameters (what the optimizer class accepts)."""
        return {h.name: h.default for h in self.hparams}

    def resolve(self, hparams: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``hparams`` checked and with the defaults filled in: the one place an optimizer's
        hyper-parameters are validated and defaulted, called once on any path: by the lesam
        plan when it builds the run list (:func:`sharpness.lesam.experiments.resolved_hparams`;
        the job files hold the result, which the training process takes as written), by
        :func:`sharpness.train.validate_config` for a run config given by hand, or by the
        optimizer for a caller that passes its own keywords. An unknown name or a value
        outside ``accepts`` raises ``ValueError`` naming it."""
        given = dict(hparams or {})
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            known = ", ".join(sorted(self.defaults)) or "none"
            raise ValueError(f"optimizer {self.name!r}: unknown hyper-parameter(s) "
                             f"{', '.join(unknown)} (known: {known})")
        settings = {**self.defaults, **given}
        for h in self.hparams:
            problem = h.problem(settings[h.name])
            if problem:
                raise ValueError(f"optimizer {self.name!r}: {h.name} {problem}, "
                                 f"got {settings[h.name]!r}")
        return settings

    @property
    def sources(self) -> dict[str, str]:
        """``{name: source}`` of the hyper-parameters' defaults."""
        return {h.name: h.source for h in self.hparams}

    def passes(self, hparams: Mapping[str, Any] | None = None) -> float:
        """Forward+backward passes of one step with ``hparams`` (defaults for the rest)."""
        if self.hvp_every is None:
            return self.passes_per_step
        given = hparams or {}  # a config's entry may hold more (its `source`): read the two
        settings = self.resolve({k: given[k] for k in self.hvp_every if k in given})
        iterations, every = (settings[k] for k in self.hvp_every)
        return self.passes_per_step + 2.0 * iterations / (every or self.defaults[self.hvp_every[1]])


#: the keys an entry of ``optimizers.yaml`` may hold, and those of one hyper-parameter
ENTRY_KEYS = {"label", "text", "reference", "hparams", "passes_per_step", "hvp_every", "colour",
              "aliases", "tiny_hparams", "distributed"}
HPARAM_KEYS = {"default", "source", "accepts"}


def _hparam(where: str, name: str, entry: Any) -> HParam:
    if not isinstance(entry, Mapping) or not {"default", "source"} <= set(entry) \
            or set(entry) - HPARAM_KEYS:
        raise ValueError(f"{where}: hparams.{name} needs default and source (and may give "
                         f"accepts), got {entry!r}")
    accepts = entry.get("accepts", SHARED_ACCEPTS.get(name, ()))
    return HParam(name, entry["default"], str(entry["source"]),
                  tuple(accepts) if isinstance(accepts, list) else accepts)


def _spec(where: str, name: str, entry: Any) -> OptimizerSpec:
    if not isinstance(entry, Mapping) or not {"label", "reference"} <= set(entry):
        raise ValueError(f"{where}: {name} needs label and reference, got {entry!r}")
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        raise ValueError(f"{where}: {name}: unknown key(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(ENTRY_KEYS))})")
    hparams = tuple(_hparam(f"{where}: {name}", k, v)
                    for k, v in (entry.get("hparams") or {}).items())
    fields = {k: v for k, v in entry.items() if k != "hparams"}
    for key in ("hvp_every", "aliases"):
        if key in fields:
            fields[key] = tuple(fields[key])
    return OptimizerSpec(name=name, hparams=hparams, **fields)


def read_catalog(path: Path = CATALOG) -> dict[str, OptimizerSpec]:
    """Every optimizer's spec by name, in name order, from ``optimizers.yaml`` (or ``path``);
    a malformed entry raises ``ValueError`` naming the file and the key."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: expected one entry per optimizer, got {type(data).__name__}")
    bad = [str(k) for k in data if not isinstance(k, str) or not re.fullmatch(r"[a-z]\w*", k)]
    if bad:
        raise ValueError(f"{path}: optimizer names are module names, not {', '.join(bad)}")
    return {name: _spec(str(path), name, data[name]) for name in sorted(data)}


@functools.cache
def _catalog() -> dict[str, OptimizerSpec]:
    return read_catalog()


def optimizer_specs() -> dict[str, OptimizerSpec]:
    """Every optimizer's spec by name (no torch); its class is in ``sharpness.optim.<name>``."""
    return dict(_catalog())


def optimizer_spec(name: str) -> OptimizerSpec:
    """The spec of optimizer ``name`` (or one of its aliases); ``KeyError`` naming the known."""
    specs = optimizer_specs()
    for spec in specs.values():
        if name == spec.name or name in spec.aliases:
            return spec
    raise KeyError(f"unknown optimizer {name!r}; {CATALOG.name} declares "
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
