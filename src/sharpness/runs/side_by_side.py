"""Two renderings of one figure next to each other (the default build's and a variant's), for
``sharpness diff --variant NAME --out FILE.png``: the reader sees both at the same size with
the build each came from written above it."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from sharpness.io import atomic_open  # noqa: E402


def side_by_side(a: str | os.PathLike[str], b: str | os.PathLike[str],
                 out: str | os.PathLike[str], titles: tuple[str, str]) -> Path:
    """Write ``out`` (PNG): image ``a`` on the left, ``b`` on the right, each titled."""
    images = [mpimg.imread(str(p)) for p in (a, b)]
    height = max(im.shape[0] for im in images)
    width = sum(im.shape[1] for im in images)
    fig, axes = plt.subplots(1, 2, figsize=(min(width / 100, 24), min(height / 100 + 0.4, 12)),
                             gridspec_kw={"width_ratios": [im.shape[1] for im in images]})
    for ax, image, title in zip(axes, images, titles, strict=True):
        ax.imshow(image)
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    with atomic_open(Path(out), "wb") as handle:
        fig.savefig(handle, format="png", dpi=100)
    plt.close(fig)
    return Path(out)
