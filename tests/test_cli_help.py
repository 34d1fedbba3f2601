"""Every `sharpness` subcommand and every flag and argument carries help text, and the help
names papers by their keys (minorfirst, lesam, eos), never by a number."""

from __future__ import annotations

import argparse
import re

from sharpness.cli import build_parser


def _walk(parser: argparse.ArgumentParser, path: list[str]):
    """(path, parser) for ``parser`` and every subparser below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, [*path, name])


def test_every_subcommand_and_flag_has_help() -> None:
    missing = []
    seen = 0
    for path, parser in _walk(build_parser(), ["sharpness"]):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            seen += 1
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                missing += [f"{' '.join(path)} {name} (subcommand)"
                            for name in action.choices if not helps.get(name)]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
    assert seen > 50, "the walk found too few arguments to be the whole CLI"
    assert not missing, "arguments without help text:\n" + "\n".join(missing)


def test_help_names_papers_by_key() -> None:
    numbered = re.compile(r"\bpapers? \(?0\d\d|\(0\d\d\)")
    texts = []
    for path, parser in _walk(build_parser(), ["sharpness"]):
        texts.append((" ".join(path), parser.format_help()))
    bad = [name for name, text in texts if numbered.search(text)]
    assert not bad, f"help text names a paper by number in: {bad}"
