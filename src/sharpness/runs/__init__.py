"""The run machinery: what makes a result traceable to the code, data and config that made it.

Records and provenance (``provenance``: content-hashed records; ``run_record``: a run's record
while it runs, ``RunRecord``; ``environment``: the
commit, package versions, device and time they carry), cache keys and code
fingerprints (``cache``), seals (``seal``: outputs hash-checked before reuse), locks (``lock``:
one writer per run folder; ``lockinfo``: who holds one), run states (``state``: running, ok,
failed, interrupted; ``progress``: progress lines) and the audit of the whole chain against
the disk (``audit``, ``audit_checks``). Import the modules themselves: this package's
``__init__`` stays empty so that importing one of them costs only what it imports.
"""
