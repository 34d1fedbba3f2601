"""The `eos` config section expanded into named settings (main settings and ablation variants).

``eos.defaults`` is merged under every entry of ``eos.settings``. ``eos.ablations`` names a
``base`` setting and, per factor, the values to try; every value becomes a setting named by
its value, ``abl_<factor>_<value>`` (e.g. ``abl_activation_relu``, ``abl_init_scale_0p2``;
the value's ``names`` entry when given), equal to the base with one key changed (a dotted key such as
``model_kwargs.alpha`` reaches into a nested dict) and its own ``lr_factors``. The workflow
and the CLI both call :func:`expand_settings`, so a setting's name always means the same
parameters.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from sharpness.data.registry import preparation_inputs
from sharpness.eos.setting import SETTING_DEFAULTS
from sharpness.errors import ConfigError
from sharpness.mappings import deep_merge
from sharpness.models import model_problem


def _set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = target
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"eos ablation key {key!r}: {part!r} is not a mapping")
    node[parts[-1]] = value


def main_settings(eos: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``eos.settings`` with ``eos.defaults`` merged under each (nested dicts merged key by
    key, as every config merge is: :func:`sharpness.mappings.deep_merge`)."""
    defaults = eos.get("defaults", {})
    out = {}
    for name, entry in eos.get("settings", {}).items():
        merged = deep_merge(defaults, entry)
        merged.setdefault("label", name)
        out[name] = merged
    return out


def ablation_settings(eos: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One setting per (factor, value) of ``eos.ablations`` (empty when there is none)."""
    abl = eos.get("ablations")
    if not abl:
        return {}
    mains = main_settings(eos)
    base_name = abl["base"]
    if base_name not in mains:
        raise ConfigError(f"eos.ablations.base {base_name!r} is not in eos.settings")
    base = mains[base_name]
    out = {}
    for factor, spec in abl.get("factors", {}).items():
        _check_factor(factor, spec)
        for value in spec["values"]:
            setting = copy.deepcopy(base)
            for key, val in (value if isinstance(value, dict) else {spec["key"]: value}).items():
                _set_dotted(setting, key, val)
            setting["lrs"] = []
            setting["lr_factors"] = list(abl.get("lr_factors", base.get("lr_factors", [])))
            if "max_steps" in abl:
                setting["max_steps"] = abl["max_steps"]
            setting["label"] = f"{spec.get('label', factor)} = {_show(value, spec)}"
            setting["ablation"] = {"factor": factor, "label": spec.get("label", factor),
                                   "value": _show(value, spec)}
            name = f"abl_{factor}_{value_slug(value, spec)}"
            if name in out:
                raise ConfigError(f"eos.ablations.factors.{factor}: two values are both named "
                                  f"{name!r}; give the factor distinct 'names'")
            out[name] = setting
    return out


def _check_factor(factor: str, spec: Any) -> None:
    """An ablation factor needs a list ``values``, a ``key`` unless every value is a mapping of
    keys, and one ``names`` entry per value when it gives names."""
    where = f"eos.ablations.factors.{factor}"
    if not isinstance(spec, dict) or not isinstance(spec.get("values"), list):
        raise ConfigError(f"{where}.values: a list of values is required")
    if "key" not in spec and not all(isinstance(v, dict) for v in spec["values"]):
        raise ConfigError(f"{where}.key: required unless every value is a mapping of keys")
    names = spec.get("names")
    if names is not None and len(names) != len(spec["values"]):
        raise ConfigError(f"{where}.names: {len(names)} names for {len(spec['values'])} values")


def value_slug(value: Any, spec: dict[str, Any]) -> str:
    """A setting-name part for an ablation value: its ``names`` entry or the value itself,
    lower-case letters, digits and ``_`` (``0.2`` -> ``0p2``, ``-1`` -> ``m1``). Named by
    value, a setting keeps its name (and its results) when another value is inserted."""
    if isinstance(value, dict) and not spec.get("names"):
        text = "_".join(f"{k.split('.')[-1]}_{v}" for k, v in sorted(value.items()))
    else:
        text = _show(value, spec)
    text = text.lower().replace(".", "p").replace("-", "m")
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]", "_", text)).strip("_") or "value"


def _show(value: Any, spec: dict[str, Any]) -> str:
    names = spec.get("names")
    if names:
        return str(names[spec["values"].index(value)])
    return str(value)


def one_job_ablations(eos: dict[str, Any]) -> list[str]:
    """The ablation variants run together in one job (``eos.ablations.one_job``), else none."""
    abl = eos.get("ablations") or {}
    return list(ablation_settings(eos)) if abl.get("one_job") else []


def expand_settings(eos: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every named setting of the `eos` section: main settings, then ablation variants."""
    out = main_settings(eos)
    for name, setting in ablation_settings(eos).items():
        if name in out:
            raise ConfigError(f"eos setting name {name!r} is used twice")
        out[name] = setting
    return out


def dropped_settings(eos: dict[str, Any]) -> dict[str, str]:
    """``eos.dropped`` (setting name -> why this profile leaves it out of the figures), checked:
    every name is a setting of ``eos.settings`` that no figure of ``eos.figures`` lists."""
    dropped = eos.get("dropped") or {}
    settings = eos.get("settings", {})
    for name in dropped:
        if name not in settings:
            raise ConfigError(f"eos.dropped.{name}: not a setting of eos.settings "
                              f"(known: {sorted(settings)})")
        for fig, names in (eos.get("figures") or {}).items():
            if name in names:
                raise ConfigError(f"eos.dropped.{name}: still drawn by eos.figures.{fig}")
    return dict(dropped)


def check_settings(eos: dict[str, Any], schema: dict[str, Any]) -> None:
    """Every eos setting as the sweep will see it (defaults merged, ablation variants made):
    each ablation variant matches the workflow schema's eos setting (``schema``: a main
    setting is ``eos.defaults`` and ``eos.settings.<name>``, which the schema checked
    already; a variant changes a key by its dotted name, so it is checked whole), each has
    learning rates and a model that takes its options (:func:`sharpness.models.model_problem`),
    and a figure names only settings that exist. ``ConfigError`` names the
    key."""
    from sharpness.config.check import schema_error  # lazy: jsonschema, only when checking
    from sharpness.errors import key_path

    settings = expand_settings(eos)
    for name, setting in settings.items():
        where = (f"eos.ablations.factors.{setting['ablation']['factor']}"
                 if setting.get("ablation") else f"eos.settings.{name}")
        plain = {k: v for k, v in setting.items() if k != "ablation"}
        found = schema_error(plain, schema, ref="#/$defs/eos_setting") if setting.get(
            "ablation") else None
        if found is not None:
            raise ConfigError(f"config key {where}: setting {name!r} (with eos.defaults) has "
                              f"{key_path(found[0])}: {found[1]}")
        if not plain.get("lrs") and not plain.get("lr_factors"):
            raise ConfigError(f"config key {where}: needs lrs (absolute) or lr_factors "
                              "(x eta_c), here or in eos.defaults")
        found = model_problem(plain.get("model", SETTING_DEFAULTS["model"]),
                              plain.get("model_kwargs"))
        if found:
            raise ConfigError(f"config key {where}.{found[0]}: setting {name!r} (with "
                              f"eos.defaults): {found[1]}")
    for figure, names in (eos.get("figures") or {}).items():
        for index, name in enumerate(names):
            if name not in settings:
                raise ConfigError(f"config key eos.figures.{figure}[{index}]: {name!r} is "
                                  f"not a setting (known: {', '.join(settings)})")
    dropped_settings(eos)


def setting_gpu(setting: dict[str, Any]) -> int:
    """GPUs a setting's sweep asks the scheduler for: 0 when pinned to the CPU, else 1."""
    return 0 if setting.get("device") == "cpu" else 1


def setting_data_inputs(setting: dict[str, Any]) -> list[str]:
    """The data-preparation output a setting needs (the registry's answer: none for the
    committed embedded subsets)."""
    return preparation_inputs(setting.get("dataset", "mnist_embedded"))


def sweep_path(name: str, root: str = "results/eos") -> str:
    """Where the sweep of setting ``name`` is written."""
    return f"{root}/settings/{name}/sweep.json"


def figure_sweeps(eos: dict[str, Any], figure: str, root: str = "results/eos") -> list[str]:
    """The sweeps a network figure is drawn from: ``eos.figures.<figure>``, or every ablation
    variant for ``fig_ablations``."""
    if figure == "fig_ablations":
        names = list(ablation_settings(eos))
    else:
        names = list(eos.get("figures", {}).get(figure, []))
    return [sweep_path(n, root) for n in names]


def figure_targets(eos: dict[str, Any]) -> list[str]:
    """Every `eos` figure the config asks for (fig_diagonal when a toy is configured): each
    network figure ``eos.figures`` gives settings (the schema names the figures it may hold)."""
    out = ["figures/eos/fig_diagonal.pdf"] if eos.get("toy") else []
    for fig, settings in eos.get("figures", {}).items():
        if settings:
            out.append(f"figures/eos/{fig}.pdf")
    if ablation_settings(eos):
        out.append("figures/eos/fig_ablations.pdf")
    return out
