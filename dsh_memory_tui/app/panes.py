"""One tab: a filter box, the record table and the detail pane, over a set of records."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.widgets import Static

from ..lint import Flag, kinds
from ..model import Record, Scope, Status, Verification, now_ms
from ..present import SHORT_ORIGIN, expired_at, markers, when
from ..queue import Reason
from .actions import FIELD_VALUES, FILTER_FIELDS, FILTER_FLAGS, filter_hint
from .citations import REREVIEW_FLAG
from .evidence import Evidence
from .labels import session_label
from .review import ReviewRule, why_cell
from .widgets.detail import DetailPane
from .widgets.ordered_keys import OrderedInput
from .widgets.record_table import Column, RecordTable, Row

# At 80 columns the title needs the room more than origin and time (the detail pane has both).
COLUMNS = [
    Column("type", "Type", 10),
    Column("title", "Title", None),
    Column("marks", "", 3),  # pinned, expired, in an open conflict group (present.markers)
    Column("status", "Status", 9),  # "forgotten" whole
    Column("verification", "Verification", 12),
    Column("origin", "Origin", 8, hide_below=96),
    Column("revision", "Rev", 3),
    Column("updated", "Updated", 11, hide_below=110),
]

# The review queue's rows say why each record waits (the first reason, and how many more:
# the detail pane lists them) and whose it is (a shared-project one is the whole team's once
# verified). At 80 columns the title keeps its room: origin (mostly said by the reason) and
# time go.
REVIEW_COLUMNS = [
    Column("type", "Type", 10),
    Column("title", "Title", None),
    Column("marks", "", 3),
    Column("why", "Why", 12),
    Column("scope", "Scope", 7),
    Column("origin", "Origin", 8, hide_below=100),
    Column("revision", "Rev", 3),
    Column("updated", "Updated", 11, hide_below=110),
]
SCOPE_CELL = {
    Scope.SESSION: "session",
    Scope.PROJECT: "project",
    Scope.SHARED: "SHARED",  # in capitals: everyone sharing the project will see it
    Scope.USER: "user",
}

GROUP_PREFIX = "group:"


class FilterBox(OrderedInput):
    """The filter box: its placeholder names what the filter takes, as much as fits."""

    def on_resize(self) -> None:
        self.placeholder = filter_hint(self.content_size.width)


@dataclass(frozen=True, slots=True)
class TabSpec:
    id: str
    title: str
    scope: Scope | None  # None: the review queue across every scope
    key: str


TABS = [
    TabSpec("review", "Review", None, "1"),
    TabSpec("session", "Session", Scope.SESSION, "2"),
    TabSpec("project", "Project", Scope.PROJECT, "3"),
    TabSpec("shared", "Shared", Scope.SHARED, "4"),
    TabSpec("user", "User", Scope.USER, "5"),
]


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """``words`` must all appear in title, content or tags; ``fields`` match by prefix;
    ``flags`` are states (pinned, stale, expired). ``conflict:`` alone: any record in an open
    conflict group; ``conflict:<hex>``: that group (by prefix, with or without ``conflict:``).

    A field given more than once matches either value (``type:fact type:decision``).
    ``problems`` says in words what the filter could not use: an unknown prefix (searched as
    text, so ``localhost:8000`` still finds itself), a value no record can have, a prefix
    without a value.
    """

    words: tuple[str, ...] = ()
    fields: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, its values), in typed order
    flags: tuple[str, ...] = ()
    now: int = 0  # for "expired": the time the filter was made
    problems: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, now: int | None = None) -> RecordFilter:
        words: list[str] = []
        fields: dict[str, list[str]] = {}
        flags: list[str] = []
        problems: list[str] = []
        for token in text.lower().split():
            name, sep, value = token.partition(":")
            if sep and name == "conflict":
                fields.setdefault(name, []).append(value.removeprefix("conflict:"))
            elif sep and name in FILTER_FIELDS:
                known = FIELD_VALUES.get(name)
                if not value:
                    choices = f": {', '.join(known)}" if known else ""
                    problems.append(f"{name}: needs a value{choices}")
                    continue
                if known is not None and not any(k.startswith(value) for k in known):
                    problems.append(f"no such {name} {value!r} ({', '.join(known)})")
                fields.setdefault(name, []).append(value)
            elif token in FILTER_FLAGS:
                flags.append(token)
            else:
                if sep and name.isalpha():
                    close = difflib.get_close_matches(name, FILTER_FIELDS, n=1)
                    hint = f"; did you mean {close[0]}:?" if close else ""
                    problems.append(f"unknown filter prefix {name}: (searched as text{hint})")
                words.append(token)
        return cls(
            tuple(words),
            tuple((name, tuple(values)) for name, values in fields.items()),
            tuple(flags),
            now_ms() if now is None else now,
            tuple(problems),
        )

    def __bool__(self) -> bool:
        return bool(self.words or self.fields or self.flags)

    def __eq__(self, other: object) -> bool:
        # The time only matters to "expired"; a filter typed again is the same filter.
        if not isinstance(other, RecordFilter):
            return NotImplemented
        return (self.words, self.fields, self.flags) == (other.words, other.fields, other.flags)

    def __hash__(self) -> int:
        return hash((self.words, self.fields, self.flags))

    @property
    def asks_conflict(self) -> bool:
        return any(name == "conflict" for name, _ in self.fields)

    @property
    def asks_flags(self) -> bool:
        return any(name == "flag" for name, _ in self.fields)

    @property
    def asks_why(self) -> bool:
        return any(name == "why" for name, _ in self.fields)

    def narrows(self, other: RecordFilter) -> bool:
        """True when every record this filter matches ``other`` matches too: each of its
        words is inside one of ours, its flags are ours, and each of its fields is ours with
        values that only start longer (every field matches by prefix). Typing on at the end
        of a filter narrows it; so the pane tests only what it showed."""
        if not set(other.flags) <= set(self.flags):
            return False
        if REREVIEW_FLAG in self.flags or self.asks_why:
            return False  # cited code changes without a record changing: test them all
        if "expired" in self.flags and self.now != other.now:
            return False  # time passed: what expired since was not among what it showed
        if not all(any(w in mine for mine in self.words) for w in other.words):
            return False
        ours = dict(self.fields)
        for name, values in other.fields:
            mine = ours.get(name)
            if mine is None or not all(any(v.startswith(o) for o in values) for v in mine):
                return False
        return True

    def matches(
        self,
        r: Record,
        conflict: str | None = None,
        text: str | None = None,
        flags: Sequence[Flag] = (),
        rereview: Callable[[str], bool] = lambda rid: False,
        why: Sequence[Reason] = (),
    ) -> bool:
        """``conflict``: the record's open conflict group, if it is in one; ``text``: its
        ``searched_text``, when the caller keeps it; ``flags``: its risk flags (``flag:``);
        ``rereview``: whether a record's cited code changed; ``why``: the reasons it waits on
        a human (``why:``, by the reason's code)."""
        g = r.governance
        for flag in self.flags:
            if flag == "pinned":
                ok = g.pinned
            elif flag == REREVIEW_FLAG:
                ok = rereview(r.id)
            elif flag == "stale":
                ok = g.verification is Verification.STALE
            else:
                ok = expired_at(r, self.now)
            if not ok:
                return False
        for name, values in self.fields:
            if name == "why":
                if not any(reason.code.startswith(v) for reason in why for v in values):
                    return False
            elif not any(_field_matches(r, name, value, conflict, flags) for value in values):
                return False
        if self.words:
            hay = searched_text(r) if text is None else text
            return all(w in hay for w in self.words)
        return True


def searched_text(r: Record) -> str:
    """What filter words are looked for in: title, content and tags, in lower case."""
    return " ".join((r.title, r.content, *r.tags)).lower()


def _field_matches(
    r: Record, name: str, value: str, conflict: str | None, flags: Sequence[Flag] = ()
) -> bool:
    g = r.governance
    if name == "flag":
        return bool(flags) and (
            "any".startswith(value) or any(k.startswith(value) for k in kinds(flags))
        )
    if name == "conflict":
        return conflict is not None and conflict.removeprefix("conflict:").startswith(value)
    if name == "type":
        return r.type.value.startswith(value)
    if name == "status":
        return r.status.value.startswith(value)
    if name == "verification":
        return g.verification.value.startswith(value)
    if name == "origin":
        return g.origin.value.startswith(value) or SHORT_ORIGIN[g.origin].startswith(value)
    if name == "scope":
        return r.scope.value.startswith(value)
    return any(t.lower().startswith(value) for t in r.tags)


@lru_cache(maxsize=4096)
def _minute(minute: int) -> str:
    return when(minute * 60_000, "%m-%d %H:%M")


# Cells and marks repeat across rows: one object each, not one per row (a 28,000-record
# store's rows kept ~10 MiB of copies of "1", a marker and the same three booleans).
_SHARED: dict[Any, Any] = {}


def _shared(value: Any) -> Any:
    """The one object equal to ``value`` that rows hold (a cell or a marks tuple)."""
    if len(_SHARED) > 4096:  # only small values repeat; bounded whatever comes
        _SHARED.clear()
    return _SHARED.setdefault(value, value)


def record_row(
    r: Record,
    conflict: bool = False,
    now: int | None = None,
    *,
    review: bool = False,
    root_id: str = "",
    risky: bool = False,
    source_changed: bool = False,
    why: str = "",
) -> Row:
    """The row of ``r`` under ``COLUMNS``, or with ``review`` under ``REVIEW_COLUMNS`` (``why``:
    its Why cell, ``review.why_cell``); ``root_id`` (this workspace's) marks a shared record
    another clone wrote; ``source_changed``: a verified record whose cited code changed."""
    g = r.governance
    marked = markers(
        r, now_ms() if now is None else now, conflict, source_changed, root_id=root_id, risky=risky
    )
    head = (r.type.value, r.title.replace("\n", " ") or "(forgotten)", _shared(marked))
    tail = (SHORT_ORIGIN[g.origin], _shared(str(g.revision)), _minute(r.updatedAt // 60_000))
    if review:
        return Row(r.id, (*head, _shared(why), SCOPE_CELL[r.scope], *tail))
    return Row(
        r.id,
        (*head, r.status.value, g.verification.value, *tail),
        dim=r.status is not Status.ACTIVE,
    )


def _newest_first(records: Iterable[Record]) -> list[Record]:
    return sorted(records, key=lambda r: r.updatedAt, reverse=True)


_STATUSES = {s: i for i, s in enumerate(Status)}
_VERIFICATIONS = {v: i for i, v in enumerate(Verification)}
_SCOPES = {s: i for i, s in enumerate(Scope)}


@dataclass(frozen=True, slots=True)
class Sort:
    """One order of a tab's table (``s`` cycles them): ``column`` is the header that shows
    it with an arrow; ``key`` None is newest first, else ascending by it, newest first among
    equals (a stable sort of the newest-first order)."""

    name: str
    column: str
    key: Callable[[Record], Any] | None = None


NEWEST = Sort("newest first", "updated")
SORTS = (
    NEWEST,
    Sort("title", "title", lambda r: r.title.casefold()),
    Sort("type", "type", lambda r: r.type.value),
    Sort(
        "status",
        "status",
        lambda r: (_STATUSES[r.status], _VERIFICATIONS[r.governance.verification]),
    ),
)
# The review queue is active and unverified: its last order is by scope instead.
REVIEW_SORTS = (*SORTS[:3], Sort("scope", "scope", lambda r: _SCOPES[r.scope]))


def sorted_records(records: Iterable[Record], order: Sort) -> list[Record]:
    """``records`` in ``order``."""
    newest = _newest_first(records)
    return newest if order.key is None else sorted(newest, key=order.key)


class RecordPane(Vertical):
    """The records of one tab. ``belongs`` decides membership; the pane keeps the candidate set
    so a filter change or an incremental update never goes back to the store.
    """

    BINDINGS = [Binding("m", "toggle_raw", "Raw text", show=False)]

    def __init__(
        self,
        spec: TabSpec,
        belongs: Callable[[Record], bool],
        root_id: str = "",
        conflict_of: Callable[[str], str | None] = lambda rid: None,
        clock: Callable[[], int] = now_ms,
        evidence: Evidence | None = None,
        rereview: Callable[[str], bool] = lambda rid: False,
        queue: ReviewRule | None = None,
    ) -> None:
        super().__init__(id=f"pane-{spec.id}", classes="record-pane")
        self.spec = spec
        self.belongs = belongs
        # The Review tab's rule (its ``belongs``): each record's reasons for the Why column
        # and the line of counts.
        self.queue = queue
        self.root_id = root_id  # the workspace's rootId: shown as "this workspace"
        # The open conflict group of a record id (the app's ConflictIndex), or None.
        self.conflict_of = conflict_of
        self.clock = clock
        # Risk flags: the row's marker once the worker found them; the filter's flag: field.
        self.evidence = evidence or Evidence()
        # Whether a record's cited code changed (the app's CitationStates), checked in a worker.
        self.rereview = rereview
        self.records: dict[str, Record] = {}
        # The newest updatedAt of this tab's records (a record joining newer goes on top, any
        # other renders the rows again; a removal leaves it, which errs that way).
        self._newest = 0
        # id -> (record, (in an open conflict, risky, cited code changed, its reasons), its
        # row): a row is built once per record state.
        self._rows: dict[str, tuple[Record, tuple[object, ...], Row]] = {}
        self.filter = RecordFilter()
        # Typing in the filter of a 20,000-record tab: per key, only what the last key showed
        # is tested when the filter narrowed, in an order sorted once, against each record's
        # searched text built once (ids -> (record, text)).
        self._texts: dict[str, tuple[Record, str]] = {}
        self._order: list[Record] | None = None  # every record, in this tab's sort
        self._shown: list[Record] | None = None  # what the last render showed, in order
        self._shown_filter = RecordFilter()
        self._all_rows: list[Row] | None = None  # the rows of _order (no filter), built once
        # record id -> its session file's group key (the scopeKey), on the Session tab
        self.groups: dict[str, str] = {}
        # Only the tab in view keeps its table current; the others render when first shown.
        # (Not ``visible``: that is Textual's CSS visibility, and setting it takes a layout.)
        self.in_view = spec.id == "review"
        self.stale = False
        self._banner_text = ""
        self._counts_text = ""
        self.sort = NEWEST  # this tab's order (``s`` cycles SORTS)

    @property
    def grouped(self) -> bool:
        return self.spec.scope is Scope.SESSION

    @property
    def review(self) -> bool:
        """The review queue (every scope): its rows name the scope."""
        return self.spec.scope is None

    def compose(self) -> ComposeResult:
        yield Static("", classes="banner hidden", id=f"banner-{self.spec.id}")
        if self.queue is not None:  # one line, always there: its text changes, not its height
            yield Static("", classes="queue-counts", id=f"counts-{self.spec.id}", markup=False)
        yield FilterBox(placeholder=filter_hint(), classes="filter", id=f"filter-{self.spec.id}")
        yield Static("", classes="filter-problems hidden", id=f"filter-problems-{self.spec.id}")
        with Container(classes="split"):
            columns = REVIEW_COLUMNS if self.review else COLUMNS
            table = RecordTable(
                columns, sort=(self.sort.column, self.sort.key is None), id=f"table-{self.spec.id}"
            )
            table.empty_message = (
                "Nothing waiting for review" if self.spec.scope is None else "No records"
            )
            yield table
            yield DetailPane(self.root_id, classes="detail", id=f"detail-{self.spec.id}")

    @property
    def table(self) -> RecordTable:
        return self.query_one(RecordTable)

    @property
    def detail(self) -> DetailPane:
        return self.query_one(DetailPane)

    @property
    def sorts(self) -> tuple[Sort, ...]:
        return REVIEW_SORTS if self.review else SORTS

    def cycle_sort(self) -> Sort:
        """``s``: the next order of this tab's table (the last goes back to newest first);
        the header's arrow says which. Returns it."""
        sorts = self.sorts
        self.sort = sorts[(sorts.index(self.sort) + 1) % len(sorts)]
        self.table.set_sort(self.sort.column, descending=self.sort.key is None)
        self._order = self._shown = self._all_rows = None
        self.render_rows()
        return self.sort

    def action_toggle_raw(self) -> None:
        """``m``: the detail pane's content as raw text, or as Markdown again."""
        self.detail.toggle_raw()

    @on(RecordTable.Selected)
    def _open_detail(self) -> None:
        """Enter on a row: into the detail pane, to read and scroll the record."""
        self.detail.focus()

    def set_banner(self, text: str) -> None:
        if text == self._banner_text:
            return  # an unchanged banner must not cost a relayout
        self._banner_text = text
        banner = self.query_one(".banner", Static)
        banner.update(text)
        banner.set_class(not text, "hidden")

    def set_counts(self) -> None:
        """The Review tab's line of counts per reason (``ReviewRule.counts_line``)."""
        if self.queue is None:
            return
        text = self.queue.counts_line()
        if text != self._counts_text:
            self._counts_text = text
            self.query_one(".queue-counts", Static).update(text, layout=False)

    # ------------------------------------------------------------------ content

    def rebuild(self, records: Iterable[Record], groups: dict[str, str] | None = None) -> None:
        """Replace the candidate set (after a reset, a toggle or on first load)."""
        if self.queue is not None:
            self.queue.reset()  # asked again of every record below
        self.records = {r.id: r for r in records if self.belongs(r)}
        self._newest = max((r.updatedAt for r in self.records.values()), default=0)
        self._rows = {k: v for k, v in self._rows.items() if k in self.records}
        self._texts = {k: v for k, v in self._texts.items() if k in self.records}
        self._order = self._shown = self._all_rows = None
        if groups is not None:
            self.groups = groups
        self.render_rows()

    def evidence_changed(self) -> None:
        """The worker found flags: rows show their risk marker (when the tab is in view)."""
        self._all_rows = None
        self.render_rows()

    def show(self) -> None:
        """The tab became visible: bring its table up to date if it fell behind."""
        self.in_view = True
        if self.stale:
            self.render_rows()

    def render_rows(self) -> None:
        if not self.in_view:
            self.stale = True
            return
        self.stale = False
        if self._order is None:
            self._order = sorted_records(self.records.values(), self.sort)
        narrowed = self._shown is not None and self.filter.narrows(self._shown_filter)
        candidates = self._shown if narrowed and self._shown is not None else self._order
        visible = [r for r in candidates if self._matches(r)] if self.filter else candidates
        self._shown, self._shown_filter = visible, self.filter
        if not self.grouped:
            if self.filter:
                self.table.set_rows([self._row(r) for r in visible])
                return
            if self._all_rows is None:  # an emptied filter box shows them all again
                self._all_rows = [self._row(r) for r in visible]
            self.table.set_rows(self._all_rows)  # set_rows copies what it keeps
            return
        by_group: dict[str, list[Record]] = {}
        for r in visible:
            by_group.setdefault(self.groups.get(r.id, r.scopeKey), []).append(r)
        rows: list[Row] = []
        for key in sorted(by_group):
            members = by_group[key]  # in the tab's sort already
            label = session_label(key, self.root_id, short=True)
            rows.append(
                Row(
                    f"{GROUP_PREFIX}{key}",
                    ("session", f"{label}  ({len(members)})", "", "", "", "", "", ""),
                    dim=True,
                )
            )
            rows.extend(self._row(r) for r in members)
        self.table.set_rows(rows)

    def _row(self, record: Record) -> Row:
        """The table row for ``record``, built once per record object: typing in the filter
        of a 20,000-record tab re-lists every row on each key, and building them all again
        was most of that (~45 of ~55 ms)."""
        conflict = self.conflict_of(record.id) is not None
        why = self.queue.of(record) if self.queue is not None else ()
        flagged, rereview = self.evidence.flagged(record), self.rereview(record.id)
        marks = _shared((conflict, flagged, rereview, why))
        cached = self._rows.get(record.id)
        if cached is not None and cached[0] is record and cached[1] == marks:
            return cached[2]
        row = record_row(
            record,
            conflict,
            self.clock(),
            review=self.review,
            root_id=self.root_id,
            risky=flagged,
            source_changed=rereview,
            why=why_cell(why),
        )
        self._rows[record.id] = (record, marks, row)
        return row

    def _matches(self, record: Record) -> bool:
        text = None
        if self.filter.words:
            kept = self._texts.get(record.id)
            if kept is not None and kept[0] is record:
                text = kept[1]
            else:
                text = searched_text(record)
                self._texts[record.id] = (record, text)
        # The record's open conflict group only matters to a "conflict:" field.
        conflict = self.conflict_of(record.id) if self.filter.asks_conflict else None
        flags = self.evidence.flags(record) if self.filter.asks_flags else ()
        why = self.queue.of(record) if self.queue is not None and self.filter.asks_why else ()
        return self.filter.matches(record, conflict, text, flags, self.rereview, why)

    def apply(self, records: Iterable[Record]) -> list[str]:
        """Incremental update with changed records; returns the ids that newly appeared."""
        added: list[str] = []
        # Only newest first puts a new record at the top: another order places it (and an
        # edited title or status moves it) by rendering the rows again.
        regroup = not self.in_view or self.sort is not NEWEST
        # What changed may sort or match differently.
        self._order = self._shown = self._all_rows = None
        for r in records:
            known = r.id in self.records
            if not self.belongs(r):
                if known:
                    del self.records[r.id]
                    self._rows.pop(r.id, None)
                    self._texts.pop(r.id, None)
                    if not regroup:
                        self.table.remove_row(r.id)
                continue
            self.records[r.id] = r
            newest, self._newest = self._newest, max(self._newest, r.updatedAt)
            if not known:
                added.append(r.id)
            if regroup:
                continue
            if self.filter and not self._matches(r):
                self.table.remove_row(r.id)
            elif self.grouped or (not known and r.updatedAt <= newest):
                # A record no newer than the top one: it joined for a fact of its own (its
                # cited code changed, its expiry passed) or ties in time, and a render places
                # it as a load's order would, whenever it lands (the pictures stay the same).
                regroup = True
            else:
                self.table.upsert(self._row(r), 0 if not known else None)
        if regroup:
            self.render_rows()
        return added

    def set_filter(self, text: str) -> None:
        new = RecordFilter.parse(text, self.clock())
        problems = self.query_one(".filter-problems", Static)
        shown = "; ".join(new.problems)
        if str(problems.content) != shown:
            problems.update(shown)
            problems.set_class(not shown, "hidden")
        if new != self.filter:
            self.filter = new
            self.render_rows()

    def hidden_by_filter(self, record_id: str) -> bool:
        """True if the record belongs on this tab but the filter keeps it out of the table."""
        record = self.records.get(record_id)
        return record is not None and bool(self.filter) and not self._matches(record)

    def mark_all(self) -> None:
        """Mark every row the table shows (the filter's matches; no session group rows)."""
        self.table.mark(k for k in self.table.row_keys() if not k.startswith(GROUP_PREFIX))

    def record_keys(self) -> list[str]:
        """The record ids the actions apply to: the marked rows, else the cursor row."""
        marked = [k for k in self.table.marked_in_order() if not k.startswith(GROUP_PREFIX)]
        if marked:
            return marked
        key = self.table.cursor_key
        return [key] if key and not key.startswith(GROUP_PREFIX) else []
