"""The reviewer's commands: the host's transitions (verify ... forget), keep and merge, the
evidence a review rests on (lint, sources), and what waits on a human (queue)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..host_rules import Status, Verification
from ..present import visible
from .command import YES_SHARED, arg, cite, command, record_id, scope_type
from .printing import dump, dump_plain, fitted_table, symbol_hints, written

if TYPE_CHECKING:  # risk flags, citations and the store load with the command that uses them
    from .. import lint
    from ..queue import Waiting
    from ..store import MemoryStore

# Actions that take a record out of what agents are served: they say where it already went.
RECEIPT_ACTIONS = ("forget", "archive", "reject")


def cmd_action(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..governance import Action

    if args.command == "forget":
        record = store.forget(args.id, confirm_shared=args.yes_shared)
    elif args.command == "reverify":
        record = store.reverify_citations(
            args.id, reason=args.reason, citations=args.cite, confirm_shared=args.yes_shared
        )
        symbol_hints(store, args.cite)
    else:
        record = store.apply(
            Action(args.command),
            args.id,
            reason=getattr(args, "reason", None),
            confirm_shared=args.yes_shared,
        )
    if args.command in RECEIPT_ACTIONS:
        from ..audit import record_receipt

        for line in record_receipt(store.paths.home, record.id, store.clock()):
            print(line)
    g = record.governance
    return written(
        record.id, f"{record.status.value}, {g.verification.value}, revision {g.revision}"
    )


_REASON = arg("--reason", help="why (needed to verify a record that carries risk flags)")
for _name, _help in (
    ("verify", "mark an unverified record verified"),
    ("reject", "reject an unverified record"),
    (
        "reverify",
        "verify a stale record again, or one whose cited code changed: each citation takes "
        "today's text where it is now (--cite: these instead)",
    ),
    ("pin", "pin a verified record (the agent sees it first)"),
    ("unpin", "unpin a record"),
    ("archive", "archive a record"),
    ("restore", "restore a record"),
    ("forget", "erase a record's content for good"),
):
    _reason = (_REASON,) if _name in ("verify", "reject", "reverify") else ()
    _cite = (cite(edit=True),) if _name == "reverify" else ()
    command(_name, _help, record_id("id"), *_reason, *_cite, YES_SHARED)(cmd_action)


@command(
    "keep",
    "keep this version of its conflict group: verify it, reject "
    "its unverified rivals, archive the others (one locked batch)",
    record_id("id"),
    arg("--reason"),
    YES_SHARED,
)
def cmd_keep(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.keep(args.id, reason=args.reason, confirm_shared=args.yes_shared)
    for word, records in (("rejected", result.rejected), ("archived", result.archived)):
        for record in records:
            print(f"{word}: {record.id}")
    return written(
        result.kept.id,
        f"kept: {result.kept.governance.verification.value}, "
        f"revision {result.kept.governance.revision}",
    )


@command(
    "merge",
    "merge two records of one file into a new revision of KEEP naming both "
    "(verified); OTHER is rejected if unverified, else archived (one locked write)",
    record_id("keep"),
    record_id("other"),
    arg("--title", help="the merged title (default: KEEP's)"),
    arg("--content", help="the merged content (default: KEEP's, then OTHER's)"),
    arg("--reason", help="why (needed when the merged text carries risk flags)"),
    arg("--base-revision", type=int, help="KEEP's revision you merged from"),
    YES_SHARED,
)
def cmd_merge(store: MemoryStore, args: argparse.Namespace) -> int:
    result = store.merge(
        args.keep,
        args.other,
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
    return written(result.kept.id, f"merged: revision {result.kept.governance.revision}, verified")


@command(
    "lint",
    "risk flags and near-duplicates of unverified records (exit 1 when a verified, "
    "active record carries a secret)",
    record_id("id", nargs="?", help="only this record"),
    arg("--all", action="store_true", help="every active record, verified ones too"),
    arg("--scope", type=scope_type),
    arg("--json", action="store_true"),
)
def cmd_lint(store: MemoryStore, args: argparse.Namespace) -> int:
    from .. import lint

    records = store.records(args.scope)
    if args.id:
        selected = [store.get(args.id)]
    elif args.all:
        selected = records
    else:
        selected = [r for r in records if r.governance.verification is Verification.UNVERIFIED]
    found = lint.report(records, selected)
    if args.json:
        dump([item.as_json() for item in found])
    else:
        _print_lint(found, {r.id: r.title for r in records})
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


def _print_lint(found: list[lint.RecordLint], titles: dict[str, str]) -> None:
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


@command(
    "sources",
    "each cited file's state; exit 1 when a verified memory's cited code changed",
    record_id("id", nargs="?", help="one record, with the diff of each changed citation"),
    arg("--json", action="store_true"),
    arg(
        "--mark-stale",
        action="store_true",
        help="record the host's stale transition for each verified memory whose code changed",
    ),
    YES_SHARED,
)
def cmd_sources(store: MemoryStore, args: argparse.Namespace) -> int:
    """Every record with citations and each citation's state (with ID: the diff of each that
    changed). Exit 1 when a verified, active record's citation changed or is missing.
    """
    from ..sources import State, cited_hashes, report

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
        written_, skipped = store.mark_stale(
            [rs.record.id for rs in needing], confirm_shared=args.yes_shared
        )
        marked = [r.id for r in written_]
    diffs = args.id is not None
    if args.json:
        dump_plain(
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
    for rid in marked:
        print(f"marked stale: {visible(rid)}")
    for rid, why in skipped:
        print(f"not marked stale: {visible(rid)}: {visible(why)}")
    if needing:
        n = len(needing)
        print(
            f"{n} verified memor{'ies' if n != 1 else 'y'} cite{'s' if n == 1 else ''} code "
            "that changed or is gone: not served to agents until re-reviewed",
            file=sys.stderr,
        )
        return 1
    return 0


QUEUE_HEADERS = ("WHY", "ID", "SCOPE", "TYPE", "TITLE")
QUEUE_DROPPABLE = ("SCOPE", "TYPE")


@command(
    "queue",
    "every record that waits on a human, and why (the app's Review tab)",
    arg("--derived", action="store_true", help="the auto-writer's session digests too"),
    arg("--json", action="store_true", help="[{id, scope, title, reasons: [code, ...]}]"),
)
def cmd_queue(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..queue import DIGEST, counts, counts_text, waiting

    found = waiting(store, include_derived=True)
    digests = sum(1 for w in found if DIGEST in w.reasons)
    if not args.derived:
        found = [w for w in found if DIGEST not in w.reasons]
    if args.json:
        dump([w.to_json() for w in found])
        return 0

    def row(w: Waiting, rid: str) -> list[str]:
        r = w.record
        why = ", ".join(str(reason) for reason in w.reasons)
        return [why, visible(rid), r.scope.value, r.type.value, visible(r.title[:60])]

    if found:
        fitted_table(
            lambda name: [row(w, name(w.record.id)) for w in found],
            QUEUE_HEADERS,
            sys.stdout,
            store.known_ids,
            QUEUE_DROPPABLE,
        )
    n = len(found)
    summary = "nothing waits on a human"
    if n:
        verb = "waits" if n == 1 else "wait"
        summary = f"{n} record{'s' if n != 1 else ''} {verb} on a human: " + counts_text(
            counts(w.reasons for w in found)
        )
    if digests and not args.derived:
        summary += f" ({digests} session digest(s) not listed: --derived lists them)"
    print(summary)
    return 0
