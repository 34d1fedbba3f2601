"""The claims ledger: every claim of the three papers and every catalog check, with a verdict
computed from the figures' CSVs (:mod:`.ledger`), decided with the statistics of
:mod:`sharpness.evidence.stats` against the numbers the papers report
(:mod:`sharpness.evidence.reported`).

Import the submodules directly. Only the claims job (``sharpness claims``) and the planner
import this package: figures and tables never do, so a predicate runs once per build.
"""
