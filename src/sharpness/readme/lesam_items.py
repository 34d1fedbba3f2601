"""The table of ``docs/api_lesam.md`` that says what each lesam item runs in the quick and the
paper profile (block ``lesam-items``), written from the profiles' configs.

Each cell is read from the runs the item reads as the workflow expands them
(:func:`sharpness.lesam.experiments.all_runs`; an item's groups by
:func:`sharpness.lesam.steps.item_groups`, with the runs they start from, the long-tail runs
for ``table_long_tail`` and the probe runs for ``fig_signal``), narrowed by the item's own
``optimizers``/``seeds``/``reference_label``, and from the item's numeric settings; so a config
edit shows in the doc at the next ``sharpness readme refresh`` and a stale doc fails
``tests/test_readme_blocks.py``. What the runs stand in for stays in the prose around the
block and in each item's ``data_used`` (its caption). Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from sharpness.config.profiles import read_config_file
from sharpness.lesam import experiments as exp
from sharpness.lesam import steps

#: the profiles the table describes, as (column heading, config file)
PROFILES = (("quick profile", "workflow/config/quick.yaml"),
            ("paper profile", "workflow/config/paper.yaml"))
#: item keys that name what it reads (shown as its groups), not a setting
STRUCTURE = {"group", "groups", "reference_group", "reference_label", "optimizers", "seeds"}


def _unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _width(value: Any) -> str:
    """``×1/16`` for a width of 0.0625, nothing at full width."""
    if value in (None, 1, 1.0):
        return ""
    frac = Fraction(str(value)).limit_denominator(1000)
    return f" ×{frac.numerator}/{frac.denominator}" if frac.numerator == 1 else f" ×{value:g}"


def _dataset(cfg: Mapping[str, Any]) -> str:
    size = cfg.get("train_size")
    classes = cfg.get("classes")
    return (str(cfg["dataset"]) + (f" {size:,} train" if size else "")
            + (f" classes {classes[0]}–{classes[-1]}" if classes else ""))


def _model(cfg: Mapping[str, Any]) -> str:
    pretrained = " pretrained" if (cfg.get("model_kwargs") or {}).get("pretrained") else ""
    return f"{cfg['model']}{_width(cfg.get('width'))}{pretrained}"


def _epochs(epochs: list[Any]) -> str:
    shown = [e for e in epochs if e is not None]
    return f"{'/'.join(f'{e:g}' for e in shown)} epoch{'' if shown == [1] else 's'}"


def _item_runs(section: Mapping[str, Any], item: str) -> dict[str, Mapping[str, Any]]:
    """Run name -> ``{label, seed, config}`` of every run ``item`` reads."""
    every = exp.all_runs(section)
    if item == "table_long_tail":
        return {f"glmc/{rid}": r for rid, r in every.glmc.items()}
    if item == "fig_signal":
        return {f"signal/{key}": r for key, r in every.signal.items()}
    spec = section["items"].get(item, {})
    groups = steps.item_groups(dict(section), item)
    wanted = [rid for rid, r in every.training.items() if r["group"] in groups
              and (r["group"] != spec.get("reference_group") or "reference_label" not in spec
                   or r["label"] == spec["reference_label"])
              and (r["group"] == spec.get("reference_group")
                   or (r["label"] in spec.get("optimizers", [r["label"]])
                       and r["seed"] in spec.get("seeds", [r["seed"]])))]
    todo = list(wanted)
    while todo:  # the runs they start from (init_from)
        for dep in every.training[todo.pop()]["depends"]:
            if dep not in wanted:
                wanted.append(dep)
                todo.append(dep)
    return {rid: every.training[rid] for rid in wanted}


def _settings(spec: Mapping[str, Any]) -> str:
    """The item's numeric settings (``steps=5``), lists of numbers included."""
    out = []
    for key, value in spec.items():
        if key in STRUCTURE:
            continue
        numeric = isinstance(value, (int, float)) or (
            isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value))
        if numeric:
            shown = ",".join(f"{v:g}" for v in value) if isinstance(value, list) else f"{value:g}"
            out.append(f"{key}={shown}")
    return ", ".join(out)


def cell(section: Mapping[str, Any], item: str) -> str:
    """What ``item`` runs under ``section``, one table cell."""
    spec = section["items"].get(item)
    if spec is None:
        return "not in this profile"
    parts = []
    if item == "table_cost":  # fresh timed steps of each optimizer, no run read
        cfg = exp.deep_merge(exp.base_config(dict(section)), spec.get("overrides", {}))
        parts.append(f"times {', '.join(spec['optimizers'])} on {_dataset(cfg)}, "
                     f"{_model(cfg)}, batch {cfg.get('batch_size')}")
    else:
        runs = _item_runs(section, item)
        configs = [r["config"] for r in runs.values()]
        groups = _unique(c["tags"]["group"] for c in configs)
        epochs = _unique(c.get("epochs") for c in configs)
        parts += [f"{len(runs)} runs of {', '.join(f'`{g}`' for g in groups)}",
                  "; ".join(_unique(_dataset(c) for c in configs)),
                  ", ".join(_unique(_model(c) for c in configs)),
                  _epochs(epochs),
                  ", ".join(_unique(r["label"] for r in runs.values())),
                  "seeds " + ", ".join(str(s) for s in sorted({r["seed"] for r in runs.values()}))]
        if any(c.get("stand_ins") for c in configs) or spec.get("stand_ins"):
            parts.insert(0, "**stand-in**")
    evaluation = steps.build_evaluation(item)
    if evaluation:
        parts.append(f"+ `{evaluation[0].removeprefix(exp.RESULTS + '/')}`")
    settings = _settings(spec)
    if item == "fig_signal":
        settings = ", ".join(filter(None, [f"probe_every={section['signal']['probe_every']}",
                                           settings]))
    if settings:
        parts.append(settings)
    return "; ".join(p for p in parts if p).replace("|", "\\|")


def lesam_items_block(root: str | Path = ".") -> str:
    """The block's Markdown table: one row an item, one column a profile."""
    root = Path(root)
    sections = [(head, read_config_file(root / path)["lesam"]) for head, path in PROFILES]
    items = _unique(item for _, section in sections for item in section["items"])
    lines = ["| item | " + " | ".join(head for head, _ in sections) + " |",
             "|---|" + "---|" * len(sections)]
    lines += [f"| `{item}` | " + " | ".join(cell(section, item) for _, section in sections)
              + " |" for item in items]
    return "\n".join(lines) + "\n"
