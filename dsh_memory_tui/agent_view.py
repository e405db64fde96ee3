"""What an agent may be served, and the exact text it gets (SPEC 1, 8: "What the agent sees").

One function decides which records leave the store for an agent: ``served_records``. The MCP
server (``mcp.py``) answers its search and list tools and its resources with it, and the app's
"What the agent sees" view shows the same function's output, so a reviewer sees exactly what
an agent would.

A record is served only when it is active, verified by a human, not expired and every file it
cites still holds the cited text (``eligible``), of this
workspace's project file, this user's profile, the server's own session, and the shared-project
file only when that was asked for. Unverified (proposals, imports, digests), rejected, stale,
archived and forgotten records, other users' profiles, other sessions and other projects' lines
never are. Search ranks like the host's ``MemoryStore.search`` (``recordRank``); lists are in
the host's ``list()`` order; pinned records come first; at most 100 records.

A budget (``settings.budget_bytes``: ``--budget-bytes``, else ``DSH_MCP_BUDGET_BYTES``, else
32 KiB) bounds the text: records go in the served order until the next one would take the text
past it, and the text ends by naming how many were cut (``AgentView.cut``: the records left
out, in order).

``mark_used`` records that records were served (the host's ``markUsed``: ``lastUsedAt``,
``useCount``, ``updatedAt``; the revision stays), one locked batch per file through the store's
write path. Nothing here imports textual or the MCP SDK; nothing here writes unless asked to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import ErrorCode, StoreError
from .governance import locale_key
from .js_json import dumps_js, loads_js
from .model import (
    Location,
    Record,
    RecordInvalid,
    RecordType,
    Scope,
    Status,
    Verification,
    is_expired,
    js_trim,
    now_ms,
    parse_line,
    text_ok,
    utf8_len,
    well_formed,
)
from .paths import StoreFile
from .present import tags_text, when

# The budget's setting lives in ``settings`` (every command checks it first, without this
# module); it stays importable from here.
from .settings import BUDGET_ENV as BUDGET_ENV
from .settings import DEFAULT_BUDGET_BYTES as DEFAULT_BUDGET_BYTES
from .settings import MIN_BUDGET_BYTES as MIN_BUDGET_BYTES
from .settings import budget_bytes as budget_bytes
from .store import FileView, MemoryStore, Session

if TYPE_CHECKING:  # citations load with the store that checks them, not with the budget
    from .sources import Sources

MAX_RESULTS = 100  # the host's MEMORY_MAX_RESULTS
BYTES_PER_TOKEN = 4  # the usual estimate for English text and Markdown
MAX_QUERY_BYTES = 256  # the host's MEMORY_MAX_QUERY_BYTES
NO_MATCH_RANK = 5
REPLACEMENT = "\ufffd"  # what a lone surrogate is sent as (node's UTF-8 encoding of one)

# The scopes in the order the text names them.
SCOPE_ORDER = (Scope.SESSION, Scope.PROJECT, Scope.SHARED, Scope.USER)
SCOPE_WORDS = {
    Scope.SESSION: "this session",
    Scope.PROJECT: "this project",
    Scope.SHARED: "everyone sharing this project",
    Scope.USER: "every project of this user",
}
# Runs of letters and digits (the host splits queries on /[^\p{L}\p{N}]+/u).
_TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Audience:
    """Who is being served: the agent's session (None: no session scope) and whether the
    shared-project file is included.
    """

    session: Session | None = None
    include_shared: bool = False

    def scopes(self) -> tuple[Scope, ...]:
        out = [Scope.SESSION] if self.session is not None else []
        out.append(Scope.PROJECT)
        if self.include_shared:
            out.append(Scope.SHARED)
        out.append(Scope.USER)
        return tuple(out)


@dataclass(frozen=True, slots=True)
class AgentView:
    """The records an agent gets for one request and the exact Markdown text of them.

    ``cut``: the records that would have come next but did not fit the budget, in the served
    order; ``more``: how many matched beyond the 100-record limit (not counted in ``cut``);
    ``withheld``: how many more a human verified once that wait for re-review (stale,
    expired, their cited code changed, decided two ways by a team merge: ``queue``).
    """

    records: list[Record]
    text: str
    scopes: tuple[Scope, ...]
    cut: tuple[Record, ...] = ()
    more: int = 0
    budget: int | None = None
    withheld: int = 0

    @property
    def size(self) -> int:
        """The text's size in UTF-8 bytes (what it costs the agent's context)."""
        return utf8_len(self.text)

    @property
    def tokens(self) -> int:
        """An estimate of the text's size in tokens."""
        return estimate_tokens(self.size)


def estimate_tokens(size: int) -> int:
    """About how many tokens ``size`` bytes of text cost (4 bytes a token, rounded up)."""
    return -(-size // BYTES_PER_TOKEN)


def is_served(record: Record, now: int) -> bool:
    """Active, verified by a human and not expired at ``now``."""
    return (
        record.governance.verification is Verification.VERIFIED
        and record.status is Status.ACTIVE
        and not is_expired(record, now)
    )


def eligible(record: Record, now: int, sources: Sources, withheld: Container[str] = ()) -> bool:
    """Eligible to be served: ``is_served``, every file it cites still holds the cited text
    (``Sources.holds``: a changed or missing citation waits for re-review), and it is not
    ``withheld`` (``withheld_ids``: a shared record whose history breaks, until accepted here).
    """
    return is_served(record, now) and record.id not in withheld and sources.holds(record)


def withheld_ids(store: MemoryStore, files: Iterable[StoreFile]) -> Container[str]:
    """Ids of the shared records whose history does not hold (``team.chain.broken_chains``),
    when ``files`` include the shared file; else none.
    """
    if not any(f.scope is Scope.SHARED for f in files):
        return ()
    from .team.chain import broken_chains  # git is asked only when the shared file is served

    return broken_chains(store.paths)


class Lowered(NamedTuple):
    """A record's text as ``recordRank`` compares it (lower case)."""

    title: str
    content: str
    tags: tuple[str, ...]
    haystack: str


def lowered(record: Record) -> Lowered:
    title, content = record.title.lower(), record.content.lower()
    tags = tuple(t.lower() for t in record.tags)
    return Lowered(title, content, tags, f"{title} {content} {' '.join(tags)}")


def _rank(low: Lowered, lower: str, tokens: list[str]) -> int:
    title = low.title
    if title == lower:
        return 0
    if lower in title or lower in low.content or lower in low.tags:
        return 1
    haystack = low.haystack
    overlap = 0
    for token in tokens:
        if token in haystack:
            overlap += 1
    if overlap and overlap == len(tokens):
        return 2
    if title.startswith(lower):
        return 3
    for tag in low.tags:
        if tag.startswith(lower):
            return 3
    return 4 if overlap else NO_MATCH_RANK


def record_rank(record: Record, query: str) -> int:
    """The host's ``recordRank``: 0 exact title, 1 a substring of title or content or an equal
    tag, 2 every query token somewhere, 3 a title or tag prefix, 4 some token, 5 no match.
    """
    lower = query.lower()
    return _rank(lowered(record), lower, _TOKEN.findall(lower))


class Kept(NamedTuple):
    """A file's records an agent may be served (before their citations are checked), and
    those a human verified once that wait for re-review (``queue.withheld``)."""

    served: list[Record]
    withheld: list[Record]


def kept(view: FileView, now: int) -> Kept:
    from .queue import withheld  # with what it reads (the team's merge): on first serving

    served = [r for r in view.current.values() if is_served(r, now)]
    return Kept(served, withheld(view, now))


class ServeCache:
    """What a long-running server would otherwise recompute on every request: each file's
    served records (until the file's view changes) and each record's lower-cased text (while
    the record is current).
    """

    def __init__(self) -> None:
        self._by_id: dict[str, tuple[Record, Lowered]] = {}
        self._served: dict[object, tuple[tuple[int, int], Kept]] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def served(self, view: FileView, now: int) -> Kept:
        """``view``'s served and withheld records (``kept``); the same lists while the view
        has applied no line (an expiry is applied as a line, so it changes the view too).
        """
        signature = (view.epoch, len(view.applied))
        entry = self._served.get(view.path)
        if entry is not None and entry[0] == signature:
            return entry[1]
        got = kept(view, now)
        self._served[view.path] = (signature, got)
        return got

    def lowered(self, record: Record) -> Lowered:
        entry = self._by_id.get(record.id)
        if entry is not None and entry[0] is record:
            return entry[1]
        low = lowered(record)
        self._by_id[record.id] = (record, low)
        return low

    def retain(self, ids: set[str]) -> None:
        """Forget the text of every record but ``ids`` (changed, forgotten, no longer served)."""
        self._by_id = {rid: e for rid, e in self._by_id.items() if rid in ids}


def safe_limit(limit: int | None) -> int:
    """The host's ``safeLimit``: a positive integer up to 100, anything else 100."""
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return min(limit, MAX_RESULTS)
    return MAX_RESULTS


def check_query(query: object) -> str:
    """The host's rule for a search query (``Memory query is invalid``): a non-blank string of
    at most 256 UTF-8 bytes without control characters. Raises ``StoreError(INVALID_RECORD)``.
    """
    if text_ok(query, MAX_QUERY_BYTES):
        return query  # type: ignore[return-value]
    if not isinstance(query, str):
        why = "not a string"
    elif not js_trim(query):
        why = "blank"
    elif utf8_len(query) > MAX_QUERY_BYTES:
        why = f"over {MAX_QUERY_BYTES} UTF-8 bytes"
    else:
        why = "contains a control character"
    raise StoreError(ErrorCode.INVALID_RECORD, f"Memory query is invalid ({why})")


def _scope_arg(audience: Audience, scope: Scope | str | None) -> tuple[Scope, ...]:
    served = audience.scopes()
    if scope is None:
        return served
    try:
        wanted = Scope({"shared": "shared-project"}.get(str(scope), str(scope)))
    except ValueError:
        names = ", ".join(s.value for s in served)
        raise StoreError(
            ErrorCode.INVALID_RECORD, f"scope {scope!r} is not one of {names}"
        ) from None
    if wanted not in served:
        why = (
            "this server was started without --include-shared "
            "(restart it as `dsh-memory mcp --include-shared` to serve verified shared-project "
            "records)"
            if wanted is Scope.SHARED
            else "there is no session"
        )
        raise StoreError(ErrorCode.SCOPE_NOT_SERVED, f"scope {wanted.value} is not served: {why}")
    return (wanted,)


def served_files(
    store: MemoryStore, audience: Audience, scope: Scope | str | None = None
) -> list[StoreFile]:
    """The files whose records may be served (``scope``: only that one)."""
    out = []
    for s in _scope_arg(audience, scope):
        out.append(store.file_for(s, audience.session if s is Scope.SESSION else None))
    return out


def _views(store: MemoryStore, files: Iterable[StoreFile]) -> list[FileView]:
    views = []
    for file in files:
        view = store.view(file)
        view.refresh()
        views.append(view)
    return views


class Ranked(NamedTuple):
    """The records an agent may be served, each with its sort key, unsorted; ``withheld``:
    how many more a human verified once would be, but wait for re-review."""

    keyed: list[tuple[tuple[int | bool, ...], Record]]
    withheld: int


def _ranked(
    store: MemoryStore,
    audience: Audience,
    *,
    scope: Scope | str | None = None,
    query: str | None = None,
    record_type: RecordType | str | None = None,
    now: int | None = None,
    cache: ServeCache | None = None,
) -> Ranked:
    """Every record an agent may be served, with its sort key (``served_records``), unsorted,
    and how many of the same type and matching the same query are withheld."""
    at = now_ms() if now is None else now
    files = served_files(store, audience, scope)
    wanted_type = None
    if record_type is not None:
        try:
            wanted_type = RecordType(record_type)
        except ValueError:
            names = ", ".join(t.value for t in RecordType)
            raise StoreError(
                ErrorCode.INVALID_RECORD, f"type {record_type!r} is not one of {names}"
            ) from None
    if query is not None:
        query = check_query(query)
    records: list[Record] = []
    held: list[Record] = []  # verified once, withheld until a person here decides again
    broken = withheld_ids(store, files)
    with store.sources.batch():  # one stat per cited file for the whole request
        for view in _views(store, files):
            served, waiting = cache.served(view, at) if cache is not None else kept(view, at)
            if wanted_type is not None or broken:  # else the cache's own list (holding's memo)
                served = [r for r in served if wanted_type is None or r.type is wanted_type]
                held.extend(r for r in served if r.id in broken)
                served = [r for r in served if r.id not in broken]
            # Citations are checked at each request (a stat per cited file): code changes
            # without any line of the store changing.
            holding = store.sources.holding(served)
            records.extend(holding)
            if len(holding) < len(served):
                ok = {r.id for r in holding}
                held.extend(r for r in served if r.id not in ok)
            held.extend(r for r in waiting if wanted_type is None or r.type is wanted_type)
    keyed: list[tuple[tuple[int | bool, ...], Record]]
    if query is None:
        # Pinned first, then the host's list order (``governance.host_list_order``).
        keyed = [((not r.governance.pinned, -r.updatedAt), r) for r in records]
        return Ranked(keyed, len(held))
    # The host's search order, pinned first among records of one rank.
    texts = cache if cache is not None else ServeCache()
    lower = query.lower()
    tokens = _TOKEN.findall(lower)
    keyed = []
    for r in records:
        rank = _rank(texts.lowered(r), lower, tokens)
        if rank < NO_MATCH_RANK:
            key = (rank, not r.governance.pinned, -r.updatedAt, -(r.lastUsedAt or 0))
            keyed.append((key, r))
    if scope is None and wanted_type is None and len(texts) > len(records):
        texts.retain({r.id for r in records})
    matching = sum(1 for r in held if _rank(lowered(r), lower, tokens) < NO_MATCH_RANK)
    return Ranked(keyed, matching)


def served_records(
    store: MemoryStore, audience: Audience, *, limit: int | None = None, **criteria: Any
) -> list[Record]:
    """Exactly the records an agent may be served, best first, at most ``limit`` (<= 100).

    ``criteria``: ``scope``, ``query``, ``record_type``, ``now``, ``cache``. Without ``query``:
    pinned first, then the host's list order (newest update first, then id). With ``query``:
    only records the host's ``recordRank`` matches, best rank first, pinned first among
    equals, then the host's order (newest update, latest use, id).
    ``StoreError(INVALID_RECORD)`` for a bad query, scope or type,
    ``StoreError(SCOPE_NOT_SERVED)`` for a scope this audience is not served. ``cache``: a
    ``ServeCache`` kept between calls (a server's), so unchanged files are not filtered
    again and each record's text is lower-cased once.
    """
    return _best(_ranked(store, audience, **criteria).keyed, safe_limit(limit))


def _best(keyed: list[tuple[tuple[int | bool, ...], Record]], limit: int) -> list[Record]:
    """The first ``limit`` records by (key, the host's ``localeCompare`` of the id). The id's
    collation key is costly, so it is computed only for the records that can make the cut.
    """
    keyed.sort(key=lambda kr: kr[0])
    if len(keyed) > limit:
        cut = keyed[limit - 1][0]
        end = limit
        while end < len(keyed) and keyed[end][0] == cut:
            end += 1
        keyed = keyed[:end]
    keyed.sort(key=lambda kr: (kr[0], locale_key(kr[1].id)))
    return [r for _, r in keyed[:limit]]


# ----------------------------------------------------------------------------- the text


def _scopes_text(scopes: Sequence[Scope]) -> str:
    return ", ".join(SCOPE_WORDS[s] for s in SCOPE_ORDER if s in scopes)


def render_record(record: Record) -> str:
    """One record as the agent reads it: its title, a line of facts, its content."""
    g = record.governance
    facts = [record.type.value, record.scope.value]
    if g.pinned:
        facts.append("pinned")
    if g.verifiedAt is not None:
        facts.append(f"verified {when(g.verifiedAt, '%Y-%m-%d')}")
    if record.tags:
        facts.append(f"tags: {tags_text(record.tags)}")
    facts.append(f"id: {record.id}")
    title, content = " ".join(record.title.split()), record.content.strip()
    text = f"## {title}\n\n_{' · '.join(facts)}_\n\n{content}\n"
    sent = well_formed(text)
    if sent is text:
        return text
    # A lone surrogate (host-valid JSON) cannot travel as UTF-8: sent as U+FFFD, and said.
    n = sent.count(REPLACEMENT) - text.count(REPLACEMENT)
    facts.append(f"{n} lone surrogate{'s' if n != 1 else ''} (not Unicode) sent as {REPLACEMENT}")
    return well_formed(f"## {title}\n\n_{' · '.join(facts)}_\n\n{content}\n")


def _head(count: int, scopes: Sequence[Scope], query: str | None) -> str:
    where = _scopes_text(scopes)
    records = f"{count} record{'s' if count != 1 else ''}"
    if query is None:
        return (
            f"# Verified workspace memory\n\n{records} a human verified for {where}; "
            "pinned first, then the most recently updated."
        )
    return (
        f"# Verified workspace memory matching {well_formed(json.dumps(query, ensure_ascii=False))}"
        "\n\n"
        f"{records} a human verified for {where}; best match first."
    )


def withheld_words(withheld: int, query: str | None, *, other: bool = False) -> str:
    """ "5 verified records are withheld until re-review" (``other``: beside records sent)."""
    n = f"{withheld} {'other ' if other else ''}verified record{'s' if withheld != 1 else ''}"
    matching = " matching it" if query is not None else ""
    return f"{n}{matching} {'is' if withheld == 1 else 'are'} withheld until re-review"


def _tail(
    cut: int, more: int, budget: int | None, query: str | None, limit: int, withheld: int = 0
) -> str:
    """The lines naming what was not sent ("" when everything was): cut by the budget or the
    limit, and withheld until a human re-reviews them."""
    parts = []
    if cut:
        what = "matching " if query is not None else "verified "
        parts.append(
            f"{cut} more {what}record{'s' if cut != 1 else ''} not sent: over the budget "
            f"({budget:,} bytes)"
        )
    if more:
        parts.append(f"{more:,} more beyond the limit of {limit} records")
    held = f"\n_{withheld_words(withheld, query, other=True)}._\n" if withheld else ""
    if not parts:
        return held
    hint = (
        f"narrow the search to reach {'them' if cut + more != 1 else 'it'}"
        if query is not None
        else f"search with {SEARCH_TOOL_NAME} to reach {'them' if cut + more != 1 else 'it'}"
    )
    return f"\n_{'; '.join(parts)}; {hint}._\n{held}"


SEARCH_TOOL_NAME = "workspace_memory_search"


def to_markdown(
    records: Sequence[Record],
    scopes: Sequence[Scope],
    *,
    query: str | None = None,
    cut: int = 0,
    more: int = 0,
    budget: int | None = None,
    limit: int = MAX_RESULTS,
    rendered: Sequence[str] | None = None,
    withheld: int = 0,
) -> str:
    """The Markdown an agent gets for ``records`` (served from ``scopes``), ending with the
    lines that name the ``cut`` records (over ``budget``), the ``more`` beyond the limit and
    the ``withheld`` until re-review. ``rendered``: ``render_record`` of each record, when
    the caller has them.
    """
    head = _head(len(records), scopes, query)
    if not records:
        if cut:
            return f"{head}\n{_tail(cut, more, budget, query, limit, withheld)}"
        if withheld:
            none = withheld_words(withheld, query)
        else:
            none = (
                "no verified memory matches it" if query is not None else "no verified memory yet"
            )
        return f"{head}\n\nNothing to show: {none}.\n{_tail(cut, more, budget, query, limit)}"
    tail = _tail(cut, more, budget, query, limit, withheld)
    texts = rendered if rendered is not None else [render_record(r) for r in records]
    return head + "\n\n" + "\n".join(texts) + tail


def _fit(
    records: Sequence[Record],
    scopes: Sequence[Scope],
    query: str | None,
    more: int,
    budget: int,
    limit: int,
    withheld: int = 0,
) -> tuple[int, list[str]]:
    """How many of ``records`` (a prefix: the served order is kept) fit in ``budget`` bytes
    with the heading and the closing lines, and the rendered text of those.
    """
    rendered: list[str] = []
    body = 0  # the records' bytes and the blank lines between them
    n = len(records)
    for k, record in enumerate(records, 1):
        text = render_record(record)
        size = body + utf8_len(text) + (1 if k > 1 else 0)
        head = utf8_len(_head(k, scopes, query)) + 2
        tail = _tail(n - k, more, budget, query, limit, withheld)
        if head + size + utf8_len(tail) > budget:
            break
        rendered.append(text)
        body = size
    return len(rendered), rendered


def agent_view(
    store: MemoryStore,
    audience: Audience,
    *,
    scope: Scope | str | None = None,
    query: str | None = None,
    record_type: RecordType | str | None = None,
    limit: int | None = None,
    now: int | None = None,
    cache: ServeCache | None = None,
    budget: int | None = None,
) -> AgentView:
    """``served_records`` and their Markdown: exactly what an agent gets (the resources, the
    tools' text, the app's "What the agent sees", ``dsh-memory payload``). With ``budget``
    (bytes), the records that fit in the served order, the rest in ``cut``.
    """
    keyed, withheld = _ranked(
        store,
        audience,
        scope=scope,
        query=query,
        record_type=record_type,
        now=now,
        cache=cache,
    )
    total, most = len(keyed), safe_limit(limit)
    records = _best(keyed, most)
    more = total - len(records)
    scopes = _scope_arg(audience, scope)
    if budget is None:
        text = to_markdown(records, scopes, query=query, more=more, limit=most, withheld=withheld)
        return AgentView(records, text, scopes, more=more, withheld=withheld)
    fits, rendered = _fit(records, scopes, query, more, budget, most, withheld)
    sent, cut = records[:fits], tuple(records[fits:])
    text = to_markdown(
        sent,
        scopes,
        query=query,
        cut=len(cut),
        more=more,
        budget=budget,
        limit=most,
        rendered=rendered,
        withheld=withheld,
    )
    return AgentView(sent, text, scopes, cut, more, budget, withheld)


# ----------------------------------------------------------------------------- use


def used_version(record: Record, now: int, location: Location) -> Record | None:
    """The record after one more use, as the host's ``markUsed`` writes it: ``updatedAt`` and
    ``lastUsedAt`` now, ``useCount`` + 1, everything else (the revision too) unchanged; None
    when that line would break the host's rules (a ``useCount`` at 2^53 - 1 already).
    """
    data = loads_js(record.to_line().decode())
    out: dict[str, object] = {}
    for key, value in data.items():
        if key == "lastUsedAt":
            continue
        out[key] = value
        if key == "updatedAt":
            out["updatedAt"] = max(now, record.updatedAt)
            out["lastUsedAt"] = now
    out["useCount"] = record.useCount + 1
    line = dumps_js(out, ensure_ascii=True).encode()
    try:
        used = parse_line(line, location)
    except RecordInvalid:
        return None  # the use is not recorded; the record is still served
    return used if isinstance(used, Record) else None


def _file_of(store: MemoryStore, record: Record) -> StoreFile:
    if record.scope is Scope.SESSION:
        session_id, _, root = record.scopeKey.rpartition("|")
        return store.file_for(Scope.SESSION, (session_id, root))
    return store.file_for(record.scope)


def mark_used(
    store: MemoryStore,
    records: Iterable[Record],
    *,
    now: int | None = None,
    confirm_shared: bool = False,
) -> list[Record]:
    """Record one use of each of ``records``: one locked batch per file. A record that
    changed meanwhile (another revision or content) or is no longer served is skipped, and so
    is every shared-project record unless ``confirm_shared``. Returns the lines written.
    """
    by_key: dict[tuple[Scope, str], dict[str, Record]] = {}
    for record in records:
        if record.scope is Scope.SHARED and not confirm_shared:
            continue
        by_key.setdefault((record.scope, record.scopeKey), {})[record.id] = record
    written: list[Record] = []
    for wanted in by_key.values():
        file = _file_of(store, next(iter(wanted.values())))
        withheld = withheld_ids(store, [file])

        def build(
            view: FileView,
            wanted: dict[str, Record] = wanted,
            withheld: Container[str] = withheld,
        ) -> tuple[list[Record], list[Record]]:
            at = store.clock() if now is None else now
            out = []
            for rid, seen in wanted.items():
                current = view.current.get(rid)
                if (
                    current is None
                    or current.governance.revision != seen.governance.revision
                    or current.contentHash != seen.contentHash
                    or not eligible(current, at, store.sources, withheld)
                ):
                    continue
                used = used_version(current, at, view.location)
                if used is not None:
                    out.append(used)
            return out, out

        written.extend(store.write(file, build, confirm_shared=confirm_shared, about=wanted))
    return written
