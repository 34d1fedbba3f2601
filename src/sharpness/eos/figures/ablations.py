"""``fig_ablations``: eta_c and the norm-sharpness trade-off under each ablation factor around
one base setting (one row per factor), and the catalog's factors this profile leaves out."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from sharpness.eos.figures.common import (
    load_sweeps,
    logx,
    mark_diverged,
    sweep_figure,
    tidy_rows,
)

# The factors the catalog lists for fig_ablations, by the setting key each one varies.
CATALOG_FACTORS = {"model_kwargs.hidden": "width", "model_kwargs.depth": "depth",
                   "train_size": "data-set size", "model_kwargs.alpha": "init scale",
                   "model_kwargs.activation": "activation (ReLU/tanh)",
                   "loss_goal": "loss goal epsilon",
                   "model_kwargs.parametrization": "muP vs standard parametrization"}


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(_flat(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def varied_keys(settings: Sequence[dict[str, Any]]) -> list[str]:
    """Setting keys (dotted) whose values differ between the given settings."""
    flat = [_flat({k: v for k, v in s.items() if k not in ("label", "ablation", "lrs")})
            for s in settings]
    keys = sorted(set().union(*flat)) if flat else []
    return [k for k in keys if len({repr(f.get(k)) for f in flat}) > 1]


def omitted_factors(groups: Sequence[Sequence[dict[str, Any]]]) -> list[str]:
    """The catalog factors no group of ablation settings varies."""
    varied = set().union(*(varied_keys(g) for g in groups)) if groups else set()
    return [name for key, name in CATALOG_FACTORS.items() if key not in varied]


def base_description(settings: Sequence[dict[str, Any]]) -> str:
    """What every ablation variant shares (data set, size, model, loss): the base setting."""
    s = settings[0]
    varied = set().union(*(varied_keys([a, b]) for a in settings for b in settings))
    parts = [f"{k}={v}" for k, v in _flat({"dataset": s.get("dataset"),
                                           "train_size": s.get("train_size"),
                                           "model": s.get("model"), "loss": s.get("loss"),
                                           "loss_goal": s.get("loss_goal"),
                                           "model_kwargs": s.get("model_kwargs", {})}).items()
             if k not in varied and v is not None]
    return ", ".join(parts)


def fig_ablations(sweep_paths: Sequence[str | os.PathLike[str]],
                  out: str | os.PathLike[str]) -> None:
    """eta_c and the norm-sharpness trade-off per ablation factor (one row per factor); the
    values in the order of ``sweep_paths`` (the config's order)."""
    sweeps = [s for s in load_sweeps(sweep_paths) if s["setting"].get("ablation")]
    factors: dict[str, list[dict[str, Any]]] = {}
    for sw in sweeps:
        factors.setdefault(sw["setting"]["ablation"]["factor"], []).append(sw)
    rows: list[dict[str, Any]] = []
    notes = []
    with sweep_figure(out, sweeps, len(factors), 3, 3.4, 2.5) as f:
        axes = f.axes
        for i, (factor, group) in enumerate(factors.items()):
            label = group[0]["setting"]["ablation"]["label"]
            values = [s["setting"]["ablation"]["value"] for s in group]
            eta_cs = [s["eta_c"] for s in group]
            axes[i, 0].plot(range(len(group)), eta_cs, "o-", color="k")
            axes[i, 0].set_xticks(range(len(group)), values)
            axes[i, 0].set_xlabel(label)
            axes[i, 0].set_ylabel(r"$\eta_c=2/s_{GF}$")
            axes[i, 0].set_yscale("log")
            notes.append(f"{label}: eta_c " + ", ".join(f"{v}->{e:.3g}"
                                                        for v, e in zip(values, eta_cs, strict=True)))
            for k, sw in enumerate(group):
                c = f"C{k}"
                ok = [x for x in sw["rows"] if not x["diverged"] and x.get("sharpness")]
                axes[i, 1].plot([x["lr_over_eta_c"] for x in ok],
                                [x["sharpness"] * x["lr"] / 2 for x in ok], "o-", color=c, ms=4,
                                label=f"{values[k]}")
                axes[i, 2].plot([x["sharpness"] for x in ok], [x["l2"] for x in ok], "o-",
                                color=c, ms=4, label=f"{values[k]}")
                div = [x["lr_over_eta_c"] for x in sw["rows"] if x["diverged"]]
                mark_diverged(axes[i, 1], div, label=(k == 0))
                rows += tidy_rows(sw, ["sharpness", "l1", "l2", "nuclear", "test_error"],
                                   "fig_ablations")
                for row in rows[-len(sw["rows"]):]:
                    row.update(factor=factor, value=values[k])
            axes[i, 1].axvline(1.0, color="k", ls="--", lw=0.9)
            axes[i, 1].axhline(1.0, color="gray", ls=":", lw=0.9)
            logx(axes[i, 1])
            axes[i, 1].set_xlabel(r"$\eta/\eta_c$")
            axes[i, 1].set_ylabel(r"final $\eta S/2$")
            axes[i, 1].legend(fontsize=6, title=label, title_fontsize=6)
            axes[i, 2].set_xlabel("final sharpness")
            axes[i, 2].set_ylabel(r"final $\ell_2$ norm")
            axes[i, 2].set_title("trade-off (each point one $\\eta$)", fontsize=7)
        base = base_description([s["setting"] for s in sweeps]) if sweeps else ""
        left_out = omitted_factors([[s["setting"] for s in g] for g in factors.values()])
        notes.append("catalog factors not varied in this profile: "
                     + (", ".join(left_out) if left_out else "none"))
        f.title(f"Ablations of eta_c and the trade-off, one row per factor: "
                     f"{', '.join(g[0]['setting']['ablation']['label'] for g in factors.values())}"
                     f"\nbase: {base}" + (f"\nnot varied here: {', '.join(left_out)}"
                                          if left_out else ""), y=1.0)
        f.add_rows(rows)
        f.save("Ablation grid: " + " | ".join(notes), inputs=list(sweep_paths),
               params={"figure": "fig_ablations"}, tight=True)
