"""Small CSV-shaped fixtures for the predicates of paper `lesam`: one where the claim holds and
one where it fails (or cannot be decided), built as the figures' tidy rows are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sharpness.claims.model import ItemData
from tests.claims.fixtures_common import Rows, item, recorded, seeds, trained


def acc_rows(better: bool, level: float = 60.0, **keys: Any) -> Rows:
    le = [level + 5, level + 6, level + 5.5] if better else [level - 5, level - 6, level - 4]
    base = [level, level + 0.5, level - 0.3]
    return [{**keys, "label": "lesam", "optimizer": "LE-SAM", "mean": sum(le) / 3,
             "model": "m", "per_seed": seeds(le), "per_seed_train": trained(3)},
            {**keys, "label": "sam", "optimizer": "SAM", "mean": sum(base) / 3, "model": "m",
             "per_seed": seeds(base), "per_seed_train": trained(3)},
            {**keys, "label": "sgd", "optimizer": "SGD", "mean": sum(base) / 3, "model": "m",
             "per_seed": seeds(base), "per_seed_train": trained(3)}]


def table(name: str, bad: bool, **keys: Any) -> dict[str, ItemData]:
    return {f"lesam/{name}": item(f"lesam/{name}", acc_rows(not bad, **keys))}


def cifar(bad: bool) -> dict[str, ItemData]:
    rows = acc_rows(not bad, group="cifar10_resnet18") + acc_rows(not bad, group="cifar10_wrn")
    rows.append({"group": "cifar10_resnet18", "label": "asam", "optimizer": "ASAM",
                 "mean": 9.0 if bad else 59.0, "model": "m",
                 "per_seed": seeds([5, 6, 7] if bad else [59, 59.5, 58]),
                 "per_seed_train": trained(3)})
    return {"lesam/table_cifar": item("lesam/table_cifar", rows)}


def cifar_all_groups(bad: bool) -> dict[str, ItemData]:
    """table_cifar with every (data set, network) group of the paper's claim."""
    rows = []
    for group in ("cifar10_resnet18", "cifar10_wrn", "cifar10_pyramid", "cifar100_resnet18",
                  "cifar100_wrn", "cifar100_pyramid"):
        rows += acc_rows(not (bad and group == "cifar100_wrn"), group=group)
    return {"lesam/table_cifar": item("lesam/table_cifar", rows)}


def robustness(bad: bool) -> dict[str, ItemData]:
    rows: Rows = []
    for attack in ("PGD-L2", "PGD-LINF"):
        for radius, drop in ((0.0, 0.0), (0.25, 20.0)):
            for r in acc_rows(not bad, level=60 - drop):
                rows.append({**r, "attack": attack, "radius": radius})
    if bad:
        rows.append({"label": "sgd", "attack": "PGD-L2", "radius": 0.5, "mean": 70.0,
                     "per_seed": seeds([70, 70, 70]), "per_seed_train": trained(3)})
    return {"lesam/table_robustness": item("lesam/table_robustness", rows)}


def long_tail(bad: bool) -> dict[str, ItemData]:
    rows = []
    for factor, counts in ((100, "1000/599/359/215/129/77/46/27/16/10"),
                           (50, "1000/647/419/271/175/113/73/47/30/20")):
        if bad:
            counts = "1000/900/800/700/600/500/400/300/200/100"
        for r in acc_rows(not bad):
            rows.append({**r, "imbalance factor": factor, "train counts (head→tail)": counts})
    return {"lesam/table_long_tail": item("lesam/table_long_tail", rows)}


def flatness(bad: bool) -> dict[str, ItemData]:
    rows = []
    for opt, base in (("sgd", 100.0), ("sam", 80.0), ("lesam", 60.0 if not bad else 120.0)):
        for s in range(3):
            jitter = 0.3 * s * s if opt == "lesam" else 0.0  # seeds differ: a spread
            rows.append({"optimizer": opt, "seed": s, "trace": base + s + jitter,
                         "lambda_1": base / 10 + 0.1 * s + 0.1 * jitter, "final_train_loss": 0.5,
                         "final_train_acc": 0.85, "num_classes": 10, **recorded(s, opt)})
    return {"lesam/fig_flatness": item("lesam/fig_flatness", rows)}


def lanczos(bad: bool) -> dict[str, ItemData]:
    """fig_flatness with its Lanczos check: within 1e-4 in every draw, or one draw off."""
    data = flatness(False)
    frame = data["lesam/fig_flatness"].rows
    frame["lanczos_rel_error"] = [3e-3 if bad and s == 2 else 5e-8 for s in frame["seed"]]
    frame["lanczos_draws"] = 3
    return data


def dynamics(bad: bool, epochs: int = 4, first_epoch_sgd: bool = False,
             late_sam: bool = True, sam_gain: float = 0.04, early_lead: float | None = None,
             late_lead: float | None = None) -> dict[str, ItemData]:
    """Per-epoch test accuracy of SGD, SAM and LE-SAM over 3 seeds. LE-SAM leads SAM by 5
    points every epoch (``bad``: trails by 5; ``early_lead``/``late_lead``: its lead over the
    first third / the rest); ``first_epoch_sgd``: in epoch 1 LE-SAM's σ is 0, so it equals
    SGD there, 3 points below SAM; ``late_sam``: SAM gains ``sam_gain`` over SGD only in the
    second half of the epochs."""
    rows = []
    for s in range(3):
        for epoch in range(1, epochs + 1):
            sgd = 0.40 + 0.05 * epoch + 0.01 * s
            sam = sgd + (sam_gain + 0.003 * s * s if epoch > epochs // 2 or not late_sam
                         else 0.0)
            le = sam + (-0.05 if bad else 0.05) + (0.01 if epoch > epochs // 2 else 0.0) \
                + 0.002 * s * s  # the seeds' differences have a spread
            if early_lead is not None and late_lead is not None:
                le = sam + (early_lead if 3 * epoch <= epochs else late_lead) + 0.002 * s * s
            if first_epoch_sgd and epoch == 1:
                sam, le = sgd + 0.03, sgd
            for opt, acc in (("sgd", sgd), ("sam", sam), ("lesam", le)):
                rows.append({"optimizer": opt, "run": f"g-{opt}-s{s}", "epoch": epoch,
                             "test_acc": acc, "train_loss": 0.6, "train_acc": 0.8,
                             **recorded(s, opt)})
    return {"lesam/fig_dynamics": item("lesam/fig_dynamics", rows)}


#: the training record columns of a probe run that trained (fig_signal rows carry them)
RUN_TRAINED = {"final_train_loss": 0.5, "final_train_acc": 0.85, "num_classes": 10}


def signal(bad: bool, seeds: int = 3, record: dict[str, Any] | None = None
           ) -> dict[str, ItemData]:
    """Probe series of ``seeds`` distinct training runs (a ``seed`` column; each run's steps
    offset by its seed), each with its training ``record`` (default: one that trained)."""
    rec = RUN_TRAINED if record is None else record
    rows = []
    for seed, step in ((k, st + k) for k in range(seeds) for st in range(0, 60, 6)):
        rows.append({**rec, **recorded(seed, "sam"), "seed": seed, "optimizer": "sam",
                     "step": step, "g_dot_eps": 0.05,
                     "curvature": 0.02 if bad else 0.001, "sigma": None, "clipped": None,
                     "rise": 0.051, "g_dot_eps_eval": 0.05, "curvature_eval": 0.002,
                     "rise_eval": 0.052 + (0.01 if bad else 1e-4)})
        curv = 0.002
        rows.append({**rec, **recorded(seed, "lesam"), "seed": seed, "optimizer": "lesam",
                     "step": step, "sigma": 0.05,
                     "g_dot_eps": 0.05 * (1.01 if bad else 1.0), "curvature": curv,
                     "clipped": False, "rise": 0.05 + curv + (0.01 if bad else 1e-4),
                     "g_dot_eps_eval": 0.05, "curvature_eval": curv,
                     "rise_eval": 0.05 + curv + (0.01 if bad else 1e-4)})
    return {"lesam/fig_signal": item("lesam/fig_signal", rows)}


def signal_eval(bad: bool) -> dict[str, ItemData]:
    """Probe series with a train-mode residual twice the curvature term for both optimizers,
    gone in eval mode (``bad``: as large in eval mode)."""
    data = signal(False)
    df = data["lesam/fig_signal"].rows
    df["rise"] = df["g_dot_eps"] + 3 * df["curvature"]
    df["rise_eval"] = df["g_dot_eps_eval"] + (3.0 if bad else 1.01) * df["curvature_eval"]
    return data


def cost(bad: bool, sam_rounds: Sequence[float] | None = None) -> dict[str, ItemData]:
    """table_cost with the interleaved timing's per-round ratios (``raw_round_ratios_vs_*``)."""
    sam = list(sam_rounds or ([3.4, 3.5, 3.6] if bad else [1.95, 2.0, 2.05]))
    le = [1.02, 1.0, 0.98]
    text = " ".join(str(x) for x in sam)
    rows = [{"raw_optimizer": "sgd", "raw_ratio_vs_sgd": 1.0, "raw_round_ratios_vs_sgd": "1 1 1",
             "raw_round_ratios_vs_sam": ""},
            {"raw_optimizer": "sam", "raw_ratio_vs_sgd": sam[len(sam) // 2],
             "raw_round_ratios_vs_sgd": text, "raw_round_ratios_vs_sam": "1 1 1"},
            {"raw_optimizer": "lesam", "raw_ratio_vs_sam": 1.0,
             "raw_round_ratios_vs_sgd": "2 2 2",
             "raw_round_ratios_vs_sam": " ".join(str(x) for x in le)}]
    return {"lesam/table_cost": item("lesam/table_cost", rows)}


def ablation(bad: bool, labels: Sequence[str] = ("no_rho_max", "no_anneal"),
             same_as_default: Sequence[str] = ()) -> dict[str, ItemData]:
    good = [60, 61, 60.5]
    worse = [50, 51.2, 50.4] if not bad else [70, 71.3, 70.4]
    rows = [{"variant": "LE-SAM (default)", "label": "lesam", "per_seed": seeds(good),
             "per_seed_train": trained(3)}]
    for lab in labels:
        rows.append({"variant": lab, "label": lab, "per_seed_train": trained(3),
                     "per_seed": seeds(good if lab in same_as_default else worse)})
    return {"lesam/fig_ablation": item("lesam/fig_ablation", rows)}




def cifar_groups(groups: Sequence[str], bad: bool) -> dict[str, ItemData]:
    """table_cifar with LE-SAM ahead of SAM in each of ``groups``, except the last if ``bad``."""
    rows: Rows = []
    for k, group in enumerate(groups):
        rows += acc_rows(not (bad and k == len(groups) - 1), group=group)
    return {"lesam/table_cifar": item("lesam/table_cifar", rows)}


def sota(bad: bool, n: int = 3) -> dict[str, ItemData]:
    """table_cifar whose best LE-SAM network per data set sits on the reported number (97.63,
    85.91), or 2.5 points below it on CIFAR-10 if ``bad``; a weaker ResNet-18 row beside it."""
    rows: Rows = []
    for data, level in (("cifar10", 95.1 if bad else 97.6), ("cifar100", 85.9)):
        values = [level + 0.1 * ((k % 3) - 1) for k in range(n)]
        for net, shift in (("wrn", 0.0), ("resnet18", -2.0)):
            v = [x + shift for x in values]
            rows.append({"group": f"{data}_{net}", "label": "lesam", "mean": sum(v) / n,
                         "per_seed": seeds(v), "per_seed_train": trained(n)})
    return {"lesam/table_cifar": item("lesam/table_cifar", rows)}
