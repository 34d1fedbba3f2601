"""A run's model: built with the input standardisation, initialised from another run, and
rebuilt from a finished run's ``model.pt``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from sharpness.models import build_model
from sharpness.runs.seal import verify_result
from sharpness.train import checkpoint as ckpt
from sharpness.train.batchnorm import freeze_batchnorm
from sharpness.train.data_prep import PreparedData
from sharpness.train.layout import MODEL


class InputNormalization(nn.Module):
    """``net((x - mean) / std)``: the model takes raw [0, 1] images; stats are buffers."""

    def __init__(self, net: nn.Module, mean: Tensor, std: Tensor) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("mean", mean.detach().clone().view(1, -1, 1, 1))
        self.register_buffer("std", std.detach().clone().view(1, -1, 1, 1))

    def forward(self, x: Tensor) -> Tensor:
        """Standardise, then the wrapped network."""
        return self.net((x - self.mean) / self.std)


def build_run_model(cfg: dict[str, Any], data: PreparedData,
                    device: torch.device | None = None,
                    wrap: Callable[[nn.Module, int], nn.Module] | None = None
                    ) -> InputNormalization:
    """The config's model wrapped in the input standardisation (train-set statistics), on
    ``device`` (default: where the training data is). ``wrap(net, num_classes)`` replaces the
    bare network first (a training method's heads, e.g. GLMC's)."""

    c, h = data.x_train.shape[1], data.x_train.shape[2]
    net = build_model(cfg["model"], data.num_classes, c, h, width=cfg["width"],
                      **cfg["model_kwargs"])
    if wrap is not None:
        net = wrap(net, data.num_classes)
    if cfg.get("freeze_bn"):
        freeze_batchnorm(net)
    if cfg["normalize"] and hasattr(data.x_train, "channel_stats"):
        mean, std = data.x_train.channel_stats()  # streamed image folders (ImageNet statistics)
    elif cfg["normalize"]:
        x = data.x_train.double()
        mean = x.mean(dim=(0, 2, 3)).float()
        std = x.std(dim=(0, 2, 3)).clamp_min(1e-6).float()
    else:
        mean, std = torch.zeros(c), torch.ones(c)
    model = InputNormalization(net, mean, std)
    if cfg["init_from"]:
        _init_from(model, Path(cfg["init_from"]), tuple(cfg["init_exclude"]))
    return model.to(device or data.x_train.device)


def _init_from(model: nn.Module, path: Path, exclude: tuple[str, ...] = ()) -> None:
    """Load a run's parameters where names and shapes match, except ``exclude`` prefixes.

    The input statistics stay those of the new data. The file is another run's: it is checked
    against the hash that run recorded first (:func:`sharpness.runs.seal.verify_result`)."""

    state = ckpt.safe_load(verify_result(path, what="init_from model"))["state_dict"]
    own = model.state_dict()
    own.update({k: v for k, v in state.items()
                if k in own and own[k].shape == v.shape and k not in ("mean", "std")
                and not k.startswith(exclude)})
    model.load_state_dict(own)


def load_trained_model(run_dir: str | os.PathLike[str], map_location: str = "cpu") -> nn.Module:
    """Rebuild a finished run's model from its ``model.pt`` (for Hessians, Grad-CAM, PGD).

    The returned module takes raw [0, 1] images (normalisation inside) and is in eval mode;
    ``model.net`` is the bare network (``model.net.gradcam_layer`` where defined). The file
    is checked against the hash the run recorded when it finished
    (:func:`sharpness.runs.seal.verify_result`) before it is loaded.
    """

    path = verify_result(Path(run_dir) / MODEL, what="trained model")
    blob = ckpt.safe_load(path, map_location=map_location)
    b = blob["build"]
    if b.get("wrapped_by"):
        raise ValueError(f"{run_dir}: the network of this run was wrapped by "
                         f"{b['wrapped_by']} (a training method's own heads); rebuild it with "
                         "that method, not load_trained_model")
    # the weights come from the state dict: never fetch pretrained ones again
    kwargs = {k: v for k, v in b["model_kwargs"].items() if k != "pretrained"}
    net = build_model(b["model"], b["num_classes"], b["in_channels"], b["image_size"],
                      width=b["width"], **kwargs)
    model = InputNormalization(net, torch.zeros(b["in_channels"]), torch.ones(b["in_channels"]))
    model.load_state_dict(blob["state_dict"])
    return model.eval()

