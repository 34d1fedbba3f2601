"""A 2-layer CNN on synthetic patch data with one strong and one weak feature (``cnn_synthetic``).

The diagonal-network theory of the ``minorfirst`` paper says that l2-SAM, from a middle init
scale, amplifies the *minor* (weak) feature first and the major one last, while GD always
learns the major one first. Paper 001 reports the same on a 2-layer CNN with synthetic data;
this module is that experiment at a size that runs in seconds on one CPU core.

Data (:func:`make_patch_data`): each example has ``patches`` patches of dimension ``d``. One
patch carries a feature of the example's class, ``mu_strong * v_strong[y]`` with probability
``p_strong`` or ``mu_weak * v_weak[y]`` otherwise; the other patches are Gaussian noise
(standard deviation ``noise`` per coordinate) orthogonal to all feature vectors. The four
feature vectors (strong/weak for each class) are orthonormal: ``e_1 .. e_4``.

Why one feature vector per class by default and not the common sign-shared feature
(``shared_features=True``: the patch is ``y * mu * v`` with ``v = e_1`` strong, ``e_2`` weak):
with a sign-shared feature, a SAM perturbation that flips the sign of a filter's feature
component turns the filter into a detector of the *other* class's signal, whose gradient grows
the component back (ReLU^2: at a rate proportional to ``|1 - ratio|``), so SAM can slow a feature
but not stall it. With class-specific features a flipped component is simply inactive (no
gradient through the ReLU), the CNN analogue of a diagonal-network coordinate that l2-SAM
shrinks. Measured at the quick setting (rho=0.3, 250 steps): class-specific features give the
diagonal network's three regimes (alpha=0.1 nothing learned, 0.5 weak first, 1.5 strong first;
weak first at 0.5 for each of data/init seeds 0-4). Sign-shared features: SAM delays the strong
feature (alpha=0.5: step 50 against GD's 10) but the weak one at best ties with it (weak 55 vs
strong 50 with seed 0; weak first by 5-15 steps at alpha 0.3-0.5 in another draw), and from a
small init SAM learns the strong feature first. The choice is a setting, recorded in the
caption and provenance.

Model (:class:`PatchCNN`): ``f(x) = sum_j a_j sum_p relu(<w_j, x_p>)^q``, ``2 m`` filters, the
second layer fixed at ``a_j = +1/m`` (filters ``0..m-1``, class +1) and ``-1/m`` (class -1),
first-layer init ``w_j ~ alpha * N(0, I/d)``; the filters are one ``torch.nn.functional.conv1d``
with kernel size and stride ``d`` over the concatenated patches. Loss: mean logistic loss,
full batch; optimizers from :func:`sharpness.optim.build_optimizer` (``sgd`` without momentum
or weight decay is plain GD, ``sam`` l2-SAM, ``sam_linf`` l_inf-SAM).

Alignment of the filters with a feature: for each class, the largest ``<w_j, v_k[c]>`` over the
filters whose second-layer sign is that class's label, averaged over the two classes.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from sharpness.optim import build_optimizer
from sharpness.runs.state import divergence, progressed

FEATURES = ("strong", "weak")


@dataclass(frozen=True)
class PatchData:
    """Synthetic patch data: ``x`` (n, patches, d), labels ``y`` in {-1, +1}, ``strong`` (n,) bool.

    ``features[c, k]`` is the unit feature vector of class ``c`` (0: y=+1, 1: y=-1) and kind
    ``k`` (0: strong, 1: weak).
    """

    x: Tensor
    y: Tensor
    strong: Tensor
    features: Tensor


def make_patch_data(n: int, d: int, patches: int, mu_strong: float, mu_weak: float,
                    p_strong: float, noise: float, seed: int = 0, shared_features: bool = False) -> PatchData:
    """Draw ``n`` examples of the strong/weak feature patch model (see the module docstring).

    ``shared_features``: the feature patch is ``y * mu * v`` (one strong and one weak direction
    for both classes) instead of ``mu * v[y]`` (a strong and a weak direction per class).
    """
    if d < 5 or patches < 1:
        raise ValueError(f"need d >= 5 (four feature directions and noise) and patches >= 1, got d={d}, patches={patches}")
    g = torch.Generator().manual_seed(int(seed))
    y = torch.where(torch.rand(n, generator=g) < 0.5, 1.0, -1.0)
    strong = torch.rand(n, generator=g) < p_strong
    x = noise * torch.randn(n, patches, d, generator=g, dtype=torch.float64)
    x[:, :, :4] = 0.0  # noise is orthogonal to the four feature directions
    pos = torch.randint(0, patches, (n,), generator=g)
    rows = torch.arange(n)
    x[rows, pos] = 0.0
    cls = (y < 0).long()  # class index: 0 for y=+1, 1 for y=-1
    amp = torch.where(strong, mu_strong, mu_weak).to(x.dtype)
    features = torch.zeros(2, 2, d, dtype=torch.float64)
    if shared_features:  # e_1 strong, e_2 weak, times the label
        x[rows, pos, (~strong).long()] = y.to(x.dtype) * amp
        for c in range(2):
            features[c, 0, 0] = features[c, 1, 1] = 1.0 if c == 0 else -1.0
    else:  # e_1: strong(+1), e_2: weak(+1), e_3: strong(-1), e_4: weak(-1)
        x[rows, pos, 2 * cls + (~strong).long()] = amp
        for c in range(2):
            for k in range(2):
                features[c, k, 2 * c + k] = 1.0
    return PatchData(x=x.float(), y=y.float(), strong=strong, features=features.float())


class PatchCNN(nn.Module):
    """``f(x) = sum_j a_j sum_p relu(<w_j, x_p>)^power`` with a fixed second layer ``a = +-1/m``.

    ``width`` filters per class (``2 * width`` in all); ``w_j ~ alpha * N(0, I/d)`` from ``seed``.
    """

    def __init__(self, d: int, width: int, power: int, alpha: float, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(int(seed))
        self.d = d
        self.power = power
        self.weight = nn.Parameter(alpha * torch.randn(2 * width, d, generator=g) / math.sqrt(d))
        signs = torch.cat([torch.ones(width), -torch.ones(width)])
        self.register_buffer("signs", signs)
        self.register_buffer("second", signs / width)

    def forward(self, x: Tensor) -> Tensor:
        """Outputs (n,) for patches ``x`` (n, P, d): one conv1d with kernel = stride = d."""
        n, p, d = x.shape
        z = F.conv1d(x.reshape(n, 1, p * d), self.weight.unsqueeze(1), stride=d)  # (n, 2m, P)
        return (F.relu(z) ** self.power).sum(-1) @ self.second

    @torch.no_grad()
    def alignment(self, features: Tensor) -> Tensor:
        """(2,) alignment with the strong and the weak feature (mean over classes of the best filter)."""
        dots = self.weight @ features.reshape(4, -1).T  # (2m, 4): class-major, kind-minor (signed directions)
        pos = dots[self.signs > 0].max(0).values.reshape(2, 2)[0]  # class +1 filters on class +1 features
        neg = dots[self.signs < 0].max(0).values.reshape(2, 2)[1]
        return 0.5 * (pos + neg)


@dataclass(frozen=True)
class Trajectory:
    """One training run: recorded ``steps`` (T,), ``align`` (T, 2) strong/weak, ``loss`` (T,),
    accuracy on strong-feature and weak-feature examples ``acc`` (T, 2); ``status``."""

    steps: np.ndarray
    align: np.ndarray
    loss: np.ndarray
    acc: np.ndarray
    status: str
    draw: dict[str, str] | None = None  # the run's fingerprints (:func:`draw_record`)


def _sha256(*tensors: Tensor) -> str:
    """SHA-256 of the tensors' bytes, in order (each flattened, on the CPU)."""
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def draw_record(model: nn.Module, data: PatchData, seed: int) -> dict[str, str]:
    """What identifies a run's draw, taken before its first step: the SHA-256 of its initial
    weights (every tensor of the state dict, in key order) and of its data order (training is
    full batch, so the order is the data draw itself: ``x`` and ``y``), and ``run_id``, a
    fingerprint of both with the seed. The run summary carries them into the job's signed
    record and the figure's rows; the claims ledger counts two draws as independent only
    when they differ (:mod:`sharpness.claims.independence`)."""
    state = model.state_dict()
    init = _sha256(*(state[k] for k in sorted(state)))
    order = _sha256(data.x, data.y)
    run = hashlib.sha256(f"{int(seed)}/{init}/{order}".encode()).hexdigest()[:16]
    return {"init_sha256": init, "order_sha256": order, "run_id": run}


def train_patch_cnn(data: PatchData, optimizer: str, hparams: dict[str, Any], *, alpha: float,
                    width: int, power: int, lr: float, steps: int, record_every: int,
                    seed: int = 0) -> Trajectory:
    """Full-batch training of :class:`PatchCNN` with ``optimizer`` (a :data:`sharpness.optim.OPTIMIZERS` name).

    The base step is plain gradient descent (no momentum, no weight decay), so ``sgd`` is GD
    and ``sam``/``sam_linf`` are l2-/l_inf-SAM with ``hparams`` (e.g. ``{"rho": 0.1}``). A
    recorded loss that :func:`sharpness.runs.state.divergence` calls a divergence (NaN/inf, or
    a blow-up over its initial loss) stops the run with status ``diverged``.
    """
    model = PatchCNN(data.x.shape[-1], width, power, alpha, seed)
    draw = draw_record(model, data, seed)
    opt = build_optimizer(optimizer, model, lr=lr, momentum=0.0, weight_decay=0.0, seed=seed, **hparams)
    x, y = data.x, data.y

    def closure() -> Tensor:
        loss = F.softplus(-y * model(x)).mean()
        loss.backward()
        return loss

    rec_t, rec_a, rec_l, rec_acc = [], [], [], []
    status = "ok"
    for t in range(steps + 1):
        if t % record_every == 0 or t == steps:
            progressed()  # the run's heartbeat (sharpness.runs.state)
            with torch.no_grad():
                margin = y * model(x)
                rec_t.append(t)
                rec_a.append(model.alignment(data.features).numpy())
                rec_l.append(float(F.softplus(-margin).mean()))
                correct = (margin > 0).float()
                rec_acc.append([float(correct[data.strong].mean()), float(correct[~data.strong].mean())])
            if divergence(rec_l[-1], rec_l[0]) is not None:  # the one rule (runs.state)
                status = "diverged"
                break
        if t < steps:
            opt.step(closure)
    return Trajectory(np.asarray(rec_t), np.asarray(rec_a), np.asarray(rec_l), np.asarray(rec_acc), status,
                      draw)


def first_aligned(steps: np.ndarray, align: np.ndarray, gain: float) -> dict[str, Any]:
    """Which feature the filters align with first: the first to gain ``gain`` over its init value.

    Returns the step at which each feature's alignment first reaches ``align[0] + gain`` (None
    if never) and ``first``: ``"strong"``, ``"weak"``, ``"tie"`` (same recorded step) or
    ``"neither"``.
    """
    reached = align - align[0] >= gain
    when = [int(steps[np.argmax(reached[:, k])]) if reached[:, k].any() else None for k in range(2)]
    if when[0] is None and when[1] is None:
        first = "neither"
    elif when[1] is None or (when[0] is not None and when[0] < when[1]):
        first = "strong"
    elif when[0] is None or when[1] < when[0]:
        first = "weak"
    else:
        first = "tie"
    return {"step_strong": when[0], "step_weak": when[1], "first": first}


def cnn_seeds(p: dict[str, Any]) -> list[int]:
    """The data/init draws of the CNN item: ``seeds`` (the first drawn in every panel, the
    others at the middle init only, for the claims ledger's independent runs), else the one
    ``seed`` (default 0)."""
    return [int(s) for s in (p.get("seeds") or [p.get("seed", 0)])]


def compute_cnn_synthetic(p: dict[str, Any], threads: int = 1) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Train the CNN under every optimizer of ``p["optimizers"]`` from every init in ``p["alphas"]``.

    Returns arrays ``<opt>_steps`` (T,), ``<opt>_align`` (A, T, 2), ``<opt>_loss`` (A, T),
    ``<opt>_acc`` (A, T, 2) and a summary with, per run, which feature was aligned first
    (:func:`first_aligned` with ``p["gain"]``), and the catalog check evaluated at the middle init
    ``alphas[len(alphas) // 2]``: SAM (l2) weak first and GD strong first. Every further
    seed of :func:`cnn_seeds` draws new data and a new init and trains each optimizer at the
    middle init: ``seed<s>_<opt>_steps`` / ``seed<s>_<opt>_align`` and ``replicates`` in the
    summary.
    """
    torch.set_num_threads(max(1, int(threads)))
    seeds = cnn_seeds(p)
    data = make_patch_data(p["n"], p["d"], p["patches"], p["mu_strong"], p["mu_weak"],
                           p["p_strong"], p["noise"], seeds[0], p.get("shared_features", False))
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {"runs": [], "features": list(FEATURES),
                               "n_strong": int(data.strong.sum()), "n_weak": int((~data.strong).sum())}
    for name, hp in p["optimizers"].items():
        trajs = [train_patch_cnn(data, name, hp, alpha=a, width=p["width"], power=p["power"], lr=p["lr"],
                                 steps=p["steps"], record_every=p["record_every"], seed=seeds[0])
                 for a in p["alphas"]]
        t_max = max(len(tr.steps) for tr in trajs)

        def pad(v: np.ndarray, t_max: int = t_max) -> np.ndarray:
            return np.concatenate([v, np.full((t_max - len(v), *v.shape[1:]), np.nan)]) if len(v) < t_max else v

        arrays[f"{name}_steps"] = next(tr.steps for tr in trajs if len(tr.steps) == t_max)
        arrays[f"{name}_align"] = np.stack([pad(tr.align) for tr in trajs])
        arrays[f"{name}_loss"] = np.stack([pad(tr.loss) for tr in trajs])
        arrays[f"{name}_acc"] = np.stack([pad(tr.acc) for tr in trajs])
        for a, tr in zip(p["alphas"], trajs, strict=True):
            order = first_aligned(tr.steps, tr.align, p["gain"])
            summary["runs"].append({"optimizer": name, "alpha": a, **hp, **order, "status": tr.status,
                                    **(tr.draw or {}),
                                    "final_loss": float(tr.loss[-1]),
                                    "final_align": [float(v) for v in tr.align[-1]],
                                    "final_acc": [float(v) for v in tr.acc[-1]]})
    mid = p["alphas"][len(p["alphas"]) // 2]
    summary["seeds"] = seeds
    summary["replicates"] = []
    for seed in seeds[1:]:  # the other data/init draws, at the middle init only
        rep = make_patch_data(p["n"], p["d"], p["patches"], p["mu_strong"], p["mu_weak"],
                              p["p_strong"], p["noise"], seed, p.get("shared_features", False))
        for name, hp in p["optimizers"].items():
            tr = train_patch_cnn(rep, name, hp, alpha=mid, width=p["width"], power=p["power"],
                                 lr=p["lr"], steps=p["steps"], record_every=p["record_every"],
                                 seed=seed)
            arrays[f"seed{seed}_{name}_steps"] = tr.steps
            arrays[f"seed{seed}_{name}_align"] = tr.align
            summary["replicates"].append({"seed": seed, "optimizer": name, "alpha": mid,
                                          **first_aligned(tr.steps, tr.align, p["gain"]),
                                          "status": tr.status, **(tr.draw or {})})
    firsts = {r["optimizer"]: r["first"] for r in summary["runs"] if r["alpha"] == mid}
    summary["middle_alpha"] = mid
    summary["middle_first"] = firsts
    summary["check_sam_weak_first"] = firsts.get("sam") == "weak"
    summary["check_gd_strong_first"] = firsts.get("sgd") == "strong"
    summary["catalog_check_holds"] = summary["check_sam_weak_first"] and summary["check_gd_strong_first"]
    return arrays, summary
