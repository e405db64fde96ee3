"""Commands that read and write records: list, show, create, propose, edit, copy."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import ErrorCode, StoreError
from ..host_rules import SOURCE_REF_KINDS, Scope
from ..present import json_for_terminal, record_facts, visible
from ..usage import UsageError
from .command import (
    RECORD_TYPES,
    SESSION,
    YES_SHARED,
    arg,
    cite,
    command,
    record_id,
    scope_type,
    session_of,
    source_ref_type,
)
from .printing import clone_names, dump, print_record, print_records, symbol_hints, written

if TYPE_CHECKING:
    from ..store import MemoryStore


@command(
    "list",
    "current records",
    arg("--scope", type=scope_type),
    SESSION,
    arg("--all", action="store_true", help="archived and forgotten records too"),
    arg("--json", action="store_true", help="print the records as JSON"),
)
def cmd_list(store: MemoryStore, args: argparse.Namespace) -> int:
    records = store.records(args.scope, session=session_of(args), include_inactive=args.all)
    if args.json:
        from ..model import records_json  # loaded with the records

        # What dump prints, serialized in Rust.
        sys.stdout.write(json_for_terminal(records_json(records)) + "\n")
    else:
        print_records(records, sys.stdout, store.known_ids, clone_names(store, records))
    _warn_conflict_markers(store, args.scope)
    return 0


def _warn_conflict_markers(store: MemoryStore, scope: Scope | str | None) -> None:
    """A warning on stderr when the shared file holds git's conflict markers: what is listed
    is what both programs read of a file a line merge left half done."""
    if scope is not None and Scope(scope) is not Scope.SHARED:
        return
    from ..jsonl import read_file
    from ..team import conflict_marker_lines

    path = store.paths.shared_file().path
    got = read_file(path)
    marked = conflict_marker_lines(got[1]) if got else []
    if marked:
        print(
            f"warning: {path} has git conflict markers (line {marked[0]}"
            f"{f' and {len(marked) - 1} more' if len(marked) > 1 else ''}): it was merged by "
            "line; dsh-memory check --repair merges it by record id",
            file=sys.stderr,
        )


@command(
    "show",
    "one record",
    record_id("id"),
    arg("--history", action="store_true", help="every revision still in the file"),
    arg("--reveal", action="store_true", help="print a flagged secret whole (masked otherwise)"),
    arg("--json", action="store_true"),
)
def cmd_show(store: MemoryStore, args: argparse.Namespace) -> int:
    record = store.get(args.id)
    history = store.history(args.id) if args.history else None
    if args.json:
        dump([r.to_json() for r in history] if history is not None else record.to_json())
    else:
        group, rivals = store.conflict(args.id)
        facts = record_facts(
            record,
            store.clock(),
            conflict_group=group,
            rivals=len(rivals),
            citations=store.sources.checks(record),
        )
        by = clone_names(store, [record])
        if by is not None:
            facts.append(("written by", visible(by(record)) + " (another clone of this project)"))
        if not args.reveal:
            from .. import lint  # show masks secrets: the only command here that flags

            found = lint.record_flags(record)
            secrets = sum(f.kind == "secret" for f in found)
            if secrets:
                facts.append(("secrets", f"{secrets} flagged, shown masked (show --reveal)"))
            record = lint.masked_record(record)
            history = None if history is None else [lint.masked_record(r) for r in history]
        print_record(record, history, sys.stdout, facts)
    return 0


_NEW_RECORD = (
    arg("--scope", type=scope_type, required=True),
    arg("--type", required=True, choices=RECORD_TYPES),
    arg("--title", required=True),
    arg("--content", required=True),
    arg("--tag", action="append", default=[]),
    *SESSION,
    YES_SHARED,
    cite(),
)


_IDENTICAL = "an identical record exists; nothing written"


@command("create", "a user-authored record", _NEW_RECORD)
def cmd_create(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.create(
        args.scope,
        args.type,
        args.title,
        args.content,
        args.tag,
        session=session_of(args),
        confirm_shared=args.yes_shared,
        citations=args.cite,
    )
    symbol_hints(store, args.cite)
    return written(
        result.id, None if result.written else "an identical record exists; nothing written"
    )


def _has_a_source(args: argparse.Namespace) -> None:
    """The host's rule for a proposal, with the flags that meet it (INVALID_RECORD)."""
    if not (args.source_ref or args.cite or args.session):
        raise StoreError(
            ErrorCode.INVALID_RECORD,
            "Non-user Memory requires a source reference: say where it came from "
            f"(--source-ref KIND:ID, KIND one of {', '.join(SOURCE_REF_KINDS)}), cite the "
            "code it rests on (--cite PATH[:START-END]) or name its session (--session ID)",
        )


@command(
    "propose",
    "an agent proposal",
    _NEW_RECORD,
    arg("--source-ref", type=source_ref_type, action="append", default=[], metavar="KIND:ID"),
)
def cmd_propose(store: MemoryStore, args: argparse.Namespace) -> int:
    _has_a_source(args)  # after the settings are checked, as every command's refusals
    result = store.propose(
        args.scope,
        args.type,
        args.title,
        args.content,
        args.tag,
        source_refs=args.source_ref,
        session=session_of(args),
        confirm_shared=args.yes_shared,
        citations=args.cite,
    )
    symbol_hints(store, args.cite)
    return written(
        result.id, None if result.written else "an identical record exists; nothing written"
    )


@command(
    "edit",
    "a new revision of a record",
    record_id("id"),
    arg(
        "--base-revision",
        type=int,
        required=True,
        help="the revision you edited (a newer one is a REVISION_CONFLICT)",
    ),
    arg("--title"),
    arg("--content"),
    arg("--type", choices=RECORD_TYPES),
    arg("--tag", action="append", help="replaces the tags (repeat for several)"),
    cite(edit=True),
    YES_SHARED,
)
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
    symbol_hints(store, args.cite)
    return written(record.id, f"revision {record.governance.revision}")


@command(
    "copy",
    "copy a record into another scope",
    record_id("id"),
    arg("--to-scope", type=scope_type, required=True),
    SESSION,
    YES_SHARED,
)
def cmd_copy(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.copy(
        args.id, args.to_scope, session=session_of(args), confirm_shared=args.yes_shared
    )
    note = None if result.written else "an identical record exists there; nothing written"
    return written(result.id, note)
