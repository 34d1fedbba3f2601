"""Trust does not live where writers write: the signing key and the trusted public keys are
never taken from ``results/`` or ``figures/``, links resolved, and every promise of
docs/security.md about the key has a test that performs it (``sharpness.runs.signing``)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.io import LinkRefused
from sharpness.runs import signing
from sharpness.runs.signing import (
    KEY_ENV,
    TRUST_DIR_ENV,
    TRUST_ENV,
    SigningKeyRefused,
    own_public_key,
    trusted_keys,
)


@pytest.fixture
def linked_results(tmp_path, monkeypatch) -> Path:
    """A working folder whose ``results/`` is a link to a folder elsewhere (where you keep
    results); returns that folder."""
    elsewhere = tmp_path / "big-disk" / "results"
    elsewhere.mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    (work / "results").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.chdir(work)
    monkeypatch.delenv(TRUST_ENV, raising=False)
    return elsewhere


def test_the_private_key_is_refused_in_results_even_when_results_is_a_link(
        linked_results, monkeypatch) -> None:
    """The attack: `results/` is a link; a key named by its resolved path (or through
    the link) is refused and no key file is created there."""
    for named in (linked_results / "k", Path("results") / "k"):
        monkeypatch.setenv(KEY_ENV, str(named))
        with pytest.raises(SigningKeyRefused, match="inside"):
            own_public_key()
    assert list(linked_results.iterdir()) == []


def test_a_trusted_key_kept_in_results_or_figures_is_refused(linked_results, tmp_path,
                                                             monkeypatch) -> None:
    """A public-key file inside `results/` (handed over through the results folder), reached
    directly or through a link from outside, is refused: a writer of results/ could replace
    it."""
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "k"))
    planted = linked_results / ".signing-public-key"
    planted.write_text("ab" * 32 + "\n")
    (tmp_path / "innocent.pub").symlink_to(planted)
    for named in ("results/.signing-public-key", str(planted), str(tmp_path / "innocent.pub")):
        monkeypatch.setenv(TRUST_ENV, named)
        with pytest.raises(SigningKeyRefused, match="inside .*results"):
            trusted_keys()
    outside = tmp_path / "trusted" / "colleague.pub"
    outside.parent.mkdir()
    outside.write_text("cd" * 32 + "\n")
    monkeypatch.setenv(TRUST_ENV, str(outside))
    assert "cd" * 32 in trusted_keys()


def test_keys_in_the_users_trust_folder_are_trusted_and_never_from_results(
        linked_results, tmp_path, monkeypatch) -> None:
    """Every `*.pub` of the trust folder (`~/.config/sharpness/trusted/`) is trusted; a trust
    folder that is (or leads into) `results/` is refused."""
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "k"))
    folder = tmp_path / "config" / "trusted"
    folder.mkdir(parents=True)
    (folder / "colleague.pub").write_text("# alice\n" + "ef" * 32 + "\n")
    (folder / "notes.txt").write_text("ab" * 32 + "\n")  # not a .pub: not trusted
    monkeypatch.setenv(TRUST_DIR_ENV, str(folder))
    assert trusted_keys() == {"ef" * 32}
    (linked_results / "evil.pub").write_text("12" * 32 + "\n")
    for into in (linked_results, Path("results")):
        monkeypatch.setenv(TRUST_DIR_ENV, str(into))
        with pytest.raises(SigningKeyRefused, match="inside .*results"):
            trusted_keys()


def test_the_public_key_is_never_written_into_results(linked_results, tmp_path, monkeypatch,
                                                       capsys) -> None:
    """`sharpness key --out results/...` stops with one line; the public key goes beside
    the results instead."""
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "k"))
    assert main(["key", "--out", "results/.signing-public-key"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert list(linked_results.iterdir()) == []
    assert main(["key", "--out", str(tmp_path / "my-public-key.txt")]) == 0
    assert (tmp_path / "my-public-key.txt").read_text().strip() == own_public_key()


def test_an_unreadable_trusted_key_file_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "k"))
    monkeypatch.setenv(TRUST_ENV, str(tmp_path / "missing.pub"))
    with pytest.raises(SigningKeyRefused, match="cannot be read"):
        trusted_keys()


def test_a_private_key_readable_by_others_is_reported(tmp_path, monkeypatch, caplog) -> None:
    key = tmp_path / "keys" / "k"
    monkeypatch.setenv(KEY_ENV, str(key))
    own_public_key()
    key.chmod(0o644)
    os.utime(key, ns=(1, 1))  # a new mtime: the cached key is read again
    with caplog.at_level(logging.WARNING, logger="sharpness.runs.signing"):
        own_public_key()
    assert "can be read or written by others (mode 644)" in caplog.text


def test_the_key_is_read_without_following_a_link(tmp_path, monkeypatch) -> None:
    """A link at the key's name (to a key someone else controls) is refused, never read."""
    real = tmp_path / "theirs" / "k"
    monkeypatch.setenv(KEY_ENV, str(real))
    own_public_key()
    link = tmp_path / "keys" / "k"
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setenv(KEY_ENV, str(link))
    with pytest.raises(LinkRefused):
        own_public_key()


def test_a_key_made_by_a_concurrent_maker_is_never_replaced(tmp_path, monkeypatch) -> None:
    """Two processes making the key at once: the second's `_create` finds the first's key
    and keeps it (a hard link, which fails on an existing name, never a rename over it)."""
    key = tmp_path / "keys" / "k"
    monkeypatch.setenv(KEY_ENV, str(key))
    first = own_public_key()
    before = key.read_bytes()
    signing._create(key)  # the slower maker
    assert key.read_bytes() == before and own_public_key() == first
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert [p.name for p in key.parent.iterdir()] == ["k"]  # no temporary file left
