"""The data sets the catalog needs: where each comes from and how to recognise a good copy.

Every file the pipeline fetches is pinned by SHA-256 (and its size): the MNIST IDX files as the
loader reads them, the CIFAR-10/100 archives and the SVHN ``.mat`` files (the SHA-256 that
torchvision's dataset code and Keras publish for the official files, beside the MD5 that
torchvision's loaders check). The files a CIFAR archive unpacks are re-checked later by the MD5
torchvision publishes for each of them (no SHA-256 of them is published; they were checked
through the SHA-256 of their archive when unpacked); an archive member with no pin of its own is
checked against its pinned archive, kept beside it. ImageNet, PACS and VLCS are checked by layout
because no checksum of them is published. ``docs/security.md`` lists the sources of the pins.

Each spec also says how the set is loaded (:attr:`DatasetSpec.loader`, a ``module:function``
imported on first use, so this module never imports torch) and whether the workflow must
prepare it first (:attr:`DatasetSpec.needs_preparing`; :func:`preparation_inputs` is the one
answer every rule file asks). Stand-ins built from other sets (``mnist_on_cifar``) are
registered here like any data set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sharpness.errors import DataError, lookup


@dataclass(frozen=True)
class RemotePin:
    """One acceptable copy of a fetched file: its size and SHA-256 (or, where only an MD5 is
    published, that MD5)."""

    size: int
    sha256: str | None = None
    md5: str | None = None


@dataclass(frozen=True)
class FileSpec:
    """One file of a data set, relative to ``data/<name>/``, with its checksum."""

    path: str
    sha256: str | None = None
    md5: str | None = None
    #: size in bytes of the file itself, when known
    size: int | None = None
    #: name of the file at the download URL / in a mirror when it differs (e.g. ``.gz``)
    remote: str | None = None
    #: how to turn the fetched file into ``path``: ``gunzip``, ``untar`` or ``copy``
    unpack: str = "copy"
    #: checksum of the fetched file itself (an archive), when only that one is published
    remote_md5: str | None = None
    remote_sha256: str | None = None
    remote_size: int | None = None
    #: the acceptable copies of the fetched file, when there is more than one (any matches)
    remote_pins: tuple[RemotePin, ...] = ()


@dataclass(frozen=True)
class DatasetSpec:
    """A data set: source, expected files, licence and what the user must do if absent."""

    name: str
    title: str
    source: str
    files: tuple[FileSpec, ...] = ()
    urls: tuple[str, ...] = ()
    #: paths tried, in order, inside a mirror folder (relative); ``{remote}`` is the file name
    mirror_layouts: tuple[str, ...] = ("{name}/{remote}", "{remote}")
    licence: str = ""
    citation: str = ""
    user_provided: bool = False
    #: for layout-checked sets: sub-folders that must exist
    required_dirs: tuple[str, ...] = ()
    notes: str = ""
    stand_in: str | None = field(default=None)
    #: folder under the data root holding it, when not ``<name>`` (the committed subsets)
    subdir: str | None = None
    #: ``module:function`` that loads it as tensors (see :mod:`sharpness.data.loaders`)
    loader: str | None = None
    #: whether the workflow prepares it (``sharpness data prepare``) before a job reads it:
    #: not for committed or built sets, nor for user-provided ones (checked by their own step)
    needs_preparing: bool = True
    #: the registered sets a built set is made from (what a job reading it needs on disk)
    built_from: tuple[str, ...] = ()


#: the output of the workflow's ``data_prepare`` job for a data set
PREPARED = "results/data/{name}.json"
_LOADERS = "sharpness.data.loaders:"


_MNIST_BASE = ("https://ossci-datasets.s3.amazonaws.com/mnist/",)


def _mnist_files() -> tuple[FileSpec, ...]:
    """The four IDX files, pinned by SHA-256 and size as read (after ``gunzip``), and each
    ``.gz`` by the two copies known: the published one (its size and the MD5 torchvision
    checks; no SHA-256 of it is published) and the project's shared offline copy (recompressed,
    same content: its size and SHA-256)."""
    files = (  # name, IDX sha256, IDX size, (.gz size, md5), (offline .gz size, sha256)
        ("train-images-idx3-ubyte",
         "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db", 47_040_016,
         (9_912_422, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
         (9_630_634, "db8f937d487057fb14a9f0fbe97f0bc8d311ab41b750d41e1ff37c43b9e55e19")),
        ("train-labels-idx1-ubyte",
         "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", 60_008,
         (28_881, "d53e105ee54ea40749a09fcbcd1e9432"),
         (28_902, "51fc562b6747b666fbf6e84ce29d43c3cb5f9c388c664d43b33f02095313405a")),
        ("t10k-images-idx3-ubyte",
         "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7", 7_840_016,
         (1_648_877, "9fb629c4189551a2d022fa330f9573f3"),
         (1_602_073, "cfeddb84311ecf044fc6a5b0f6ee8a24d265d4e83e388400186eb114082f4209")),
        ("t10k-labels-idx1-ubyte",
         "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2", 10_008,
         (4_542, "ec29112dd5afa0611ce80d1b7f02629c"),
         (4_540, "e41c74e484045d39b462a7790a4af51301bd9b0b24f0154798d713ec68c45920")),
    )
    return tuple(FileSpec(f"MNIST/raw/{n}", sha256=sha, size=size, remote=f"{n}.gz",
                          unpack="gunzip",
                          remote_pins=(RemotePin(gz[0], md5=gz[1]),
                                       RemotePin(offline[0], sha256=offline[1])))
                 for n, sha, size, gz, offline in files)


DATASETS: dict[str, DatasetSpec] = {}


def _add(spec: DatasetSpec) -> None:
    DATASETS[spec.name] = spec


_add(DatasetSpec(
    name="mnist", title="MNIST (60k train / 10k test)", source="torchvision.datasets.MNIST",
    files=_mnist_files(), urls=_MNIST_BASE, loader=_LOADERS + "load_mnist",
    mirror_layouts=("MNIST/raw/{remote}", "mnist/MNIST/raw/{remote}", "{remote}"),
    licence="CC BY-SA 3.0", citation="LeCun, Cortes, Burges. The MNIST database (1998)."))
def _cifar(name: str, title: str, source: str, folder: str, archive: str, sha256: str,
           md5: str, size: int, members: dict[str, str], citation: str) -> DatasetSpec:
    """A CIFAR data set: every file its archive unpacks that the loader reads, each with the
    MD5 torchvision publishes for it, and the archive pinned by SHA-256, MD5 and size (its
    notes say so)."""
    files = tuple(FileSpec(f"{folder}/{member}", md5=member_md5, remote=archive, unpack="untar",
                           remote_sha256=sha256, remote_md5=md5, remote_size=size)
                  for member, member_md5 in members.items())
    return DatasetSpec(name=name, title=title, source=source, loader=_LOADERS + "load_torchvision",
                       files=files, urls=("https://www.cs.toronto.edu/~kriz/",),
                       licence="research use", citation=citation,
                       notes=f"archive sha256 {sha256} ({size:,} bytes; md5 {md5})")


_add(_cifar(
    "cifar10", "CIFAR-10 (50k train / 10k test)", "torchvision.datasets.CIFAR10",
    "cifar-10-batches-py", "cifar-10-python.tar.gz",
    "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    "c58f30108f718f92721af3b95e74349a", 170_498_071,
    {"data_batch_1": "c99cafc152244af753f735de768cd75f",
     "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
     "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
     "data_batch_4": "634d18415352ddfa80567beed471001a",
     "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
     "test_batch": "40351d587109b95175f43aff81a1287e",
     "batches.meta": "5ff9c542aee3614f3951f8cda6e48888"},
    "Krizhevsky. Learning multiple layers of features from tiny images (2009)."))
_add(DatasetSpec(
    name="cifar10_jpeg", title="CIFAR-10 as JPEG q75 image folders (lossy copy)",
    source="torchvision.datasets.ImageFolder",
    files=(FileSpec("train/airplane/0000.jpg", remote="cifar10_imagefolder_jpeg_q75.tar.gz",
                    unpack="untar", remote_sha256="0bfcb68717a0ecb0d51ed61034906a773d48d4"
                    "24d94b766a46d7d1c55702a4d9", remote_size=19_432_150),),
    mirror_layouts=("cifar10/{remote}", "{remote}"),
    licence="research use", citation="Krizhevsky (2009); JPEG-recompressed copy",
    notes="lossy (about 30 dB PSNR): never a substitute for CIFAR-10 in the paper profile",
    stand_in="CIFAR-10 JPEG q75 (lossy) for CIFAR-10"))
_add(_cifar(
    "cifar100", "CIFAR-100 (50k train / 10k test)", "torchvision.datasets.CIFAR100",
    "cifar-100-python", "cifar-100-python.tar.gz",
    "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
    "eb9058c3a382ffc7106e4002c42a8d85", 169_001_437,
    {"train": "16019d7e3df5f24257cddd939b257f8d",
     "test": "f0ef6b0ae62326f3e7ffdfab6717acfc",
     "meta": "7973b15100ade9c7d40fb424638fde48"},
    "Krizhevsky (2009)."))
_add(DatasetSpec(
    name="svhn", title="SVHN cropped digits (73k train / 26k test)",
    source="torchvision.datasets.SVHN",
    loader=_LOADERS + "load_torchvision",
    files=(FileSpec("train_32x32.mat", md5="e26dedcc434d2e4c54c9b2d4a06d8373",
                    sha256="435e94d69a87fde4fd4d7f3dd208dfc32cb6ae8af2240d066de1df7508d083b8",
                    size=182_040_794),
           FileSpec("test_32x32.mat", md5="eb5a983be6a315427106f1b164d9cef3",
                    sha256="cdce80dfb2a2c4c6160906d0bd7c68ec5a99d7ca4831afa54f09182025b6a75b",
                    size=64_275_384)),
    urls=("https://ufldl.stanford.edu/housenumbers/",), licence="non-commercial use",
    citation="Netzer et al. Reading digits in natural images with unsupervised feature "
    "learning (2011)."))
_add(DatasetSpec(
    name="imagenet", title="ImageNet ILSVRC-2012", source="torchvision.datasets.ImageFolder",
    loader=_LOADERS + "load_imagenet_folders", needs_preparing=False,
    user_provided=True, required_dirs=("train", "val"), licence="ImageNet terms of access",
    citation="Russakovsky et al. ImageNet Large Scale Visual Recognition Challenge (2015).",
    notes="set `data.imagenet` in the config (or SHARPNESS_IMAGENET) to a folder with "
    "train/<wnid>/*.JPEG and val/<wnid>/*.JPEG"))


def _domains(name: str, title: str, domains: tuple[str, ...], drive_id: str, citation: str,
             notes: str) -> DatasetSpec:
    """A user-provided domain-generalisation set: ``data/<name>/<domain>/<class>/*.jpg``,
    checked by layout, loaded one training domain at a time (``<name>:<domain>``)."""
    return DatasetSpec(
        name=name, title=title, source="torchvision.datasets.ImageFolder per domain",
        loader=_LOADERS + "load_domain_folders", needs_preparing=False, required_dirs=domains,
        urls=(f"https://drive.google.com/uc?id={drive_id}",), licence="research use",
        citation=citation, user_provided=True,
        notes=notes + f"unpack so that data/{name}/<domain>/<class>/*.jpg exists")


_add(_domains("pacs", "PACS (photo, art painting, cartoon, sketch)",
              ("photo", "art_painting", "cartoon", "sketch"), "1JFr8f805nMUelQWWmfnJR3y4_SYoN5Pd",
              "Li et al. Deeper, broader and artier domain generalization (ICCV 2017).",
              "the official copy is on Google Drive (the id DomainBed's download script uses); "))
_add(_domains("vlcs", "VLCS (VOC2007, LabelMe, Caltech101, SUN09)",
              ("VOC2007", "LabelMe", "Caltech101", "SUN09"), "1skwblH1_okBwxWxmRsp9_qi15hyPpxg8",
              "Fang, Xu, Rockmore. Unbiased metric learning (ICCV 2013).", ""))


def _embedded(name: str, title: str, path: str, sha256: str, licence: str,
              citation: str) -> DatasetSpec:
    """A committed subset: one ``.npz`` in ``data/embedded/``, verified by SHA-256 on load."""
    return DatasetSpec(
        name=name, title=title, source="committed in data/embedded/",
        files=(FileSpec(path, sha256=sha256),), mirror_layouts=("embedded/{remote}", "{remote}"),
        subdir="embedded", loader="sharpness.data.embedded:load_embedded",
        needs_preparing=False, licence=licence, citation=citation)


_add(_embedded("mnist_embedded", "MNIST, first 5,000 train and 1,000 test images (exact)",
               "mnist_train5000_test1000.npz",
               "c06e7cf3c1588c3525e6a37896c99c4cce89051ffd89aa736f8b7bc7c6c65de4",
               "CC BY-SA 3.0", "LeCun, Cortes, Burges (1998)."))
_add(_embedded("cifar10_embedded", "CIFAR-10, first 4,000 train and 1,000 test images (exact)",
               "cifar10_train4000_test1000.npz",
               "5e81f99fe5af185b32d0cb5efbf72c956a858f8e684fdfba6995f9e197878f5c",
               "research use", "Krizhevsky (2009)."))

_add(DatasetSpec(
    name="mnist_on_cifar", title="SVHN stand-in: MNIST digits composited on CIFAR-10 crops",
    source="built from mnist_embedded and cifar10_embedded (sharpness.data.composite)",
    loader="sharpness.data.composite:load_mnist_on_cifar", needs_preparing=False,
    built_from=("mnist_embedded", "cifar10_embedded"),
    licence="CC BY-SA 3.0 (MNIST) and research use (CIFAR-10)",
    citation="Ganin & Lempitsky. Unsupervised domain adaptation by backpropagation (2015).",
    stand_in="MNIST digits composited on CIFAR-10 crops (MNIST-M style) for SVHN"))


def base_name(name: str) -> str:
    """The registry name of a data-set name: ``pacs:photo`` (train on one domain) → ``pacs``."""
    return name.split(":", 1)[0]


def get_spec(name: str) -> DatasetSpec:
    """The registry entry for ``name``; unknown names list the known ones."""
    return lookup(DATASETS, name, "data set", DataError)


def on_disk(names: Iterable[str]) -> list[str]:
    """The registered sets whose copies jobs reading ``names`` need on disk: each name's base
    set (``pacs:photo`` -> ``pacs``), and for a built set the sets it is made from instead."""
    found: set[str] = set()
    todo = [base_name(n) for n in names]
    while todo:
        spec = get_spec(todo.pop())
        if spec.built_from:
            todo.extend(spec.built_from)
        else:
            found.add(spec.name)
    return sorted(found)


def preparation_inputs(name: str) -> list[str]:
    """What a job reading data set ``name`` waits for: the ``data_prepare`` output when the set
    needs preparing (downloads, mirrors), nothing for committed, built or user-provided sets."""
    spec = get_spec(base_name(name))
    return [PREPARED.format(name=spec.name)] if spec.needs_preparing else []
