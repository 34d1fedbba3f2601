"""One device resolution for every computation: ``auto`` or a named device, never a silent
substitute.

``auto`` means "CUDA when present, else the CPU" (the only setting that may fall back). A named
device that this machine lacks (``cuda`` without CUDA, ``cuda:3`` with two GPUs, ``mps``
without Metal) is an error naming it, so a paper-profile timing is never measured on a CPU
by accident.
"""

from __future__ import annotations

import torch

from sharpness.errors import ConfigError


class DeviceUnavailableError(ConfigError):
    """A requested device does not exist on this machine."""


def resolve_device(name: str | None) -> torch.device:
    """``auto`` -> CUDA when present, else CPU; a named device must exist."""
    name = (name or "auto").strip()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise DeviceUnavailableError(f"device {name!r} is not a device name ({exc})") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailableError(
                f"device {name!r} asked for but CUDA is not available on this machine (no GPU "
                "visible to torch): refusing to train on the CPU instead. The paper profile "
                "asks for CUDA; run it where a GPU is visible (`make gpu-campaign` checks "
                "first), or set device: cpu (or auto) to run on the CPU on purpose")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise DeviceUnavailableError(f"device {name!r} asked for but this machine has "
                                         f"{torch.cuda.device_count()} CUDA device(s)")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceUnavailableError(f"device {name!r} asked for but MPS is not available")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise DeviceUnavailableError(f"device {name!r}: only auto, cpu, cuda[:i] and mps are "
                                     "supported")
    return device
