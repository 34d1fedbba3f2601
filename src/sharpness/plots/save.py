"""Saving figures and tables with the numbers they show and their provenance.

Every figure is written as PDF and PNG with the same stem, the tidy CSV of the plotted
numbers (one row per plotted point), its caption (``<stem>.caption.txt``), and a provenance
sidecar whose id is also stamped into the PDF and PNG metadata, so any figure found on disk can
be traced with ``sharpness audit``. The sidecar records the SHA-256 of every one of those files
(the caption too), which every reader checks (:func:`sharpness.runs.seal.read_verified`).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from sharpness import escape
from sharpness.config.variant import current_note, read_record
from sharpness.evidence.level import profile_level
from sharpness.io import atomic_open, atomic_write_text
from sharpness.runs.provenance import artifact_record, commit_artifact_record

Rows = Sequence[Mapping[str, Any]]


def _rows_to_csv(rows: Rows) -> str:
    fields: list[str] = []
    for row in rows:
        fields.extend(k for k in row if k not in fields)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in fields})
    return buffer.getvalue()


def write_csv(path: str | os.PathLike[str], rows: Rows) -> Path:
    """Write tidy rows (dicts) as CSV atomically."""
    return atomic_write_text(path, _rows_to_csv(rows))


def _stand_in_caption(caption: str, stand_ins: Sequence[str]) -> str:
    if not stand_ins:
        return caption
    note = "; ".join(stand_ins)
    return caption if note in caption else f"{caption} [Stand-in data: {note}.]"


def _evidence_caption(caption: str, level: str, reason: str) -> str:
    return (f"{caption} Evidence level: {level} ({reason}; levels are defined in "
            "figures/README.md, each claim's verdict is in figures/CLAIMS.md).")


def _variant_caption(caption: str) -> str:
    """The caption of a variant's figure or table ends with its name and differences from
    its profile (:func:`sharpness.config.variant.current_note`); the default's is unchanged."""
    note = current_note()
    return f"{caption} [Built with other settings than the profile's: {note}.]" if note else caption


#: the corner mark's text: the scale of the profile a figure was drawn under
CORNER = "profile scale: {level}"
#: ... and, on a variant's figure, its name (the caption lists its differences)
CORNER_VARIANT = "profile scale: {level} · variant {name}"


def _evidence_title(fig: Figure, level: str) -> None:
    """The profile's scale as a small mark in the figure's lower right corner, where a reader
    of the paper expects a stamp, not in the title (which says what the figure shows); a
    variant's figure names the variant there too, in the colour of a warning."""
    variant = read_record()
    text = (CORNER_VARIANT.format(level=level, name=variant["name"]) if variant
            else CORNER.format(level=level))
    fig.text(0.998, 0.004, text, ha="right", va="bottom", fontsize=6.5,
             color="tab:red" if variant else "0.45", gid="profile-scale")


def save_figure(fig: Figure, out: str | os.PathLike[str], *, rows: Rows, caption: str,
                inputs: Sequence[str | os.PathLike[str]] = (),
                params: dict[str, Any] | None = None, stand_ins: Sequence[str] = (),
                data: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Save ``fig`` as ``<stem>.pdf`` and ``<stem>.png`` with its CSV, caption and provenance.

    ``out`` may name either format; both are always written. The evidence level of the
    profile it is drawn under (:func:`sharpness.evidence.level.profile_level`) is appended to
    the title and the caption. ``rows`` are the plotted numbers
    (tidy). ``stand_ins`` names every substituted data set; it is appended to the caption and
    recorded in the provenance (the caller also puts it in the figure title).
    Returns the provenance record.
    """
    out = Path(out)
    stem = out.with_suffix("")
    pdf, png, csv_path = (stem.with_suffix(s) for s in (".pdf", ".png", ".csv"))
    caption = _stand_in_caption(caption, stand_ins)
    level, reason = profile_level()
    caption = _variant_caption(_evidence_caption(caption, level, reason))
    _evidence_title(fig, level)
    write_csv(csv_path, rows)
    caption_path = atomic_write_text(stem.with_suffix(".caption.txt"), caption + "\n")
    # the caption is an output too: its hash is recorded beside the figure's (a reader, e.g.
    # the gallery, checks it with sharpness.runs.seal.read_verified)
    record = artifact_record(pdf, kind="figure", inputs=inputs, params=params, caption=caption,
                             stand_ins=stand_ins, data=data,
                             outputs=[pdf, png, csv_path, caption_path])
    meta_pdf = {"Title": stem.name, "Subject": caption[:500],
                "Keywords": f"sharpness-provenance:{record['id']}", "Creator": "sharpness"}
    meta_png = {"Title": stem.name, "Description": caption,
                "Comment": f"sharpness-provenance:{record['id']}", "Software": "sharpness"}
    with atomic_open(pdf, "wb") as handle:
        fig.savefig(handle, format="pdf", metadata=meta_pdf)
    with atomic_open(png, "wb") as handle:
        fig.savefig(handle, format="png", metadata=meta_png)
    plt.close(fig)
    return commit_artifact_record(record)  # the sidecar last: it vouches for written files


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table_markdown(rows: Rows, columns: Sequence[str], caption: str) -> str:
    """A Markdown table with its caption below; every header, cell and the caption escaped
    (:func:`sharpness.escape.markdown`)."""
    lines = ["| " + " | ".join(escape.markdown(c) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(escape.markdown(_fmt(r.get(c, ""))) for c in columns) + " |"
              for r in rows]
    return "\n".join(lines) + f"\n\n*{escape.markdown(caption)}*\n"


def table_latex(rows: Rows, columns: Sequence[str], caption: str) -> str:
    """A LaTeX ``table`` (booktabs) with its caption; every header, cell and the caption
    escaped (:func:`sharpness.escape.latex`)."""
    body = [" & ".join(escape.latex(_fmt(r.get(c, ""))) for c in columns) + r" \\"
            for r in rows]
    return "\n".join([
        r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + "l" * len(columns) + "}",
        r"\toprule", " & ".join(escape.latex(c) for c in columns) + r" \\", r"\midrule",
        *body, r"\bottomrule", r"\end{tabular}", r"\caption{" + escape.latex(caption) + "}",
        r"\end{table}", ""])


def save_table(out: str | os.PathLike[str], *, rows: Rows, columns: Sequence[str],
               caption: str, inputs: Sequence[str | os.PathLike[str]] = (),
               params: dict[str, Any] | None = None, stand_ins: Sequence[str] = (),
               data: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Write a table as ``<stem>.md``, ``<stem>.tex`` and ``<stem>.csv`` with provenance."""
    stem = Path(out).with_suffix("")
    caption = _stand_in_caption(caption, stand_ins)
    level, reason = profile_level()
    caption = (f"[Evidence level: {level}] {caption} (Evidence level of the {reason}; levels "
               "are defined in figures/README.md, each claim's verdict is in "
               "figures/CLAIMS.md.)")
    caption = _variant_caption(caption)
    md, tex, csv_path = (stem.with_suffix(s) for s in (".md", ".tex", ".csv"))
    write_csv(csv_path, rows)
    caption_path = stem.with_suffix(".caption.txt")
    record = artifact_record(md, kind="table", inputs=inputs, params=params, caption=caption,
                             stand_ins=stand_ins, data=data,
                             outputs=[md, tex, csv_path, caption_path])
    atomic_write_text(md, table_markdown(rows, columns, caption)
                      + f"\n<!-- sharpness-provenance:{record['id']} -->\n")
    atomic_write_text(tex, table_latex(rows, columns, caption)
                      + f"% sharpness-provenance:{record['id']}\n")
    atomic_write_text(caption_path, caption + "\n")
    return commit_artifact_record(record)  # the sidecar last: it vouches for written files
