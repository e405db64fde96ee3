"""Commands on the agent's side: what it is served (payload, mcp), what it was served (audit),
and the session digests written from its tool results (auto-write)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import ErrorCode, StoreError
from ..present import visible
from ..usage import UsageError
from .command import BUDGET, arg, command, record_id
from .printing import dump, table

if TYPE_CHECKING:
    from ..store import MemoryStore


def _needs_events(args: argparse.Namespace) -> None:
    if args.follow and not args.events:
        raise UsageError("--follow needs --events FILE")


@command(
    "auto-write",
    "session digests from tool results (JSON lines)",
    arg("--events", metavar="FILE", help="read this file instead of stdin"),
    arg("--follow", action="store_true", help="keep reading as FILE grows"),
    check=_needs_events,
)
def cmd_auto_write(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..autowriter import run_events

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


@command(
    "payload",
    "exactly the text dsh-memory mcp would send now for a session (its list and resource)",
    arg("--session", help="the agent's session (default: $DSH_SESSION_ID, else a new one)"),
    arg("--include-shared", action="store_true", help="as dsh-memory mcp's flag"),
    BUDGET,
    arg(
        "--json",
        action="store_true",
        help="the text with the included and cut ids, its bytes and a token estimate",
    ),
)
def cmd_payload(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..agent_view import Audience, agent_view
    from ..settings import budget_bytes, session_id_for

    session = session_id_for(args.session)
    budget = budget_bytes(args.budget_bytes)
    audience = Audience((session, None), args.include_shared)
    got = agent_view(store, audience, budget=budget, now=store.clock())
    if args.json:
        dump(
            {
                "session": session,
                "budget": budget,
                "bytes": got.size,
                "tokens": got.tokens,
                "included": [r.id for r in got.records],
                "cut": [r.id for r in got.cut],
                "beyondLimit": got.more,
                "withheld": got.withheld,
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
    held = f", {got.withheld} withheld until re-review (dsh-memory queue)" if got.withheld else ""
    print(
        f"{len(got.records)} record(s), {got.size:,} of {budget:,} bytes (~{got.tokens:,} "
        f"tokens){cut}{more}{held}; session {visible(session)}",
        file=sys.stderr,
    )
    return 0


def _audited_ids(store: MemoryStore) -> Iterable[str]:
    """Every record id the audit log names: records of other workspaces, and forgotten ones
    compacted away, were served too."""
    from ..audit import AuditLog, entry_ids

    for entry in AuditLog(store.paths.home).read().entries:
        yield from entry_ids(entry)


@command(
    "audit",
    "what was served to agents and exported, from the audit log",
    record_id("--record", metavar="ID", help="only the entries naming this record"),
    arg("--session", help="only this session's servings"),
    arg(
        "--since",
        metavar="T",
        help="only entries at or after T: 2026-12-01, 2026-12-01T10:00 (UTC), or 2h, 3d ago",
    ),
    arg("--json", action="store_true", help="the entries as JSON"),
    more_ids=_audited_ids,
)
def cmd_audit(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..audit import ROW_HEADERS, AuditLog, entry_row, receipt, select, since_ms, trails

    now = store.clock()
    since = since_ms(args.since, now) if args.since else None
    log = AuditLog(store.paths.home)
    read = log.read()
    entries = select(read.entries, record=args.record, session=args.session, since=since)
    if args.json:
        dump(entries)
        return 0
    rows = [entry_row(e) for e in entries]
    if rows:
        table(rows, ROW_HEADERS, sys.stdout)
    if read.unreadable:
        print(f"{read.unreadable} unreadable line(s) skipped (cut short)", file=sys.stderr)
    if args.record:
        for line in receipt(trails(entries).get(args.record), now):
            print(line)
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    print(f"{count} in {log.path}")
    return 0


@command(
    "mcp",
    "serve workspace_memory_propose/search/list over stdio (MCP)",
    arg(
        "--session",
        help="the agent's session id (default: $DSH_SESSION_ID, else one made for this run)",
    ),
    arg("--include-shared", action="store_true", help="serve verified shared-project records too"),
    arg(
        "--yes-shared",
        action="store_true",
        help="also write the use counts of shared-project records",
    ),
    BUDGET,
)
def cmd_mcp(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..mcp import serve  # the SDK is an optional extra: serve() says so when it is missing

    serve(
        store,
        session=args.session,
        include_shared=args.include_shared,
        yes_shared=args.yes_shared,
        budget=args.budget_bytes,
    )
    return 0
