"""dsh-memory: the scriptable command line (SPEC 9). Parsing and printing only.

Exit codes: 0 success, 1 a StoreError (``error[CODE]: message`` on stderr), 2 a usage error.
Commands that write print the id they wrote alone on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from .errors import StoreError
from .model import Record, Scope, SourceRef
from .present import describe_changes, when
from .store import Action, MemoryStore, Session

SCOPE_NAMES = [s.value for s in Scope]
SCOPE_ALIASES = {"shared": Scope.SHARED.value}


class UsageError(Exception):
    """A mistake in the command line: exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: {message}")


def _scope(value: str) -> Scope:
    value = SCOPE_ALIASES.get(value, value)
    if value not in SCOPE_NAMES:
        raise argparse.ArgumentTypeError(
            f"invalid scope {value!r} (choose from {', '.join(SCOPE_NAMES)})"
        )
    return Scope(value)


def _source_ref(value: str) -> SourceRef:
    kind, sep, ident = value.partition(":")
    if not sep or not kind or not ident:
        raise argparse.ArgumentTypeError(f"{value!r} is not KIND:ID (for example session:abc)")
    return SourceRef(kind=kind, id=ident)


def _session(args: argparse.Namespace) -> Session | None:
    sid, root = getattr(args, "session", None), getattr(args, "root", None)
    if sid is None and root is not None:
        raise UsageError("--root needs --session")
    return (sid, root) if sid is not None else None


# ------------------------------------------------------------------------- printing


def _table(rows: Sequence[Sequence[str]], headers: Sequence[str], out: TextIO) -> None:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {}"
    print(fmt.format(*headers).rstrip(), file=out)
    for row in rows:
        print(fmt.format(*row).rstrip(), file=out)


def _print_records(records: Sequence[Record], out: TextIO) -> None:
    if not records:
        print("(no records)", file=out)
        return
    rows = [
        (
            r.id, r.scope.value, r.type.value, r.status.value, r.governance.verification.value,
            r.governance.origin.value, str(r.governance.revision), when(r.updatedAt),
            r.title.replace("\n", " ")[:60],
        )
        for r in records
    ]
    _table(rows, ("ID", "SCOPE", "TYPE", "STATUS", "VERIFICATION", "ORIGIN", "REV", "UPDATED",
                  "TITLE"), out)


def _print_record(record: Record, history: Sequence[Record] | None, out: TextIO) -> None:
    g = record.governance
    lines = [
        f"id:           {record.id}",
        f"scope:        {record.scope.value} ({record.scopeKey})",
        f"type:         {record.type.value}",
        f"title:        {record.title}",
        f"status:       {record.status.value}",
        f"verification: {g.verification.value}"
        + (f" at {when(g.verifiedAt)}" if g.verifiedAt else ""),
        f"origin:       {g.origin.value}",
        f"revision:     {g.revision}",
        f"retention:    {g.retention.value}",
        f"created:      {when(record.createdAt)}   updated: {when(record.updatedAt)}",
        f"tags:         {', '.join(record.tags) or '(none)'}",
        f"provenance:   {record.provenance.kind.value}"
        + (f" session {record.provenance.sessionId}" if record.provenance.sessionId else "")
        + (f" event {record.provenance.eventSeq}" if record.provenance.eventSeq is not None
           else ""),
        f"sourceRefs:   {', '.join(f'{s.kind}:{s.id}' for s in g.sourceRefs) or '(none)'}",
    ]
    if g.reviewedBy:
        lines.append(f"reviewed:     by {g.reviewedBy}" + (f": {g.reviewNote}" if g.reviewNote
                                                            else ""))
    print("\n".join(lines), file=out)
    print("\n" + record.content, file=out)
    if history is not None:
        print("\nhistory:", file=out)
        prev: Record | None = None
        for version in history:
            changes = "; ".join(describe_changes(prev, version))
            print(f"  r{version.governance.revision}  {when(version.updatedAt)}  {changes}",
                  file=out)
            prev = version


def _dump(obj: Any) -> None:
    json.dump(obj, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


# ------------------------------------------------------------------------- commands


def cmd_list(store: MemoryStore, args: argparse.Namespace) -> int:
    records = store.records(args.scope, session=_session(args), include_inactive=args.all)
    if args.json:
        _dump([r.to_json() for r in records])
    else:
        _print_records(records, sys.stdout)
    return 0


def cmd_show(store: MemoryStore, args: argparse.Namespace) -> int:
    record = store.get(args.id)
    history = store.history(args.id) if args.history else None
    if args.json:
        _dump([r.to_json() for r in history] if history is not None else record.to_json())
    else:
        _print_record(record, history, sys.stdout)
    return 0


def _written(record_id: str, note: str | None = None) -> int:
    if note:
        print(note)
    print(record_id)
    return 0


def cmd_create(store: MemoryStore, args: argparse.Namespace) -> int:
    common = dict(session=_session(args), confirm_shared=args.yes_shared)
    if args.command == "propose":
        result = store.propose(args.scope, args.type, args.title, args.content, args.tag,
                               source_refs=args.source_ref, **common)
    else:
        result = store.create(args.scope, args.type, args.title, args.content, args.tag,
                              **common)
    note = None if result.written else "an identical record exists; nothing written"
    return _written(result.id, note)


def cmd_edit(store: MemoryStore, args: argparse.Namespace) -> int:
    if args.title is None and args.content is None and args.type is None and args.tag is None:
        raise UsageError("edit needs at least one of --title, --content, --type, --tag")
    record = store.edit(args.id, args.base_revision, title=args.title, content=args.content,
                        record_type=args.type, tags=args.tag, confirm_shared=args.yes_shared)
    return _written(record.id, f"revision {record.governance.revision}")


def cmd_action(store: MemoryStore, args: argparse.Namespace) -> int:
    if args.command == "forget":
        record = store.forget(args.id, confirm_shared=args.yes_shared)
    else:
        record = store.apply(Action(args.command), args.id, reason=getattr(args, "reason", None),
                             confirm_shared=args.yes_shared)
    g = record.governance
    return _written(
        record.id, f"{record.status.value}, {g.verification.value}, revision {g.revision}"
    )


def cmd_copy(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.copy(args.id, args.to_scope, session=_session(args),
                        confirm_shared=args.yes_shared)
    note = None if result.written else "an identical record exists there; nothing written"
    return _written(result.id, note)


def cmd_compact(store: MemoryStore, args: argparse.Namespace) -> int:
    for file in store.files(args.scope):
        if not os.path.lexists(file.path):
            continue
        if file.scope is Scope.SHARED and args.scope is None and not args.yes_shared:
            print(f"{file.path}: skipped (shared-project needs --yes-shared)")
            continue
        result = store.compact(file, confirm_shared=args.yes_shared)
        print(f"{result.path}: {result.bytes_before} -> {result.bytes_after} bytes, "
              f"{result.lines_removed} line(s) removed, {result.quarantined} quarantined")
    return 0


def cmd_check(store: MemoryStore, args: argparse.Namespace) -> int:
    report = store.check(repair=args.repair)
    for p in report.problems:
        where = f"{p.path}:{p.line_no}" if p.line_no else str(p.path)
        state = " (repaired)" if p.repaired else ""
        print(f"{where}: {p.kind}: {p.message}{state}")
    for note in report.notes:
        print(f"note: {note}")
    left = sum(not p.repaired for p in report.problems)
    print(f"{report.files_checked} file(s) checked, {len(report.problems)} problem(s), "
          f"{left} left")
    return 0 if report.clean else 1


def cmd_export(store: MemoryStore, args: argparse.Namespace) -> int:
    from .bundle import export_bundle

    result = export_bundle(store, args.out, scopes=args.scope or None, session=_session(args))
    print(f"exported {result.count} record(s) to {result.path}")
    return 0


def cmd_import(store: MemoryStore, args: argparse.Namespace) -> int:
    from .bundle import apply_import, plan_import

    plan = plan_import(store, args.file, args.scope, session=_session(args))
    for bad in plan.invalid:
        print(f"invalid: records[{bad.index}] ({bad.id or 'no id'}): {bad.reason}",
              file=sys.stderr)
    print(f"plan for {plan.target.path}: {len(plan.new)} new, {len(plan.duplicates)} "
          f"duplicate, {len(plan.invalid)} invalid")
    if args.dry_run:
        for index, record in zip(plan.new_indexes, plan.new, strict=True):
            print(f"  new        records[{index}]  {record.type.value:<10}  {record.title}")
        for dup in plan.duplicates:
            print(f"  duplicate  records[{dup.index}]  same as {dup.existing_id}")
        print("dry run: nothing written")
        return 0
    result = apply_import(store, plan, strict=args.strict, confirm_shared=args.yes_shared)
    print(f"imported {len(result.written)} record(s)")
    for record_id in result.written:
        print(record_id)
    return 0


def cmd_auto_write(store: MemoryStore, args: argparse.Namespace) -> int:
    from .autowriter import run_events

    run_events(store, args.events, follow=args.follow)
    return 0


def cmd_demo(store: MemoryStore, args: argparse.Namespace) -> int:
    from .demo import build_demo, run_live

    demo = build_demo(args.dir)
    print(f"demo home:      {demo.home}")
    print(f"demo workspace: {demo.workspace}")
    print(f"open it with:   dsh-memory-tui --home {demo.home} --workspace {demo.workspace} "
          f"--user {demo.user}")
    if args.live:
        print("appending live records every few seconds; Ctrl-C stops", flush=True)
        run_live(demo)
    return 0


# ------------------------------------------------------------------------- parser


def _add_globals(parser: argparse.ArgumentParser, suppress: bool) -> None:
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--home", default=default, help="DSH_HOME (default: $DSH_HOME or ~/.dsh)")
    parser.add_argument("--workspace", default=default,
                        help="workspace root (default: the current directory)")
    parser.add_argument("--user", default=default,
                        help="acting user id (default: $DSH_USER_ID or the login name)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dsh-memory", description="Read and govern dsh workspace memory.")
    _add_globals(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    commands: dict[str, Callable[[MemoryStore, argparse.Namespace], int]] = {}

    def command(name: str, func: Callable[..., int], help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        _add_globals(p, suppress=True)
        p.set_defaults(func=func)
        commands[name] = func
        return p

    def session_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--session", help="session id")
        p.add_argument("--root", help="the session's root id (default: this workspace's rootId)")

    def shared_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--yes-shared", action="store_true",
                       help="confirm a write to shared-project (seen by everyone on the project)")

    p = command("list", cmd_list, "current records")
    p.add_argument("--scope", type=_scope)
    session_opts(p)
    p.add_argument("--all", action="store_true", help="archived and forgotten records too")
    p.add_argument("--json", action="store_true", help="print the records as JSON")

    p = command("show", cmd_show, "one record")
    p.add_argument("id")
    p.add_argument("--history", action="store_true", help="every revision still in the file")
    p.add_argument("--json", action="store_true")

    for name, help_ in (("create", "a user-authored record"), ("propose", "an agent proposal")):
        p = command(name, cmd_create, help_)
        p.add_argument("--scope", type=_scope, required=True)
        p.add_argument("--type", required=True,
                       choices=["decision", "preference", "convention", "fact"])
        p.add_argument("--title", required=True)
        p.add_argument("--content", required=True)
        p.add_argument("--tag", action="append", default=[])
        session_opts(p)
        shared_opt(p)
        if name == "propose":
            p.add_argument("--source-ref", type=_source_ref, action="append", default=[],
                           metavar="KIND:ID")

    p = command("edit", cmd_edit, "a new revision of a record")
    p.add_argument("id")
    p.add_argument("--base-revision", type=int, required=True,
                   help="the revision you edited (a newer one is a REVISION_CONFLICT)")
    p.add_argument("--title")
    p.add_argument("--content")
    p.add_argument("--type", choices=["decision", "preference", "convention", "fact"])
    p.add_argument("--tag", action="append", help="replaces the tags (repeat for several)")
    shared_opt(p)

    for name, help_ in (("verify", "mark an unverified record verified"),
                        ("reject", "reject an unverified record"),
                        ("reverify", "verify a stale record again"),
                        ("pin", "pin a verified record (the agent sees it first)"),
                        ("unpin", "unpin a record"),
                        ("archive", "archive a record"), ("restore", "restore a record"),
                        ("forget", "erase a record's content for good")):
        p = command(name, cmd_action, help_)
        p.add_argument("id")
        if name in ("verify", "reject", "reverify"):
            p.add_argument("--reason")
        shared_opt(p)

    p = command("copy", cmd_copy, "copy a record into another scope")
    p.add_argument("id")
    p.add_argument("--to-scope", type=_scope, required=True)
    session_opts(p)
    shared_opt(p)

    p = command("export", cmd_export, "write a bundle of current records")
    p.add_argument("--out", required=True)
    p.add_argument("--scope", type=_scope, action="append")
    session_opts(p)

    p = command("import", cmd_import, "import a bundle into a scope")
    p.add_argument("file")
    p.add_argument("--scope", type=_scope, required=True)
    session_opts(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    p.add_argument("--strict", action="store_true", help="any invalid record aborts the import")
    shared_opt(p)

    p = command("compact", cmd_compact, "keep only each record's current line")
    p.add_argument("--scope", type=_scope)
    shared_opt(p)

    p = command("check", cmd_check, "report corrupt, torn, oversized and unsafe files")
    p.add_argument("--repair", action="store_true", help="quarantine and compact what it can")

    p = command("auto-write", cmd_auto_write, "session digests from tool results (JSON lines)")
    p.add_argument("--events", metavar="FILE", help="read this file instead of stdin")
    p.add_argument("--follow", action="store_true", help="keep reading as FILE grows")

    p = command("demo", cmd_demo, "a sample home and workspace under DIR")
    p.add_argument("dir")
    p.add_argument("--live", action="store_true", help="keep appending records")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if os.environ.get("DSH_DEBUG") == "1":
            # The auto-writer and the store skip failures quietly; this shows why.
            logging.basicConfig(format="debug: %(name)s: %(message)s")
            logging.getLogger("dsh_memory_tui").setLevel(logging.DEBUG)
        if getattr(args, "follow", False) and not args.events:
            raise UsageError("--follow needs --events FILE")
        store = MemoryStore.open(args.home, args.workspace, args.user)
        return args.func(store, args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(str(exc), file=sys.stderr)
        return 2 if exc.code == "USAGE" else 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as exc:  # argparse --help
        return int(exc.code or 0)


if __name__ == "__main__":
    sys.exit(main())
