"""dsh-memory: the scriptable command line (SPEC 9). Parsing and printing only.

Exit codes: 0 success, 1 a StoreError (``error[CODE]: message`` on stderr), 2 a usage error.
Commands that write print the id they wrote alone on the last line of stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TextIO

from . import __version__, lint
from .agent_view import BUDGET_ENV, DEFAULT_BUDGET_BYTES, MIN_BUDGET_BYTES
from .errors import ErrorCode, StoreError
from .ids import short_ids
from .js_json import dumps_js
from .model import Record, Scope, SourceRef, Status, Verification, records_json
from .present import (
    ADDED,
    CONTEXT,
    REMOVED,
    REVISION,
    facts_text,
    hidden_warning,
    history_lines,
    json_for_terminal,
    record_facts,
    record_hidden_characters,
    visible,
    when,
)
from .sources import State, cited_hashes, report
from .store import Action, MemoryStore, Session

SCOPE_NAMES = [s.value for s in Scope]
SCOPE_ALIASES = {"shared": Scope.SHARED.value}


class UsageError(Exception):
    """A mistake in the command line: exit 2."""


class UsageParser(argparse.ArgumentParser):
    """A parser whose mistakes raise :class:`UsageError` (printed ``error[USAGE]: ...``, exit 2)
    instead of argparse's own two lines; ``dsh-memory`` and ``dsh-memory-tui`` both use it."""

    def error(self, message: str) -> NoReturn:
        # The error first (one line, as every error), then the usage of the command it is in.
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().rstrip()}")


class _CommandParser(UsageParser):
    """A command's parser whose arguments are added when it is first used. argparse checks
    each argument as it is added with a new help formatter (which asks for the terminal's
    size): that was most of building the parser, and a run uses one command of 23.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        if "_pending" not in self.__dict__:  # argparse's own -h, while __init__ runs
            return super().add_argument(*args, **kwargs)
        self._pending.append((args, kwargs))
        return None

    def _fill(self) -> None:
        pending, self._pending = self._pending, []
        for args, kwargs in pending:
            super().add_argument(*args, **kwargs)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        return super().parse_known_args(*args, **kwargs)

    def format_usage(self) -> str:
        self._fill()
        return super().format_usage()

    def format_help(self) -> str:
        self._fill()
        return super().format_help()


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
    return SourceRef.model_validate({"kind": kind, "id": ident})


def _session(args: argparse.Namespace) -> Session | None:
    sid, root = getattr(args, "session", None), getattr(args, "root", None)
    if sid is None and root is not None:
        raise UsageError("--root needs --session")
    return (sid, root) if sid is not None else None


# ------------------------------------------------------------------------- printing


def _widths(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> list[int]:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    return widths


def _table(rows: Sequence[Sequence[str]], headers: Sequence[str], out: TextIO) -> None:
    widths = _widths(rows, headers)
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {}"
    print(fmt.format(*headers).rstrip(), file=out)
    for row in rows:
        print(fmt.format(*row).rstrip(), file=out)


LIST_HEADERS = (
    "ID",
    "SCOPE",
    "TYPE",
    "STATUS",
    "VERIFICATION",
    "ORIGIN",
    "REV",
    "UPDATED",
    "TITLE",
)
# Dropped in this order while a terminal is too narrow for the table (the title goes last).
LIST_DROPPABLE = ("ORIGIN", "UPDATED", "SCOPE", "REV")
MIN_TITLE = 12


def _terminal_width(out: TextIO) -> int | None:
    """The terminal's width when ``out`` is one (a pipe gets every column, whole)."""
    try:
        if not out.isatty():
            return None
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):
        return None


def _fit(rows: list[list[str]], headers: list[str], width: int) -> None:
    """Make the table at most ``width`` columns: drop columns of ``LIST_DROPPABLE``, then cut
    the titles (the last column) with an ellipsis."""

    def total() -> int:
        return sum(_widths(rows, headers)) + 2 * (len(headers) - 1)

    for name in LIST_DROPPABLE:
        if total() - _widths(rows, headers)[-1] + MIN_TITLE <= width:
            break
        at = headers.index(name)
        del headers[at]
        for row in rows:
            del row[at]
    room = max(MIN_TITLE, width - (total() - _widths(rows, headers)[-1]))
    for row in rows:
        if len(row[-1]) > room:
            row[-1] = row[-1][: room - 1] + "…"


def _print_records(
    records: Sequence[Record],
    out: TextIO,
    known_ids: Callable[[], Iterable[str]],
    by: Callable[[Record], str] | None = None,
) -> None:
    """The records as a table. On a terminal it fits the width: short ids (each a unique
    prefix among ``known_ids()``, which every command takes), then fewer columns, then cut
    titles. ``by``: whose clone wrote each record (a BY column first)."""
    if not records:
        print("(no records)", file=out)
        return
    width = _terminal_width(out)

    def row(r: Record, rid: str) -> list[str]:
        return [
            *([visible(by(r)) or "-"] if by is not None else []),
            visible(rid),
            r.scope.value,
            r.type.value,
            r.status.value,
            r.governance.verification.value,
            r.governance.origin.value,
            str(r.governance.revision),
            when(r.updatedAt),
            visible(r.title[:60]),
        ]

    rows = [row(r, r.id) for r in records]
    headers = ["BY", *LIST_HEADERS] if by is not None else list(LIST_HEADERS)
    if width is not None and sum(_widths(rows, headers)) + 2 * (len(headers) - 1) > width:
        short = short_ids(known_ids())
        rows = [row(r, short.get(r.id, r.id)) for r in records]
        _fit(rows, headers, width)
    _table(rows, headers, out)


def _clone_names(store: MemoryStore, records: Sequence[Record]) -> Callable[[Record], str] | None:
    """Whose clone wrote each record (a teammate's name, "" for this clone's), or None when
    every record is this clone's: then the table has no BY column.
    """
    from .team import CloneNames

    own = store.paths.root_id
    if all(r.scope is not Scope.SHARED or r.scopeKey == own for r in records):
        return None
    names = CloneNames(store.paths.workspace, store.paths.shared_file().path, own)
    return lambda r: names.label(r.scopeKey) if r.scope is Scope.SHARED else ""


def _print_record(
    record: Record,
    history: Sequence[Record] | None,
    out: TextIO,
    facts: Sequence[tuple[str, str]] = (),
) -> None:
    hidden = record_hidden_characters(record)
    if hidden:
        print(f"warning:      this record {hidden_warning(hidden)}", file=out)
    print(facts_text([("title", visible(record.title)), *facts]), file=out)
    print("\n" + visible(record.content, multiline=True), file=out)
    if history is not None:
        print("\nhistory:", file=out)
        for kind, text in history_lines(history):
            # A revision's line, then its diff indented below it: "-"/"+" lines, "@@" places.
            indent = "  " if kind == REVISION else "      "
            mark = f"{kind} " if kind in (REMOVED, ADDED, CONTEXT) else ""
            print(f"{indent}{mark}{text}".rstrip(), file=out)


def _dump(obj: Any) -> None:
    sys.stdout.write(json_for_terminal(dumps_js(obj, indent=2)) + "\n")


# ------------------------------------------------------------------------- commands


def cmd_list(store: MemoryStore, args: argparse.Namespace) -> int:
    records = store.records(args.scope, session=_session(args), include_inactive=args.all)
    if args.json:
        # What _dump prints, serialized in Rust.
        sys.stdout.write(json_for_terminal(records_json(records)) + "\n")
    else:
        _print_records(records, sys.stdout, store.known_ids, _clone_names(store, records))
    return 0


def cmd_show(store: MemoryStore, args: argparse.Namespace) -> int:
    record = store.get(args.id)
    history = store.history(args.id) if args.history else None
    if args.json:
        _dump([r.to_json() for r in history] if history is not None else record.to_json())
    else:
        group, rivals = store.conflict(args.id)
        facts = record_facts(
            record,
            store.clock(),
            conflict_group=group,
            rivals=len(rivals),
            citations=store.sources.checks(record),
        )
        by = _clone_names(store, [record])
        if by is not None:
            facts.append(("written by", visible(by(record)) + " (another clone of this project)"))
        _print_record(record, history, sys.stdout, facts)
    return 0


def _written(record_id: str, note: str | None = None) -> int:
    if note:
        print(note)
    print(record_id)
    return 0


def cmd_create(store: MemoryStore, args: argparse.Namespace) -> int:
    common = dict(session=_session(args), confirm_shared=args.yes_shared, citations=args.cite)
    if args.command == "propose":
        result = store.propose(
            args.scope,
            args.type,
            args.title,
            args.content,
            args.tag,
            source_refs=args.source_ref,
            **common,
        )
    else:
        result = store.create(args.scope, args.type, args.title, args.content, args.tag, **common)
    note = None if result.written else "an identical record exists; nothing written"
    return _written(result.id, note)


def cmd_edit(store: MemoryStore, args: argparse.Namespace) -> int:
    if all(getattr(args, k) is None for k in ("title", "content", "type", "tag", "cite")):
        raise UsageError("edit needs at least one of --title, --content, --type, --tag, --cite")
    record = store.edit(
        args.id,
        args.base_revision,
        title=args.title,
        content=args.content,
        record_type=args.type,
        tags=args.tag,
        citations=args.cite,
        confirm_shared=args.yes_shared,
    )
    return _written(record.id, f"revision {record.governance.revision}")


def cmd_sources(store: MemoryStore, args: argparse.Namespace) -> int:
    """Every record with citations and each citation's state (with ID: the diff of each that
    changed). Exit 1 when a verified, active record's citation changed or is missing.
    """
    if args.id is not None:
        records = [store.get(args.id)]
    else:
        records = [r for r in store.records(include_inactive=True) if r.status.value != "forgotten"]
        store.sources.prune(cited_hashes(records))
    checked = report(store.sources, records)
    needing = [rs for rs in checked if rs.needs_review]
    marked: list[str] = []
    skipped: list[tuple[str, str]] = []
    if args.mark_stale and needing:
        written, skipped = store.mark_stale(
            [rs.record.id for rs in needing], confirm_shared=args.yes_shared
        )
        marked = [r.id for r in written]
    diffs = args.id is not None
    if args.json:
        _dump(
            {
                "records": [
                    {
                        "id": rs.record.id,
                        "scope": rs.record.scope.value,
                        "title": rs.record.title,
                        "status": rs.record.status.value,
                        "verification": rs.record.governance.verification.value,
                        "needsReview": rs.needs_review,
                        "citations": [
                            c.to_json()
                            | (
                                {"diff": store.sources.diff(c)}
                                if diffs and c.state is not State.OK
                                else {}
                            )
                            for c in rs.checks
                        ],
                    }
                    for rs in checked
                ],
                "needsReview": len(needing),
                "markedStale": marked,
                "notMarked": [{"id": i, "why": why} for i, why in skipped],
            }
        )
        return 1 if needing else 0
    if not checked:
        print("(no record cites a file)")
    for rs in checked:
        r = rs.record
        flag = "  NEEDS RE-REVIEW" if rs.needs_review else ""
        state = f"{r.status.value}, {r.governance.verification.value}"
        print(f"{visible(r.id)}  {state}  {visible(r.title[:60])}{flag}")
        for c in rs.checks:
            print(visible(f"  {c.state.value:<8} {c.label}  ({c.why})"))
            if diffs and c.state is not State.OK:
                for line in store.sources.diff(c):
                    print(visible(f"      {line}"))
    for record_id in marked:
        print(f"marked stale: {visible(record_id)}")
    for record_id, why in skipped:
        print(f"not marked stale: {visible(record_id)}: {visible(why)}")
    if needing:
        n = len(needing)
        print(
            f"{n} verified memor{'ies' if n != 1 else 'y'} cite{'s' if n == 1 else ''} code "
            "that changed or is gone: not served to agents until re-reviewed",
            file=sys.stderr,
        )
        return 1
    return 0


# Actions that take a record out of what agents are served: they say where it already went.
RECEIPT_ACTIONS = ("forget", "archive", "reject")


def cmd_action(store: MemoryStore, args: argparse.Namespace) -> int:
    if args.command == "forget":
        record = store.forget(args.id, confirm_shared=args.yes_shared)
    elif args.command == "reverify":
        record = store.reverify_citations(
            args.id, reason=args.reason, citations=args.cite, confirm_shared=args.yes_shared
        )
    else:
        record = store.apply(
            Action(args.command),
            args.id,
            reason=getattr(args, "reason", None),
            confirm_shared=args.yes_shared,
        )
    if args.command in RECEIPT_ACTIONS:
        from .audit import record_receipt

        for line in record_receipt(store.paths.home, record.id, store.clock()):
            print(line)
    g = record.governance
    return _written(
        record.id, f"{record.status.value}, {g.verification.value}, revision {g.revision}"
    )


def cmd_keep(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.keep(args.id, reason=args.reason, confirm_shared=args.yes_shared)
    for word, records in (("rejected", result.rejected), ("archived", result.archived)):
        for record in records:
            print(f"{word}: {record.id}")
    return _written(
        result.kept.id,
        f"kept: {result.kept.governance.verification.value}, "
        f"revision {result.kept.governance.revision}",
    )


def cmd_merge(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.merge(
        store.resolve_id(args.keep),
        store.resolve_id(args.other),
        title=args.title,
        content=args.content,
        reason=args.reason,
        base_revision=args.base_revision,
        confirm_shared=args.yes_shared,
    )
    other = result.other
    word = other.governance.verification.value if other.status is Status.ACTIVE else "archived"
    print(f"{word}: {other.id}")
    for ref, why in result.dropped:
        print(visible(f"not kept: {ref.kind} {ref.id} of {other.id} ({why})"))
    return _written(result.kept.id, f"merged: revision {result.kept.governance.revision}, verified")


def cmd_lint(store: MemoryStore, args: argparse.Namespace) -> int:
    records = store.records(args.scope)
    if args.id:
        selected = [store.get(args.id)]
    elif args.all:
        selected = records
    else:
        selected = [r for r in records if r.governance.verification is Verification.UNVERIFIED]
    found = lint.report(records, selected)
    titles = {r.id: r.title for r in records}
    if args.json:
        _dump([item.as_json() for item in found])
    else:
        for item in found:
            if not item.flags and not item.near:
                continue
            r = item.record
            print(f"{visible(r.id)}  {r.scope.value}  {r.governance.verification.value}")
            print(f"  {visible(r.title)}")
            for flag in item.flags:
                text = r.title if flag.field == "title" else r.content
                line = text.count("\n", 0, flag.start) + 1
                # A secret is named, never repeated: CI logs are read by many.
                print(f"  {flag.kind:<12} {flag.field}:{line}  {visible(flag.what)}")
            for similar in item.near:
                title = visible(titles.get(similar.record_id, ""))
                rid = visible(similar.record_id)
                print(f"  {'near-dup':<12} {rid} ({similar.score:.2f})  {title}")
        flagged = sum(1 for item in found if item.flags)
        near = sum(1 for item in found if item.near)
        print(f"{len(found)} record(s) checked: {flagged} flagged, {near} with near-duplicates")
    bad = lint.verified_secrets(selected if args.id else records)
    if bad:
        ids = ", ".join(visible(r.id) for r in bad)
        print(
            f"lint: {len(bad)} verified, active record(s) carry a secret (agents are served "
            f"them): {ids}",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_adopt(store: MemoryStore, args: argparse.Namespace) -> int:
    scopes = [args.scope] if args.scope else [Scope.PROJECT, Scope.SHARED]
    ids: list[str] = []
    for scope in scopes:
        file = store.file_for(scope)
        roots = store.adoptable(file)
        if not args.scope and (not roots or (args.from_root and args.from_root not in roots)):
            continue  # nothing to adopt in this one
        if scope is Scope.SHARED and not args.scope and not args.yes_shared:
            print(f"{file.path}: skipped (shared-project needs --yes-shared)")
            continue
        result = store.adopt(file, from_root=args.from_root, confirm_shared=args.yes_shared)
        for root, n in result.adopted.items():
            print(f"{file.path}: {n} line(s) of {root} adopted")
        for rid, why in result.left:
            print(f"{file.path}: {rid} left as it was: {why}")
        ids += result.ids
    for rid in ids:  # the ids adopted, last (one per line)
        print(rid)
    return 0


def cmd_copy(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.copy(
        args.id, args.to_scope, session=_session(args), confirm_shared=args.yes_shared
    )
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
        print(
            f"{result.path}: {result.bytes_before} -> {result.bytes_after} bytes, "
            f"{result.lines_removed} line(s) removed, {result.quarantined} quarantined"
        )
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
    print(f"{report.files_checked} file(s) checked, {len(report.problems)} problem(s), {left} left")
    return 0 if report.clean else 1


def cmd_merge_file(store: MemoryStore, args: argparse.Namespace) -> int:
    from pathlib import Path

    from .team import merge_file

    name = args.path or args.ours
    try:
        merged = merge_file(
            Path(args.base), Path(args.ours), Path(args.theirs), store.paths.shared_file().location
        )
    except StoreError as exc:
        raise StoreError(exc.code, f"{name}: not merged: {exc.message}") from None
    for conflict in merged.conflicts:
        rival = f"; the other version is {conflict.rival.id}" if conflict.rival else ""
        print(
            f"{name}: {visible(conflict.record_id)} was decided differently on each branch: "
            f"now unverified for review{visible(rival)} (K keeps one)",
            file=sys.stderr,
        )
    return 0


def cmd_git(store: MemoryStore, args: argparse.Namespace) -> int:
    from . import team

    workspace = store.paths.workspace
    if args.action == "install":
        state = team.install(workspace)
    elif args.action == "uninstall":
        state = team.uninstall(workspace)
    else:
        state = team.status(workspace)
    print(f"repository: {state.repository or '(none)'}")
    print(f".gitattributes: {'merge=' + team.DRIVER if state.attribute else '(not set)'}")
    print(f"driver: {state.driver or '(not set)'}")
    print(state.summary())
    return 0 if args.action == "uninstall" or state.installed else 1


def cmd_export(store: MemoryStore, args: argparse.Namespace) -> int:
    from .bundle import export_bundle, format_for_path

    fmt = args.format or format_for_path(args.out)
    result = export_bundle(
        store, args.out, scopes=args.scope or None, session=_session(args), fmt=fmt
    )
    for record_id, why in result.left_out:
        print(f"left out {record_id}: {why}", file=sys.stderr)
    if result.over_host_limits:
        print(
            f"note: the host cannot import this bundle: {result.over_host_limits}", file=sys.stderr
        )
    print(result.summary)
    return 0


def cmd_import(store: MemoryStore, args: argparse.Namespace) -> int:
    from .bundle import apply_import, check_strict, plan_import

    plan = plan_import(store, args.file, args.scope, session=_session(args), fmt=args.format)
    for bad in plan.invalid:
        print(
            f"invalid: {plan.where(bad.index)} ({bad.id or 'no id'}): {bad.reason}", file=sys.stderr
        )
    print(f"plan for {plan.target.path}: {plan.counts}")
    if args.dry_run:
        for index, record in zip(plan.new_indexes, plan.new, strict=True):
            title = visible(record.title)
            print(f"  new        {plan.where(index)}  {record.type.value:<10}  {title}")
        for dup in plan.duplicates:
            print(f"  duplicate  {plan.where(dup.index)}  same as {dup.existing_id}")
        print("dry run: nothing written")
        if args.strict:  # a bundle with an invalid record fails (a CI job can gate on it)
            check_strict(plan)
        return 0
    result = apply_import(store, plan, strict=args.strict, confirm_shared=args.yes_shared)
    print(f"imported {len(result.written)} record(s)")
    for record_id in result.written:
        print(record_id)
    return 0


def cmd_auto_write(store: MemoryStore, args: argparse.Namespace) -> int:
    from .autowriter import run_events

    skipped: list[int] = []

    def report(line_no: int, why: str) -> None:
        skipped.append(line_no)
        print(f"warning: events line {line_no} skipped: {visible(why)}", file=sys.stderr)

    run_events(store, args.events, follow=args.follow, on_skip=report)
    if skipped:
        raise StoreError(
            ErrorCode.INVALID_EVENT,
            f"{len(skipped)} events line(s) skipped as malformed (the others were taken)",
        )
    return 0


def cmd_demo(store: MemoryStore, args: argparse.Namespace) -> int:
    from .demo import build_demo, is_demo, open_demo, run_live

    # --live on a demo already there (dsh-memory-tui --demo names its DIR) attaches to it.
    demo = open_demo(args.dir) if args.live and is_demo(args.dir) else build_demo(args.dir)
    print(f"demo home:      {demo.home}")
    print(f"demo workspace: {demo.workspace}")
    print(
        f"open it with:   dsh-memory-tui --home {demo.home} --workspace {demo.workspace} "
        f"--user {demo.user}"
    )
    if args.live:
        print("appending live records every few seconds; Ctrl-C stops", flush=True)
        run_live(demo)
    return 0


def cmd_mcp(store: MemoryStore, args: argparse.Namespace) -> int:
    from .mcp import serve  # the SDK is an optional extra: serve() says so when it is missing

    serve(
        store,
        session=args.session,
        include_shared=args.include_shared,
        yes_shared=args.yes_shared,
        budget=args.budget_bytes,
    )
    return 0


def cmd_payload(store: MemoryStore, args: argparse.Namespace) -> int:
    from .agent_view import Audience, agent_view, budget_bytes
    from .mcp import session_id_for

    session = session_id_for(args.session)
    budget = budget_bytes(args.budget_bytes)
    audience = Audience((session, None), args.include_shared)
    got = agent_view(store, audience, budget=budget, now=store.clock())
    if args.json:
        _dump(
            {
                "session": session,
                "budget": budget,
                "bytes": got.size,
                "tokens": got.tokens,
                "included": [r.id for r in got.records],
                "cut": [r.id for r in got.cut],
                "beyondLimit": got.more,
                "text": got.text,
            }
        )
        return 0
    if sys.stdout.isatty():  # a terminal sees the text with its hidden characters shown
        sys.stdout.write(visible(got.text, multiline=True))
        sys.stdout.flush()
    else:  # a pipe or a file gets exactly the bytes the server sends
        sys.stdout.buffer.write(got.text.encode())
        sys.stdout.buffer.flush()
    cut = f", {len(got.cut)} cut by the budget" if got.cut else ""
    more = f", {got.more} beyond the limit" if got.more else ""
    print(
        f"{len(got.records)} record(s), {got.size:,} of {budget:,} bytes (~{got.tokens:,} "
        f"tokens){cut}{more}; session {visible(session)}",
        file=sys.stderr,
    )
    return 0


def cmd_audit(store: MemoryStore, args: argparse.Namespace) -> int:
    from .audit import ROW_HEADERS, AuditLog, entry_row, receipt, select, since_ms, trails

    now = store.clock()
    since = since_ms(args.since, now) if args.since else None
    log = AuditLog(store.paths.home)
    read = log.read()
    entries = select(read.entries, record=args.record, session=args.session, since=since)
    if args.json:
        _dump(entries)
        return 0
    rows = [entry_row(e) for e in entries]
    if rows:
        _table(rows, ROW_HEADERS, sys.stdout)
    if read.unreadable:
        print(f"{read.unreadable} unreadable line(s) skipped (cut short)", file=sys.stderr)
    if args.record:
        for line in receipt(trails(entries).get(args.record), now):
            print(line)
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    print(f"{count} in {log.path}")
    return 0


# ------------------------------------------------------------------------- parser


def _add_globals(parser: argparse.ArgumentParser, suppress: bool) -> None:
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--home", default=default, help="DSH_HOME (default: $DSH_HOME or ~/.dsh)")
    parser.add_argument(
        "--workspace", default=default, help="workspace root (default: the current directory)"
    )
    parser.add_argument(
        "--user", default=default, help="acting user id (default: $DSH_USER_ID or the login name)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog="dsh-memory", description="Read and govern dsh workspace memory.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_globals(parser, suppress=False)
    # Not required here: argparse would then say "COMMAND is required" for `dsh-memory
    # --bogus` instead of naming the flag; main() asks for the command after the flags.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
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

    def cite_opt(p: argparse.ArgumentParser, edit: bool = False) -> None:
        p.add_argument(
            "--cite",
            action="append",
            default=None if edit else [],
            metavar="PATH[:START-END]",
            help=(
                "a workspace file (lines START-END, 1-based) the memory rests on; repeatable"
                + ("; replaces its citations" if edit else "")
            ),
        )

    def budget_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--budget-bytes",
            metavar="N",
            help=f"the bytes one answer may take (default: ${BUDGET_ENV}, else "
            f"{DEFAULT_BUDGET_BYTES}; at least {MIN_BUDGET_BYTES})",
        )

    def shared_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--yes-shared",
            action="store_true",
            help="confirm a write to shared-project (seen by everyone on the project)",
        )

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
        p.add_argument(
            "--type", required=True, choices=["decision", "preference", "convention", "fact"]
        )
        p.add_argument("--title", required=True)
        p.add_argument("--content", required=True)
        p.add_argument("--tag", action="append", default=[])
        session_opts(p)
        shared_opt(p)
        cite_opt(p)
        if name == "propose":
            p.add_argument(
                "--source-ref", type=_source_ref, action="append", default=[], metavar="KIND:ID"
            )

    p = command("edit", cmd_edit, "a new revision of a record")
    p.add_argument("id")
    p.add_argument(
        "--base-revision",
        type=int,
        required=True,
        help="the revision you edited (a newer one is a REVISION_CONFLICT)",
    )
    p.add_argument("--title")
    p.add_argument("--content")
    p.add_argument("--type", choices=["decision", "preference", "convention", "fact"])
    p.add_argument("--tag", action="append", help="replaces the tags (repeat for several)")
    cite_opt(p, edit=True)
    shared_opt(p)

    for name, help_ in (
        ("verify", "mark an unverified record verified"),
        ("reject", "reject an unverified record"),
        (
            "reverify",
            "verify a stale record again, or one whose cited code changed: each citation "
            "takes today's text where it is now (--cite: these instead)",
        ),
        ("pin", "pin a verified record (the agent sees it first)"),
        ("unpin", "unpin a record"),
        ("archive", "archive a record"),
        ("restore", "restore a record"),
        ("forget", "erase a record's content for good"),
    ):
        p = command(name, cmd_action, help_)
        p.add_argument("id")
        if name in ("verify", "reject", "reverify"):
            p.add_argument(
                "--reason", help="why (needed to verify a record that carries risk flags)"
            )
        if name == "reverify":
            cite_opt(p, edit=True)
        shared_opt(p)

    p = command(
        "keep",
        cmd_keep,
        "keep this version of its conflict group: verify it, reject "
        "its unverified rivals, archive the others (one locked batch)",
    )
    p.add_argument("id")
    p.add_argument("--reason")
    shared_opt(p)

    p = command(
        "merge",
        cmd_merge,
        "merge two records of one file into a new revision of KEEP naming both "
        "(verified); OTHER is rejected if unverified, else archived (one locked write)",
    )
    p.add_argument("keep")
    p.add_argument("other")
    p.add_argument("--title", help="the merged title (default: KEEP's)")
    p.add_argument("--content", help="the merged content (default: KEEP's, then OTHER's)")
    p.add_argument("--reason", help="why (needed when the merged text carries risk flags)")
    p.add_argument("--base-revision", type=int, help="KEEP's revision you merged from")
    shared_opt(p)

    p = command(
        "lint",
        cmd_lint,
        "risk flags and near-duplicates of unverified records (exit 1 when a verified, "
        "active record carries a secret)",
    )
    p.add_argument("id", nargs="?", help="only this record")
    p.add_argument("--all", action="store_true", help="every active record, verified ones too")
    p.add_argument("--scope", type=_scope)
    p.add_argument("--json", action="store_true")

    p = command(
        "adopt",
        cmd_adopt,
        "records of a moved or copied project (lines of another "
        "rootId in this project's files) under this workspace's rootId",
    )
    p.add_argument("--from", dest="from_root", metavar="ROOT", help="only this former rootId")
    p.add_argument("--scope", type=_scope, choices=[Scope.PROJECT, Scope.SHARED])
    shared_opt(p)

    p = command("copy", cmd_copy, "copy a record into another scope")
    p.add_argument("id")
    p.add_argument("--to-scope", type=_scope, required=True)
    session_opts(p)
    shared_opt(p)

    p = command("export", cmd_export, "write a bundle of current records")
    p.add_argument("--out", required=True)
    p.add_argument("--scope", type=_scope, action="append")
    p.add_argument(
        "--format",
        choices=["json", "markdown"],
        help="default: markdown for a .md --out, else json",
    )
    session_opts(p)

    p = command("import", cmd_import, "import a bundle into a scope")
    p.add_argument("file")
    p.add_argument("--scope", type=_scope, required=True)
    p.add_argument(
        "--format",
        choices=["json", "markdown"],
        help="default: markdown for a .md file or one starting with #, else json",
    )
    session_opts(p)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan, write nothing (with --strict: exit 1 if a record is invalid)",
    )
    p.add_argument("--strict", action="store_true", help="any invalid record aborts the import")
    shared_opt(p)

    p = command("compact", cmd_compact, "keep only each record's current line")
    p.add_argument("--scope", type=_scope)
    shared_opt(p)

    p = command(
        "sources",
        cmd_sources,
        "each cited file's state; exit 1 when a verified memory's cited code changed",
    )
    p.add_argument("id", nargs="?", help="one record, with the diff of each changed citation")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--mark-stale",
        action="store_true",
        help="record the host's stale transition for each verified memory whose code changed",
    )
    shared_opt(p)

    p = command("check", cmd_check, "report corrupt, torn, oversized and unsafe files")
    p.add_argument("--repair", action="store_true", help="quarantine and compact what it can")

    p = command(
        "merge-file",
        cmd_merge_file,
        "git's merge driver for shared.jsonl: merge BASE OURS THEIRS by record id into OURS",
    )
    p.add_argument("base")
    p.add_argument("ours")
    p.add_argument("theirs")
    p.add_argument("path", nargs="?", help="the file's path in the repository (for messages)")

    p = command(
        "git",
        cmd_git,
        "set up (install), remove (uninstall) or show (status) the merge driver for "
        "shared.jsonl in the workspace's git repository",
    )
    p.add_argument("action", choices=["install", "uninstall", "status"])

    p = command("auto-write", cmd_auto_write, "session digests from tool results (JSON lines)")
    p.add_argument("--events", metavar="FILE", help="read this file instead of stdin")
    p.add_argument("--follow", action="store_true", help="keep reading as FILE grows")

    p = command("demo", cmd_demo, "a sample home and workspace under DIR")
    p.add_argument("dir")
    p.add_argument(
        "--live",
        action="store_true",
        help="keep appending records (into the demo in DIR if there is one, else a new one)",
    )

    p = command(
        "payload",
        cmd_payload,
        "exactly the text dsh-memory mcp would send now for a session (its list and resource)",
    )
    p.add_argument(
        "--session", help="the agent's session (default: $DSH_SESSION_ID, else a new one)"
    )
    p.add_argument("--include-shared", action="store_true", help="as dsh-memory mcp's flag")
    budget_opt(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="the text with the included and cut ids, its bytes and a token estimate",
    )

    p = command("audit", cmd_audit, "what was served to agents and exported, from the audit log")
    p.add_argument("--record", metavar="ID", help="only the entries naming this record")
    p.add_argument("--session", help="only this session's servings")
    p.add_argument(
        "--since",
        metavar="T",
        help="only entries at or after T: 2026-12-01, 2026-12-01T10:00 (UTC), or 2h, 3d ago",
    )
    p.add_argument("--json", action="store_true", help="the entries as JSON")

    p = command("mcp", cmd_mcp, "serve workspace_memory_propose/search/list over stdio (MCP)")
    p.add_argument(
        "--session",
        help="the agent's session id (default: $DSH_SESSION_ID, else one made for this run)",
    )
    p.add_argument(
        "--include-shared", action="store_true", help="serve verified shared-project records too"
    )
    p.add_argument(
        "--yes-shared",
        action="store_true",
        help="also write the use counts of shared-project records",
    )
    budget_opt(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.error("a COMMAND is needed (dsh-memory --help lists them)")
        if os.environ.get("DSH_DEBUG") == "1":
            # The auto-writer and the store skip failures quietly; this shows why.
            import logging  # here: a command without DSH_DEBUG does not pay for it

            logging.basicConfig(format="debug: %(name)s: %(message)s")
            logging.getLogger("dsh_memory_tui").setLevel(logging.DEBUG)
        if getattr(args, "follow", False) and not args.events:
            raise UsageError("--follow needs --events FILE")
        store = MemoryStore.open(args.home, args.workspace, args.user)
        if getattr(args, "id", None) is not None:
            args.id = store.resolve_id(args.id)  # a unique prefix stands for the whole id
        return args.func(store, args)
    except UsageError as exc:
        print(f"error[{ErrorCode.USAGE}]: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(str(exc), file=sys.stderr)
        return 2 if exc.code == ErrorCode.USAGE else 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as exc:  # argparse --help
        return int(exc.code or 0)


if __name__ == "__main__":
    sys.exit(main())
