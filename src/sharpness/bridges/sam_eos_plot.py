"""Drawing ``bridges/sam_eos`` from the ``sweep.json`` of :func:`sharpness.bridges.sam_eos.run_sweep`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.ticker import NullFormatter

from sharpness.bridges.sam_eos_stability import thresholds
from sharpness.plots import method_color, method_label, new_figure
from sharpness.runs.seal import read_verified


def wilson(err: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson 95% interval of an error rate measured on ``n`` test points."""
    if n <= 0 or err is None or not np.isfinite(err):
        return float("nan"), float("nan")
    den = 1 + z * z / n
    mid = (err + z * z / (2 * n)) / den
    half = z * np.sqrt(err * (1 - err) / n + z * z / (4 * n * n)) / den
    return float(mid - half), float(mid + half)


def findings(sweep: dict[str, Any]) -> dict[str, Any]:
    """Per-optimizer numbers for the caption and docs, all read from the sweep."""
    eta_c = sweep["eta_c"]
    n_test = int(sweep["setting"]["test_size"])
    out: dict[str, Any] = {"eta_c": eta_c, "n_test": n_test, "opt": {}}
    for opt in sweep["optimizers"]:
        name = opt["name"]
        rs = [r for r in sweep["rows"] if r["optimizer"] == name]
        eos = [r for r in rs if r["converged"] and r["lr"] > 1.2 * eta_c and "sharpness" in r]
        ratio = np.array([r["eta_s_over_2"] for r in eos])
        own = np.array([r["sharpness"] / r["edge"] for r in eos if r.get("edge")])
        conv = [r for r in rs if r["converged"]]
        best = min(conv, key=lambda r: r["test_error"]) if conv else None
        th = thresholds(sweep["rows"], [name])[name]
        norms = [r["l2"] for r in conv if "l2" in r]
        out["opt"][name] = {
            "n_runs": len(rs), "n_converged": len(conv),
            "n_diverged": sum(bool(r["diverged"]) for r in rs),
            "n_eos": len(eos),
            "ratio_median": float(np.median(ratio)) if ratio.size else float("nan"),
            "ratio_min": float(ratio.min()) if ratio.size else float("nan"),
            "ratio_max": float(ratio.max()) if ratio.size else float("nan"),
            "own_median": float(np.median(own)) if own.size else float("nan"),
            "last_ok": th["last_ok"], "first_fail": th["first_fail"],
            "first_diverged": th["first_diverged"],
            "best_lr": best["lr"] if best else None,
            "best_err": best["test_error"] if best else None,
            "best_ci": wilson(best["test_error"], n_test) if best else None,
            "norm_min": min(norms) if norms else None, "norm_max": max(norms) if norms else None,
        }
    return out


def verdicts_of(f: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Per SAM-type optimizer of :func:`findings`: how its threshold compares with GD's
    (``"becomes unstable at a smaller learning rate than GD"``, ``"stays stable at a larger
    learning rate than GD"`` or ``"has its threshold in the same grid bracket as GD"``) and
    where its sharpness above ``1.2 eta_c`` lies against ``2/eta`` (``"below"``, ``"not
    below"``, ``"untested"`` when no such run converged). Empty without a GD sweep."""
    g = f["opt"].get("gd")
    out: dict[str, tuple[str, str]] = {}
    for name, o in f["opt"].items():
        if name == "gd" or g is None:
            continue
        if o["first_fail"] and g["last_ok"] and o["first_fail"] <= g["last_ok"]:
            order = "becomes unstable at a smaller learning rate than GD"
        elif g["first_fail"] and o["last_ok"] and o["last_ok"] >= g["first_fail"]:
            order = "stays stable at a larger learning rate than GD"
        else:
            order = "has its threshold in the same grid bracket as GD"
        side = ("below" if o["ratio_max"] < 1 else "not below") if o["n_eos"] else "untested"
        out[name] = (order, side)
    return out


def _bracket(f: dict[str, Any], eta_c: float) -> str:
    lo, hi = f["last_ok"], f["first_fail"]
    lo_s = f"{lo / eta_c:.3g}" if lo else "below the grid"
    hi_s = f"{hi / eta_c:.3g}" if hi else "beyond the grid"
    return f"({lo_s}, {hi_s}] x eta_c"


def caption_text(sweep: dict[str, Any], f: dict[str, Any]) -> str:
    """Caption with every number read from the sweep."""
    s = sweep["setting"]
    eta_c = f["eta_c"]
    parts = []
    for name, o in f["opt"].items():
        hp = next(x.get("hparams", {}) for x in sweep["optimizers"] if x["name"] == name)
        hp_s = ", ".join(f"{k}={v}" for k, v in hp.items()) or "-"
        best = (f"best test error {o['best_err']:.3f} (95% CI {o['best_ci'][0]:.3f}-"
                f"{o['best_ci'][1]:.3f}) at eta={o['best_lr'] / eta_c:.3g} eta_c"
                if o["best_lr"] else "no run converged")
        ratio = (f"eta*S/2 median {o['ratio_median']:.2f} (range {o['ratio_min']:.2f}-"
                 f"{o['ratio_max']:.2f}) over {o['n_eos']} converged runs with eta > 1.2 eta_c, "
                 f"S / own edge median {o['own_median']:.2f}" if o["n_eos"] else
                 "no converged run above 1.2 eta_c")
        norm = (f"final l2 norm {o['norm_min']:.2f}-{o['norm_max']:.2f} over converged runs"
                if o["norm_min"] is not None else "no converged run")
        parts.append(f"{name} ({hp_s}): threshold in {_bracket(o, eta_c)}, "
                     f"{o['n_diverged']}/{o['n_runs']} runs diverged; {ratio}; {norm}; {best}")
    verdicts = [f"{name} {order}, and its final sharpness above 1.2 eta_c lies {side} 2/eta in "
                "every converged run" for name, (order, side) in verdicts_of(f).items()]
    return (
        f"The eos learning-rate sweep repeated with SAM and LE-SAM as the full-batch optimizer: "
        f"{s['dataset']} ({s['train_size']} train / {s['test_size']} test), {s['model']} "
        f"width {s['width']}, {s['loss']} loss, from one fixed init (seed {s['seed']}), each run "
        f"until train loss < {s['loss_goal']} or {s['max_steps']} steps; eta_c = 2/s_GF = "
        f"{eta_c:.4g} from GD's gradient flow. Final sharpness (Lanczos) with 2/eta (GD's edge) "
        "and each SAM-type run's own edge ||g||/(2 rho)(sqrt(1 + 8 rho/(eta ||g||)) - 1) at its "
        "final gradient norm (rho = rho_t for LE-SAM); final l2 norm; test error with Wilson 95% "
        "intervals; diverged runs as crosses. Findings: " + "; ".join(parts) + ". In short: "
        + "; ".join(verdicts) + ". Uncertainty: "
        "one init, so thresholds are brackets on the learning-rate grid and test errors carry "
        f"only the binomial uncertainty of {s['test_size']} test points."
    )


def plot(run: Path, out: str | Path) -> dict[str, Any]:
    """Draw the figure from ``run/sweep.json`` and save it with CSV and provenance."""

    path = Path(run) / "sweep.json"
    sweep = read_verified(path, what="bridges sweep")  # its recorded (sealed) hash
    f = findings(sweep)
    eta_c = sweep["eta_c"]
    n_test = f["n_test"]
    rows: list[dict[str, Any]] = []
    names = [o["name"] for o in sweep["optimizers"]]
    lrs_all = np.array(sorted({r["lr"] for r in sweep["rows"]}))
    s = sweep["setting"]
    with new_figure(out, 2, 3, figsize=(14, 8), stand_ins=list(s.get("stand_ins") or [])) as b:
        axes = b.axes
        ax_s, ax_r, ax_own, ax_n, ax_e, ax_t = axes.ravel()
        grid = np.geomspace(lrs_all.min() / 1.2, lrs_all.max() * 1.2, 100)
        ax_s.loglog(grid, 2 / grid, "k-", lw=1, label=r"$2/\eta$")
        for k, name in enumerate(names):
            col = method_color(name)
            rs = sorted((r for r in sweep["rows"] if r["optimizer"] == name), key=lambda r: r["lr"])
            ok = [r for r in rs if "sharpness" in r]
            lr = np.array([r["lr"] for r in ok])
            sh = np.array([r["sharpness"] for r in ok])
            conv = np.array([r["converged"] for r in ok], bool)
            ax_s.loglog(lr, sh, "-", color=col, lw=1)
            ax_s.loglog(lr[conv], sh[conv], "o", color=col, label=method_label(name))
            ax_s.loglog(lr[~conv], sh[~conv], "o", mfc="none", color=col)
            if name != "gd":
                edge = np.array([r.get("edge", np.nan) for r in ok])
                ax_s.loglog(lr, edge, "--", color=col, lw=1, label=f"{method_label(name)} edge")
            ax_r.semilogx(lr[conv], lr[conv] * sh[conv] / 2, "o-", color=col, label=method_label(name))
            own = np.array([r["sharpness"] / r["edge"] if r.get("edge") else np.nan for r in ok])
            ax_own.semilogx(lr[conv], own[conv], "o-", color=col, label=method_label(name))
            nrm = np.array([r.get("l2", np.nan) for r in ok])
            ax_n.semilogx(lr, nrm, "o-", color=col, label=method_label(name))
            err = np.array([r["test_error"] for r in ok])
            ci = np.array([wilson(e, n_test) for e in err]).reshape(-1, 2)
            ax_e.errorbar(lr * (1 + 0.02 * (k - 1)), err, yerr=[err - ci[:, 0], ci[:, 1] - err],
                          fmt="o-", color=col, capsize=2, label=method_label(name))
            ax_e.set_xscale("log")
            for r in rs:
                if r["diverged"]:
                    for ax in (ax_s, ax_n, ax_e):
                        ax.axvline(r["lr"], color=col, lw=0.6, ls=":")
                    ax_t.plot([r["lr"]], [k], "x", color=col, ms=8)
                else:
                    ax_t.plot([r["lr"]], [k], "o" if r["converged"] else "s", color=col,
                              mfc=None if r["converged"] else "none")
                lo, hi = wilson(r["test_error"], n_test) if r["test_error"] is not None else (None, None)
                rows.append({"optimizer": name, "lr": r["lr"], "lr_over_eta_c": r["lr_over_eta_c"],
                             "status": r["status"], "reason": r["reason"], "steps": r["steps"],
                             "converged": r["converged"], "diverged": r["diverged"],
                             "diverged_step": r["diverged_step"],
                             "sharpness": r.get("sharpness", ""), "two_over_eta": 2 / r["lr"],
                             "edge": r.get("edge", ""), "eta_s_over_2": r.get("eta_s_over_2", ""),
                             "grad_norm": r.get("grad_norm", ""), "l1": r.get("l1", ""),
                             "l2": r.get("l2", ""), "nuclear": r.get("nuclear", ""),
                             "train_loss": r["train_loss"], "test_error": r["test_error"],
                             "test_error_ci_low": lo, "test_error_ci_high": hi, "eta_c": eta_c})
            o = f["opt"][name]
            if o["last_ok"] and o["first_fail"]:
                ax_t.plot([o["last_ok"], o["first_fail"]], [k, k], "-", color=col, lw=4, alpha=0.4)

        ax_t.set_xscale("log")
        for ax in (ax_s, ax_r, ax_own, ax_n, ax_e, ax_t):
            ax.axvline(eta_c, color="k", lw=0.8, ls="--")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(r"learning rate $\eta$")
        ax_r.axhline(1.0, color="k", lw=0.8)
        ax_own.axhline(1.0, color="k", lw=0.8)
        ax_s.set_ylabel("final sharpness $S$")
        ax_s.set_title(r"sharpness vs $\eta$ (dashed: $\eta_c$)", fontsize=10)
        ax_r.set_ylabel(r"$\eta S / 2$ (1 = GD's edge)")
        ax_r.set_title("converged runs", fontsize=10)
        ax_own.set_ylabel("$S$ / own stability edge")
        ax_own.set_title("each optimizer against its own edge", fontsize=10)
        ax_n.set_ylabel(r"final $\|\theta\|_2$")
        ax_n.set_title("parameter norm (dotted: diverged)", fontsize=10)
        ax_e.set_ylabel("test error (95% CI)")
        ax_e.set_title("generalization", fontsize=10)
        ax_t.set_yticks(range(len(names)), [method_label(n) for n in names])
        ax_t.set_title("o converged, □ loss goal not reached, × diverged;\nbar: threshold bracket",
                       fontsize=9)
        ax_s.legend(fontsize=7)
        ax_e.legend(fontsize=7)
        b.title(f"SAM and LE-SAM at the edge of stability: {s['dataset']}, "
                f"{s['train_size']} points, {s['model']}, {s['loss']}", fontsize=11)
        b.add_rows(rows)
        return b.save(caption_text(sweep, f), inputs=[Path(run)], params={"run": str(run)},
                      tight=True)
