"""seed_offset moves every seed a profile config names, and nothing else."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from sharpness.mappings import offset_seeds


def test_offset_moves_every_seed_and_nothing_else() -> None:
    config = {"seed_offset": 100, "lesam": {"groups": {"g": {
        "seeds": [0, 1, 2], "optimizers": [{"label": "x", "seeds": [0]}, "sgd"]}},
        "glmc": {"method": {"lt_seed": 0}, "seeds": [0, 1]}},
        "minorfirst": {"multi": {"n": 12, "seed": 4}}, "eos": {"steps": 3, "seed": None}}
    assert offset_seeds(config) == 100
    g = config["lesam"]["groups"]["g"]
    assert g["seeds"] == [100, 101, 102] and g["optimizers"][0]["seeds"] == [100]
    assert config["lesam"]["glmc"] == {"method": {"lt_seed": 100}, "seeds": [100, 101]}
    assert config["minorfirst"]["multi"] == {"n": 12, "seed": 104}
    assert config["eos"] == {"steps": 3, "seed": None} and config["seed_offset"] == 100


def test_no_offset_leaves_the_profile_as_it_is() -> None:
    path = Path(__file__).resolve().parents[1] / "workflow/config/evidence.yaml"
    config = yaml.safe_load(path.read_text())
    before = copy.deepcopy(config)
    assert offset_seeds(config) == 0 and config == before
    config["seed_offset"] = 1000
    offset_seeds(config)
    assert config["gradcam"]["seeds"] == [s + 1000 for s in before["gradcam"]["seeds"]]
