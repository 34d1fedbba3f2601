"""Small CSV-shaped fixtures for the predicates of paper `minorfirst`: one where the claim holds and
one where it fails (or cannot be decided), built as the figures' tidy rows are."""

from __future__ import annotations

from collections.abc import Sequence

from sharpness.claims.model import ItemData
from tests.claims.fixtures_common import Rows, item, recorded, shares, trained


def l1(bad: bool) -> dict[str, ItemData]:
    rows = []
    for m in ("gd", "l2", "linf"):
        for s, c in ((1.0, 0.5), (10.0, 0.05 if bad and m == "linf" else 1e-5)):
            rows.append({"data": "single", "method": m, "alpha": 0.1, "rho": 0.5, "s": s,
                         "one_minus_cos": c})
    return {"minorfirst/l1_maxmargin": item("minorfirst/l1_maxmargin", rows)}


def linf(bad: bool, gd_limit: str = "e2") -> dict[str, ItemData]:
    """linf_depth: closed-form errors and the init-grid limits of l_inf-SAM and of GD
    (``gd_limit`` at every point)."""
    rows: Rows = [{"L": 2, "alpha": "[0.3, 0.8]", "source": "rel_err",
                   "rel_err_discrete": 0.05 if bad else 1e-3}]
    labels = ["e1", "e2", "0"] if not bad else ["e1", "e2", "e2"]
    for k, lab in enumerate(labels):
        rows.append({"L": 2, "alpha_1": 0.1 * k, "alpha_2": 0.2, "source": "phase",
                     "simulated": lab, "rule": lab if not (bad and k == 0) else "e2"})
        rows.append({"L": 2, "alpha_1": 0.1 * k, "alpha_2": 0.2, "source": "gd_phase",
                     "simulated": gd_limit, "rule": "e2"})
    return {"minorfirst/linf_depth": item("minorfirst/linf_depth", rows)}


def linf_gd(bad: bool) -> dict[str, ItemData]:
    """GD's limits on a 3×3 init grid at L = 3 and μ = (1, 2): argmax μ_j α_j (``bad``: e2
    everywhere, as if GD always picked the major feature)."""
    rows = [{"L": 3, "alpha_1": a1, "alpha_2": a2, "source": "gd_phase",
             "simulated": "e2" if bad or a1 <= 2 * a2 else "e1"}
            for a1 in (0.1, 0.5, 0.9) for a2 in (0.15, 0.3, 0.6)]
    return {"minorfirst/linf_depth": item("minorfirst/linf_depth", rows)}


def deep(bad: bool) -> dict[str, ItemData]:
    rows: Rows = []
    for j, (closed, flow) in enumerate(((1.0, 1.0), (0.5, 0.5), (float("inf"), float("nan")))):
        rows.append({"panel": "blowup", "L": 3, "alpha": "[0.9, 0.8, 0.6]", "coord": j + 1,
                     "s_closed": closed, "s_flow": flow * (1.5 if bad and j == 1 else 1.0),
                     "jstar": 2})
    rows += shares([3] if bad else [1, 2, 3], 3, panel="L3")
    return {"minorfirst/deep_l": item("minorfirst/deep_l", rows)}


def sequential(bad: bool) -> dict[str, ItemData]:
    rows = shares([1, 2] if not bad else [2, 1, 2], 2, case=0, method="l2")
    rows += shares([1, 3, 5] if not bad else [1, 5], 5, case=1, method="l2")
    rows += shares([2], 2, case=0, method="gd") + shares([5], 5, case=1, method="gd")
    rows += shares([1, 2] if bad else [2], 2, case=0, method="unnormalised")
    rows += shares([5], 5, case=1, method="unnormalised")
    return {"minorfirst/l2_sequential": item("minorfirst/l2_sequential", rows)}


def regimes(bad: bool) -> dict[str, ItemData]:
    rows: Rows = []
    ratios = [0.1, 0.3, 0.5, 1.0, 2.0]
    labels = ["collapse", "sequential", "sequential", "major-first", "major-first"]
    seqs = {0.3: [1, 2, 3], 0.5: [2, 3]}
    for rho in (0.5, 1.0):
        for r, lab in zip(ratios, labels, strict=True):
            if bad and rho == 1.0 and r == 0.5:
                lab = "collapse"
            if bad and rho == 1.0 and r >= 1.0:
                lab = "sequential"
            rows.append({"panel": "regime", "rho": rho, "alpha_over_rho": r, "regime": lab})
            seq = seqs.get(r, [3] if lab == "major-first" else [])
            if bad and r == 0.3:
                seq = [2, 1, 3]
            if bad and r == 0.5:
                seq = [1, 2, 2, 2, 3]  # reaches the major coordinate later than at 0.3
            dom = [0] + [j for j in seq for _ in range(2)] + [3] * 3
            rows += [{"panel": "heatmap", "rho": rho, "alpha_over_rho": r, "s": 0.1 * k,
                      "dominant": v} for k, v in enumerate(dom)]
    return {"minorfirst/l2_regimes": item("minorfirst/l2_regimes", rows)}


def limit(bad: bool) -> dict[str, ItemData]:
    rows = [{"data": "single", "method": m, "alpha": 0.3, "s": s, "one_minus_cos": c}
            for m in ("gd", "l2") for s, c in ((1, 0.3), (100, 0.05 if bad and m == "l2"
                                                            else 1e-4))]
    return {"minorfirst/l2_limit": item("minorfirst/l2_limit", rows)}


def multi(bad: bool) -> dict[str, ItemData]:
    rows: Rows = []
    for a in (0.1, 0.25, 1.0):
        rows += shares([5] if bad else [2, 5], 5, method="l2", alpha=a)
        rows += shares([5], 5, method="gd", alpha=a)
    return {"minorfirst/multi_example": item("minorfirst/multi_example", rows)}


def cnn(bad: bool, seeds: int = 7) -> dict[str, ItemData]:
    """The CNN alignments of ``seeds`` distinct data/init draws (a ``seed`` column, each draw's
    curves offset by its seed): SAM weak first unless ``bad``; GD strong first."""
    rows: Rows = []
    for seed in range(seeds):
        for opt, weak_first in (("sgd", False), ("sam", not bad)):
            for a in (0.1, 0.5, 1.5):
                for step in range(0, 50, 5):
                    fast = min(1.0, step / 10) + 1e-3 * seed
                    slow = min(1.0, step / 40) + 1e-3 * seed
                    run = recorded(seed, f"{opt}/{a}")
                    rows.append({"seed": seed, "optimizer": opt, "alpha": a, "step": step,
                                 "quantity": "align_weak", "value": fast if weak_first else slow,
                                 **run})
                    rows.append({"seed": seed, "optimizer": opt, "alpha": a, "step": step,
                                 "quantity": "align_strong",
                                 "value": slow if weak_first else fast, **run})
    return {"minorfirst/cnn_synthetic": item("minorfirst/cnn_synthetic", rows, {"gain": 0.2})}


def flow(bad: bool) -> dict[str, ItemData]:
    rows = [{"L": L, "method": m, "eta": e, "error": 3 * e ** (1.5 if bad and m == "l2" else 1)}
            for L in (1, 2) for m in ("gd", "l2") for e in (0.04, 0.02, 0.01)]
    return {"minorfirst/flow_vs_discrete": item("minorfirst/flow_vs_discrete", rows)}


def gradcam(sign: int, acc: float = 0.9, n: int = 3, bad_train: Sequence[int] = (),
            sam_means: Sequence[float] | None = None) -> dict[str, ItemData]:
    """The Grad-CAM table: GD's per-seed background shares 0.40, SAM's 0.40 + 0.05·sign
    (or ``sam_means``); SAM's seeds in ``bad_train`` did not train."""
    rows = []
    for ds in ("MNIST", "SVHN stand-in", "CIFAR-10"):
        for opt in ("SGD", "l2-SAM", "linf-SAM"):
            for a in (0.5, 1.0, 2.0):
                gd = opt == "SGD"
                means = [0.40] * n if gd else list(sam_means or [0.40 + (0.05 + 0.005 * k) * sign
                                                                 for k in range(n)])
                diffs = [m - 0.40 for m in means]
                rows.append({"data set": ds, "optimizer": opt, "alpha": a, "massless": 1,
                             "test acc": acc,
                             "per-seed means": " ".join(f"{m:.5f}" for m in means),
                             "per_seed_train": trained(n, bad=() if gd else bad_train),
                             "per-seed diff vs GD": "" if gd else " ".join(f"{v:.5f}"
                                                                          for v in diffs),
                             "seed diff": float("nan") if gd else sum(diffs) / n,
                             "seed diff low": float("nan") if gd else min(diffs),
                             "seed diff high": float("nan") if gd else max(diffs)})
    return {"minorfirst/gradcam_table": item("minorfirst/gradcam_table", rows)}
