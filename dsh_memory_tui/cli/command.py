"""The command registry: each command declares its arguments beside its function.

A command module writes::

    @command("show", "one record", record_id("id"), arg("--json", action="store_true"))
    def cmd_show(store: MemoryStore, args: argparse.Namespace) -> int: ...

and ``build_parser`` makes one subcommand per declaration, in the order they were declared.
An argument that names a record is declared with :func:`record_id`: ``main`` resolves what was
typed (a unique prefix, ``MemoryStore.resolve_id``) before the command runs, so a command
cannot forget to.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from ..host_rules import Scope
from ..usage import UsageError, UsageParser

if TYPE_CHECKING:  # declaring the commands loads no store: `--help` and `--version` need none
    from ..record import SourceRef
    from ..store import MemoryStore, Session

Run = Callable[["MemoryStore", argparse.Namespace], int]

SCOPE_NAMES = [s.value for s in Scope]
SCOPE_ALIASES = {"shared": Scope.SHARED.value}


# NamedTuples, not dataclasses: `dsh-memory --help` declares every command, and the dataclasses
# module loads inspect (a third of a bare python's start).
class Arg(NamedTuple):
    """One ``add_argument`` call, kept until the command's parser is first used."""

    flags: tuple[str, ...]
    options: MappingProxyType[str, Any]
    names_record: bool = False  # a record id: resolved from a unique prefix before the run

    @property
    def dest(self) -> str:
        if "dest" in self.options:
            return str(self.options["dest"])
        return max(self.flags, key=lambda f: f.startswith("--")).lstrip("-").replace("-", "_")


def arg(*flags: str, **options: Any) -> Arg:
    """An argument as ``ArgumentParser.add_argument(*flags, **options)`` takes it."""
    return Arg(flags, MappingProxyType(options))


def record_id(*flags: str, **options: Any) -> Arg:
    """An argument naming a record. Before the command runs its value (when given) is the
    whole id a unique prefix stands for: ``NOT_FOUND`` or ``AMBIGUOUS_ID`` otherwise."""
    return Arg(flags, MappingProxyType(options), names_record=True)


class Command(NamedTuple):
    """A subcommand: its name, its one-line help, its function and its arguments."""

    name: str
    help: str
    run: Run
    args: tuple[Arg, ...]
    # More ids a prefix may stand for than the store's (the audit log names records of any
    # workspace, and forgotten ones compacted away).
    more_ids: Callable[[MemoryStore], Iterable[str]] | None = None
    # Checks of the arguments alone, made before the store is opened (a usage error).
    check: Callable[[argparse.Namespace], None] | None = None

    @property
    def record_dests(self) -> tuple[str, ...]:
        """The arguments that name a record."""
        return tuple(a.dest for a in self.args if a.names_record)

    def resolve_ids(self, store: MemoryStore, args: argparse.Namespace) -> None:
        """Each record argument given, as the whole id it stands for (see :func:`record_id`)."""
        more: list[str] | None = None
        for dest in self.record_dests:
            value = getattr(args, dest)
            if value is None:
                continue
            if more is None:
                more = list(self.more_ids(store)) if self.more_ids is not None else []
            setattr(args, dest, store.resolve_id(value, also=more))


# Every command, in the order declared (the order `dsh-memory --help` lists them).
COMMANDS: dict[str, Command] = {}


def command(
    name: str,
    help: str,
    *args: Arg | tuple[Arg, ...],
    more_ids: Callable[[MemoryStore], Iterable[str]] | None = None,
    check: Callable[[argparse.Namespace], None] | None = None,
) -> Callable[[Run], Run]:
    """Declare the subcommand ``name`` run by the decorated function, with ``args`` (an
    :class:`Arg` or a tuple of them, such as :data:`SESSION`)."""
    flat: list[Arg] = []
    for a in args:
        flat += [a] if isinstance(a, Arg) else a  # an Arg is a tuple too

    def declare(run: Run) -> Run:
        if name in COMMANDS:
            raise ValueError(f"two commands named {name!r}")
        COMMANDS[name] = Command(name, help, run, tuple(flat), more_ids, check)
        return run

    return declare


# ------------------------------------------------------------------ argument types


def scope_type(value: str) -> Scope:
    """A ``--scope`` value: a scope's name, or ``shared`` for shared-project."""
    value = SCOPE_ALIASES.get(value, value)
    if value not in SCOPE_NAMES:
        raise argparse.ArgumentTypeError(
            f"invalid scope {value!r} (choose from {', '.join(SCOPE_NAMES)})"
        )
    return Scope(value)


def source_ref_type(value: str) -> SourceRef:
    """A ``--source-ref`` value: ``KIND:ID``."""
    from ..record import SourceRef

    kind, sep, ident = value.partition(":")
    if not sep or not kind or not ident:
        raise argparse.ArgumentTypeError(f"{value!r} is not KIND:ID (for example session:abc)")
    from ..host_rules import SOURCE_REF_KINDS

    if kind not in SOURCE_REF_KINDS:
        raise argparse.ArgumentTypeError(
            f"{value!r}: unknown kind {kind!r} (choose from {', '.join(sorted(SOURCE_REF_KINDS))})"
        )
    try:
        return SourceRef.model_validate({"kind": kind, "id": ident})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a source reference ({exc})") from None


def session_of(args: argparse.Namespace) -> Session | None:
    """The session ``--session`` and ``--root`` name, or None (``--root`` alone: a usage error)."""
    sid, root = getattr(args, "session", None), getattr(args, "root", None)
    if sid is None and root is not None:
        raise UsageError("--root needs --session")
    return (sid, root) if sid is not None else None


# ------------------------------------------------------------------ arguments several take

RECORD_TYPES = ["decision", "preference", "convention", "fact"]

SESSION = (
    arg("--session", help="session id"),
    arg("--root", help="the session's root id (default: this workspace's rootId)"),
)
YES_SHARED = arg(
    "--yes-shared",
    action="store_true",
    help="confirm a write to shared-project (seen by everyone on the project)",
)


def _budget_help() -> str:
    from ..settings import BUDGET_ENV, DEFAULT_BUDGET_BYTES, MIN_BUDGET_BYTES

    return (
        f"the bytes one answer may take (default: ${BUDGET_ENV}, else {DEFAULT_BUDGET_BYTES}; "
        f"at least {MIN_BUDGET_BYTES})"
    )


# Its help is made when the command's parser is filled (agent_view is loaded then, not before).
BUDGET = arg("--budget-bytes", metavar="N", help=_budget_help)


def cite(edit: bool = False) -> Arg:
    """``--cite PATH[:START-END|#SYMBOL]``, repeatable; on an edit it replaces the
    citations."""
    return arg(
        "--cite",
        action="append",
        default=None if edit else [],
        metavar="PATH[:START-END|#SYMBOL]",
        help=(
            "the code the memory rests on: a workspace file, its lines START-END (1-based) or "
            "a symbol (a function, method or class by dotted name: src/net.py#Client.fetch, "
            "which follows the code when it moves); repeatable"
            + ("; replaces its citations" if edit else "")
        ),
    )


# ------------------------------------------------------------------ the parser


def add_globals(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """``--home``, ``--workspace`` and ``--user``: before the command or after it."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--home", default=default, help="DSH_HOME (default: $DSH_HOME or ~/.dsh)")
    parser.add_argument(
        "--workspace", default=default, help="workspace root (default: the current directory)"
    )
    parser.add_argument(
        "--user", default=default, help="acting user id (default: $DSH_USER_ID or the login name)"
    )


class CommandParser(UsageParser):
    """A command's parser, made (``ArgumentParser.__init__``) and filled with its arguments
    when it is first used. argparse checks each argument as it is added with a new help
    formatter (which asks for the terminal's size), and looks up its messages' translations
    for each parser it makes: that was most of building ``dsh-memory``'s parser, and a run
    uses one command of many (``--help`` lists them from their names and help lines).
    """

    def __init__(self, *args: Any, command: Command, **kwargs: Any) -> None:
        # Nothing of ArgumentParser's is set up yet: ``_fill`` does it on first use.
        self.command = command
        self._made = (args, kwargs)
        self._filled = False

    def _fill(self) -> None:
        if self._filled:
            return
        self._filled = True
        args, kwargs = self._made
        super().__init__(*args, **kwargs)
        add_globals(self, suppress=True)
        for a in self.command.args:
            options = dict(a.options)
            if callable(options.get("help")):  # made only now: it may load a module
                options["help"] = options["help"]()
            self.add_argument(*a.flags, **options)

    def __getattr__(self, name: str) -> Any:
        # Any other use of ArgumentParser's attributes before the first use makes it first.
        if name in ("command", "_made", "_filled"):
            raise AttributeError(name)
        self._fill()
        return object.__getattribute__(self, name)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        return super().parse_known_args(*args, **kwargs)

    def knows(self, flag: str) -> bool:
        """Whether ``flag`` (``--reason`` or ``--reason=R``) is one of this command's options."""
        self._fill()
        return flag.split("=", 1)[0] in self._option_string_actions

    def format_usage(self) -> str:
        self._fill()
        return super().format_usage()

    def format_help(self) -> str:
        self._fill()
        return super().format_help()
