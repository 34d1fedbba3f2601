"""The fast single-device path: mixed precision, memory format and cuDNN autotuning.

Everything here is a no-op on the CPU unless a test forces it, so the same code runs on a
laptop, in CI and on a GPU node:

* **fp32 by default**, as every official code of the lesam paper trains (TF32 as PyTorch's
  defaults leave it); :func:`precision_record` labels each run.
* **bf16 autocast on CUDA** (``bf16: true``, a speed option): forward passes in bfloat16, parameters,
  gradients and the optimizer in float32. bfloat16 has float32's exponent range, so no loss
  scaling is needed and SAM's two passes (and LE-SAM's loss-equated radius, which divides by
  the gradient norm) see unscaled gradients.
* **float16 is refused** (:func:`sharpness.train.config.refuse_fp16`, when a run's config is
  validated): float16 needs a ``GradScaler``, and SAM's
  perturbation is computed from the *first* pass's gradients, which a scaler would hand over
  scaled (and possibly inf, skipping a step the perturbation has already been built from);
  getting this right needs unscaling between the passes and a second scale update. Not worth
  the risk when every GPU this pipeline targets (A100/H100/H200) runs bfloat16 natively.
* **channels_last** for convolutional networks on CUDA (``channels_last: auto``): the cuDNN
  kernels for NHWC tensors are the fast ones with bf16 tensor cores.
* **cudnn.benchmark** when determinism is off: cuDNN picks the fastest convolution algorithm
  for each shape once (the shapes of a training run never change). With ``deterministic:
  true`` it stays off, as reproducibility needs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor, nn

log = logging.getLogger(__name__)


def autocast_factory(bf16: bool, device: torch.device
                     ) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A factory of autocast contexts: bf16 on CUDA when asked, else a null context.

    On the CPU ``bf16`` is ignored (CPU bf16 autocast is slower than float32 on most CPUs and
    would change the numbers of the quick profile); the provenance records what was used.
    """
    if bf16 and device.type == "cuda":
        return lambda: torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext


def precision_record(bf16_used: bool) -> dict[str, Any]:
    """What a run computed in, for its provenance and ``final.json``: ``precision`` is
    ``"bf16"`` (autocast, the speed option) or ``"fp32"`` (as the official codes train), and
    the TF32 switches as the run found them (PyTorch's defaults: off for matmul, on for
    cuDNN convolutions; this project never changes them)."""
    return {"precision": "bf16" if bf16_used else "fp32",
            "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32)}


def is_convolutional(model: nn.Module) -> bool:
    """Whether ``model`` has a 2-D convolution (channels_last only helps those)."""
    return any(isinstance(m, nn.Conv2d) for m in model.modules())


def use_channels_last(setting: bool | str, model: nn.Module, device: torch.device) -> bool:
    """Resolve ``channels_last``: ``auto`` = on for convolutional nets on CUDA, else off.

    On the CPU it is always off, ``true`` included (with a warning): NHWC brings no speed there,
    and with torch 2.14.1 the oneDNN backward of a channels-last BatchNorm ResNet aborts the
    process ("double free or corruption") on AVX2 AMD EPYC CPUs (measured). The provenance
    records the layout that was used."""
    if device.type != "cuda":
        if setting is True:
            log.warning("channels_last: true is ignored on %s (no benefit on a CPU, and "
                        "oneDNN's channels-last backward crashes on some CPUs)", device.type)
        return False
    if setting == "auto":
        return is_convolutional(model)
    return bool(setting)


def to_channels_last(model: nn.Module) -> nn.Module:
    """Convert 4-D parameters and buffers to NHWC in place (values unchanged)."""
    return model.to(memory_format=torch.channels_last)


def batch_to_device(x: Tensor, y: Tensor, device: torch.device, *,
                    channels_last: bool) -> tuple[Tensor, Tensor]:
    """Move a batch to ``device`` without blocking (pinned memory makes that asynchronous)
    and give images the model's memory format."""
    x = x.to(device, non_blocking=True)
    y = y.to(device, non_blocking=True)
    if channels_last and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    return x, y


@contextlib.contextmanager
def cudnn_autotune(enabled: bool, device: torch.device) -> Iterator[bool]:
    """``torch.backends.cudnn.benchmark = True`` on CUDA when ``enabled`` (determinism off);
    restored afterwards. Yields whether it was turned on (for the provenance)."""
    on = enabled and device.type == "cuda"
    prev = torch.backends.cudnn.benchmark
    if on:
        torch.backends.cudnn.benchmark = True
    try:
        yield on
    finally:
        torch.backends.cudnn.benchmark = prev
