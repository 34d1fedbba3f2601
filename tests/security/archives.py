"""Archives built in memory for the attack tests: one helper, so every test that plants an
archive builds it the same way."""

from __future__ import annotations

import io
import tarfile


def tar_gz(members: dict[str, bytes]) -> bytes:
    """A ``.tar.gz`` holding each ``name: bytes`` as a regular file, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
