"""Text from configs and records, escaped for the format it is written into.

Captions, stand-in labels, names and measured values come from configs and result files,
which the pipeline does not trust; they reach LaTeX (``.tex`` tables and their captions) and
Markdown (figure tables, ``CLAIMS.md``, the README's gallery, read on GitHub as HTML). Each
writer passes such text through the one function of its format, so that it is shown as
typed and never becomes markup: no LaTeX command (``\\input``, or ``^^5c``, TeX's spelling
of a backslash), group or math mode, no Markdown table cell split by ``|``, no HTML tag
(``<img onerror=...>``), no line break that would end a table row. The writer's own markup
(``**verdict**``, ``\\caption{...}``) is added around the escaped text, never inside it.
"""

from __future__ import annotations

import unicodedata

_LATEX = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "%": r"\%",
          "&": r"\&", "#": r"\#", "_": r"\_", "^": r"\textasciicircum{}",
          "~": r"\textasciitilde{}", "<": r"\textless{}", ">": r"\textgreater{}",
          "|": r"\textbar{}", "±": r"$\pm$"}

# backslash-escaped: CommonMark shows an escaped ASCII punctuation character as itself;
# GitHub reads `$` as math and `~` as strike-through, and `|` splits a table cell
_MARKDOWN_PUNCTUATION = "\\`*_[]|$~#!"
_MARKDOWN = {**{c: "\\" + c for c in _MARKDOWN_PUNCTUATION},
             "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _one_line(char: str) -> str | None:
    """A space for a control character (line breaks and tabs included), else None."""
    return " " if unicodedata.category(char) == "Cc" else None


def latex(text: object) -> str:
    """``text`` as LaTeX text mode shows it literally (on one line)."""
    return "".join(_LATEX.get(c) or _one_line(c) or c for c in str(text))


def markdown(text: object) -> str:
    """``text`` as Markdown (GitHub's included) shows it literally, on one line: safe in a
    table cell, in emphasis and as HTML."""
    return "".join(_MARKDOWN.get(c) or _one_line(c) or c for c in str(text))
