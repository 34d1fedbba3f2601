"""Registration before data: a claim whose tolerance changed after registering is listed as a
deviation with its verdict under both the current and the registered parameters."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sharpness.claims.ledger import all_claims, evaluate_claim
from sharpness.claims.registration import (
    code_hash,
    deviation_rows,
    deviations,
    read_registration,
    registration,
)
from sharpness.claims.registration_report import deviations_markdown
from sharpness.claims.rules import rules_for
from sharpness.errors import SharpnessError
from sharpness.evidence.stats import CONTRADICTED, SUPPORTED
from tests.claims import fixtures as fx

CONFIG = {"profile": "evidence", "lesam": {"groups": {"g": {"seeds": [0, 1, 2]}}},
          "eos": {"settings": {"a": {"train_size": 64, "seed": 3}}}}


def test_registration_holds_code_params_seeds_and_sizes() -> None:
    claims = all_claims()
    record = registration("evidence", claims, CONFIG, "cfg.yaml")
    assert set(record["claims"]) == {c.id for c in claims}
    l1 = record["claims"]["mf-l1"]
    assert l1["params"]["tol"] == 1.0e-3 and "exempt" in l1["params"] and len(l1["code"]) == 64
    assert record["config"]["seeds"] == {"lesam.groups.g.seeds": [0, 1, 2],
                                         "eos.settings.a.seed": 3}
    assert record["config"]["sizes"] == {"eos.settings.a.train_size": 64}
    assert record["rules"]["min_runs"] == 3 and record["profile"] == "evidence"
    # the same content registers under the same id; other seeds under another
    again = registration("evidence", claims, CONFIG, "cfg.yaml")
    assert again["id"] == record["id"]
    other = registration("evidence", claims, {**CONFIG, "seed_offset": 100}, "cfg.yaml")
    assert other["id"] != record["id"]


def _function(tmp_path: Path, name: str, source: str):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def test_code_hash_ignores_layout_and_docstrings_not_code(tmp_path: Path) -> None:
    a = code_hash(_function(tmp_path, "m1", "def f(d):\n    'words'\n    return d + 1  # c\n"))
    assert code_hash(_function(tmp_path, "m2", "def f(d):\n    return (d\n            + 1)\n")) == a
    assert code_hash(_function(tmp_path, "m3", "def f(d):\n    return d + 2\n")) != a


def test_changed_tolerance_is_a_deviation_with_both_verdicts() -> None:
    claims = all_claims()
    record = registration("paper", claims, CONFIG)
    assert deviations(record, claims) == []
    # after registering, mf-l1's tolerance is tightened below what the data reach (1e-5)
    changed = [replace(c, params={**c.params, "tol": 1e-6}) if c.id == "mf-l1" else c for c in claims]
    devs = deviations(record, changed)
    assert [d["id"] for d in devs] == ["mf-l1"]
    assert devs[0]["what"] == ["parameters changed: tol 0.001 → 1e-06"]
    data = fx.l1(False)
    raw = [evaluate_claim(c, data, "paper") for c in changed if c.id == "mf-l1"]
    # given mf-l1 alone, the rest of its paper's Holm family is listed as gone too
    rows = deviation_rows(record, [c for c in changed if c.id == "mf-l1"], raw, data,
                          "paper", rules_for("paper"))
    assert [r["id"] for r in rows] == ["holm families", "mf-l1"]
    row = rows[1]
    assert row["verdict_now"] == CONTRADICTED and row["verdict_registered"] == SUPPORTED
    text = deviations_markdown([row], record)
    assert "## Deviations from the registration" in text
    assert f"| mf-l1 | parameters changed: tol 0.001 → 1e-06 | {CONTRADICTED} | {SUPPORTED} |" \
        in text


def test_changed_predicate_code_is_named() -> None:
    claims = all_claims()
    record = registration("paper", claims, CONFIG)
    other = next(c for c in claims if c.id == "mf-linf-closed").test
    changed = [replace(c, test=other, params={"tol": 1e-2}) if c.id == "mf-l1" else c
               for c in claims]
    (dev,) = deviations(record, changed)
    assert dev["id"] == "mf-l1" and "predicate code changed" in dev["what"]


def test_cli_registers_and_a_tampered_registration_is_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture
                                                             ) -> None:
    from sharpness.cli import main

    cfg = tmp_path / "evidence.yaml"
    cfg.write_text(json.dumps(CONFIG))
    out = tmp_path / "reg" / "evidence.json"
    assert main(["claims", "register", "--profile", "evidence", "--config", str(cfg),
                 "--out", str(out)]) == 0
    record = read_registration(out)
    assert record["config"]["path"] == str(cfg) and "registration" in capsys.readouterr().out
    record["claims"]["mf-l1"]["params"]["tol"] = 0.5
    out.write_text(json.dumps(record))
    with pytest.raises(SharpnessError, match="does not match its id"):
        read_registration(out)
    assert main(["claims", "register", "--profile", "quick", "--config", str(cfg),
                 "--out", str(out)]) != 0
    assert "not 'quick'" in capsys.readouterr().err


def test_build_names_its_registration_and_shows_a_deviation(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The ledger built under a registration records its id, and CLAIMS.md lists a claim whose
    tolerance changed since with both verdicts (the items are read without their provenance
    check here: that check has its own tests)."""
    import sharpness.claims.ledger as ledger
    from sharpness.claims.model import ItemData
    from sharpness.claims.registration_files import registration_path
    from sharpness.cli import main

    claims = all_claims()
    reg = registration_path("paper", tmp_path / "registration")
    reg.parent.mkdir()
    reg.write_text(json.dumps(registration("paper", claims, CONFIG)))
    changed = [replace(c, params={**c.params, "tol": 1e-6}) if c.id == "mf-l1" else c for c in claims]
    monkeypatch.setattr(ledger, "all_claims", lambda: changed)
    data = fx.l1(False)

    def load(figures: object, item: str) -> ItemData | None:
        return data.get(item)

    monkeypatch.setattr(ledger, "load_item", load)
    figures = tmp_path / "figures"
    figures.mkdir()
    assert main(["claims", "build", "--figures", str(figures), "--profile", "paper",
                 "--registration", str(reg)]) == 0
    text = (figures / "CLAIMS.md").read_text()
    assert "| level | n | p (raw → Holm) |" in text and "| note | to settle |" in text
    assert "## Deviations from the registration" in text
    assert f"| mf-l1 | parameters changed: tol 0.001 → 1e-06 | {CONTRADICTED} | {SUPPORTED} |" \
        in text
    record = json.loads((figures / "CLAIMS.provenance.json").read_text())
    assert record["params"]["registration"] == read_registration(reg)["id"]
    # the second deviation: a registration outside a git checkout is not proven committed
    assert record["params"]["deviations"] == 2 and "is not in a git checkout" in text
    header = (figures / "claims.csv").read_text().splitlines()[0]
    assert header.endswith("kind,n,p_raw,p_adj,to_settle")
    meta = json.loads((figures / "claims.json").read_text())
    assert meta["registration"]["deviations"][1]["verdict_registered"] == SUPPORTED
    assert meta["registration"]["seeds"] == "as registered" and "**Seeds:**" not in text
    # the same figures said to come from a run with other seeds: the ledger says so
    assert main(["claims", "build", "--figures", str(figures), "--profile", "paper",
                 "--registration", str(reg), "--seed-offset", "1000"]) == 0
    assert "**Seeds:** the run's seed_offset is 1000" in (figures / "CLAIMS.md").read_text()
    meta = json.loads((figures / "claims.json").read_text())
    assert meta["registration"]["seed_offset"] == 1000
    assert "registration's 0" in meta["registration"]["seeds"]


@pytest.mark.parametrize("profile", ["quick", "evidence"])
def test_committed_registrations_are_intact(profile: str) -> None:
    """The registrations the next runs are built under: readable, their id their content's,
    for their own profile, with every claim's code and parameters."""
    from sharpness.claims.registration_files import registration_path

    path = Path(__file__).resolve().parents[2] / registration_path(profile)
    record = read_registration(path)
    assert record["profile"] == profile and record["config"]["path"].endswith(f"{profile}.yaml")
    assert all(bool(e["code"]) == bool(e["test"]) and "params" in e
               for e in record["claims"].values())
    assert sum(bool(e["code"]) for e in record["claims"].values()) > 50


def test_a_second_look_is_registered_with_its_own_seeds(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    """`register --seed-offset N` writes PROFILE-seedN.json holding the seeds the run will use
    (each moved by N), under its own id."""
    from sharpness.cli import main

    cfg = tmp_path / "evidence.yaml"
    cfg.write_text(json.dumps(CONFIG))
    folder = tmp_path / "docs" / "registration"
    assert main(["claims", "register", "--profile", "evidence", "--config", str(cfg),
                 "--seed-offset", "1000", "--out", str(folder / "evidence-seed1000.json")]) == 0
    assert "seed offset 1000" in capsys.readouterr().out
    record = read_registration(folder / "evidence-seed1000.json")
    assert record["config"]["seed_offset"] == 1000
    assert record["config"]["seeds"]["lesam.groups.g.seeds"] == [1000, 1001, 1002]
    assert record["config"]["seeds"]["eos.settings.a.seed"] == 1003
    assert record["id"] != registration("evidence", all_claims(), CONFIG, str(cfg))["id"]


def test_the_registration_a_run_is_built_under(tmp_path: Path) -> None:
    """Its own file first, else the profile's (whose seeds then read as a deviation)."""
    from sharpness.claims.registration_files import existing_registration, registration_path
    from sharpness.claims.registration_report import seed_offset_mismatch

    assert registration_path("evidence", tmp_path, 1000).name == "evidence-seed1000.json"
    assert existing_registration("evidence", 1000, tmp_path) is None
    plain = registration_path("evidence", tmp_path)
    plain.write_text("{}")
    assert existing_registration("evidence", 1000, tmp_path) == plain
    own = registration_path("evidence", tmp_path, 1000)
    own.write_text("{}")
    assert existing_registration("evidence", 1000, tmp_path) == own
    record = registration("evidence", all_claims(), CONFIG)
    assert seed_offset_mismatch(record, 0) is None
    why = seed_offset_mismatch(record, 1000)
    assert why is not None and "seed_offset is 1000, the registration's 0" in why
    text = deviations_markdown([], record, 1000)
    assert "**Seeds:** the run's seed_offset is 1000" in text
    assert "**Seeds:**" not in deviations_markdown([], record, 0)


def test_the_two_looks_are_registered_with_the_same_rules() -> None:
    """The evidence profile's second look (seeds moved by 1000) decides every claim by the code,
    parameters, rules and sizes of the first: only the seeds differ."""
    root = Path(__file__).resolve().parents[2] / "docs" / "registration"
    first = read_registration(root / "evidence.json")
    second = read_registration(root / "evidence-seed1000.json")
    assert second["claims"] == first["claims"] and second["rules"] == first["rules"]
    assert second["config"]["sizes"] == first["config"]["sizes"]
    assert second["config"]["seed_offset"] == 1000 and first["config"]["seed_offset"] == 0
    for where, seeds in first["config"]["seeds"].items():
        if where != "seed_offset":
            moved = ([s + 1000 for s in seeds] if isinstance(seeds, list) else seeds + 1000)
            assert second["config"]["seeds"][where] == moved, where


def _module(tmp_path: Path, name: str, source: str):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"sharpness.claims.{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_changed_helper_is_a_deviation(tmp_path: Path) -> None:
    """A helper the predicate calls (here through a second helper) is hashed with it: changing
    the inner helper's threshold changes the hash, a docstring does not; a registration whose
    helpers differ lists the claim."""
    from sharpness.claims.registration import helpers_hash

    body = ("def inner(x):\n    {doc}return x > {t}\n\ndef outer(x):\n    return inner(x)\n\n"
            "def f(d):\n    return outer(d)\n")
    a = helpers_hash(_module(tmp_path, "h1", body.format(doc="", t=1)).f)
    assert helpers_hash(_module(tmp_path, "h2", body.format(doc="'a rule'\n    ", t=1)).f) == a
    assert helpers_hash(_module(tmp_path, "h3", body.format(doc="", t=2)).f) != a
    claims = all_claims()
    record = registration("paper", claims, CONFIG)
    record["claims"]["mf-l1"]["helpers"] = "0" * 64
    (dev,) = deviations(record, claims)
    assert dev["id"] == "mf-l1" and dev["what"] == ["helper code changed"]
    # a registration written before helpers were hashed cannot vouch for them: a deviation
    del record["claims"]["mf-l1"]["helpers"]
    (dev,) = deviations(record, claims)
    assert dev["what"] == ["helpers not registered (a registration older than helper hashing)"]
