"""The claims ledger: every claim of the three papers and every catalog check, with a verdict
computed from the figures' CSVs (:mod:`.ledger`), the statistics it decides with
(:mod:`.stats`) and the numbers the papers report (:mod:`.reported`).

Import the submodules directly; this package imports nothing heavy so that
``sharpness.claims.reported`` can be used from the table builders.
"""
