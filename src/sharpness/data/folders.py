"""Image-folder data sets read from disk batch by batch: ImageNet and the PACS/VLCS domains.

These sets are far too large to hold as tensors (ImageNet: 1.28M JPEGs), so their images are
never loaded whole. :class:`FolderImages` stands where the in-memory sets have an
``(N, C, H, W)`` tensor: it has the shape, the length and the indexing of one, but indexing
opens, decodes and transforms only the images asked for. The training engine's DataLoader
path (:class:`sharpness.train.device_data.LoaderBatches`: worker processes, pinned memory,
non-blocking copies) therefore streams them, and evaluation reads them chunk by chunk
(:meth:`FolderImages.loader` gives a DataLoader with workers for that).

ImageNet (``data.imagenet``: a folder with ``train/<wnid>/*.JPEG`` and ``val/<wnid>/*.JPEG``)
follows the standard ResNet recipe (torchvision's reference scripts): training images
random-resized-cropped to 224 (scale 0.08-1), evaluation images resized to 256 and
centre-cropped to 224; the horizontal flip is the engine's seeded ``augment.flip``. Inputs are
standardised inside the model with the usual ImageNet channel statistics
(:data:`IMAGENET_MEAN`, :data:`IMAGENET_STD`).

PACS and VLCS (``<data root>/<name>/<domain>/<class>/*``) follow the single-source protocol of
the LE-SAM paper's domain-generalisation table: train on one domain, test on all the others.
The data set name ``pacs:photo`` means "train on photo"; its test set is the other domains in
a fixed order, with their sizes in ``info["test_domains"]`` so per-domain accuracies can be
read off. Images follow DomainBed's recipe (facebookresearch/DomainBed ``domainbed/datasets.py``,
the LE-SAM code has no DG script): training random-resized-crop 224 with scale 0.7-1, colour
jitter 0.3 (brightness, contrast, saturation, hue) and random greyscale (p 0.1), the
horizontal flip being the engine's seeded ``augment.flip`` (set it true); evaluation resized
to 224 x 224. Inputs are standardised with the ImageNet statistics, as DomainBed does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from sharpness.errors import DataError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".tif", ".tiff", ".webp")
DOMAINS: dict[str, tuple[str, ...]] = {
    "pacs": ("art_painting", "cartoon", "photo", "sketch"),
    "vlcs": ("Caltech101", "LabelMe", "SUN09", "VOC2007"),
}


def imagenet_transforms(train: bool) -> Callable[[Any], Tensor]:
    """The standard ResNet ImageNet transforms (flip left to the engine's augmentation)."""
    from torchvision import transforms as T  # lazy: torchvision; training jobs import this

    if train:
        return T.Compose([T.RandomResizedCrop(224), T.ToTensor()])
    return T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])


def domain_transforms(train: bool) -> Callable[[Any], Tensor]:
    """PACS/VLCS transforms, DomainBed's: random-resized crop 224 (scale 0.7-1), colour jitter
    0.3/0.3/0.3/0.3, random greyscale (p 0.1) / resize to 224 x 224 (flip: the engine's)."""
    from torchvision import transforms as T  # lazy: torchvision; training jobs import this

    if train:
        return T.Compose([T.RandomResizedCrop(224, scale=(0.7, 1.0)),
                          T.ColorJitter(0.3, 0.3, 0.3, 0.3), T.RandomGrayscale(),
                          T.ToTensor()])
    return T.Compose([T.Resize((224, 224)), T.ToTensor()])


def _load_rgb(path: str) -> Any:
    from PIL import Image

    with open(path, "rb") as handle:
        return Image.open(handle).convert("RGB")


class FolderImages:
    """A lazy ``(N, 3, size, size)`` image tensor over files: only indexed images are read.

    Supports what the engine asks of a training or test tensor: ``len``, ``shape``, ``dim``,
    ``element_size``/``nelement`` (so that ``data_on_device: auto`` keeps it on the host),
    ``to``/``cpu`` (no-ops: the images stay on disk), integer, slice and index-tensor
    indexing (returning a float32 tensor in [0, 1]), :meth:`head` for a first-N subset and
    :meth:`channel_stats` for the model's input standardisation.
    """

    def __init__(self, paths: Sequence[str], transform: Callable[[Any], Tensor], size: int,
                 stats: tuple[Sequence[float], Sequence[float]] = (IMAGENET_MEAN,
                                                                   IMAGENET_STD)) -> None:
        self.paths = list(paths)
        self.transform = transform
        self.size = int(size)
        self.stats = (tuple(stats[0]), tuple(stats[1]))

    # tensor-like surface -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.paths)

    @property
    def shape(self) -> torch.Size:
        return torch.Size((len(self.paths), 3, self.size, self.size))

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def dim(self) -> int:
        return 4

    def element_size(self) -> int:
        return 4

    def nelement(self) -> int:
        return len(self.paths) * 3 * self.size * self.size

    def to(self, *args: Any, **kwargs: Any) -> FolderImages:
        del args, kwargs
        return self

    def cpu(self) -> FolderImages:
        return self

    def head(self, n: int) -> FolderImages:
        """The first ``n`` images (official order), still lazy."""
        return self.part(slice(0, n))

    def part(self, piece: slice) -> FolderImages:
        """The images of ``piece``, still lazy (a process's share under DDP)."""
        return FolderImages(self.paths[piece], self.transform, self.size, self.stats)

    def channel_stats(self) -> tuple[Tensor, Tensor]:
        """``(mean, std)`` per channel for the model's input standardisation."""
        return torch.tensor(self.stats[0]), torch.tensor(self.stats[1])

    def image(self, index: int) -> Tensor:
        """One image, read and transformed now."""
        return self.transform(_load_rgb(self.paths[index]))

    def __getitem__(self, key: int | slice | Tensor | Sequence[int]) -> Tensor:
        if isinstance(key, int):
            return self.image(key)
        if isinstance(key, slice):
            indices: Sequence[int] = range(*key.indices(len(self.paths)))
        elif isinstance(key, Tensor):
            if key.dtype == torch.bool:
                raise DataError("boolean masks are not supported on image folders "
                                "(the `classes` option needs an in-memory data set)")
            indices = key.reshape(-1).tolist()
        else:
            indices = list(key)
        if not indices:
            return torch.empty(0, 3, self.size, self.size)
        return torch.stack([self.image(int(i)) for i in indices])

    def loader(self, labels: Tensor, batch_size: int, workers: int = 0,
               pin_memory: bool = False) -> torch.utils.data.DataLoader:
        """An evaluation DataLoader over ``(image, label)`` pairs, in order."""
        return torch.utils.data.DataLoader(_Pairs(self, labels), batch_size=batch_size,
                                           shuffle=False, num_workers=workers,
                                           pin_memory=pin_memory)

    def __repr__(self) -> str:
        return f"FolderImages({len(self.paths)} images, {self.size}x{self.size})"


class _Pairs(torch.utils.data.Dataset):
    def __init__(self, images: FolderImages, labels: Tensor) -> None:
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        return self.images.image(index), self.labels[index]


def _class_folders(folder: Path) -> list[str]:
    return sorted(entry.name for entry in os.scandir(folder) if entry.is_dir())


def scan(folder: Path, classes: Sequence[str]) -> tuple[list[str], list[int]]:
    """Image paths and labels of ``folder/<class>/*`` in torchvision ImageFolder's order
    (classes as given, files sorted); a class folder without images is an error."""
    paths, labels = [], []
    for label, name in enumerate(classes):
        sub = folder / name
        if not sub.is_dir():
            raise DataError(f"{sub}: missing class folder {name!r} (every split and domain "
                            "needs the same class folders)")
        files = sorted(e.path for e in os.scandir(sub)
                       if e.is_file() and e.name.lower().endswith(IMAGE_EXTENSIONS))
        if not files:
            raise DataError(f"{sub}: no images (expected *.JPEG/*.jpg/*.png files)")
        paths += files
        labels += [label] * len(files)
    return paths, labels


def imagenet_folder(root: str | os.PathLike[str]) -> Path:
    """The ImageNet folder: ``root`` itself (``data.imagenet``) or ``root/imagenet``."""
    base = Path(root)
    for candidate in (base, base / "imagenet"):
        if (candidate / "train").is_dir() and (candidate / "val").is_dir():
            return candidate
    raise DataError(
        f"ImageNet not found at {base}: set `data.imagenet` in the config to a folder holding "
        "train/<wnid>/*.JPEG and val/<wnid>/*.JPEG (the validation images sorted into class "
        "folders, e.g. with the devkit's labels); nothing is downloaded")


def load_imagenet(root: str | os.PathLike[str]) -> dict[str, Any]:
    """ImageNet as lazy train/val images and label tensors (see the module docstring)."""
    folder = imagenet_folder(root)
    classes = _class_folders(folder / "train")
    if not classes:
        raise DataError(f"{folder / 'train'}: no class folders (expected train/<wnid>/)")
    extra = sorted(set(_class_folders(folder / "val")) - set(classes))
    if extra:
        raise DataError(f"{folder / 'val'}: class folders not in train/: {', '.join(extra[:5])}")
    train_paths, train_labels = scan(folder / "train", classes)
    val_classes = [c for c in classes if (folder / "val" / c).is_dir()]
    val_paths, val_labels = [], []
    for name in val_classes:
        paths, _ = scan(folder / "val", [name])
        val_paths += paths
        val_labels += [classes.index(name)] * len(paths)
    return _parts(imagenet_transforms, (train_paths, train_labels), (val_paths, val_labels),
                  len(classes), {"name": "imagenet", "folder": str(folder),
                                 "classes": len(classes), "n_train_files": len(train_paths),
                                 "n_val_files": len(val_paths)})


def _parts(transforms: Callable[[bool], Callable[[Any], Tensor]],
           train: tuple[list[str], list[int]], test: tuple[list[str], list[int]],
           num_classes: int, info: dict[str, Any]) -> dict[str, Any]:
    """The lazy train/test images and label tensors of one folder data set."""
    return {
        "x_train": FolderImages(train[0], transforms(True), 224),
        "y_train": torch.tensor(train[1], dtype=torch.long),
        "x_test": FolderImages(test[0], transforms(False), 224),
        "y_test": torch.tensor(test[1], dtype=torch.long),
        "num_classes": num_classes,
        "info": {**info, "note": "layout-checked (no published checksum); streamed from disk"},
    }


def parse_domain_name(name: str) -> tuple[str, str]:
    """``"pacs:photo"`` -> ``("pacs", "photo")``, checked against :data:`DOMAINS`."""
    base, _, source = name.partition(":")
    if base not in DOMAINS:
        raise DataError(f"unknown domain data set {base!r}; known: {', '.join(DOMAINS)}")
    if source not in DOMAINS[base]:
        raise DataError(f"{base}: the name needs the source domain, {base}:<domain> with "
                        f"<domain> one of {', '.join(DOMAINS[base])}; got {name!r}")
    return base, source


def load_domains(name: str, root: str | os.PathLike[str]) -> dict[str, Any]:
    """Single-source domain generalisation: train on the source domain of ``name``
    (``pacs:<domain>``/``vlcs:<domain>``), test on every other domain."""
    base, source = parse_domain_name(name)
    folder = Path(root) / base
    missing = [d for d in DOMAINS[base] if not (folder / d).is_dir()]
    if missing:
        raise DataError(f"{base} not found: {folder} lacks {', '.join(missing)}; unpack it so "
                        f"that {folder}/<domain>/<class>/*.jpg exists for the domains "
                        f"{', '.join(DOMAINS[base])}")
    classes = _class_folders(folder / source)
    train_paths, train_labels = scan(folder / source, classes)
    test_paths: list[str] = []
    test_labels: list[int] = []
    domains = []
    for domain in DOMAINS[base]:
        if domain == source:
            continue
        paths, labels = scan(folder / domain, classes)
        domains.append({"domain": domain, "start": len(test_paths), "n": len(paths)})
        test_paths += paths
        test_labels += labels
    return _parts(domain_transforms, (train_paths, train_labels), (test_paths, test_labels),
                  len(classes), {"name": name, "folder": str(folder), "source_domain": source,
                                 "test_domains": domains, "classes": classes})
