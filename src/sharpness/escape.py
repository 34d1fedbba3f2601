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

import re
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


#: a run of underscores with a letter or digit on both sides: CommonMark's flanking rules let
#: such a run neither open nor close emphasis, so it is shown as typed without a backslash
_INTRAWORD = re.compile(r"(?<=[^\W_])_+(?=[^\W_])")


def markdown(text: object) -> str:
    """``text`` as Markdown (GitHub's included) shows it literally, on one line: safe in a
    table cell, in emphasis and as HTML. Underscores inside a word stay bare (a run label
    such as ``lesam_readme_rmax999`` reads the same in the file as in its config)."""
    text = str(text)
    bare = {i for m in _INTRAWORD.finditer(text) for i in range(m.start(), m.end())}
    return "".join(c if i in bare else _MARKDOWN.get(c) or _one_line(c) or c
                   for i, c in enumerate(text))
