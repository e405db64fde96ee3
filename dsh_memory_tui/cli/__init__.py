"""dsh-memory: the scriptable command line (SPEC 9). Parsing and printing only.

Exit codes: 0 success, 1 a StoreError (``error[CODE]: message`` on stderr), 2 a usage error.
Commands that write print the id they wrote alone on the last line of stdout.

Each command is declared beside its function (``command.command``) in the module of its group:
``records`` (list, show, create, propose, edit, copy), ``review`` (the host's transitions, keep,
merge, lint, sources, queue), ``files`` (adopt, export, import, compact, check, the merge
driver, demo) and ``agents`` (auto-write, payload, audit, mcp). A new command goes in one of them.
"""

from __future__ import annotations

import argparse
import io
import os
import shlex
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import ErrorCode, StoreError
from ..usage import UsageError, UsageParser

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .command import Command

__all__ = ["COMMANDS", "UsageError", "UsageParser", "build_parser", "main"]


def groups() -> tuple[ModuleType, ...]:
    """The groups of commands, in the order `dsh-memory --help` lists them; importing each
    declares its commands. Imported on first need: `dsh-memory --version` needs none."""
    from . import agents, files, records, review

    return (records, review, files, agents)


def __getattr__(name: str) -> Any:
    if name == "COMMANDS":  # every command, declared
        return _commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _commands() -> dict[str, Command]:
    from .command import COMMANDS

    groups()
    return COMMANDS


def build_parser() -> argparse.ArgumentParser:
    """``dsh-memory``'s parser: the global options and a subcommand per declared command."""
    from .command import CommandParser, add_globals

    parser = UsageParser(prog="dsh-memory", description="Read and govern dsh workspace memory.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_globals(parser, suppress=False)
    # Not required here: argparse would then say "COMMAND is required" for `dsh-memory
    # --bogus` instead of naming the flag; main() asks for the command after the flags.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    order = {group.__name__: n for n, group in enumerate(groups())}
    for declared in sorted(_commands().values(), key=lambda c: order[c.run.__module__]):
        sub.add_parser(
            declared.name, help=declared.help, description=declared.help, command=declared
        )
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; a usage error names the command it is in and prints that command's
    usage (argparse reports an unknown flag after a command with the top-level usage, and a
    command's own flag put before its name, ``dsh-memory --yes-shared verify ID``, likewise)."""
    args, extras = parser.parse_known_args(argv)
    if args.command is None:
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        parser.error("a COMMAND is needed (dsh-memory --help lists them)")
    if extras:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        command_parser = sub.choices[args.command]
        before = argv[: argv.index(args.command)]
        misplaced = [x for x in extras if x in before and command_parser.knows(x)]
        if misplaced == extras:
            moved = shlex.join(["dsh-memory", *(a for a in argv if a not in extras), *extras])
            command_parser.error(f"{' '.join(extras)} goes after the command's name: {moved}")
        command_parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def with_the_fix(error: StoreError, argv: list[str]) -> StoreError:
    """``error``, and for an unconfirmed shared write the command line that confirms it."""
    if error.code is ErrorCode.SHARED_WRITE_UNCONFIRMED and "--yes-shared" not in argv:
        again = shlex.join(["dsh-memory", *argv, "--yes-shared"])
        return StoreError(error.code, f"{error.message}: {again}")
    return error


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dsh-memory`` with ``argv`` (default: the process's); returns the exit code."""
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        # What argparse's version action prints, without declaring every command first.
        print(f"dsh-memory {__version__}")
        return 0
    parser = build_parser()
    store: MemoryStore | None = None
    said = ""
    if isinstance(sys.stdout, io.TextIOWrapper):
        # A lone surrogate (host-valid text: an id, a title) is printed as \udcff, never a
        # UnicodeEncodeError after the command did its work; ``visible`` writes it so too.
        sys.stdout.reconfigure(errors="backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse(parser, argv)
        if os.environ.get("DSH_DEBUG") == "1":
            # The auto-writer and the store skip failures quietly; this shows why.
            import logging  # here: a command without DSH_DEBUG does not pay for it

            logging.basicConfig(format="debug: %(name)s: %(message)s")
            logging.getLogger("dsh_memory_tui").setLevel(logging.DEBUG)
        declared = _commands()[args.command]
        if declared.check is not None:
            declared.check(args)
        from ..settings import check_environment
        from ..store import MemoryStore  # here: `--version` and `--help` never load the store

        check_environment()  # every setting, before the command does anything
        store = MemoryStore.open(args.home, args.workspace, args.user)
        declared.resolve_ids(store, args)  # a unique prefix stands for the whole id
        return declared.run(store, args)
    except UsageError as exc:
        print(f"error[{ErrorCode.USAGE}]: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        said = str(with_the_fix(exc, argv))
        print(said, file=sys.stderr)
        return 2 if exc.code == ErrorCode.USAGE else 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as exc:  # argparse --help
        return int(exc.code or 0)
    finally:  # a file too large to read is left out of every answer: said once, last
        for why in store.unread_files() if store is not None else ():
            if why not in said:
                print(f"warning: {why}", file=sys.stderr)
