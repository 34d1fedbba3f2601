"""GLMC (Du et al., "Global and Local Mixture Consistency Cumulative Learning for Long-tailed
Visual Recognitions", CVPR 2023), small and faithful, with any optimizer of
:mod:`sharpness.optim` (so GLMC, GLMC+SAM and GLMC+LE-SAM share one code path).

What is implemented (read from the paper's description and the public reference code; not
copied):

* two samplers per step: an instance-balanced batch (uniform over the long-tailed train set)
  and a class-balanced batch (probability of an example proportional to ``1 / n_c``);
* each batch is augmented twice (random crop + flip); with ``lam ~ Beta(beta, beta)`` the
  *global* mixture is MixUp of the first views, ``lam * x_ib + (1 - lam) * x_cb``, and the
  *local* mixture is CutMix of the second views (a box of area ``1 - lam`` from the
  class-balanced image); both get the soft label ``lam * y_ib + (1 - lam) * y_cb``;
* the network is a backbone with two linear classifiers (a conventional head and a
  re-balanced head), a linear projection head and a linear prediction head (as in the
  reference code); the *mixture consistency* loss is
  SimSiam's negative cosine between the prediction of one mixture and the stop-gradient
  projection of the other, symmetrised;
* the *cumulative head-tail soft-label re-weighted* loss: the re-balanced head is trained on
  soft labels multiplied by class weights ``w_c ∝ n_c^-k`` (normalised to mean 1, ``k`` =
  ``label_weighting``), the conventional head on the plain soft labels, and the two are mixed
  by ``alpha = 1 - (epoch / epochs)^2``, which moves from the conventional to the re-balanced
  loss as training proceeds:
  ``L = alpha (CE_mix + CE_cut) + (1 - alpha) (CE^w_mix + CE^w_cut) + lambda_c L_consistency``;
* prediction uses the re-balanced head, as the reference code does. Because the cumulative
  weight ``1 - alpha`` of that head's loss is near 0 for most of a short run, very short
  runs predict poorly with it (the quick profile trains long enough for it to matter).

Scaled down: any backbone of :mod:`sharpness.models` with a final ``fc`` (ResNets, WRN,
PyramidNet, the small CNN) or ViT ``heads``; the learning-rate warm-up of the reference code is
replaced by the engine's cosine schedule.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sharpness.cache import cache_key, claim_dir
from sharpness.data.longtail import longtail_indices
from sharpness.device import resolve_device
from sharpness.io import (
    append_jsonl,
    atomic_torch_save,
    atomic_write_json,
    atomic_write_text,
    read_json,
)
from sharpness.optim import build_optimizer
from sharpness.provenance import PROVENANCE_NAME, RunRecord
from sharpness.train import augment_batch, lr_at, validate_config
from sharpness.train.checkpoint import restore_rng_states, rng_states, safe_load
from sharpness.train.data_prep import prepare_data
from sharpness.train.model_io import InputNormalization
from sharpness.train.status import diverged_fields, is_diverged, record_final

GLMC_FILES = ("final.json", "metrics.jsonl", "checkpoint.pt", PROVENANCE_NAME)
GLMC_DEFAULTS: dict[str, Any] = {"imbalance_factor": 100, "beta": 1.0, "label_weighting": 1.0,
                                 "contrast_weight": 1.0, "proj_dim": 64, "lt_seed": 0}


def _detach_head(net: nn.Module) -> int:
    """Replace the classifier of ``net`` by the identity; return the feature dimension."""
    if isinstance(getattr(net, "fc", None), nn.Linear):
        dim = net.fc.in_features
        net.fc = nn.Identity()
        return dim
    if hasattr(net, "heads"):  # torchvision VisionTransformer
        dim = net.hidden_dim
        net.heads = nn.Identity()
        return dim
    raise ValueError(f"GLMC needs a backbone with a final `fc` or ViT `heads`, got "
                     f"{type(net).__name__}")


class GLMCNet(nn.Module):
    """Backbone + conventional head ``fc`` + re-balanced head ``fc_cb`` + projector/predictor.

    ``forward(x)`` returns the re-balanced head's logits (inference); :meth:`train_outputs`
    returns ``(logits, logits_cb, z, p)``.
    """

    def __init__(self, backbone: nn.Module, num_classes: int, proj_dim: int) -> None:
        super().__init__()
        self.backbone = backbone
        dim = _detach_head(backbone)
        self.fc = nn.Linear(dim, num_classes)
        self.fc_cb = nn.Linear(dim, num_classes)
        self.projector = nn.Linear(dim, proj_dim)
        self.predictor = nn.Linear(proj_dim, proj_dim)

    def train_outputs(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Both heads' logits, the projection ``z`` and the prediction ``p``."""
        h = self.backbone(x)
        z = self.projector(h)
        return self.fc(h), self.fc_cb(h), z, self.predictor(z)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of the re-balanced head."""
        return self.fc_cb(self.backbone(x))


def class_weights(counts: list[int], power: float) -> Tensor:
    """``w_c ∝ n_c^-power``, normalised so that the weights average to 1."""
    w = 1.0 / np.asarray(counts, dtype=np.float64) ** power
    return torch.tensor(w / w.sum() * len(counts), dtype=torch.float32)


def cutmix_box(height: int, width: int, lam: float, rng: np.random.Generator
               ) -> tuple[int, int, int, int]:
    """A box of area about ``(1 - lam) * H * W`` centred uniformly (clipped at the border)."""
    ratio = math.sqrt(1.0 - lam)
    ch, cw = int(math.ceil(height * ratio)), int(math.ceil(width * ratio))
    cy, cx = int(rng.integers(height)), int(rng.integers(width))
    return (max(cy - ch // 2, 0), min(cy + ch // 2, height),
            max(cx - cw // 2, 0), min(cx + cw // 2, width))


def soft_cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """``-mean_i sum_c target_ic log softmax(logits)_ic`` (soft or weighted labels)."""
    return -(F.log_softmax(logits.float(), dim=1) * target).sum(dim=1).mean()


def consistency_loss(p: Tensor, z: Tensor) -> Tensor:
    """SimSiam's negative cosine similarity with a stop-gradient on ``z``."""
    return -F.cosine_similarity(p, z.detach(), dim=-1).mean()


def run_glmc(config: dict[str, Any], out_dir: str | os.PathLike[str], *,
             threads: int | None = None) -> dict[str, Any]:
    """Train GLMC (with the config's optimizer) on a long-tailed subset; write ``final.json``.

    ``config`` holds training-run keys plus ``glmc`` (keys of :data:`GLMC_DEFAULTS`). Status
    as the training engine's (:mod:`sharpness.train.status`): a NaN/inf loss (or one above
    ``diverge_loss``) stops the run as ``diverged`` with its step, an exception is recorded as
    ``failed``. The run folder is keyed (:mod:`sharpness.cache`): a finished run of the same
    key is returned as is, a killed one resumes from its last epoch checkpoint.
    """
    if threads:
        torch.set_num_threads(threads)
    config = dict(config)
    settings = {**GLMC_DEFAULTS, **config.pop("glmc", {})}
    cfg = validate_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(cfg["device"])  # a missing requested device is an error
    key = cache_key("lesam_glmc", {"config": cfg, "glmc": settings, "device": device.type},
                    ["sharpness.lesam.glmc"])
    if claim_dir(out, key, stale=GLMC_FILES, what="GLMC run") and (out / "final.json").exists():
        return read_json(out / "final.json")
    torch.manual_seed(cfg["seed"])
    full = prepare_data(cfg, device)
    keep, counts = longtail_indices(full.y_train.cpu(), settings["imbalance_factor"],
                                    seed=settings["lt_seed"])
    keep = keep.to(device)
    x_train, y_train = full.x_train[keep], full.y_train[keep]
    num_classes = full.num_classes
    from sharpness.models import build_model

    torch.manual_seed(cfg["seed"])
    c, h = x_train.shape[1], x_train.shape[2]
    backbone = build_model(cfg["model"], num_classes, c, h, width=cfg["width"],
                           **cfg["model_kwargs"])
    xd = x_train.double()
    mean = xd.mean(dim=(0, 2, 3)).float()
    std = xd.std(dim=(0, 2, 3)).clamp_min(1e-6).float()
    model = InputNormalization(GLMCNet(backbone, num_classes, settings["proj_dim"]),
                               mean, std).to(device)
    glmc: GLMCNet = model.net  # type: ignore[assignment]
    n = len(x_train)
    bs = min(cfg["batch_size"], n)
    steps_per_epoch = -(-n // bs)
    total = steps_per_epoch * cfg["epochs"]
    opt = build_optimizer(cfg["optimizer"], model, lr=cfg["lr"], momentum=cfg["momentum"],
                          weight_decay=cfg["weight_decay"], nesterov=cfg["nesterov"],
                          total_steps=total, steps_per_epoch=steps_per_epoch,
                          seed=cfg["seed"], **cfg["opt_hparams"])
    gen = torch.Generator().manual_seed(cfg["seed"] + 1)
    rng = np.random.default_rng(cfg["seed"] + 2)
    weights = class_weights(counts, settings["label_weighting"]).to(device)
    sample_p = (1.0 / torch.tensor(counts, dtype=torch.float64))[y_train.cpu()]
    aug = cfg["augment"]
    fill = model.mean.view(-1)
    eye = torch.eye(num_classes, device=device)

    def views(x: Tensor) -> tuple[Tensor, Tensor]:
        return tuple(augment_batch(x, crop=aug["crop"], flip=aug["flip"], cutout=aug["cutout"],
                                   generator=gen, fill=fill) for _ in range(2))  # type: ignore

    metrics = out / "metrics.jsonl"
    checkpoint = out / "checkpoint.pt"
    t0 = time.perf_counter()
    step, start_epoch, rows = 0, 0, 0
    if checkpoint.exists():  # same key (claim_dir removed any other): resume
        state = safe_load(checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["data_generator"])
        rng.bit_generator.state = json.loads(state["numpy_generator"])
        restore_rng_states(state)
        step, start_epoch, rows = state["step"], state["epoch"], state["rows_written"]
    lines = metrics.read_text().splitlines(keepends=True) if metrics.exists() else []
    atomic_write_text(metrics, "".join(lines[:rows]))
    stop: dict[str, Any] | None = None
    with RunRecord(out, params={**cfg, "glmc": settings}, seed=cfg["seed"],
                   data=[{**full.info, "longtail_counts": counts}],
                   stand_ins=cfg["stand_ins"]) as record:
        record.update(resumed_from_step=step if start_epoch else None,
                      device_used=str(device))
        for epoch in range(start_epoch, cfg["epochs"]):
            alpha = 1.0 - (epoch / cfg["epochs"]) ** 2
            model.train()
            perm = torch.randperm(n, generator=gen).to(device)
            loss_sum = 0.0
            for b in range(steps_per_epoch):
                idx = perm[b * bs:(b + 1) * bs]
                cb = torch.multinomial(sample_p, len(idx), replacement=True,
                                       generator=gen).to(device)
                org1, org2 = views(x_train[idx])
                inv1, inv2 = views(x_train[cb])
                y_org, y_inv = eye[y_train[idx]], eye[y_train[cb]]
                lam = float(rng.beta(settings["beta"], settings["beta"]))
                mix_x = lam * org1 + (1 - lam) * inv1
                y1, y2, x1, x2 = cutmix_box(org2.shape[2], org2.shape[3], lam, rng)
                cut_x = org2.clone()
                cut_x[:, :, y1:y2, x1:x2] = inv2[:, :, y1:y2, x1:x2]
                soft = lam * y_org + (1 - lam) * y_inv
                soft_w = lam * y_org * weights + (1 - lam) * y_inv * weights

                calls = [0]

                def closure(mix_x: Tensor = mix_x, cut_x: Tensor = cut_x, soft: Tensor = soft,
                            soft_w: Tensor = soft_w, alpha: float = alpha,
                            calls: list[int] = calls) -> Tensor:
                    o1, c1, z1, p1 = glmc.train_outputs((mix_x - model.mean) / model.std)
                    o2, c2, z2, p2 = glmc.train_outputs((cut_x - model.mean) / model.std)
                    balance = soft_cross_entropy(o1, soft) + soft_cross_entropy(o2, soft)
                    rebalance = soft_cross_entropy(c1, soft_w) + soft_cross_entropy(c2, soft_w)
                    contrast = consistency_loss(p1, z2) + consistency_loss(p2, z1)
                    loss = (alpha * balance + (1 - alpha) * rebalance
                            + settings["contrast_weight"] * contrast)
                    calls[0] += 1
                    if calls[0] == 1 and is_diverged(float(loss.detach()), cfg["diverge_loss"]):
                        raise _Diverged(float(loss.detach()))  # before any parameter moves
                    loss.backward()
                    return loss.detach()

                for group in opt.param_groups:
                    group["lr"] = lr_at(cfg, step, total)
                try:
                    loss_sum += float(opt.step(closure))
                except _Diverged as div:
                    stop = diverged_fields(step, div.loss)
                    append_jsonl(metrics, {"kind": "diverged", "epoch": epoch, "step": step,
                                           "loss": stop["diverged_loss"]})
                    break
                step += 1
            if stop is not None:
                break
            acc, per_class = _evaluate(model, full.x_test, full.y_test, num_classes)
            append_jsonl(metrics, {"epoch": epoch + 1, "step": step, "alpha": alpha,
                                   "train_loss": loss_sum / steps_per_epoch, "test_acc": acc})
            rows += 1
            if cfg["checkpoint_every"] and (epoch + 1) % cfg["checkpoint_every"] == 0:
                atomic_torch_save(checkpoint, {
                    "model": model.state_dict(), "optimizer": opt.state_dict(),
                    "data_generator": gen.get_state(),
                    "numpy_generator": json.dumps(rng.bit_generator.state),
                    **rng_states(), "step": step, "epoch": epoch + 1, "rows_written": rows})
        acc, per_class = _evaluate(model, full.x_test, full.y_test, num_classes)
        final = {**(stop or {"status": "ok", "reason": "completed"}), "final_test_acc": acc,
                 "per_class_acc": per_class, "train_counts": counts, "n_train": n,
                 "steps": step, "imbalance_factor": settings["imbalance_factor"],
                 "optimizer": cfg["optimizer"], "seed": cfg["seed"]}
        record.update(final_test_acc=acc, wall_s=round(time.perf_counter() - t0, 3))
        record_final(record, final)
        atomic_write_json(out / "final.json", final)
        checkpoint.unlink(missing_ok=True)  # finished: never resumed again
    return final


class _Diverged(Exception):  # noqa: N818 - control flow, not an error
    """Raised in the closure's first pass when the loss counts as divergence."""

    def __init__(self, loss: float) -> None:
        super().__init__(loss)
        self.loss = loss


@torch.no_grad()
def _evaluate(model: nn.Module, x: Tensor, y: Tensor, num_classes: int
              ) -> tuple[float, list[float]]:
    model.eval()
    pred = torch.cat([model(x[i:i + 500]).argmax(1) for i in range(0, len(x), 500)])
    model.train()
    correct = (pred == y).float()
    per_class = [float(correct[y == c].mean()) if bool((y == c).any()) else float("nan")
                 for c in range(num_classes)]
    return float(correct.mean()), per_class
