"""roc-validator, run offline: its HTTP cache seeded with the RO-Crate 1.1 JSON-LD context.

The validator fetches the context a crate names (``https://w3id.org/ro/crate/1.1/context``)
before any check; the tests run without network, so the context is served from
``tests/crate/data/ro-crate-1.1-context.jsonld``, the published file (CC0, from the RO-Crate
specification's repository), through the validator's own cache.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

CONTEXT = Path(__file__).with_name("data") / "ro-crate-1.1-context.jsonld"


def seed_cache(cache: Path) -> Path:
    """A requests-cache database at ``cache`` holding the context as the validator asks it."""
    import requests
    from requests.adapters import HTTPAdapter
    from requests_cache import CachedSession
    from urllib3.response import HTTPResponse

    body = CONTEXT.read_bytes()
    url = json.loads(body)["@id"]

    class Served(HTTPAdapter):
        def send(self, request: requests.PreparedRequest, *args: object, **kwargs: object
                 ) -> requests.Response:
            raw = HTTPResponse(body=io.BytesIO(body), status=200, preload_content=False,
                               headers={"Content-Type": "application/ld+json"},
                               request_url=request.url)
            return self.build_response(request, raw)

    session = CachedSession(cache_name=str(cache), backend="sqlite", expire_after=-1)
    session.mount("https://", Served())
    assert session.get(url, headers={"Accept": "application/ld+json, application/json"}).ok
    return cache


def _validate(crate: Path, profile: str, cache: Path, severity: str) -> Any:
    from rocrate_validator import services
    from rocrate_validator.models import Severity, ValidationSettings

    settings = ValidationSettings(rocrate_uri=str(crate), profile_identifier=profile,
                                  requirement_severity=Severity[severity], offline=True,
                                  cache_path=str(cache))
    return services.validate(settings)


def required_issues(crate: Path, profile: str, cache: Path) -> tuple[list[str], set[str]]:
    """Every REQUIRED issue roc-validator finds in ``crate`` (a folder or a zip) against
    ``profile`` and the profiles it builds on, offline; and those profiles' identifiers."""
    from rocrate_validator.models import Severity

    result = _validate(crate, profile, cache, "REQUIRED")
    issues = [f"{i.check.identifier}: {i.message} ({i.violatingEntity})"
              for i in result.get_issues(Severity.REQUIRED)]
    return issues, {c.requirement.profile.identifier for c in result.executed_checks}


def issue_kinds(crate: Path, profile: str, cache: Path) -> tuple[list[str], Counter[str]]:
    """roc-validator run down to RECOMMENDED: every REQUIRED issue (as
    :func:`required_issues` words it), and how many RECOMMENDED issues of each kind (the
    check's identifier, such as ``process-run-crate-0.5_8.1``)."""
    from rocrate_validator.models import Severity

    result = _validate(crate, profile, cache, "RECOMMENDED")
    required = [f"{i.check.identifier}: {i.message} ({i.violatingEntity})"
                for i in result.get_issues(Severity.REQUIRED)
                if i.severity == Severity.REQUIRED]
    kinds = Counter(i.check.identifier for i in result.get_issues(Severity.RECOMMENDED)
                    if i.severity == Severity.RECOMMENDED)
    return required, kinds


#: the heading of the section of docs/audit.md that explains each RECOMMENDED kind left
EXPLAINED = "### The validator's RECOMMENDED issues left, and why"


def explained_kinds(audit_md: Path) -> set[str]:
    """The validator checks docs/audit.md explains: each paragraph of its section
    :data:`EXPLAINED` that starts with a check's identifier in bold code."""
    text = audit_md.read_text()
    assert EXPLAINED in text, f"{audit_md} has no section {EXPLAINED!r}"
    section = text.split(EXPLAINED, 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\*\*`([A-Za-z0-9.-]+_[0-9.]+)`\*\*", section, flags=re.M))
