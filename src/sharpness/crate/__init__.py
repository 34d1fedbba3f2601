"""A build as a Workflow Run RO-Crate: what ran, read from the build's own records.

:mod:`~sharpness.crate.records` reads the provenance records a build left (each run's
``provenance.json``, each figure's, table's and the ledger's sidecar) and the ledger's
``claims.json``; :mod:`~sharpness.crate.build` turns them into an RO-Crate (Provenance Run
Crate profile) with the ``rocrate`` library; :mod:`~sharpness.crate.check` checks a figure
against a crate someone sent; :mod:`~sharpness.crate.screen` is the screen a finished build
ends with.
"""
