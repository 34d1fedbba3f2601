"""Checkpoints and model files that load with ``torch.load(weights_only=True)``.

``weights_only=True`` unpickles only tensors and plain containers (dict, list, tuple, str,
numbers), so a file cannot run code when it is loaded. The Python and NumPy RNG states are
therefore stored as tensors (:func:`rng_states`) and restored from them
(:func:`restore_rng_states`); a file that holds any other object is refused with an error
naming it (:func:`safe_load`).

A checkpoint's SHA-256 is recorded in its run folder's ``cache_key.json`` when it is written
(:func:`save`); :func:`load` resumes only from a file that matches it and loads, and otherwise
says why in the log and returns ``None``, so a truncated or altered checkpoint starts the run
over instead of stopping it with a traceback.
"""

from __future__ import annotations

import os
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sharpness.io import atomic_torch_save
from sharpness.runs.seal import load_sealed, seal, unseal


class UnsafeCheckpointError(RuntimeError):
    """A checkpoint or model file holds pickled objects beyond tensors and plain containers."""


def safe_load(path: str | os.PathLike[str], map_location: str | torch.device = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``; a file with other objects is refused."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise UnsafeCheckpointError(
            f"{path} holds pickled objects other than tensors and plain containers; refusing "
            f"to load it (weights_only=True). Delete it to start the run over. ({exc})"
        ) from exc


def save(path: str | os.PathLike[str], state: dict[str, Any]) -> None:
    """Write a checkpoint atomically and record its hash in the folder's record."""

    path = Path(path)
    atomic_torch_save(path, state)
    seal(path.parent, path.name)


def load(path: str | os.PathLike[str], map_location: str | torch.device = "cpu"
         ) -> dict[str, Any] | None:
    """The checkpoint at ``path``, or ``None`` when there is none, or when it does not match
    its recorded hash or cannot be loaded (logged with the reason: the run starts over)."""

    path = Path(path)
    return load_sealed(path.parent, path.name,
                       lambda p: safe_load(p, map_location=map_location), what="checkpoint")


def rng_states() -> dict[str, Any]:
    """The global torch, CUDA, Python and NumPy RNG states, as tensors and plain numbers."""
    version, state, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "python_rng": {"version": int(version), "state": torch.tensor(state, dtype=torch.int64),
                       "gauss": gauss},
        "numpy_rng": {"kind": str(kind), "keys": torch.from_numpy(keys.astype(np.int64)),
                      "pos": int(pos), "has_gauss": int(has_gauss), "cached": float(cached)},
    }


def restore_rng_states(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_states` saved."""
    torch.set_rng_state(state["torch_rng"])
    if state.get("cuda_rng") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    py = state["python_rng"]
    random.setstate((py["version"], tuple(int(v) for v in py["state"].tolist()), py["gauss"]))
    nps = state["numpy_rng"]
    np.random.set_state((nps["kind"], nps["keys"].numpy().astype(np.uint32), nps["pos"],
                         nps["has_gauss"], nps["cached"]))


def remove(path: str | os.PathLike[str]) -> None:
    """Delete a checkpoint once its run has finished (it must never be resumed again), and
    its hash from the folder's record."""

    path = Path(path)
    path.unlink(missing_ok=True)
    unseal(path.parent, path.name)
