"""Small CSV-shaped fixtures for every predicate of the ledger (one module per paper:
``fixtures_minorfirst``, ``fixtures_lesam``, ``fixtures_eos``; shared helpers in
``fixtures_common``), and :data:`CASES`: per claim, its builder and the verdict when the claim
holds and when it fails."""

from __future__ import annotations

from collections.abc import Callable

from sharpness.claims.model import ItemData
from sharpness.evidence.stats import CONTRADICTED, SUPPORTED
from tests.claims.fixtures_common import Rows, item, proof, recorded, seeds, shares, trained
from tests.claims.fixtures_eos import (
    SETTINGS,
    ablation_rows,
    ablations,
    init_draws,
    measures,
    phase,
    sweep_rows,
    test_vs_lr,
    toy,
    traj_rows,
    trajectories,
)
from tests.claims.fixtures_lesam import (
    RUN_TRAINED,
    ablation,
    acc_rows,
    cifar,
    cifar_all_groups,
    cifar_groups,
    cost,
    dynamics,
    flatness,
    lanczos,
    long_tail,
    robustness,
    signal,
    signal_eval,
    sota,
    table,
)
from tests.claims.fixtures_minorfirst import (
    cnn,
    deep,
    flow,
    gradcam,
    l1,
    limit,
    linf,
    linf_gd,
    multi,
    regimes,
    sequential,
)

#: claim id -> (fixture builder taking ``bad``, verdict when good, verdict when bad)
CASES: dict[str, tuple[Callable[[bool], dict[str, ItemData]], str, str]] = {
    "mf-l1": (l1, SUPPORTED, CONTRADICTED),
    "mf-linf-closed": (linf, SUPPORTED, CONTRADICTED),
    "mf-linf-jstar": (linf, SUPPORTED, CONTRADICTED),
    "mf-linf-init": (linf, SUPPORTED, CONTRADICTED),
    "mf-linf-gd-limit": (linf_gd, SUPPORTED, CONTRADICTED),
    "mf-linf-blowup": (deep, SUPPORTED, CONTRADICTED),
    "mf-l2-sequential": (sequential, SUPPORTED, CONTRADICTED),
    "mf-l2-minor-first": (sequential, SUPPORTED, CONTRADICTED),
    "mf-normalisation": (sequential, SUPPORTED, CONTRADICTED),
    "mf-l2-regimes": (regimes, SUPPORTED, CONTRADICTED),
    "mf-l2-regime-order": (regimes, SUPPORTED, CONTRADICTED),
    "mf-l2-symmetry": (regimes, SUPPORTED, CONTRADICTED),
    "mf-l2-monotone-all": (regimes, SUPPORTED, CONTRADICTED),
    "mf-l2-longer": (regimes, SUPPORTED, CONTRADICTED),
    "mf-l2-limit": (limit, SUPPORTED, CONTRADICTED),
    "mf-deep-l2": (deep, SUPPORTED, CONTRADICTED),
    "mf-multi": (multi, SUPPORTED, CONTRADICTED),
    "mf-cnn": (cnn, SUPPORTED, CONTRADICTED),
    "mf-flow-discrete": (flow, SUPPORTED, CONTRADICTED),
    "mf-gradcam-mnist-l2": (lambda bad: gradcam(-1 if bad else 1), SUPPORTED, CONTRADICTED),
    "mf-gradcam-mnist-linf": (lambda bad: gradcam(-1 if bad else 1), SUPPORTED, CONTRADICTED),
    "mf-gradcam-svhn": (lambda bad: gradcam(-1 if bad else 1), SUPPORTED, CONTRADICTED),
    "mf-gradcam-cifar": (lambda bad: gradcam(-1 if bad else 1), SUPPORTED, CONTRADICTED),
    "ls-cifar10-sam": (cifar, SUPPORTED, CONTRADICTED),
    "ls-cifar10-best": (cifar_all_groups, SUPPORTED, CONTRADICTED),
    "ls-cifar10-wrn": (cifar, SUPPORTED, CONTRADICTED),
    "ls-above-chance": (cifar, SUPPORTED, CONTRADICTED),
    "ls-imagenet-r50": (lambda bad: table("table_imagenet", bad), SUPPORTED, CONTRADICTED),
    "ls-transfer": (lambda bad: table("table_transfer", bad), SUPPORTED, CONTRADICTED),
    "ls-domain": (lambda bad: table("table_domain_gen", bad), SUPPORTED, CONTRADICTED),
    "ls-robust": (robustness, SUPPORTED, CONTRADICTED),
    "ls-pgd-monotone": (robustness, SUPPORTED, CONTRADICTED),
    "ls-longtail": (long_tail, SUPPORTED, CONTRADICTED),
    "ls-lt-profile": (long_tail, SUPPORTED, CONTRADICTED),
    "ls-flatness": (flatness, SUPPORTED, CONTRADICTED),
    "ls-lanczos": (lanczos, SUPPORTED, CONTRADICTED),
    "ls-dynamics": (dynamics, SUPPORTED, CONTRADICTED),
    "ls-late-gain": (dynamics, SUPPORTED, CONTRADICTED),
    "ls-signal-sam": (signal, SUPPORTED, CONTRADICTED),
    "ls-signal-lesam": (signal, SUPPORTED, CONTRADICTED),
    "ls-signal-curvature": (signal, SUPPORTED, CONTRADICTED),
    "ls-signal-curvature-eval": (signal_eval, SUPPORTED, CONTRADICTED),
    "ls-cost": (cost, SUPPORTED, CONTRADICTED),
    "ls-ablation": (ablation, SUPPORTED, CONTRADICTED),
    "eos-toy-numbers": (toy, SUPPORTED, CONTRADICTED),
    "eos-toy-tradeoff": (toy, SUPPORTED, CONTRADICTED),
    "eos-neither-minimiser": (toy, SUPPORTED, CONTRADICTED),
    "eos-band": (phase, SUPPORTED, CONTRADICTED),
    "eos-flat-below": (phase, SUPPORTED, CONTRADICTED),
    "eos-norm-grows": (phase, SUPPORTED, CONTRADICTED),
    "eos-u-shape": (test_vs_lr, SUPPORTED, CONTRADICTED),
    "eos-traj-monotone": (trajectories, SUPPORTED, CONTRADICTED),
    "eos-band-all": (phase, SUPPORTED, CONTRADICTED),
    "eos-flat-below-all": (phase, SUPPORTED, CONTRADICTED),
    "eos-norm-grows-all": (phase, SUPPORTED, CONTRADICTED),
    "eos-u-shape-all": (test_vs_lr, SUPPORTED, CONTRADICTED),
    "eos-traj-monotone-all": (trajectories, SUPPORTED, CONTRADICTED),
    "eos-measures": (measures, SUPPORTED, CONTRADICTED),
    "eos-measures-all": (measures, SUPPORTED, CONTRADICTED),
    "eos-init-eta_c": (init_draws, SUPPORTED, CONTRADICTED),
    "eos-ablations": (ablations, SUPPORTED, CONTRADICTED),
    "eos-ablations-ext": (ablations, SUPPORTED, CONTRADICTED),
}

CASES.update({
    "ls-cifar100": (lambda bad: cifar_groups(("cifar100_resnet18",), bad), SUPPORTED,
                    CONTRADICTED),
    "ls-cifar100-wrn": (lambda bad: cifar_groups(("cifar100_wrn",), bad), SUPPORTED,
                        CONTRADICTED),
    "ls-cifar100-pyramid": (lambda bad: cifar_groups(("cifar100_pyramid",), bad), SUPPORTED,
                            CONTRADICTED),
    "ls-pyramidnet": (lambda bad: cifar_groups(("cifar10_pyramid",), bad), SUPPORTED,
                      CONTRADICTED),
    "ls-sota-numbers": (sota, SUPPORTED, CONTRADICTED),
    "ls-imagenet-r101": (lambda bad: table("table_imagenet", bad, group="imagenet_resnet101"),
                         SUPPORTED, CONTRADICTED),
})

__all__ = ["CASES", "RUN_TRAINED", "Rows", "SETTINGS", "ablation", "ablation_rows", "ablations", "acc_rows", "cifar", "cifar_all_groups", "cifar_groups", "cnn", "cost", "deep", "dynamics", "flatness", "flow", "gradcam", "init_draws", "item", "l1", "lanczos", "limit", "linf", "linf_gd", "long_tail", "measures", "multi", "phase", "proof", "recorded", "regimes", "robustness", "seeds", "sequential", "shares", "signal", "signal_eval", "sota", "sweep_rows", "table", "test_vs_lr", "toy", "trained", "traj_rows", "trajectories"]
