"""Write envs/environment.yaml (the conda environment of the rules' `conda:` directives) from
envs/requirements.txt, the one list of pins.

    python envs/write_environment.py           # rewrite envs/environment.yaml
    python envs/write_environment.py --check   # exit 1 if it differs (the test suite runs this)

The environment holds Python and the pinned stack; Snakemake then runs
envs/environment.post-deploy.sh inside it, which installs this package (editable, from the
workflow folder) without touching the pins.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = "3.11"


def pins(requirements: str) -> list[str]:
    """The requirement lines of a requirements file, comments and blank lines dropped."""
    out = []
    for line in requirements.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def render(requirements: str) -> str:
    """The conda environment file for ``requirements`` (the pins as pip dependencies)."""
    lines = [
        "# Written by `python envs/write_environment.py` from envs/requirements.txt (the one list",
        "# of pins); do not edit. Snakemake's --use-conda builds it, then runs",
        "# environment.post-deploy.sh, which installs this package into it.",
        "name: sharpness",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        f"  - python={PYTHON}",
        "  - pip",
        "  - pip:",
    ]
    lines += [f"      - {pin}" for pin in pins(requirements)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if environment.yaml is out of date")
    args = parser.parse_args(argv)
    text = render((HERE / "requirements.txt").read_text())
    target = HERE / "environment.yaml"
    if args.check:
        if not target.is_file() or target.read_text() != text:
            print(f"{target} is out of date: run `python envs/write_environment.py`",
                  file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
