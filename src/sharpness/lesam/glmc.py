"""GLMC (Du et al., "Global and Local Mixture Consistency Cumulative Learning for Long-tailed
Visual Recognitions", CVPR 2023), small and faithful, with any optimizer of
:mod:`sharpness.optim` (so GLMC, GLMC+SAM and GLMC+LE-SAM share one code path).

What is implemented (read from the paper's description and the public reference code; not
copied):

* two samplers per step: an instance-balanced batch (uniform over the long-tailed train set)
  and a re-sampled batch, an example of class ``c`` drawn with probability proportional to
  ``n_c^-q`` (``q = resample_weighting``, as the reference code's ``WeightedRandomSampler``:
  0 is uniform, 1 class-balanced);
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
PyramidNet, the small CNN) or ViT ``heads``. The learning rate follows the run's schedule; the
reference code's ``Trainer.py`` steps ``CosineAnnealingLR(T_max=epochs)`` once per epoch on
CIFAR (its 10-epoch warm-up, ``paco_adjust_learning_rate``, runs for ImageNet-LT and
iNaturalist only), which is the paper profile's ``cosine_epoch``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sharpness.data.longtail import longtail_indices
from sharpness.mappings import deep_merge
from sharpness.train import TrainHooks, augment_batch, train
from sharpness.train.augment import CUTOUT_P
from sharpness.train.data_prep import PreparedData

GLMC_DEFAULTS: dict[str, Any] = {"imbalance_factor": 100, "beta": 1.0, "label_weighting": 1.0,
                                 "contrast_weight": 1.0, "resample_weighting": 1.0,
                                 "proj_dim": 64, "lt_seed": 0}


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


@dataclass
class GLMCBatch:
    """One GLMC step's inputs: the MixUp and CutMix images and their two soft-label sets."""

    mix_x: Tensor
    cut_x: Tensor
    soft: Tensor
    soft_w: Tensor


class GLMCBatches:
    """The two samplers, the two augmented views and the mixtures, step by step.

    Draw order per epoch: a permutation (``run.gen``); per step the class-balanced indices
    and four augmentations (``run.gen``), then ``lam`` and the CutMix box from its own NumPy
    generator (``seed + 2``, checkpointed through :meth:`state_dict`)."""

    kind = "glmc"

    def __init__(self, run: Any, settings: dict[str, Any], counts: list[int]) -> None:
        self.run = run
        self.settings = settings
        self.rng = np.random.default_rng(run.cfg["seed"] + 2)
        self.sample_p = torch.tensor(counts, dtype=torch.float64).pow(
            -float(settings["resample_weighting"]))[run.data.y_train.cpu()]
        self.weights = class_weights(counts, settings["label_weighting"]).to(run.device)
        self.eye = torch.eye(run.data.num_classes, device=run.device)
        self.fill = run.model.mean.view(-1)

    def _views(self, x: Tensor) -> tuple[Tensor, Tensor]:
        aug = self.run.cfg["augment"]
        return tuple(augment_batch(x, crop=aug["crop"], flip=aug["flip"], cutout=aug["cutout"],
                                   generator=self.run.gen, fill=self.fill,
                                   cutout_p=aug.get("cutout_p", CUTOUT_P))
                     for _ in range(2))  # type: ignore[return-value]

    def epoch(self) -> Iterator[tuple[GLMCBatch, Tensor]]:
        """The steps of one epoch: a :class:`GLMCBatch` and the instance-balanced labels."""
        run = self.run
        x_train, y_train = run.data.x_train, run.data.y_train
        n = len(x_train)
        bs = min(run.cfg["batch_size"], n)
        gen, rng, beta = run.gen, self.rng, self.settings["beta"]
        perm = torch.randperm(n, generator=gen).to(run.device)
        for b in range(run.steps_per_epoch):
            idx = perm[b * bs:(b + 1) * bs]
            cb = torch.multinomial(self.sample_p, len(idx), replacement=True,
                                   generator=gen).to(run.device)
            org1, org2 = self._views(x_train[idx])
            inv1, inv2 = self._views(x_train[cb])
            y_org, y_inv = self.eye[y_train[idx]], self.eye[y_train[cb]]
            lam = float(rng.beta(beta, beta))
            mix_x = lam * org1 + (1 - lam) * inv1
            y1, y2, x1, x2 = cutmix_box(org2.shape[2], org2.shape[3], lam, rng)
            cut_x = org2.clone()
            cut_x[:, :, y1:y2, x1:x2] = inv2[:, :, y1:y2, x1:x2]
            soft = lam * y_org + (1 - lam) * y_inv
            soft_w = lam * y_org * self.weights + (1 - lam) * y_inv * self.weights
            yield GLMCBatch(mix_x, cut_x, soft, soft_w), y_train[idx]

    def state_dict(self) -> dict[str, Any]:
        """The NumPy generator's state (a string: checkpoints hold plain values only)."""
        return {"numpy_generator": json.dumps(self.rng.bit_generator.state)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.rng.bit_generator.state = json.loads(state["numpy_generator"])


class GLMCMethod:
    """GLMC as hooks of the training engine (:class:`sharpness.train.TrainHooks`): the
    long-tailed subset, the two-headed network, the batches, the loss, the epoch's ``alpha``
    and the per-class accuracies of ``final.json``."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.counts: list[int] = []

    def hooks(self) -> TrainHooks:
        """The engine hooks of this method (its settings go into the cache key)."""
        return TrainHooks(data=self.data, wrap_net=self.wrap_net, batches=self.batches,
                          closure=self.closure, on_epoch_end=self.on_epoch_end,
                          on_finish=self.on_finish, settings={"glmc": self.settings})

    def data(self, cfg: dict[str, Any], full: PreparedData) -> PreparedData:
        """The long-tailed subset of the training set (the test set stays balanced)."""
        keep, self.counts = longtail_indices(full.y_train.cpu(),
                                             self.settings["imbalance_factor"],
                                             seed=self.settings["lt_seed"])
        keep = keep.to(full.x_train.device)
        info = {**full.info, "longtail_counts": self.counts, "n_train": len(keep)}
        return PreparedData(full.x_train[keep], full.y_train[keep], full.x_test, full.y_test,
                            full.num_classes, info)

    def wrap_net(self, backbone: nn.Module, num_classes: int) -> nn.Module:
        """The backbone with GLMC's two heads, projector and predictor."""
        return GLMCNet(backbone, num_classes, self.settings["proj_dim"])

    def batches(self, run: Any) -> GLMCBatches:
        """GLMC's batch source over the run's (long-tailed) training set."""
        return GLMCBatches(run, self.settings, self.counts)

    def closure(self, run: Any, batch: GLMCBatch, labels: Tensor) -> Callable[[], Tensor]:
        """The GLMC loss of one step (backward inside), with this epoch's ``alpha``."""
        model = run.model
        glmc: GLMCNet = model.net
        alpha = 1.0 - (run.epoch / run.cfg["epochs"]) ** 2
        weight = self.settings["contrast_weight"]

        def closure() -> Tensor:
            o1, c1, z1, p1 = glmc.train_outputs((batch.mix_x - model.mean) / model.std)
            o2, c2, z2, p2 = glmc.train_outputs((batch.cut_x - model.mean) / model.std)
            balance = soft_cross_entropy(o1, batch.soft) + soft_cross_entropy(o2, batch.soft)
            rebalance = (soft_cross_entropy(c1, batch.soft_w)
                         + soft_cross_entropy(c2, batch.soft_w))
            contrast = consistency_loss(p1, z2) + consistency_loss(p2, z1)
            loss = alpha * balance + (1 - alpha) * rebalance + weight * contrast
            loss.backward()
            return loss.detach()
        return closure

    def on_epoch_end(self, run: Any, row: dict[str, Any]) -> None:
        """The cumulative weight ``alpha`` of the epoch just finished."""
        row["alpha"] = 1.0 - ((run.epoch - 1) / run.cfg["epochs"]) ** 2

    def on_finish(self, run: Any, final: dict[str, Any]) -> None:
        """Accuracy of the re-balanced head (overall and per class) and the run's counts."""
        acc, per_class = _evaluate(run.model, run.data.x_test, run.data.y_test,
                                   run.data.num_classes)
        final.update(final_test_acc=acc, per_class_acc=per_class, train_counts=self.counts,
                     imbalance_factor=self.settings["imbalance_factor"],
                     optimizer=run.cfg["optimizer"], seed=run.cfg["seed"])


def run_glmc(config: dict[str, Any], out_dir: str | os.PathLike[str], *,
             threads: int | None = None, progress: bool = True,
             config_file: dict[str, str] | None = None) -> dict[str, Any]:
    """Train GLMC (with the config's optimizer) on a long-tailed subset; return ``final.json``.

    ``config`` holds training-run keys plus ``glmc`` (keys of :data:`GLMC_DEFAULTS`). The run
    is the training engine's (:func:`sharpness.train.train` with :class:`GLMCMethod`'s hooks):
    the one divergence rule (:mod:`sharpness.runs.state`) stops it as ``diverged`` with its
    step, an exception is recorded as ``failed``; the folder is keyed (config, ``glmc`` settings,
    device, code): a finished run of the same key is returned as is, a killed one resumes
    from its last epoch checkpoint. ``progress``: the engine's progress (a bar on a terminal,
    lines in a log). ``config_file``: the file the config came from (path and SHA-256), for
    the run's provenance.
    """
    config = dict(config)
    settings = deep_merge(GLMC_DEFAULTS, config.pop("glmc", {}))
    return train(config, out_dir, hooks=GLMCMethod(settings).hooks(), threads=threads,
                 progress=progress, config_file=config_file)


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
