"""The methods table: one label, text and colour per method, in both vocabularies."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sharpness.optim.registry import OPTIMIZERS
from sharpness.plots import PALETTE
from sharpness.plots.methods import (
    COLOURS,
    METHODS,
    find_method,
    hex_to_rgb,
    method,
    method_color,
    method_label,
    method_text,
)


def test_colours_are_the_palette_one_each():
    colours = [m.color for m in METHODS]
    assert len(set(colours)) == len(colours), "two methods share a colour"
    for m in METHODS:
        assert m.colour in COLOURS, m.key
    # the first ten colours are the plot style's palette
    assert [hex_to_rgb(c) for c in COLOURS[:10]] == [tuple(c) for c in PALETTE]
    # the colours figures have always used: gd, sgd, sam, sam_linf, lesam = palette 0..4
    for i, key in enumerate(("gd", "sgd", "sam", "sam_linf", "lesam")):
        assert method_color(key) == tuple(PALETTE[i])


def test_both_vocabularies_name_one_method():
    assert method("l2") is method("sam") is method("l2-SAM")
    assert method("linf") is method("sam_linf") is method("linf-SAM")
    assert method_label("l2") == r"$\ell_2$-SAM"
    assert method_color("linf") == method_color("sam_linf")
    assert method("LE-SAM").key == "lesam"


def test_every_registry_optimizer_is_in_the_table():
    named = {m.optimizer for m in METHODS}
    assert set(OPTIMIZERS) <= named
    for m in METHODS:
        assert m.optimizer is None or m.optimizer in OPTIMIZERS, m.key


def test_table_text_is_the_lesam_tables_vocabulary():
    assert [method_text(k) for k in ("sgd", "sam", "sam_linf", "fsam", "eigensam")] == \
        ["SGD", "SAM", "SAM (L_inf)", "F-SAM", "Eigen-SAM"]


def test_unknown_names_pass_through_and_raise_when_required():
    assert find_method("sigma_0.02") is None
    assert method_label("sigma_0.02") == "sigma_0.02"
    assert method_text("no_rho_max") == "no_rho_max"
    assert method_color("no_rho_max") in [tuple(c) for c in PALETTE]
    with pytest.raises(KeyError, match="sigma_0.02"):
        method("sigma_0.02")


@pytest.mark.e2e  # a command in a fresh interpreter
def test_an_unknown_name_has_the_same_colour_in_another_interpreter():
    """Chosen from the name's characters, not hash(): another hash seed gives the same colour."""
    other = subprocess.run([sys.executable, "-c", "from sharpness.plots.methods import "
                            "method_color; print(*method_color('no_rho_max'))"],
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout.split()
    assert tuple(map(float, other)) == method_color("no_rho_max")
