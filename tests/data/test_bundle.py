"""Data for an offline machine: ``sharpness data bundle`` packs verified copies with a manifest,
``unbundle`` trusts nothing in the archive (sizes, hashes, names, links, registry pins) and
leaves nothing under a final name when it refuses; the preflight names each missing set."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.data import DATASETS, DatasetSpec, FileSpec, resolve, weights
from sharpness.data.bundle import MANIFEST, read_bundle, write_bundle
from sharpness.data.fetch import STAMP
from sharpness.errors import DataError
from sharpness.limits import ArchiveLimits, LimitExceeded
from sharpness.planning.preflight import PreflightError, Report, check_data
from tests.security.archives import tar_gz

MNIST = "mnist_train5000_test1000.npz"


@pytest.fixture
def root(tmp_path, repo) -> Path:
    """A data root holding a copy of the committed MNIST subset (1 MB)."""
    folder = tmp_path / "data" / "embedded"
    folder.mkdir(parents=True)
    shutil.copyfile(repo / "data" / "embedded" / MNIST, folder / MNIST)
    return tmp_path / "data"


@pytest.fixture
def bundle(tmp_path, root) -> Path:
    out = tmp_path / "b.tar"
    write_bundle(out, ["mnist_embedded"], [], root, download=False)
    return out


def _members(archive: Path) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(archive) as tar:
        return [(m, tar.extractfile(m).read() if m.isreg() else None) for m in tar]


def _rewrite(archive: Path, out: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]
             ) -> Path:
    with tarfile.open(out, "w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out


def _nothing_written(dest: Path) -> None:
    left = [p for p in dest.rglob("*")] if dest.exists() else []
    assert not [p for p in left if p.is_file()], f"written despite the refusal: {left}"


def test_round_trip_checks_the_manifest_and_resolves_offline(tmp_path, root, bundle):
    members = _members(bundle)
    assert members[0][0].name == MANIFEST  # first: read before any data
    manifest = json.loads(members[0][1])
    source = root / "embedded" / MNIST
    assert manifest["datasets"] == {"mnist_embedded": "embedded"}
    assert manifest["files"] == [{"path": f"data/embedded/{MNIST}", "size": source.stat().st_size,
                                  "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}]
    again = tmp_path / "again.tar"  # the command writes the same archive
    assert main(["data", "bundle", "--out", str(again), "--dataset", "mnist_embedded",
                 "--root", str(root), "--no-download"]) == 0
    assert again.read_bytes() == bundle.read_bytes()
    dest = tmp_path / "gpu" / "data"
    assert main(["data", "unbundle", str(bundle), "--root", str(dest),
                 "--weights-dir", str(tmp_path / "w")]) == 0
    assert (dest / "embedded" / MNIST).read_bytes() == source.read_bytes()
    assert resolve("mnist_embedded", dest, download=False) == dest / "embedded"
    stamp = json.loads((dest / "embedded" / STAMP).read_text())
    assert stamp["files"][MNIST]["sha256"] == manifest["files"][0]["sha256"]
    assert not list(dest.glob(".sharpness-unbundle-*"))  # the staging folder is gone


def test_weights_travel_into_the_hub_cache(tmp_path, monkeypatch):
    content = b"pretend weights"
    pin = weights.PinnedWeights("tiny", "https://download.invalid/m/tiny-00000000.pth",
                                hashlib.sha256(content).hexdigest(), len(content))
    monkeypatch.setitem(weights.PINNED, "tiny", pin)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    weights.hub_checkpoints().mkdir(parents=True)
    (weights.hub_checkpoints() / pin.file_name).write_bytes(content)
    out = tmp_path / "w.tar.gz"
    write_bundle(out, [], ["tiny"], tmp_path / "data", download=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "gpu-torch"))
    read_bundle(out, tmp_path / "gpu-data")
    assert (weights.hub_checkpoints() / pin.file_name).read_bytes() == content
    (weights.hub_checkpoints() / pin.file_name).unlink()
    with pytest.raises(DataError, match="tiny"):  # and a missing one is named
        write_bundle(tmp_path / "x.tar", [], ["tiny"], tmp_path / "data", download=False)


def test_a_set_checked_through_its_kept_archive_travels_whole(tmp_path, monkeypatch):
    """A file with no pin of its own travels with the pinned archive it came from and every
    file of it (what verify reads)."""
    payload = {"toy/a.txt": b"a" * 50, "toy/b.txt": b"b" * 70}
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    archive = tar_gz(payload)
    (mirror / "toy.tar.gz").write_bytes(archive)
    spec = DatasetSpec(name="toyset", title="toy", source="test", files=(FileSpec(
        "toy/a.txt", remote="toy.tar.gz", unpack="untar",
        remote_sha256=hashlib.sha256(archive).hexdigest(),
        remote_size=len(archive)),), needs_preparing=False)
    monkeypatch.setitem(DATASETS, "toyset", spec)
    manifest = write_bundle(tmp_path / "t.tar", ["toyset"], [], tmp_path / "data",
                            mirror=mirror, download=False)
    assert sorted(e.path for e in manifest.files) == [
        "data/toyset/toy.tar.gz", "data/toyset/toy/a.txt", "data/toyset/toy/b.txt"]
    read_bundle(tmp_path / "t.tar", tmp_path / "gpu", tmp_path / "w")
    assert resolve("toyset", tmp_path / "gpu", download=False) == tmp_path / "gpu" / "toyset"


def test_a_tampered_member_is_refused_and_nothing_is_written(tmp_path, bundle):
    members = _members(bundle)
    data = bytearray(members[1][1])
    data[-1] ^= 1
    members[1] = (members[1][0], bytes(data))
    bad = _rewrite(bundle, tmp_path / "bad.tar", members)
    dest = tmp_path / "gpu"
    with pytest.raises(DataError, match="tampered or damaged"):
        read_bundle(bad, dest, tmp_path / "w")
    _nothing_written(dest)
    # a manifest forged to match the tampered bytes: the registry's own pins refuse it
    head = json.loads(members[0][1])
    head["files"][0]["sha256"] = hashlib.sha256(data).hexdigest()
    members[0] = (members[0][0], json.dumps(head).encode())
    forged = _rewrite(bundle, tmp_path / "forged.tar", members)
    with pytest.raises(DataError, match="registry"):
        read_bundle(forged, dest, tmp_path / "w")
    _nothing_written(dest)


@pytest.mark.parametrize("name", ["../x", "data/../../x", "/tmp/x", "data/embedded/../../x"])
def test_a_member_leaving_the_root_is_refused(tmp_path, bundle, name):
    members = _members(bundle)
    head = json.loads(members[0][1])
    head["files"][0]["path"] = name
    members[0] = (members[0][0], json.dumps(head).encode())
    members[1][0].name = name
    bad = _rewrite(bundle, tmp_path / "bad.tar", members)
    with pytest.raises(DataError, match="leaving its folder|not in its manifest"):
        read_bundle(bad, tmp_path / "gpu" / "data", tmp_path / "w")
    _nothing_written(tmp_path / "gpu")
    assert not (tmp_path / "x").exists() and not (tmp_path / "gpu" / "x").exists()


def test_nothing_is_written_through_a_link_leading_out_of_the_root(tmp_path, bundle):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    dest = tmp_path / "gpu"
    dest.mkdir()
    (dest / "embedded").symlink_to(outside)
    with pytest.raises(DataError, match="link leading out"):
        read_bundle(bundle, dest, tmp_path / "w")
    assert not list(outside.iterdir())


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE])
def test_a_link_member_is_refused(tmp_path, bundle, kind):
    members = _members(bundle)
    link = tarfile.TarInfo(f"data/embedded/{MNIST}")
    link.type, link.linkname = kind, "/etc/passwd"
    bad = _rewrite(bundle, tmp_path / "bad.tar", [members[0], (link, None)])
    with pytest.raises(DataError, match="link"):
        read_bundle(bad, tmp_path / "gpu", tmp_path / "w")
    _nothing_written(tmp_path / "gpu")


def test_an_archive_inflating_past_the_limit_is_refused(tmp_path, bundle):
    small = ArchiveLimits(entries=10, member_bytes=10 << 20, total_bytes=100_000)
    with pytest.raises(LimitExceeded, match="total limit"):
        read_bundle(bundle, tmp_path / "gpu", tmp_path / "w", small)
    _nothing_written(tmp_path / "gpu")
    assert main(["data", "unbundle", str(bundle), "--root", str(tmp_path / "gpu"),
                 "--max-gb", "0.0001"]) != 0
    _nothing_written(tmp_path / "gpu")


def test_a_missing_set_is_named_with_where_to_put_it(tmp_path):
    out = tmp_path / "b.tar"
    with pytest.raises(DataError, match=r"missing mnist, svhn[^\n]*\n[\s\S]*Put these files in"):
        write_bundle(out, ["svhn", "mnist"], [], tmp_path / "data", download=False)
    assert not out.exists()


def test_preflight_names_each_missing_set_and_weight_file_with_downloads_off(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.delenv("SHARPNESS_DATA_MIRROR", raising=False)
    config = {"data": {"root": str(tmp_path / "data"), "download": False}}
    needs = ({"cifar100", "pacs:photo", "mnist_on_cifar"}, ["ResNet50_Weights.IMAGENET1K_V1"])
    with pytest.raises(PreflightError) as info:
        check_data(Report("cpu"), *needs[:1], config, needs[1])
    head = str(info.value).splitlines()[0]
    for name in ("cifar100", "pacs", "ResNet50_Weights.IMAGENET1K_V1"):
        assert name in head
    assert "embedded" not in head  # the stand-in's sources: committed, found in the checkout
    assert "resnet50-0676ba61.pth" in str(info.value)  # where the weights go
    # with the network on, the same plan passes the sets with a source as fetchable
    report = Report("cpu")
    with pytest.raises(PreflightError) as info:
        check_data(report, {"cifar100", "pacs:photo"}, {"data": {"root": config["data"]["root"]}},
                   needs[1])
    assert str(info.value).splitlines()[0].startswith("missing and not fetchable here: pacs.")
    assert any("cifar100: absent, fetchable" in line for line in report.lines)
