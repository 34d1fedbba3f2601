"""``l1_maxmargin`` reads like the paper's figure: every curve visible (each method its own
marker, GD drawn on top), a legend wherever colour or line style encodes something, panel
letters, and the profile's scale as a corner mark instead of in the title."""

from __future__ import annotations

from typing import Any

import pytest

from sharpness.evidence.level import use_profile
from sharpness.minorfirst import compute
from sharpness.minorfirst.fig_margin import plot_l1_maxmargin
from sharpness.plots import builder
from tests.minorfirst.test_figures import PARAMS

#: draws the l1 figure from its computation: second tier
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The figure object as it is saved (drawn once: the tests only read it)."""
    seen = {}
    original = builder.save_figure

    def capture(fig, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        fig.canvas.draw()
        seen["fig"] = fig
        return original(fig, *args, **kwargs)

    out = tmp_path_factory.mktemp("l1_reads") / "l1_maxmargin.pdf"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(builder, "save_figure", capture)
        use_profile("quick")
        try:
            arrays, summary = compute.COMPUTE["l1_maxmargin"](PARAMS["l1_maxmargin"])
            plot_l1_maxmargin(arrays, summary, PARAMS["l1_maxmargin"], str(out), inputs=[])
        finally:
            use_profile(None)
    return seen["fig"]


def test_every_curve_is_visible_and_every_encoding_has_a_legend(drawn):
    for ax in drawn.axes:
        curves = [line for line in ax.get_lines() if len(line.get_xdata()) > 2
                  and line.get_color() not in ("k", "black", (0.0, 0.0, 0.0, 1.0))]
        assert curves and all(line.get_marker() not in (None, "", "None") for line in curves)
        by_marker: dict[str, list[float]] = {}
        for line in curves:
            by_marker.setdefault(str(line.get_marker()), []).append(line.get_zorder())
        assert len(by_marker) == 3  # GD, l2-SAM and l_inf-SAM each their own marker
        assert min(by_marker["s"]) > max(z for m, zs in by_marker.items() if m != "s"
                                         for z in zs)  # GD (squares) drawn on top
        assert ax.get_legend() is not None
    methods = [t.get_text() for t in drawn.axes[0].get_legend().get_texts()]
    assert methods[:1] == ["GD"] and any("closed form" in m for m in methods)
    settings = [t.get_text() for t in drawn.axes[1].get_legend().get_texts()]
    assert settings == ["α=0.1, ρ=0.1", "α=0.1, ρ=0.5", "α=1.0, ρ=0.1", "α=1.0, ρ=0.5"]


def test_panel_letters_and_the_scale_as_a_corner_mark(drawn):
    letters = [t.get_text() for ax in drawn.axes for t in ax.texts]
    assert letters == ["(a)", "(b)"]
    title = drawn._suptitle.get_text()
    assert "smoke" not in title and "evidence level" not in title
    corner = [t for t in drawn.texts if t.get_text() == "profile scale: smoke"]
    assert corner and corner[0].get_position()[0] > 0.9 and corner[0].get_position()[1] < 0.1
