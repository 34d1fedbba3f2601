"""Figure ``cnn_synthetic``: which feature (strong or weak) the filters of a 2-layer CNN learn
first, per optimizer and init scale (the arrays of :mod:`sharpness.minorfirst.cnn`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from sharpness.minorfirst.panels import A, find
from sharpness.plots import method_color, method_label, new_figure

#: the CNN optimizers in display order (full-batch "sgd" is GD, labelled so)
CNN_ORDER = ("sgd", "sam", "sam_linf")
STRONG_COLOR, WEAK_COLOR = "#1b6ca8", "#d95f02"


def _cnn_label(m: str) -> str:
    return method_label("gd" if m == "sgd" else m)


def _cnn_optimizer_text(m: str, hp: dict) -> str:
    what = {"sgd": "GD", "sam": "l2-SAM (rho = radius of the global l2 ball)",
            "sam_linf": "l_inf-SAM (rho = per-coordinate radius)"}.get(m, m)
    return f"{what} [{m}{', ' if hp else ''}{', '.join(f'{k}={v}' for k, v in hp.items())}]"


#: the columns that join a row to its run's record (its draw's fingerprints and run id)
DRAW_COLUMNS = ("run_id", "init_sha256", "order_sha256")


def drawn(run: dict) -> dict[str, str]:
    """The ``run_id`` and draw fingerprints a run's summary entry carries (empty strings for a
    run computed before they were recorded: the claims ledger then counts it as unproven)."""
    return {k: str(run.get(k) or "") for k in DRAW_COLUMNS}


def _alignment_panel(f: Any, ax: Any, a: A, s: dict, p: dict, m: str, k: int, alpha: float,
                     last_column: bool) -> None:
    steps = a[f"{m}_steps"]
    info = find(s["runs"], optimizer=m, alpha=alpha)
    run = drawn(info)
    align, loss = a[f"{m}_align"][k], a[f"{m}_loss"][k]
    for j, (feat, col) in enumerate((("strong", STRONG_COLOR), ("weak", WEAK_COLOR))):
        ax.plot(steps, align[:, j], color=col, label=f"{feat} feature")
        ax.axhline(align[0, j] + p["gain"], color=col, ls=":", lw=0.8)
        hit = info[f"step_{feat}"]
        if hit is not None:
            ax.axvline(hit, color=col, ls="--", lw=0.9)
        f.add_rows(({"step": int(t), "quantity": f"align_{feat}", "value": float(v)}
                    for t, v in zip(steps, align[:, j], strict=True)), optimizer=m, alpha=alpha,
                   seed=s.get("seeds", [p.get("seed", 0)])[0], **run)
    f.add_rows(({"step": int(t), "quantity": "loss", "value": float(v)}
                for t, v in zip(steps, loss, strict=True)), optimizer=m, alpha=alpha,
               seed=s.get("seeds", [p.get("seed", 0)])[0], **run)
    tw = ax.twinx()
    tw.plot(steps, loss, color="0.6", lw=0.9, label="train loss (right axis)")
    tw.set_ylim(0, 0.75)
    tw.grid(False)
    if last_column:
        tw.set_ylabel("train loss", color="0.45", fontsize=8)
    else:
        tw.tick_params(right=False, labelright=False)
    hits = ", ".join(f"{feat} @ {info[f'step_{feat}']}" for feat in ("weak", "strong")
                     if info[f"step_{feat}"] is not None)
    rho = p["optimizers"][m].get("rho")
    ax.set_title(_cnn_label(m) + (f" (ρ={rho})" if rho is not None else "")
                 + f", α={alpha}\nfirst aligned: {info['first']}" + (f" ({hits})" if hits else ""),
                 fontsize=8, color=method_color(m) if m in CNN_ORDER else "k")


def _caption(s: dict, p: dict, opts: list[str]) -> str:
    check = s["middle_first"]
    holds = "holds" if s["catalog_check_holds"] else "does NOT hold"
    al = p["alphas"]
    return (f"2-layer CNN f(x) = sum_j a_j sum_p relu(<w_j, x_p>)^{p['power']} with {p['width']} "
            f"filters per class, fixed second layer a_j = +-1/{p['width']}, first layer w_j ~ "
            f"alpha N(0, I/d), on {p['n']} examples of {p['patches']} patches in d={p['d']}: one "
            "patch holds " + (
                "y times the strong feature (shared by both classes; " if p.get("shared_features")
                else "the class's own strong feature (one direction per class; ")
            + f"amplitude {p['mu_strong']}, probability {p['p_strong']}) or the weak one "
            f"(amplitude {p['mu_weak']}), the others Gaussian noise (sd {p['noise']}) orthogonal "
            f"to the feature directions. Full-batch training, {p['steps']} steps of the plain "
            f"gradient base step (lr {p['lr']}, no momentum or weight decay), with "
            + ", ".join(_cnn_optimizer_text(m, p["optimizers"][m]) for m in opts)
            + f", from init scales alpha in {al} (data and init seed {s.get('seeds', [p.get('seed', 0)])[0]}"
            + (f"; seeds {', '.join(map(str, s['seeds'][1:]))} also trained at the middle init, "
               "in the CSV and the claims ledger, not drawn" if len(s.get("seeds", [])) > 1 else "")
            + "). Lines: "
            "alignment with the strong and the weak feature (best filter of each class, averaged "
            f"over the classes); dotted: init value + {p['gain']}; dashed: the step at which the "
            f"feature first gains {p['gain']} ('first aligned'). Grey: training loss. Catalog "
            "check (l2-SAM at the middle init aligns with the weak feature first, GD with the "
            f"strong one): {holds} (middle alpha {s['middle_alpha']}: "
            + ", ".join(f"{o} first {v}" for o, v in check.items()) + "). Per run: "
            + "; ".join(f"{q['optimizer']} alpha={q['alpha']}: {q['first']}, final loss "
                        f"{q['final_loss']:.3g}" for q in s["runs"]) + ".")


def plot_cnn_synthetic(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Filter alignment with the strong and the weak feature over GD steps: optimizers x init
    scales."""
    order = list(CNN_ORDER)  # GD first, then the SAM variants, then anything else configured
    opts = sorted(p["optimizers"], key=lambda m: order.index(m) if m in order else len(order))
    al = p["alphas"]
    with new_figure(out, len(opts), len(al), figsize=(3.4 * len(al), 2.7 * len(opts)),
                    squeeze=False, sharex=True) as f:
        for r, m in enumerate(opts):
            for k, alpha in enumerate(al):
                ax = f.axes[r, k]
                _alignment_panel(f, ax, a, s, p, m, k, alpha, last_column=k == len(al) - 1)
                if k == 0:
                    ax.set_ylabel(r"alignment $\max_j\langle w_j, v\rangle$")
                if r == len(opts) - 1:
                    ax.set_xlabel("training step")
        for r in s.get("replicates", []):  # the other seeds: in the CSV, not drawn
            seed, m = r["seed"], r["optimizer"]
            steps, align = a[f"seed{seed}_{m}_steps"], a[f"seed{seed}_{m}_align"]
            for j, feat in enumerate(("strong", "weak")):
                f.add_rows(({"step": int(t), "quantity": f"align_{feat}", "value": float(v)}
                            for t, v in zip(steps, align[:, j], strict=True)), optimizer=m,
                           alpha=r["alpha"], seed=seed, **drawn(r))
        h1, l1 = f.axes[0, 0].get_legend_handles_labels()
        f.fig.legend(h1 + [plt.Line2D([], [], color="0.6", lw=0.9)],
                     l1 + ["train loss (right axis)"], loc="lower center", ncol=3, fontsize=8,
                     bbox_to_anchor=(0.5, -0.01))
        check = s["middle_first"]
        f.title("2-layer CNN on strong/weak-feature patch data: which feature the filters learn "
                f"first (middle init α={s['middle_alpha']}: "
                + ", ".join(f"{_cnn_label(o)} {v}" for o, v in check.items()) + ")")
        f.save(_caption(s, p, opts), inputs=inputs, params=p, tight=(0, 0.04, 1, 1))
