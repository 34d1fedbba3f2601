"""What figures, tables and the claims ledger all state, below both of them: intervals and
tests (:mod:`.stats`), the training records a table carries (:mod:`.records`), the numbers the
papers report (:mod:`.reported`) and the evidence level a profile's figures carry
(:mod:`.level`).

Import the submodules directly; this package imports nothing, so that the command line can
read :mod:`.level` without loading the statistics.
"""
