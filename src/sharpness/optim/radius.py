"""The perturbation radii of SAM and LE-SAM: one formula and one set of defaults for every engine.

The torch optimizers (:mod:`sharpness.optim`), the numpy diagonal-network model
(:mod:`sharpness.bridges.lesam_flow`) and the stability edges of the ``bridges/sam_eos`` figure
all need LE-SAM's radius and its defaults; they read them here. This module imports numpy and the
torch-free declarations only (no torch), so a figure job can use it without paying torch's start-up.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sharpness.optim.spec import optimizer_spec

#: l2-SAM's default radius (Foret et al. 2021; davda54/sam) and LE-SAM's default budget
#: ``sigma`` and clip ``rho_max`` (smithgun2005/LE-SAM-ICML2026 ``lesam.py``), as
#: ``optimizers.yaml`` declares them
SAM_RHO = optimizer_spec("sam").defaults["rho"]
LESAM_SIGMA = optimizer_spec("lesam").defaults["sigma"]
LESAM_RHO_MAX = optimizer_spec("lesam").defaults["rho_max"]


def lesam_radius(
    grad_norm: Any, sigma: Any, rho_max: Any = None, varrho: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """LE-SAM's radius ``rho_t = min(sigma / (||g|| + varrho), rho_max)`` and whether it was clipped.

    ``grad_norm``, ``sigma`` and ``rho_max`` are scalars or arrays that broadcast together;
    ``rho_max`` ``None`` (or ``inf``) means no clip. A zero budget gives radius 0; a zero
    gradient with a positive budget and ``varrho = 0`` gives an infinite unclipped radius (then
    ``rho_max``), not an error. Returns numpy arrays ``(rho_t, clipped)``.
    """
    g = np.asarray(grad_norm, dtype=float)
    s = np.asarray(sigma, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        rho = np.where(s > 0, s / (g + varrho), 0.0)
    cap = np.asarray(np.inf if rho_max is None else rho_max, dtype=float)
    clipped = rho > cap
    return np.where(clipped, cap, rho), clipped
