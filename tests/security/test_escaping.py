"""Text from configs and records is shown as typed in LaTeX and Markdown, never run as markup.

Before, a stand-in label holding ``^^5c`` (TeX's spelling of a backslash), ``{``, ``$`` or
``<img onerror=...>`` passed unescaped into ``.tex`` captions, Markdown tables and
``CLAIMS.md``. Each writer now passes such text through the one function of its format
(:mod:`sharpness.escape`); a test per writer feeds it the hostile strings and reads the
result back with a reader of that format's escapes.
"""

from __future__ import annotations

import re

import pytest

from sharpness import escape
from sharpness.claims.ledger import markdown as ledger_markdown
from sharpness.plots.save import save_table, table_latex, table_markdown
from sharpness.readme.gallery import drawn_by

HOSTILE = ["^^5c", "{", "}", "$", "\\", "%", "&", "#", "_", "|", "\n",
           "<img onerror=alert(1)>", "^^5cinput{/etc/passwd}", "a|b\n| c", "$x^2$ ~ `y` *z*"]
ALL = "".join(HOSTILE)

_LATEX_TOKEN = re.compile(r"\\textbackslash\{\}|\\textasciicircum\{\}|\\textasciitilde\{\}"
                          r"|\\textless\{\}|\\textgreater\{\}|\\textbar\{\}|\$\\pm\$"
                          r"|\\[{}$%&#_]|[^\\{}$%&#_^~<>|]")
_LATEX_CHAR = {r"\textbackslash{}": "\\", r"\textasciicircum{}": "^", r"\textasciitilde{}": "~",
               r"\textless{}": "<", r"\textgreater{}": ">", r"\textbar{}": "|", r"$\pm$": "±"}
_MD_TOKEN = re.compile(r"(?<=[^\W_])_+(?=[^\W_])"  # inside a word: never emphasis
                       r"|\\[\\`*_\[\]|$~#!]|&lt;|&gt;|&amp;|[^\\`*_\[\]|$~#!<>&\n]")
_MD_CHAR = {"&lt;": "<", "&gt;": ">", "&amp;": "&"}


def read_latex(text: str) -> str:
    """What LaTeX shows for ``text`` made of the escapes :func:`escape.latex` writes; an
    AssertionError at any character that would be markup (a command, group, math, ``^``)."""
    tokens = _LATEX_TOKEN.findall(text)
    assert "".join(tokens) == text, f"markup left in {text!r}"
    return "".join(_LATEX_CHAR.get(t, t[-1]) for t in tokens)


def read_markdown(text: str) -> str:
    """What Markdown shows for ``text``; an AssertionError at markup (``|``, ``<``, emphasis,
    math, a line break)."""
    tokens = _MD_TOKEN.findall(text)
    assert "".join(tokens) == text, f"markup left in {text!r}"
    return "".join(_MD_CHAR.get(t, t if set(t) == {"_"} else t[-1]) for t in tokens)


def _shown(text: str) -> str:
    return text.replace("\n", " ")  # one line: a line break becomes a space


@pytest.mark.parametrize("text", [*HOSTILE, ALL])
def test_each_format_shows_hostile_text_as_typed(text) -> None:
    assert read_latex(escape.latex(text)) == _shown(text)
    assert read_markdown(escape.markdown(text)) == _shown(text)
    assert "<img" not in escape.markdown(text) and "^^" not in escape.latex(text)


@pytest.mark.parametrize("text", ["lesam_readme_rmax999", "a__b", "é_1", *HOSTILE, ALL,
                                  "x_*y*_z", "_lead", "trail_", "a_ b", "**a_b**"])
def test_commonmark_renders_escaped_text_as_typed(text) -> None:
    """A CommonMark renderer (markdown-it) shows the escaped text as typed, with no emphasis:
    the underscores left bare inside a word included."""
    from html import unescape

    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").renderInline(escape.markdown(text))
    assert "<em>" not in html and "<strong>" not in html and "<img" not in html
    assert unescape(html) == _shown(text)


def test_a_run_label_reads_in_the_markdown_as_in_its_config() -> None:
    assert escape.markdown("lesam_readme_rmax999") == "lesam_readme_rmax999"
    assert escape.markdown("_x_") == "\\_x\\_"  # a run at a word's edge could open emphasis


def test_the_readers_see_markup_left_unescaped() -> None:
    with pytest.raises(AssertionError):
        read_latex("a^^5cinput{x}")
    with pytest.raises(AssertionError):
        read_markdown("a | <img onerror=alert(1)>")


@pytest.mark.parametrize("text", HOSTILE)
def test_latex_tables_escape_headers_cells_and_the_caption(text) -> None:
    tex = table_latex([{text: text, "n": 1}], [text, "n"], f"Stand-in data: {text}.")
    caption = re.search(r"\\caption\{(.*)\}\n\\end\{table\}", tex, re.S)
    assert caption is not None and read_latex(caption[1]) == _shown(f"Stand-in data: {text}.")
    header, row = tex.split("\\toprule\n", 1)[1].split("\n")[0:3:2]
    assert [read_latex(c) for c in header.removesuffix(r" \\").split(" & ")] == [
        _shown(text), "n"]
    assert [read_latex(c) for c in row.removesuffix(r" \\").split(" & ")] == [_shown(text), "1"]


def _md_cells(line: str) -> list[str]:
    """The cells of a Markdown table row: split at every ``|`` that no backslash escapes."""
    assert line.startswith("| ") and line.endswith(" |")
    cells, cell = [], ""
    for token in re.findall(r"\\.|.", line[2:-2]):
        if token == "|":
            cells.append(cell.removesuffix(" "))
            cell = ""
        else:
            cell += token
    cells.append(cell)
    return cells[:1] + [c.removeprefix(" ") for c in cells[1:]]


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_tables_escape_headers_cells_and_the_caption(text) -> None:
    md = table_markdown([{text: text, "n": 1}], [text, "n"], f"Stand-in data: {text}.")
    header, rule, row, blank, caption = md.rstrip("\n").split("\n")
    assert [read_markdown(c) for c in _md_cells(header)] == [_shown(text), "n"]
    assert [read_markdown(c) for c in _md_cells(row)] == [_shown(text), "1"]
    assert rule == "|---|---|" and blank == ""
    assert read_markdown(caption[1:-1]) == _shown(f"Stand-in data: {text}.")


def _ledger_row(text: str) -> dict:
    return {"id": "x-1", "paper": "lesam", "kind": "claim", "claim": text, "source": text,
            "predicate": text, "value": text, "verdict": "supported", "level": "smoke",
            "n": 3, "p_raw": None, "p_adj": None, "provenance": text, "items": text,
            "note": text, "to_settle": text}


@pytest.mark.parametrize("text", HOSTILE)
def test_the_claims_ledger_escapes_every_cell(text) -> None:
    """CLAIMS.md: a row keeps its twelve cells and shows each value as typed; the verdict
    keeps the ledger's own bold."""
    md = ledger_markdown([_ledger_row(text)], "quick")
    line = next(row for row in md.splitlines() if row.startswith("| x-1 |"))
    cells = _md_cells(line)
    assert len(cells) == 12
    assert read_markdown(cells[2]) == _shown(f"{text} ({text})")
    assert cells[5] == "**supported**"
    assert [read_markdown(c) for c in (cells[3], cells[4], cells[10], cells[11])] == [
        _shown(text)] * 4
    assert "<img" not in md


@pytest.mark.parametrize("text", HOSTILE)
def test_the_gallery_escapes_what_a_run_recorded(text) -> None:
    """The README's gallery quotes the profile, commit and date a run's files recorded."""
    line = drawn_by({"profile": text, "commit": text, "date": text, "evidence_level": text})
    assert "<img" not in line
    profile, *_ = line.split(" profile, commit ")
    assert read_markdown(profile) == _shown(text)
    level = re.search(r"scale \*\*(.*)\*\*$", line)
    assert level is not None and read_markdown(level[1]) == _shown(text)


def test_a_saved_table_escapes_its_stand_in_label_in_tex_and_md(tmp_path) -> None:
    """The attack end to end: a stand-in label with ``^^5c``, ``{``, ``$`` and an
    ``<img onerror>`` reaches the .tex caption and the .md caption as text."""
    out = tmp_path / "figures" / "lesam" / "table_x.md"
    out.parent.mkdir(parents=True)
    save_table(out, rows=[{"optimizer": "sam", "acc": 0.5}], columns=["optimizer", "acc"],
               caption="Accuracy.", stand_ins=[ALL])
    tex = out.with_suffix(".tex").read_text()
    caption = re.search(r"\\caption\{(.*)\}\n\\end\{table\}", tex, re.S)
    assert caption is not None and _shown(ALL) in read_latex(caption[1])
    md_caption = out.read_text().split("\n\n")[1].strip()
    assert _shown(ALL) in read_markdown(md_caption[1:-1])
    assert "<img" not in out.read_text() and "^^" not in tex
