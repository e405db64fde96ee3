"""Every command of ``dsh-memory`` and every flag it takes is in the README's command reference
(sqlite-utils keeps the same test): a command or flag added without its line fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from dsh_memory_tui.cli import COMMANDS, build_parser

README = Path(__file__).parents[1] / "README.md"
GLOBAL_FLAGS = ("--home", "--workspace", "--user", "--version")


def reference() -> list[str]:
    """The README's command reference: the code block after "## The command line"."""
    text = README.read_text()
    section = text[text.index("## The command line") :]
    block = section[section.index("```\n") + 4 :]
    return block[: block.index("```")].splitlines()


def entries() -> dict[str, str]:
    """Each command's entry in the reference: its line and the lines indented under it."""
    out: dict[str, str] = {}
    name = None
    for line in reference()[1:]:
        starts = re.match(r"  (\S+)", line)
        if starts and starts.group(1) in COMMANDS:
            name = starts.group(1)
            out[name] = line
        elif name is not None and line.startswith("   "):
            out[name] += "\n" + line
    return out


def flags_of(command: str) -> set[str]:
    """The flags ``dsh-memory COMMAND --help`` lists, but the global ones."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    help_text = sub.choices[command].format_help()
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", help_text)) - {"--help", *GLOBAL_FLAGS}


def test_every_command_has_an_entry_in_the_readmes_reference():
    assert sorted(set(COMMANDS) - set(entries())) == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_flag_of_a_command_is_in_its_entry(command: str):
    entry = entries().get(command, "")
    if "(as create)" in entry:
        entry += entries()["create"]
    missing = {f for f in flags_of(command) if not re.search(re.escape(f) + r"(?![\w-])", entry)}
    assert sorted(missing) == [], f"{command}: add {sorted(missing)} to README's reference"


def test_the_global_flags_head_the_reference():
    head = reference()[0]
    assert all(flag in head for flag in GLOBAL_FLAGS)
