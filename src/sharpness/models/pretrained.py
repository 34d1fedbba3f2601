"""Pretrained weights, loaded only after their whole SHA-256 matches a pinned value.

A weight file is a pickle: unpickled without ``weights_only`` it can run any code. torchvision's
own path (``Weights.get_state_dict`` -> ``torch.hub.load_state_dict_from_url``) unpickles a
file it finds in ``TORCH_HOME/hub/checkpoints/`` without ``weights_only`` and checks the hash
only when it downloads, and then only the 8 hex digits its file name carries. This module never
calls it: :func:`load_pinned` finds the file in the same cache (or downloads it there), checks
its size and its whole SHA-256 against the pins below, and only then reads it with
``torch.load(..., weights_only=True)`` (tensors and plain containers; nothing executes). A file
that fails is refused with :class:`PretrainedWeightsRefused`, which says what to do; it is never
deleted (it may be the user's own).

Where the pins come from: PyTorch publishes only the first 8 hex digits of each file's SHA-256
(the file name). The whole SHA-256 and size pinned here are those independent public records
give for the official files, and each starts with torchvision's published prefix; see
``docs/security.md`` ("Weights and data sets from caches") for the sources and this limit.

This module imports neither torch nor torchvision at import time.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from sharpness.data import fetch
from sharpness.errors import SharpnessError


class PretrainedWeightsUnavailable(RuntimeError):
    """Pretrained weights were asked for but cannot be loaded (no network, no cached file)."""


class PretrainedWeightsRefused(PretrainedWeightsUnavailable, SharpnessError):
    """A weight file is there but is not the pinned one: it is not unpickled."""


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


def hub_checkpoints() -> Path:
    """The torch hub cache folder for weight files (``$TORCH_HOME/hub/checkpoints``), the one
    torchvision uses, so a file already downloaded by torchvision is found."""

    return Path(torch.hub.get_dir()) / "checkpoints"


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


def _refusal(path: Path, pin: PinnedWeights, why: str) -> str:
    return (f"{path} is not loaded: {why}. It is not the official {pin.title} file, and a "
            f"weight file is a pickle that can run code when it is read, so it is refused "
            f"(nothing in it was executed; the file is left as it is). Delete or move it, then "
            f"download {pin.url} again (or put a copy whose `sha256sum` prints {pin.sha256} "
            f"there, or point TORCH_HOME at a cache holding one); or train without "
            f"`pretrained`.")


def _download(pin: PinnedWeights, target: Path) -> None:
    """Download the file next to ``target`` and move it there only once it matches the pin."""

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)  # a fresh name made exclusively (never a predictable one a link could hold)
    part = Path(name)
    try:
        fetch.download_url(pin.url, part, desc=pin.file_name)
        why = problem(part, pin)
        if why is not None:
            raise PretrainedWeightsRefused(_refusal(part, pin, f"the download is wrong: {why}"))
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)


def load_pinned(name: str, *, download: bool = True) -> dict[str, Any]:
    """The state dict of the pinned weight file ``name`` (a key of :data:`PINNED`).

    The file in the torch hub cache is used when its size and whole SHA-256 match the pin
    (else :class:`PretrainedWeightsRefused`); without one it is downloaded (``download``) and
    checked before it is moved into the cache; offline, :class:`PretrainedWeightsUnavailable`
    says which file to put where. Read with ``torch.load(weights_only=True)``."""

    pin = PINNED[name]
    path = hub_checkpoints() / pin.file_name
    if not path.is_file():
        if not download:
            raise PretrainedWeightsUnavailable(_missing(pin, path, "downloads are off"))
        try:
            _download(pin, path)
        except PretrainedWeightsRefused:
            raise
        except Exception as exc:  # URLError, socket errors, a full disk...
            raise PretrainedWeightsUnavailable(
                _missing(pin, path, f"{type(exc).__name__}: {exc}")) from exc
    why = problem(path, pin)
    if why is not None:
        raise PretrainedWeightsRefused(_refusal(path, pin, why))
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # the pinned file always loads; anything else is refused
        raise PretrainedWeightsRefused(_refusal(path, pin, f"it cannot be read as weights "
                                                           f"({type(exc).__name__}: {exc})")
                                       ) from exc
    if not isinstance(state, dict):
        raise PretrainedWeightsRefused(_refusal(path, pin, "it holds no state dict"))
    return state


def _missing(pin: PinnedWeights, path: Path, why: str) -> str:
    return (f"could not load {pin.title} ({why}). Offline, download {pin.url} elsewhere, "
            f"check that `sha256sum` prints {pin.sha256}, and put it at {path} (or set "
            f"TORCH_HOME to a folder whose hub/checkpoints/ holds it), or train without "
            f"`pretrained`.")
