"""The packaged claims, read once per test process.

``sharpness.claims.ledger.all_claims`` parses ``claims.yaml`` and binds each row to its
predicate on every call (about 0.1 s); fourteen test modules need the list when they are
collected, so each pytest worker read it fourteen times before a test ran. They share this
tuple instead. Claims are frozen; a test that needs a changed one makes it with
``dataclasses.replace``.
"""

from __future__ import annotations

from sharpness.claims.ledger import all_claims
from sharpness.claims.model import Claim

#: every claim of the ledger, in ledger order
CLAIMS: tuple[Claim, ...] = tuple(all_claims())
