"""The one table of methods: key, figure label, table text, colour and optimizer name.

Every figure and table names a method through this table, so GD, SAM and LE-SAM carry the
same label and colour in every paper's figures. Two vocabularies name the same methods and
both resolve here:

* the optimizer registry's names (``sgd``, ``sam``, ``sam_linf``, ``lesam``, ...), used by the
  trained networks (lesam, gradcam, the minorfirst CNN, the bridges);
* the diagonal-network methods of :mod:`sharpness.diagonal` (``gd``, ``l2``, ``linf``), used
  by the minorfirst theory figures; ``l2`` is l2-SAM and ``linf`` is l_inf-SAM.

Each optimizer's entry comes from its declaration (``optimizers.yaml``, read by
:mod:`sharpness.optim.spec`: label, table text, colour, aliases), so a new optimizer is in the
table without an edit here; the table adds the two methods no optimizer runs (``gd`` of the
diagonal figures, gradient flow ``gf``). Colours are the seaborn "colorblind" palette
(colour-blind safe) followed by Paul Tol's "muted" one (:data:`COLOURS`); a spec without a
colour takes one no spec pins, chosen by its name (:func:`method_colours`), so adding an
optimizer recolours no other. This module imports neither matplotlib nor torch (the specs are
data), so tables and the claims ledger may use it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from sharpness.optim.spec import OptimizerSpec, optimizer_specs

#: seaborn's "colorblind" palette, in its order (hex)
COLORBLIND: tuple[str, ...] = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc",
                               "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9")
#: Paul Tol's "muted" palette (colour-blind safe), for methods beyond the first ten
TOL_MUTED: tuple[str, ...] = ("#332288", "#88ccee", "#44aa99", "#117733", "#999933",
                              "#ddcc77", "#cc6677", "#882255", "#aa4499")
#: every colour a method may take, in the order free ones are handed out
COLOURS: tuple[str, ...] = COLORBLIND + TOL_MUTED

RGB = tuple[float, float, float]


def hex_to_rgb(code: str) -> RGB:
    """``"#0173b2"`` -> ``(r, g, b)`` in [0, 1] (the values matplotlib's ``to_rgb`` gives)."""
    code = code.lstrip("#")
    r, g, b = (int(code[i:i + 2], 16) / 255 for i in (0, 2, 4))
    return (r, g, b)


@dataclass(frozen=True)
class Method:
    """One method as figures and tables show it.

    ``label`` is the figure label (matplotlib mathtext allowed), ``text`` the plain text used
    in table cells, CSV rows and captions, ``optimizer`` the :mod:`sharpness.optim` registry
    name that runs it (``None`` for a flow that no optimizer runs), ``aliases`` the other
    names it goes by (the diagonal-network vocabulary, spellings in configs)."""

    key: str
    label: str
    text: str
    colour: str
    optimizer: str | None
    aliases: tuple[str, ...] = ()

    @property
    def color(self) -> RGB:
        """The colour as an RGB tuple."""
        return hex_to_rgb(self.colour)


#: the colours of the two methods no optimizer runs: diagonal GD and gradient flow
FIXED = {"gd": COLORBLIND[0], "gf": COLORBLIND[9]}


def method_colours(specs: Iterable[OptimizerSpec]) -> dict[str, str]:
    """Each optimizer's colour: its spec's ``colour``, or for a spec that pins none a colour of
    the pool no spec pins and no fixed method uses, picked by a hash of its name (the next free
    one of the pool on a clash, names in order). An unpinned optimizer thus never moves a pinned
    one, and its own colour depends on its name and the pinned colours only (unless two
    unpinned names clash), so adding a module never recolours the figures of another."""
    specs = list(specs)
    pinned = {s.name: s.colour for s in specs if s.colour}
    pool = [c for c in COLOURS if c not in {*FIXED.values(), *pinned.values()}]
    colours = dict(pinned)
    for name in sorted(s.name for s in specs if not s.colour):
        free = [c for c in pool if c not in colours.values()]
        if not free:
            raise ValueError(f"optimizer {name!r}: every colour of COLOURS is taken; pin a "
                             "colour in its entry of optimizers.yaml")
        start = int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(pool)
        colours[name] = next(c for c in pool[start:] + pool[:start] if c in free)
    return colours


def _methods() -> tuple[Method, ...]:
    """The diagonal GD, one method per optimizer spec, then gradient flow; colours assigned."""
    specs = optimizer_specs().values()
    colours = method_colours(specs)
    by_optimizer = tuple(Method(s.name, s.label, s.text, colours[s.name], s.name, s.aliases)
                         for s in specs)
    return (Method("gd", "GD", "GD", FIXED["gd"], "sgd"), *by_optimizer,
            Method("gf", "gradient flow", "gradient flow", FIXED["gf"], None))


METHODS: tuple[Method, ...] = _methods()

_BY_NAME: dict[str, Method] = {}
for _m in METHODS:
    for _name in (_m.key, *_m.aliases):
        _BY_NAME[_name] = _m


def _normal(name: str) -> str:
    return (name.lower().replace("-", "_").replace("l2_sam", "sam")
            .replace("linf_sam", "sam_linf"))


def find_method(name: str) -> Method | None:
    """The method called ``name`` in either vocabulary (case and ``-``/``_`` ignored), or
    ``None`` for a name the table does not hold (an ablation variant, say)."""
    return _BY_NAME.get(name) or _BY_NAME.get(_normal(name))


def method(name: str) -> Method:
    """The method called ``name``; a ``KeyError`` naming the known keys if there is none."""
    found = find_method(name)
    if found is None:
        known = ", ".join(sorted(_BY_NAME))
        raise KeyError(f"unknown method {name!r}; the methods table knows {known}")
    return found


def method_label(name: str) -> str:
    """The figure label of ``name`` (the name itself when the table does not hold it)."""
    found = find_method(name)
    return found.label if found else name


def method_text(name: str) -> str:
    """The plain-text name of ``name`` for tables and captions (the name itself if unknown)."""
    found = find_method(name)
    return found.text if found else name


def method_color(name: str) -> RGB:
    """The fixed colour of ``name``; a name the table does not hold gets a stable colour of
    the same palette (from its characters), so a new ablation label still draws."""
    found = find_method(name)
    if found is not None:
        return found.color
    return hex_to_rgb(COLORBLIND[sum(map(ord, _normal(name))) % len(COLORBLIND)])
