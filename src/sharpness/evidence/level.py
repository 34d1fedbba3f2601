"""The evidence level a figure or table states: its profile's, given to the job that draws it.

A figure says whether its numbers are evidence or a smoke test from the profile it was built
under, never from the claims: the per-claim verdicts are computed once, by the claims job, and
live in ``figures/CLAIMS.md``. The workflow gives every figure and table job its profile
(``sharpness --profile P ...``, set for the process by :func:`use_profile`); a figure drawn by
hand without one states ``unstated``.

| profile | level | what its figures are |
|---|---|---|
| ``quick`` | ``smoke`` | the pipeline ran end to end at toy scale: the code path works, no paper claim about trained networks is decided |
| ``evidence`` | ``evidence`` | runs sized to decide the claims on this machine (seeds and sizes from the registration) |
| ``paper`` | ``paper`` | the papers' own scale and data sets |
"""

from __future__ import annotations

#: the level each profile's figures state, and what it means (captions end with it)
LEVELS: dict[str, tuple[str, str]] = {
    "quick": ("smoke", "quick profile: a smoke test at toy scale, the code path works; it "
                       "decides no claim about trained networks"),
    "evidence": ("evidence", "evidence profile: runs sized to decide the claims"),
    "paper": ("paper", "paper profile: the papers' own scale"),
    "test": ("smoke", "test profile: the test suite's own settings, a smoke test"),
}
UNSTATED = ("unstated", "drawn without a profile")

_profile: list[str | None] = [None]


def use_profile(name: str | None) -> None:
    """Set the profile this process draws under (the command line's ``--profile``)."""
    if name is not None and name not in LEVELS:
        raise ValueError(f"--profile {name!r}: not one of {', '.join(LEVELS)}")
    _profile[0] = name


def profile_level() -> tuple[str, str]:
    """``(level, what it means)`` of the profile set by :func:`use_profile`."""
    name = _profile[0]
    return LEVELS[name] if name is not None else UNSTATED
