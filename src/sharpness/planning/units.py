"""Whether a claim decided by counting settings can be decided by the settings a plan buys.

The eos claims are made "in many settings" and counted with the registered count rule (an
exact binomial interval of the share of settings that hold against the claim's ``share``,
:func:`sharpness.evidence.stats.count_rule`). Full-batch gradient descent from a fixed init
is deterministic, so such a claim has no seed noise, but it still needs enough settings: 5 of
5 against a share of 0.5 is inconclusive at the 95 % level, 6 of 6 is not. A claim that counts
fewer settings than that (the settings of the figure it counts, of the losses it counts, of
the networks it does not leave out) cannot be supported however the runs come out, and the
plan must not call it settled.

``reads.yaml`` names, per claim, the units it counts (``units: {figure, loss, by_loss}``):
``figure`` the eos figure whose settings are counted, ``loss`` only settings of that loss
(eos-u-shape counts the MSE settings: the paper sets cross-entropy apart), ``by_loss``: the
claim decides each loss apart (eos-band: a t interval over each loss's settings, which needs
the rules' ``min_runs`` settings per loss).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sharpness.claims.eos_common import network_of
from sharpness.evidence.stats import SUPPORTED, count_rule


@dataclass(frozen=True)
class Units:
    """The settings a claim counts in a profile and whether they can decide it."""

    settings: tuple[str, ...]
    decidable: bool
    why: str


def counted_settings(spec: Mapping[str, Any], params: Mapping[str, Any],
                     config: Mapping[str, Any]) -> dict[str, str]:
    """Setting name -> its loss, for the settings of ``spec['figure']`` the claim counts."""
    from sharpness.eos.jobs import planned_settings  # lazy: the plan's eos readers
    from sharpness.jobs import build_plan

    eos = dict(config.get("eos") or {})
    settings = {name: s for name, (_, s) in planned_settings(build_plan(config)).items()} \
        if eos else {}
    left_out = {str(n) for n in params.get("leave_out") or ()}
    out = {}
    for name in (eos.get("figures") or {}).get(spec["figure"], []):
        s = settings.get(name, {})
        loss = str(s.get("loss", "mse")).lower()
        if network_of(str(s.get("label") or name)) in left_out:
            continue
        if spec.get("loss") and loss != str(spec["loss"]).lower():
            continue
        out[name] = loss
    return out


def fewest_to_support(share: float, level: float, most: int = 1000) -> int:
    """The fewest settings n for which n of n clears the count rule against ``share``."""
    for n in range(1, most + 1):
        if count_rule(n, 0, share, level).verdict == SUPPORTED:
            return n
    return most + 1


def claim_units(spec: Mapping[str, Any] | None, params: Mapping[str, Any],
                config: Mapping[str, Any], *, level: float, min_runs: int) -> Units | None:
    """The units a claim counts (None: ``reads.yaml`` names none for it) and whether they
    suffice: the count rule's fewest settings against the claim's registered ``share``, or,
    ``by_loss``, ``min_runs`` settings of each loss the figure holds."""
    if not spec:
        return None
    found = counted_settings(spec, params, config)
    names = tuple(found)
    where = f"{spec['figure']}" + (f", {spec['loss']} only" if spec.get("loss") else "")
    if spec.get("by_loss"):
        per: dict[str, int] = {}
        for loss in found.values():
            per[loss] = per.get(loss, 0) + 1
        short = {loss: n for loss, n in per.items() if n < min_runs}
        ok = bool(per) and not short
        text = ", ".join(f"{n} {loss}" for loss, n in sorted(per.items())) or "none"
        return Units(names, ok, f"settings counted per loss ({where}): {text}; each loss needs "
                                f"{min_runs}")
    share = float(params["share"])
    need = fewest_to_support(share, level)
    return Units(names, len(names) >= need,
                 f"{len(names)} settings counted ({where}); the count rule needs {need} of "
                 f"{need} to clear a share of {share:g} at {level:.0%}")
