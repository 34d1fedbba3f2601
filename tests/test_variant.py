"""Your own settings beside the default: which configs are variants, their names, what their
figures, captions, screens and ledgers say (sharpness.config.variant). The build itself is
tested in tests/pipeline/test_variant_build.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sharpness.config.variant import (
    ENV,
    checkout_of,
    current_note,
    derived_name,
    describe,
    differences,
    in_checkout,
    read_record,
    variant_of,
    write_record,
)
from sharpness.crate.screen import failed, finished
from sharpness.errors import ConfigError

PROFILE = {"profile": "quick", "data": {"root": "data"},
           "minorfirst": {"l1_maxmargin": {"steps": 2000, "rhos": [0.1, 0.5]}}}


def _with(**changes):
    config = json.loads(json.dumps(PROFILE))
    config["minorfirst"]["l1_maxmargin"].update(changes)
    return config


def test_the_profile_itself_and_a_data_folder_elsewhere_are_the_default_build():
    assert variant_of(PROFILE, PROFILE) is None
    moved = {**PROFILE, "data": {"root": "/big/disk", "mirror": "../shared/datasets"}}
    assert variant_of(moved, PROFILE) is None  # where inputs live is not a setting


def test_a_changed_setting_is_a_variant_named_from_the_file_and_the_settings():
    variant = variant_of(_with(steps=500), PROFILE, hint="my")
    assert variant is not None and variant.profile == "quick"
    assert variant.differences == (("minorfirst.l1_maxmargin.steps", 2000, 500),)
    assert variant.name.startswith("my-") and len(variant.name) == len("my-") + 6
    assert variant.folder == f"variants/{variant.name}"
    # the same settings land in the same folder; other settings never in that one
    assert variant_of(_with(steps=500), PROFILE, hint="my").name == variant.name
    assert variant_of(_with(steps=501), PROFILE, hint="my").name != variant.name


def test_lists_compare_whole_and_a_key_only_on_one_side_shows_as_absent():
    config = _with(rhos=[0.1], extra=3)
    assert differences(PROFILE, config) == [
        ("minorfirst.l1_maxmargin.extra", None, 3),
        ("minorfirst.l1_maxmargin.rhos", [0.1, 0.5], [0.1])]
    assert "(absent) → 3" in describe(variant_of(config, PROFILE).as_record())


def test_a_second_look_alone_is_named_by_its_seed_offset():
    assert variant_of({**PROFILE, "seed_offset": 1000}, PROFILE).name == "seed1000"
    assert derived_name([("seed_offset", None, 7), ("a", 1, 2)], None).startswith("config-")


def test_a_given_name_wins_and_default_builds_into_the_default_folders():
    assert variant_of({**_with(steps=5), "variant": "mine"}, PROFILE).name == "mine"
    assert variant_of({**_with(steps=5), "variant": "default"}, PROFILE) is None
    named = variant_of({**PROFILE, "variant": "same-settings"}, PROFILE)
    assert named is not None and named.differences == ()
    assert "named, no setting changed" in named.summary()


@pytest.mark.parametrize("bad", ["../up", "a/b", ".hidden", "-x", "", "x" * 49, 3])
def test_a_name_that_is_not_a_plain_folder_name_is_refused_with_the_key(bad):
    with pytest.raises(ConfigError, match="config variant"):
        variant_of({**PROFILE, "variant": bad}, PROFILE)


def test_a_hint_with_odd_characters_still_gives_a_folder_name():
    name = derived_name([("a", 1, 2)], "my settings (v2)")
    assert name.startswith("my-settings-v2-") and "/" not in name and " " not in name


def test_the_record_is_written_once_and_read_through_the_environment(tmp_path, monkeypatch):
    variant = variant_of(_with(steps=500), PROFILE, hint="my")
    path = write_record(variant, tmp_path)
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))
    write_record(variant, tmp_path)  # unchanged: its time stamp stays (no job reruns)
    assert path.stat().st_mtime_ns == stamp - 10**9
    monkeypatch.delenv(ENV, raising=False)
    assert read_record() is None and current_note() == ""
    monkeypatch.setenv(ENV, str(path))
    assert read_record()["name"] == variant.name
    assert "steps: 2000 → 500" in current_note()
    path.write_text("{not json")
    assert read_record()["name"] == "unknown"  # never passes for the default build


def test_many_differences_are_counted_not_dropped():
    config = _with(**{f"k{i}": i for i in range(9)})
    text = variant_of(config, PROFILE, hint="many").summary()
    assert "and 5 more" in text and "variant.json" in text


def test_a_variant_folder_finds_its_checkout(tmp_path, monkeypatch):
    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "docs/registration").mkdir(parents=True)
    (tmp_path / "docs/registration/quick.json").write_text("{}")
    build = tmp_path / "variants" / "my-1"
    build.mkdir(parents=True)
    assert checkout_of(build) == tmp_path.resolve()
    assert checkout_of(tmp_path) == tmp_path
    monkeypatch.chdir(build)
    found = in_checkout("docs/registration/quick.json")
    assert found == Path("../../docs/registration/quick.json") and found.is_file()
    assert in_checkout("docs/registration/paper.json") == Path("docs/registration/paper.json")


def test_the_end_screen_of_a_variant_names_it_and_gives_paths_from_the_checkout(tmp_path):
    build = tmp_path / "variants" / "my-1"
    (build / "figures/minorfirst").mkdir(parents=True)
    (build / "figures/minorfirst/l1_maxmargin.pdf").write_bytes(b"%PDF")
    write_record(variant_of(_with(steps=500), PROFILE, hint="my"), build)
    target = "figures/minorfirst/l1_maxmargin.pdf"
    screen = finished(build, ["snakemake", target, "--configfile", "my.yaml"],
                      variant="variants/my-1")
    assert "variant:  variant 'my-" in screen and "left as it is" in screen
    assert f"  variants/my-1/{target}" in screen
    assert "then open variants/my-1/report.html" in screen
    assert "sharpness crate --root variants/my-1 --out variants/my-1/results/part.crate.zip" \
        in screen
    assert f"sharpness audit variants/my-1/{target}" in screen
    assert f"sharpness diff {target} --variant my-1 --out compare.png" in screen
    assert "`snakemake --cores all --configfile my.yaml`" in screen  # how its ledger is built


def test_a_failed_variant_names_its_job_logs_from_the_checkout(tmp_path):
    log = tmp_path / "snakemake.log"
    log.write_text("Error in rule x:\n    log: logs/x.log (check log file(s) for error details)\n")
    assert "its log variants/my-1/logs/x.log" in failed(str(log), ["snakemake"],
                                                         variant="variants/my-1")
