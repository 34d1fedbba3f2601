"""The pretrained weight files the pipeline loads: their pins and where they are cached, torch-free.

:mod:`sharpness.models.pretrained` loads a file only after its size and whole SHA-256 match a
pin of :data:`PINNED`; the pins live here, with the cache folder and the check, so that the
commands that only look for the files (``sharpness data bundle`` and ``unbundle``, the campaign's
preflight) never import torch (about 1 CPU-s). :data:`MODEL_WEIGHTS` says which file a
``pretrained: true`` model reads.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sharpness.data import fetch


@dataclass(frozen=True)
class PinnedWeights:
    """One official weight file: where it comes from and what it must be."""

    title: str
    url: str
    sha256: str
    size: int

    @property
    def file_name(self) -> str:
        """The file name in the torch hub cache (the URL's last part, as torchvision names it)."""
        return self.url.rsplit("/", 1)[-1]


#: The weight files the pipeline loads, by torchvision's enum name.
PINNED: dict[str, PinnedWeights] = {
    "ResNet50_Weights.IMAGENET1K_V1": PinnedWeights(
        title="torchvision ResNet-50 ImageNet weights (IMAGENET1K_V1)",
        url="https://download.pytorch.org/models/resnet50-0676ba61.pth",
        sha256="0676ba61b6795bbe1773cffd859882e5e297624d384b6993f7c9e683e722fb8a",
        size=102_530_333),
    "ViT_B_16_Weights.IMAGENET1K_V1": PinnedWeights(
        title="torchvision ViT-B/16 ImageNet weights (IMAGENET1K_V1)",
        url="https://download.pytorch.org/models/vit_b_16-c867db91.pth",
        sha256="c867db91d3e12c6cbadabb610d73c24a546bf82d8c03a9fea34f43a712ddb0e9",
        size=346_328_529),
}

#: the pinned file a model built with ``pretrained: true`` loads (its builder's ``load_pinned``)
MODEL_WEIGHTS: dict[str, str] = {"resnet50": "ResNet50_Weights.IMAGENET1K_V1",
                                 "vit_b_16": "ViT_B_16_Weights.IMAGENET1K_V1"}


def hub_checkpoints() -> Path:
    """The torch hub cache folder for weight files, ``$TORCH_HOME/hub/checkpoints`` (by default
    ``$XDG_CACHE_HOME/torch`` or ``~/.cache/torch``): the rule of ``torch.hub.get_dir``, the
    folder torchvision uses, so a file torchvision downloaded is found; computed without
    importing torch."""
    cache = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")
    return Path(os.path.expanduser(os.getenv("TORCH_HOME", cache))) / "hub" / "checkpoints"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def problem(path: Path, pin: PinnedWeights) -> str | None:
    """Why ``path`` is not the pinned file (``None``: its size and whole SHA-256 match)."""
    size = path.stat().st_size
    if size != pin.size:
        return f"it has {size:,} bytes, the pinned file {pin.size:,}"
    digest = _sha256(path)
    if digest != pin.sha256:
        return f"its SHA-256 is {digest}, the pinned one {pin.sha256}"
    return None


def download_checked(pin: PinnedWeights, target: Path) -> str | None:
    """Download ``pin``'s file next to ``target`` and move it there only once it matches the
    pin; else remove it and return why it is not the pinned file (``None``: in place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)  # a fresh name made exclusively (never a predictable one a link could hold)
    part = Path(name)
    try:
        fetch.download_url(pin.url, part, desc=pin.file_name)
        why = problem(part, pin)
        if why is None:
            os.replace(part, target)
        return why
    finally:
        part.unlink(missing_ok=True)


def weights_for(model: str) -> str:
    """The :data:`PINNED` key of the weights a ``pretrained: true`` ``model`` loads; a model
    with no pinned weights is a ``KeyError`` naming those that have some."""
    if model not in MODEL_WEIGHTS:
        raise KeyError(f"model {model!r} has no pinned pretrained weights (only "
                       f"{', '.join(sorted(MODEL_WEIGHTS))} do)")
    return MODEL_WEIGHTS[model]


def missing_weights(pin: PinnedWeights, path: Path, why: str) -> str:
    """What to do when the pinned file is not at ``path``: where to get it and put it."""
    return (f"could not load {pin.title} ({why}). Offline, download {pin.url} elsewhere, "
            f"check that `sha256sum` prints {pin.sha256}, and put it at {path} (or set "
            f"TORCH_HOME to a folder whose hub/checkpoints/ holds it; `sharpness data bundle` "
            f"carries it), or train without `pretrained`.")
