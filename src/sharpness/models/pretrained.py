"""Pretrained weights, loaded only after their whole SHA-256 matches a pinned value.

A weight file is a pickle: unpickled without ``weights_only`` it can run any code. torchvision's
own path (``Weights.get_state_dict`` -> ``torch.hub.load_state_dict_from_url``) unpickles a
file it finds in ``TORCH_HOME/hub/checkpoints/`` without ``weights_only`` and checks the hash
only when it downloads, and then only the 8 hex digits its file name carries. This module never
calls it: :func:`load_pinned` finds the file in the same cache (or downloads it there), checks
its size and its whole SHA-256 against the pins of
:mod:`sharpness.data.weights`, and only then reads it with
``torch.load(..., weights_only=True)`` (tensors and plain containers; nothing executes). A file
that fails is refused with :class:`PretrainedWeightsRefused`, which says what to do; it is never
deleted (it may be the user's own).

Where the pins come from: PyTorch publishes only the first 8 hex digits of each file's SHA-256
(the file name). The whole SHA-256 and size pinned (:data:`sharpness.data.weights.PINNED`) are those independent public records
give for the official files, and each starts with torchvision's published prefix; see
``docs/security.md`` ("Weights and data sets from caches") for the sources and this limit.

This module does not import torchvision.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from sharpness.data import weights
from sharpness.data.weights import PINNED, PinnedWeights, problem
from sharpness.errors import SharpnessError

__all__ = ["PINNED", "PinnedWeights", "PretrainedWeightsRefused", "PretrainedWeightsUnavailable",
           "hub_checkpoints", "load_pinned", "problem"]


class PretrainedWeightsUnavailable(RuntimeError):
    """Pretrained weights were asked for but cannot be loaded (no network, no cached file)."""


class PretrainedWeightsRefused(PretrainedWeightsUnavailable, SharpnessError):
    """A weight file is there but is not the pinned one: it is not unpickled."""


def hub_checkpoints() -> Path:
    """The torch hub cache folder for weight files (``$TORCH_HOME/hub/checkpoints``), the one
    torchvision uses, so a file already downloaded by torchvision is found
    (:func:`sharpness.data.weights.hub_checkpoints`, torch.hub's rule)."""

    return weights.hub_checkpoints()


def _refusal(path: Path, pin: PinnedWeights, why: str) -> str:
    return (f"{path} is not loaded: {why}. It is not the official {pin.title} file, and a "
            f"weight file is a pickle that can run code when it is read, so it is refused "
            f"(nothing in it was executed; the file is left as it is). Delete or move it, then "
            f"download {pin.url} again (or put a copy whose `sha256sum` prints {pin.sha256} "
            f"there, or point TORCH_HOME at a cache holding one); or train without "
            f"`pretrained`.")


def _download(pin: PinnedWeights, target: Path) -> None:
    """Download the file and move it to ``target`` only once it matches the pin."""

    why = weights.download_checked(pin, target)
    if why is not None:
        raise PretrainedWeightsRefused(_refusal(target, pin, f"the download is wrong: {why}"))


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
            raise PretrainedWeightsUnavailable(
                weights.missing_weights(pin, path, "downloads are off"))
        try:
            _download(pin, path)
        except PretrainedWeightsRefused:
            raise
        except Exception as exc:  # URLError, socket errors, a full disk...
            raise PretrainedWeightsUnavailable(
                weights.missing_weights(pin, path, f"{type(exc).__name__}: {exc}")) from exc
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
