"""The figure builder: style, stand-in title, CSV rows and saving in one place."""

from __future__ import annotations

import csv
import json

import matplotlib.pyplot as plt
import pytest

from sharpness.plots import new_figure, stand_in_title


def test_builder_saves_every_file_with_rows_and_stand_in(tmp_path):
    out = tmp_path / "paper" / "demo.pdf"
    with new_figure(out, 1, 2, figsize=(4, 2), stand_ins=["MNIST crops for SVHN"]) as f:
        assert f.axes.shape == (2,)
        f.axes[0].plot([1, 2], [3, 4])
        f.add_rows([{"x": 1, "y": 3}, {"x": 2, "y": 4}], panel="left", method="gd")
        f.title("demo")
        title = f.fig._suptitle.get_text()
        record = f.save("A demo.", params={"k": 1}, tight=True)
    assert title.startswith("demo (stand-in: MNIST crops for SVHN)")
    for suffix in (".pdf", ".png", ".csv", ".caption.txt", ".provenance.json"):
        assert (tmp_path / "paper" / f"demo{suffix}").exists(), suffix
    with open(tmp_path / "paper" / "demo.csv") as handle:
        reader = csv.reader(handle)
        assert next(reader) == ["panel", "method", "x", "y"]  # common columns first
        assert [r[2:] for r in reader] == [["1", "3"], ["2", "4"]]
    caption = (tmp_path / "paper" / "demo.caption.txt").read_text()
    assert "MNIST crops for SVHN" in caption
    prov = json.loads((tmp_path / "paper" / "demo.provenance.json").read_text())
    assert prov["id"] == record["id"]
    assert not plt.get_fignums()


def test_a_figure_built_but_not_saved_is_an_error(tmp_path):
    with pytest.raises(RuntimeError, match="never saved"), new_figure(tmp_path / "x.pdf") as f:
        f.axes.plot([0, 1])
    assert not plt.get_fignums()
    assert not (tmp_path / "x.csv").exists()


def test_an_exception_closes_the_figure_and_propagates(tmp_path):
    with pytest.raises(ValueError, match="boom"), \
            new_figure(tmp_path / "x.pdf", None, figsize=(2, 2)) as f:
        assert f.axes is None
        raise ValueError("boom")
    assert not plt.get_fignums()


def test_stand_in_title_unchanged_without_stand_ins():
    assert stand_in_title("t", []) == "t"
    assert stand_in_title("t", ["a", "b"]) == "t (stand-in: a; b)"
