"""Each figure and table has its own caption in the report (`workflow/report/<paper>/<id>.rst`,
what `snakemake --report` shows beside it): no two items share one text with only their
names changed, so a reader sees what this figure shows, not its family's description."""

from __future__ import annotations

import re
from collections import defaultdict

from tests.conftest import REPO


def test_no_two_items_share_a_caption():
    texts = defaultdict(list)
    for rst in sorted((REPO / "workflow/report").glob("*/*.rst")):
        body = rst.read_text().split("\n\n", 1)[-1]
        texts[re.sub(re.escape(rst.stem), "ID", body)].append(rst.relative_to(REPO).as_posix())
    shared = [names for names in texts.values() if len(names) > 1]
    assert not shared, f"captions that are one text with the names changed: {shared}"
