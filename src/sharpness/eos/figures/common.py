"""What every eos figure shares: reading the sweeps, markers for eta_c and diverged runs, the
tidy CSV rows, log axes and panel grids.

Inputs: one ``sweep.json`` per setting (:func:`sharpness.eos.sweep.run_sweep`, which embeds the
flow summary) plus ``flow/flow.npz`` beside it. Every figure marks ``eta_c`` (dashed vertical
line); diverged runs are red crosses at the top of their panel, runs that stopped at
``max_steps`` hollow markers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sharpness.runs.seal import read_verified
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
from sharpness.plots import new_figure

DIVERGED_COLOR = "#d62728"


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}

def load_sweeps(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Read ``sweep.json`` files, attaching the flow path (``flow/flow.npz``) when present."""
    sweeps = []
    for p in paths:
        # a damaged file (truncated, or not the one its record hashed) stops the figure with
        # a message naming it, never a traceback or a figure drawn from it
        sweep = read_verified(Path(p), what="eos sweep")
        sweep["path"] = str(p)
        npz = Path(p).parent / "flow" / "flow.npz"
        if npz.exists():
            sweep["flow_path"] = read_verified(npz, _arrays, what="eos flow")
        sweeps.append(sweep)
    return sweeps


def setting_label(sweep: dict[str, Any]) -> str:
    """The setting's figure label (its config ``label``, else its folder name)."""
    return str(sweep["setting"].get("label") or Path(sweep["path"]).parent.name)


def stand_ins_of(sweeps: Sequence[dict[str, Any]]) -> list[str]:
    """Every stand-in data set the sweeps used, each once, in order."""
    out: list[str] = []
    for s in sweeps:
        out += [x for x in s["setting"].get("stand_ins", []) if x not in out]
    return out


def mark_eta_c(ax: Any, eta_c: float, label: bool = True) -> None:
    """Dashed vertical line at eta_c = 2 / s_GF."""
    ax.axvline(eta_c, color="k", ls="--", lw=0.9, label=r"$\eta_c=2/s_{GF}$" if label else None)


def mark_diverged(ax: Any, lrs: Sequence[float], label: bool = True) -> None:
    """Red crosses at the top of the panel for the learning rates whose run diverged."""
    if lrs:
        ax.plot(lrs, [0.97] * len(lrs), "x", color=DIVERGED_COLOR, ms=7, mew=2,
                transform=ax.get_xaxis_transform(), label="diverged" if label else None,
                clip_on=False)


def series(ax: Any, rows: list[dict[str, Any]], key: str, color: Any, label: str | None) -> None:
    """``key`` vs eta: filled markers for converged runs, hollow for runs cut at max_steps."""
    ok = [r for r in rows if not r["diverged"] and r.get(key) is not None]
    conv = [r for r in ok if r["converged"]]
    other = [r for r in ok if not r["converged"]]
    ax.plot([r["lr"] for r in ok], [r[key] for r in ok], "-", color=color, lw=1, alpha=0.6)
    ax.plot([r["lr"] for r in conv], [r[key] for r in conv], "o", color=color, ms=4, label=label)
    if other:
        ax.plot([r["lr"] for r in other], [r[key] for r in other], "o", mfc="none", color=color,
                ms=5, label="max_steps (not converged)" if label else None)


def eta_panel(ax: Any, sweep: dict[str, Any], key: str, color: Any, label: str | None,
              legend: bool = True) -> None:
    """One quantity of a sweep's final models vs eta on a log axis, with eta_c (dashed) and
    the diverged runs (red crosses); ``legend``: whether the markers get legend labels."""
    rows = sweep["rows"]
    series(ax, rows, key, color, label)
    mark_eta_c(ax, sweep["eta_c"], label=legend)
    mark_diverged(ax, [x["lr"] for x in rows if x["diverged"]], label=legend)
    logx(ax)
    ax.set_xlabel(r"$\eta$")


def tidy_rows(sweep: dict[str, Any], keys: Sequence[str], figure: str) -> list[dict[str, Any]]:
    """One CSV row per run of the sweep: eta, eta/eta_c, status and the requested values,
    then the run's ``run_id`` and draw fingerprints (what joins the row to its signed
    record; absent from sweeps run before they were recorded)."""
    rows = []
    for r in sweep["rows"]:
        rows.append({"figure": figure, "setting": setting_label(sweep), "eta": r["lr"],
                     "eta_over_eta_c": r["lr_over_eta_c"], "eta_c": sweep["eta_c"],
                     "s_gf": sweep["s_gf"], "status": r["status"], "reason": r["reason"],
                     "steps": r["steps"], "loss": sweep["setting"].get("loss"),
                     **{k: r.get(k) for k in keys},
                     **{k: r.get(k) for k in ("run_id", "init_sha256", "order_sha256")}})
    return rows


def logx(ax: Any) -> None:
    """Log x axis with plain major labels and no minor labels (they collide)."""

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    fmt = ScalarFormatter()
    fmt.set_scientific(False)
    ax.xaxis.set_major_formatter(fmt)
    ax.xaxis.set_minor_formatter(NullFormatter())


def sweep_figure(out: str | os.PathLike[str], sweeps: Sequence[dict[str, Any]], n_rows: int,
                 n_cols: int, w: float = 2.9, h: float = 2.3) -> Any:
    """The figure builder (:func:`sharpness.plots.new_figure`) for a figure drawn from
    ``sweeps``: an ``n_rows`` x ``n_cols`` array of axes, ``w`` x ``h`` inches each, whose title
    names every stand-in data set the sweeps used."""

    return new_figure(out, n_rows, n_cols, figsize=(w * n_cols, h * n_rows), squeeze=False,
                      stand_ins=stand_ins_of(sweeps))


def dropped_note(dropped: dict[str, str] | None) -> str:
    """Caption sentence naming the settings left out of a figure and why (config
    ``eos.dropped``: setting name -> reason)."""
    if not dropped:
        return ""
    return " Left out of this profile: " + "; ".join(
        f"{name} ({reason})" for name, reason in sorted(dropped.items())) + "."

