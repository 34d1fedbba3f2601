"""Read-only nested data: what a computation shared by every caller in a process hands out.

A result cached once per process (the lesam run list, :func:`sharpness.lesam.experiments.runs`)
is one object that every caller reads; a caller that changed it in place would change it for
all the others. :func:`freeze` turns nested dicts and lists into :class:`FrozenDict` and
:class:`FrozenList`, subclasses of ``dict`` and ``list`` (so ``isinstance`` checks, JSON,
equality with plain values and ``json.dumps`` all behave as before) whose every mutating
method raises ``TypeError``. ``copy.deepcopy`` (and so :func:`sharpness.mappings.deep_merge`)
and :func:`thaw` return plain, mutable copies: a caller that needs to change a value copies
it first. Standard library only.
"""

from __future__ import annotations

from typing import Any, NoReturn


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"this {type(self).__name__} is shared read-only data (a result cached for "
                    "the whole process): copy it first (copy.deepcopy or sharpness.frozen.thaw)")


class FrozenDict(dict):  # type: ignore[type-arg]
    """A ``dict`` whose mutating methods raise ``TypeError``."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        raise TypeError("unhashable type: 'FrozenDict'")

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list):  # type: ignore[type-arg]
    """A ``list`` whose mutating methods raise ``TypeError``."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        raise TypeError("unhashable type: 'FrozenList'")

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __copy__(self) -> list[Any]:
        return list(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """``value`` with every nested dict and list (and tuple) made read-only."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of ``value`` (frozen or not)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value
