"""``fig_diagonal``: the diagonal toy model of the edge-of-stability paper (d = 2 picture,
final sharpness and l1 norm vs eta against the catalog's numbers, risk under three teachers)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from sharpness.eos.figures.common import DIVERGED_COLOR, logx, mark_diverged, mark_eta_c
from sharpness.runs.seal import read_verified
import matplotlib.pyplot as plt
from sharpness.plots import method_color, new_figure
from sharpness.eos.toy import CATALOG_EXAMPLE


def fig_diagonal(toy_path: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """Toy model: d=2 zero-loss set with minimisers and GD end points; final S and ||beta||_1
    vs eta with eta_c and the catalog's numbers; risk of each solution under three teachers."""

    toy = read_verified(toy_path, what="eos fig_diagonal")  # the toy job's recorded hash
    runs = toy["runs"]
    ok = [r for r in runs if r["status"] == "ok"]
    div = [r["eta"] for r in runs if r["status"] == "diverged"]
    eta_c = toy["eta_c"]
    gd_c = method_color("gd")
    rows: list[dict[str, Any]] = []
    with new_figure(out, 1, 4, figsize=(17, 3.8), layout="constrained") as f:
        fig, ax = f.fig, f.axes
        # (a) d = 2 picture in beta space
        d2 = toy["d2"]
        x1, x2 = d2["x"]
        seg = np.linspace(0, 1, 200)
        b1, b2 = seg * toy["y"] / x1, (1 - seg) * toy["y"] / x2
        sharp = 4 * (x1**2 * b1 + x2**2 * b2)
        sc = ax[0].scatter(b1, b2, c=sharp, s=4, cmap="viridis", label="zero-loss set")
        fig.colorbar(sc, ax=ax[0], label="S on the set")
        fb = np.array(d2["flow_beta"])
        ax[0].plot(fb[:, 0], fb[:, 1], "k-", lw=1.2, label="gradient flow")
        for p, color in zip(d2["paths"], plt.cm.plasma(np.linspace(0.1, 0.85, len(d2["paths"]))),
                            strict=True):
            path = np.array(p["beta_path"])
            if len(path):
                ax[0].plot(path[:, 0], path[:, 1], "-", color=color, lw=0.7, alpha=0.8)
            if p["end"] is not None:
                ax[0].plot(*p["end"], "o", color=color, ms=5, label=f"GD $\\eta$={p['eta']}")
            else:
                ax[0].plot([], [], "x", color=color, label=f"GD $\\eta$={p['eta']} diverged")
            rows.append({"panel": "d2", "eta": p["eta"], "status": p["status"],
                         "beta_1": p["end"][0] if p["end"] else None,
                         "beta_2": p["end"][1] if p["end"] else None})
        ax[0].plot(*d2["norm_min"], "s", color="C0", ms=8, mfc="none", mew=2, label="norm min.")
        ax[0].plot(*d2["sharp_min"], "D", color="C3", ms=8, mfc="none", mew=2,
                   label="sharpness min.")
        ax[0].set_xlim(-0.05 * toy["y"] / x1, 1.3 * toy["y"] / x1)
        ax[0].set_ylim(-0.05 * toy["y"] / x2, 1.15 * toy["y"] / x2)
        ax[0].set_xlabel(r"$\beta_1$")
        ax[0].set_ylabel(r"$\beta_2$")
        ax[0].set_title(f"(a) d=2, x={tuple(d2['x'])}, $\\eta_c$={d2['eta_c']:.3f}")
        ax[0].legend(fontsize=6, loc="upper right")
        # (b) final sharpness vs eta
        etas = np.array([r["eta"] for r in ok])
        ax[1].plot(etas, [r["sharpness"] for r in ok], "o-", color=gd_c, ms=4, label="GD final S")
        grid = np.geomspace(min(r["eta"] for r in runs), max(r["eta"] for r in runs), 100)
        ax[1].plot(grid, 2 / grid, ":", color="gray", label=r"$2/\eta$")
        ax[1].axhline(toy["s_gf"], color="k", lw=0.8, alpha=0.6, label=f"$s_{{GF}}$={toy['s_gf']:.2f}")
        ax[1].axhline(toy["minimizers"]["sharpness"]["sharpness"], color="C3", lw=0.8,
                      label="sharpness min.")
        ax[1].axhline(toy["minimizers"]["norm"]["sharpness"], color="C0", lw=0.8,
                      label="norm min.")
        mark_eta_c(ax[1], eta_c)
        mark_diverged(ax[1], div)
        logx(ax[1])
        ax[1].set_ylim(0, 1.15 * max(toy["minimizers"]["norm"]["sharpness"], toy["s_gf"]))
        ax[1].set_xlabel(r"$\eta$")
        ax[1].set_ylabel("final sharpness S")
        ax[1].set_title(f"(b) $s_{{GF}}$={toy['s_gf']:.3f} (catalog {CATALOG_EXAMPLE['s_gf']}), "
                        f"$\\eta_c$={eta_c:.3f} (catalog {CATALOG_EXAMPLE['eta_c']})", fontsize=8)
        ax[1].legend(fontsize=6)
        # (c) l1 norm vs eta, with the catalog's numbers
        ax[2].plot(etas, [r["l1"] for r in ok], "o-", color=gd_c, ms=4, label="GD (simulated)")
        cat = CATALOG_EXAMPLE["l1_at"]
        ax[2].plot(list(cat), list(cat.values()), "*", color="C1", ms=11,
                   label="catalog numbers")
        ax[2].axhline(toy["minimizers"]["norm"]["l1"], color="C0", lw=0.8, label="norm min.")
        ax[2].axhline(toy["minimizers"]["flow"]["l1"], color="k", lw=0.8, alpha=0.6,
                      label="gradient flow")
        mark_eta_c(ax[2], eta_c, label=False)
        mark_diverged(ax[2], div)
        ax[2].axvline(CATALOG_EXAMPLE["diverge_from"], color=DIVERGED_COLOR, ls=":", lw=0.9,
                      label=f"catalog: diverges from ~{CATALOG_EXAMPLE['diverge_from']}")
        logx(ax[2])
        ax[2].set_xlabel(r"$\eta$")
        ax[2].set_ylabel(r"final $\|\beta\|_1$")
        first = toy.get("first_diverged_eta")
        ax[2].set_title(f"(c) first diverging $\\eta$ in grid: {first}", fontsize=8)
        ax[2].legend(fontsize=6)
        # (d) risk under teachers
        names = {"sparse_max": r"teacher $e_{\arg\max x}$ (=norm min.)",
                 "sparse_min": r"teacher $e_{\arg\min x}$ (=sharp. min.)",
                 "dense": r"teacher $\beta^*\propto x$ (dense)"}
        for i, (key, name) in enumerate(names.items()):
            ax[3].plot(etas, [r[f"risk_{key}"] for r in ok], "o-", ms=3, color=f"C{i + 4}",
                       label=name)
            ax[3].axhline(toy["minimizers"]["norm"][f"risk_{key}"], color=f"C{i + 4}", lw=0.6,
                          ls="--")
            ax[3].axhline(toy["minimizers"]["sharpness"][f"risk_{key}"], color=f"C{i + 4}",
                          lw=0.6, ls=":")
        mark_eta_c(ax[3], eta_c, label=False)
        logx(ax[3])
        ax[3].set_yscale("log")
        ax[3].set_xlabel(r"$\eta$")
        ax[3].set_ylabel(r"risk $\|\beta-\beta^*\|^2$")
        ax[3].set_title("(d) risk (- - norm min., ··· sharp. min.)", fontsize=8)
        ax[3].legend(fontsize=6)
        f.title(f"Diagonal toy $f_w(x)=\\langle w\\odot w,x\\rangle$, x={tuple(toy['x'])}, "
                f"y={toy['y']}, $w_0$={toy['w0']}·1, loss goal {toy['loss_goal']:g}", y=1.03)
        for r in runs:
            rows.append({"panel": "sweep", "eta": r["eta"], "status": r["status"],
                         "steps": r["steps"], "sharpness": r["sharpness"], "eta_s": r["eta_s"],
                         "l1": r["l1"], "risk_sparse_max": r["risk_sparse_max"],
                         "risk_sparse_min": r["risk_sparse_min"], "risk_dense": r["risk_dense"],
                         "s_gf": toy["s_gf"], "eta_c": eta_c})
        for which, sol in toy["minimizers"].items():  # the claims ledger compares risks
            rows.append({"panel": "minimizer", "which": which,
                         **{f"risk_{k}": sol[f"risk_{k}"] for k in names}})
        for k, v in CATALOG_EXAMPLE["l1_at"].items():
            rows.append({"panel": "catalog", "eta": k, "l1": v, "s_gf": CATALOG_EXAMPLE["s_gf"],
                         "eta_c": CATALOG_EXAMPLE["eta_c"]})
        caption = (f"Diagonal toy. Simulated s_GF={toy['s_gf']:.4f}, eta_c={eta_c:.4f} "
                   f"(catalog 7.14, 0.28). ||beta||_1 at eta=0.05 and 0.5 and the catalog's "
                   f"values are both drawn (stars); first diverging eta of the grid: {first} "
                   f"(catalog: about 0.6). Red crosses: diverged runs.")
        f.add_rows(rows)
        f.save(caption, inputs=[toy_path], params={"figure": "fig_diagonal"})
