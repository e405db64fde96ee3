"""The app's actions, one declaration each, and whether one may run here: Textual-free.

``ACTIONS`` holds one ``AppAction`` per action: its key, its label, its help line, where it is
shown, what it needs, whether it writes, the host's transition it records and any rule of its
own. The main screen's bindings, the key bar, the command palette, the help screen and the
refusals are all built from it, so an action is added in one place (every property is
required: one left out is a type error). ``refusal`` answers "may this action run on these
records now?" from plain facts (the records, the clock, the read-only files, the conflict
groups, the load), with the words of the governance and store rules, so it is tested without a
pilot (tests/app/test_action_rules.py) and the screen only gathers the facts
(``MainScreen.unavailable``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum

from ..errors import ErrorCode, StoreError
from ..governance import Action, forgotten_error, is_erased, keep_refusal, refused
from ..lint import FLAG_KINDS
from ..model import Origin, Record, RecordType, Scope, Status, Verification
from ..present import MARKER_HELP, SHORT_ORIGIN
from ..queue import REASONS
from .citations import REREVIEW_FLAG

# (code, one line): a StoreError's code, or UNAVAILABLE for the app's own reasons.
Refusal = tuple[str, str]


class Name(StrEnum):
    """Every app action, by the name of the screen's ``action_<name>`` that runs it."""

    VERIFY = "verify"
    REJECT = "reject"
    NEW = "new"
    EDIT = "edit"
    ARCHIVE = "archive"
    RESTORE = "restore"
    FORGET = "forget"
    COPY = "copy"
    REVERIFY = "reverify"
    PIN = "pin"
    KEEP = "keep"
    SOURCE_DIFF = "source_diff"
    FILTER = "filter"
    SORT = "sort"
    MARK_ALL = "mark_all"
    CLEAR_MARKS = "clear_marks"
    EXPORT = "export"
    IMPORT = "import"
    TOGGLE_INACTIVE = "toggle_inactive"
    TOGGLE_DERIVED = "toggle_derived"
    COMPACT = "compact"
    ADOPT = "adopt"
    AGENT_VIEW = "agent_view"
    AUDIT = "audit"
    OPEN_PROPOSAL = "open_proposal"
    COPY_ID = "copy_id"
    RELOAD = "reload"
    HELP = "help"
    QUIT = "quit"


class Needs(Enum):
    """What an action needs to run."""

    NOTHING = "nothing: it runs while a big store loads too"
    STORE = "the store loaded"
    RECORDS = "the marked records, else the cursor's (the store loaded)"
    ONE_RECORD = "one record: the marked one, else the cursor's"
    CURSOR = "the cursor's record (marks are ignored)"
    ADOPTABLE = "lines of another workspace in the tab's file"

    @property
    def records(self) -> bool:
        """It acts on records: with none selected it cannot run."""
        return self in (Needs.RECORDS, Needs.ONE_RECORD, Needs.CURSOR)


class Writes(Enum):
    """What an action writes."""

    NOTHING = "nothing in the store"
    ITS_RECORDS = "the records it acts on: refused when one is in a read-only file (8 MiB)"
    # A new record's file, an import's, a compaction's (what a read-only file needs), an
    # adoption's, the stale transition the diff view records as it opens.
    STORE_DECIDES = "a file the store checks as it writes it"


class Shown(Enum):
    """Where an action is offered besides its key."""

    KEY_BAR = "key bar"
    PALETTE = "command palette"
    HELP = "help screen"


EVERYWHERE = frozenset(Shown)
NOT_IN_KEY_BAR = frozenset({Shown.PALETTE, Shown.HELP})


@dataclass(frozen=True)
class Here:
    """The facts an action's availability depends on, gathered by the app."""

    now: int
    loading: bool = False  # the store is still loading (a big store's first frame)
    # The name of the record's file when that file is read-only (over 8 MiB), else None.
    read_only: Callable[[str], str | None] = lambda _record_id: None
    # The versions of the record's open conflict group (itself included), or [].
    group: Callable[[Record], list[Record]] = lambda _record: []
    # The record's near-duplicates it can be merged with (K compares them), or [].
    near: Callable[[Record], list[Record]] = lambda _record: []
    adoptable: bool = False  # the tab's file holds lines of another workspace
    # Ids of the records whose cited code changed or is gone (as last checked).
    rereview: Collection[str] = ()


# An action's own condition, over the records it would act on (at least one, none of them
# in a read-only file when it writes them): why it cannot run, or None.
Rule = Callable[[Sequence[Record], Here], Refusal | None]


@dataclass(frozen=True, kw_only=True)
class AppAction:
    """One app action. Every property is required."""

    action: Name
    key: str  # Textual's name of the key
    label: str  # the key bar's and the palette's
    help: str  # the help screen's line (and the palette's)
    shown_in: frozenset[Shown]
    needs: Needs
    writes: Writes
    # The host's transition it records on each record, or None (pin's depends on the records).
    governs: Action | None
    rule: Rule | None
    session_review: bool  # a session group's header says whether it is allowed there
    # Run as the key arrives, before the keys queued behind it are routed (see action_filter).
    priority: bool

    @property
    def shown(self) -> str:
        """The key as a person types it."""
        return (
            self.key.replace("slash", "/")
            .replace("question_mark", "?")
            .replace("asterisk", "*")
            .replace("minus", "-")
        )

    @property
    def footer(self) -> bool:
        """Shown in the key bar (when it fits)."""
        return Shown.KEY_BAR in self.shown_in


# ------------------------------------------------------------------ the rules of some


def pin_action(records: Sequence[Record]) -> tuple[Action, list[Record]]:
    """``p``: pin the unpinned ones; when every one is pinned, unpin them."""
    unpinned = [r for r in records if r.governance.pinnedAt is None]
    return (Action.PIN, unpinned) if unpinned else (Action.UNPIN, list(records))


def with_hint(exc: StoreError, action: Action, record: Record) -> StoreError:
    """A refused verify of a stale record says which key does it."""
    if (
        exc.code == ErrorCode.INVALID_TRANSITION
        and action is Action.VERIFY
        and record.governance.verification is Verification.STALE
    ):
        return StoreError(exc.code, f"{exc.message}; R re-verifies a stale record")
    return exc


def short_why(message: str, action: Action, record_id: str) -> str:
    """A refusal without the "cannot <action> <id>: " the list of skipped records repeats."""
    message = message.removeprefix(f"cannot {action.value} {record_id}: ")
    return message.replace(f"{record_id} was forgotten", "it was forgotten")


def _governed(action: Action, records: Sequence[Record], now: int) -> Refusal | None:
    """The host's rules for ``action``: a batch runs when one of its records allows it."""
    first: StoreError | None = None
    for r in records:
        error = refused(r, action, now)
        if error is None:
            return None
        if first is None:
            first = with_hint(error, action, r)
    assert first is not None
    if len(records) > 1:
        return (first.code, f"none of the {len(records)} marked records: {first.message}")
    return (first.code, first.message)


def _not_forgotten(records: Sequence[Record], here: Here) -> Refusal | None:
    """Every action on a forgotten record is refused, with the governance's FORGOTTEN error."""
    record = records[0]
    if record.status is not Status.FORGOTTEN:
        return None
    error = refused(record, Action.ARCHIVE, here.now)  # the rule is the record's, not the action's
    assert error is not None
    return (error.code, error.message)


def _editable(records: Sequence[Record], here: Here) -> Refusal | None:
    if records[0].scope is Scope.SESSION:
        return (
            ErrorCode.READ_ONLY_SCOPE,
            "session records are review material; copy one (c) to keep and edit it",
        )
    return _not_forgotten(records, here)


def _not_erased(records: Sequence[Record], here: Here) -> Refusal | None:
    if is_erased(records[0]):  # the host's forget keeps the text: ours erases it then
        error = forgotten_error(records[0])
        return (error.code, error.message)
    return None


def _keepable(records: Sequence[Record], here: Here) -> Refusal | None:
    one = records[0]
    why = keep_refusal(one, here.group(one), here.now)
    if why is None or (not here.group(one) and here.near(one)):
        return None  # a conflict group to resolve, or near-duplicates to compare
    code = ErrorCode.FORGOTTEN if one.status is Status.FORGOTTEN else ErrorCode.INVALID_TRANSITION
    return (code, f"cannot keep {one.id}: {why}")


def _pinnable(records: Sequence[Record], here: Here) -> Refusal | None:
    governed, chosen = pin_action(records)
    if governed is Action.PIN and all(r.id in here.rereview for r in chosen):
        return (
            ErrorCode.INVALID_TRANSITION,
            f"cannot pin {chosen[0].id}: its cited code changed or is gone; d shows the "
            "diff, R there re-verifies",
        )
    return _governed(governed, chosen, here.now)


def _reverifiable(records: Sequence[Record], here: Here) -> Refusal | None:
    """The host's reverify (a stale record), or a verified record whose cited code changed:
    re-verify re-anchors its citations (``reverify_citations``)."""
    if any(r.id in here.rereview for r in records):
        return None
    return _governed(Action.REVERIFY, records, here.now)


def _cites_a_file(records: Sequence[Record], here: Here) -> Refusal | None:
    if any(r.kind == "file" for r in records[0].governance.sourceRefs):
        return None
    return ("UNAVAILABLE", "this record cites no file (e edits its citations)")


# ------------------------------------------------------------------ the filter's words

# What the filter box (``/``) takes besides words: states, and fields by prefix with the values
# each takes (a value is a prefix of one; tag: and conflict: take any). The filter's parser
# (``panes.RecordFilter``), its placeholder and its help line are all made from these, in this
# order (the placeholder shows what fits its width).
FILTER_FLAGS = ("pinned", "stale", "expired", REREVIEW_FLAG)
FILTER_FIELDS = (
    "flag", "conflict", "type", "status", "origin", "verification", "scope", "tag", "why",
)  # fmt: skip
FIELD_VALUES: dict[str, tuple[str, ...]] = {
    "type": tuple(t.value for t in RecordType),
    "status": tuple(s.value for s in Status),
    "verification": tuple(v.value for v in Verification),
    "origin": tuple(o.value for o in Origin) + tuple(SHORT_ORIGIN.values()),
    "flag": (*FLAG_KINDS, "any"),
    "scope": tuple(s.value for s in Scope),
    "why": tuple(reason.code for reason in REASONS),  # what waits on a human, and why
}
FILTER_WORDS = ("words", *FILTER_FLAGS, *(f"{name}:" for name in FILTER_FIELDS))


def filter_hint(width: int | None = None) -> str:
    """The filter box's placeholder: every word it takes, or at ``width`` columns those that
    fit and a pointer to the help, which lists them all."""
    full = f"filter: {', '.join(FILTER_WORDS)}   (/ to focus)"
    if width is None or len(full) <= width:
        return full
    words = list(FILTER_WORDS)
    while words and len(hint := f"filter: {', '.join(words)}, … (? lists all)") > width:
        words.pop()
    return hint if words else "filter: … (? lists all)"


# ------------------------------------------------------------------ the declarations


def _view(action: Name, key: str, label: str, help: str, shown_in: frozenset[Shown]) -> AppAction:
    """An action that changes what is shown and writes nothing."""
    return AppAction(
        action=action,
        key=key,
        label=label,
        help=help,
        shown_in=shown_in,
        needs=Needs.STORE,
        writes=Writes.NOTHING,
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    )


def _transition(
    action: Name, key: str, label: str, help: str, governs: Action | None, rule: Rule | None
) -> AppAction:
    """One of the host's transitions on the marked records, else the cursor's."""
    return AppAction(
        action=action,
        key=key,
        label=label,
        help=help,
        shown_in=EVERYWHERE,
        needs=Needs.RECORDS,
        writes=Writes.ITS_RECORDS,
        governs=governs,
        rule=rule,
        session_review=action is not Name.REVERIFY,
        priority=False,
    )


ACTIONS: list[AppAction] = [
    _transition(
        Name.VERIFY,
        "v",
        "Verify",
        "verify the selected (or marked) records; an optional reason",
        Action.VERIFY,
        None,
    ),
    _transition(Name.REJECT, "x", "Reject", "reject, with an optional reason", Action.REJECT, None),
    AppAction(
        action=Name.NEW,
        key="n",
        label="New",
        help="new record (project, shared-project or user)",
        shown_in=EVERYWHERE,
        needs=Needs.STORE,
        writes=Writes.STORE_DECIDES,  # into the file the form names
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    AppAction(
        action=Name.EDIT,
        key="e",
        label="Edit",
        help="edit: keeps the id; a verified record becomes stale",
        shown_in=EVERYWHERE,
        needs=Needs.ONE_RECORD,
        writes=Writes.ITS_RECORDS,
        governs=None,
        rule=_editable,
        session_review=False,
        priority=False,
    ),
    _transition(Name.ARCHIVE, "a", "Archive", "archive", Action.ARCHIVE, None),
    _transition(Name.RESTORE, "u", "Restore", "restore an archived record", Action.RESTORE, None),
    AppAction(
        action=Name.FORGET,
        key="f",
        label="Forget",
        help="forget: erase title and content for good (asks first)",
        shown_in=EVERYWHERE,
        needs=Needs.CURSOR,
        writes=Writes.ITS_RECORDS,
        governs=None,
        rule=_not_erased,
        session_review=True,
        priority=False,
    ),
    AppAction(
        action=Name.COPY,
        key="c",
        label="Copy to scope",
        help="copy to another scope (says who will see it)",
        shown_in=EVERYWHERE,
        needs=Needs.ONE_RECORD,
        writes=Writes.ITS_RECORDS,
        governs=None,
        rule=_not_forgotten,
        session_review=True,
        priority=False,
    ),
    # After the keys the key bar showed before them: at 80 columns it shows what fits.
    _transition(
        Name.REVERIFY,
        "R",
        "Reverify",
        "re-verify a stale record, or one whose cited code changed",
        None,  # the host's reverify, or a verified record's citations (_reverifiable)
        _reverifiable,
    ),
    _transition(
        Name.PIN,
        "p",
        "Pin/unpin",
        "pin a verified record (the agent sees it first), or unpin",
        None,  # pin or unpin, as the records are (pin_action)
        _pinnable,
    ),
    AppAction(
        action=Name.KEEP,
        key="K",
        label="Keep version",
        help="versions or near-duplicates side by side: keep one, or M merges",
        shown_in=EVERYWHERE,
        needs=Needs.CURSOR,
        writes=Writes.ITS_RECORDS,
        governs=None,
        rule=_keepable,
        session_review=False,
        priority=False,
    ),
    AppAction(
        action=Name.SOURCE_DIFF,
        key="d",
        label="Diff since cited",
        help="the diff since each citation; there R re-verifies, e a f as here",
        shown_in=NOT_IN_KEY_BAR,
        needs=Needs.CURSOR,
        # Opening it may record the host's stale transition; its own keys' writes (R e a f)
        # are refused there as here.
        writes=Writes.STORE_DECIDES,
        governs=None,
        rule=_cites_a_file,
        session_review=False,
        priority=False,
    ),
    AppAction(
        action=Name.FILTER,
        key="slash",
        label="Filter",
        help=f"filter: {', '.join(FILTER_WORDS)} (a prefix given twice matches either)",
        shown_in=EVERYWHERE,
        needs=Needs.NOTHING,
        writes=Writes.NOTHING,
        governs=None,
        rule=None,
        session_review=False,
        priority=True,
    ),
    AppAction(
        action=Name.SORT,
        key="s",
        label="Sort",
        help="sort this tab: newest first, title, type, status (Review: scope)",
        shown_in=NOT_IN_KEY_BAR,
        needs=Needs.NOTHING,
        writes=Writes.NOTHING,
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    _view(
        Name.MARK_ALL,
        "asterisk",
        "Mark all shown",
        "mark every row shown (what the filter matches); - unmarks every row",
        NOT_IN_KEY_BAR,
    ),
    # Told on the line of "*": every key fits the help screen at 36 rows.
    _view(
        Name.CLEAR_MARKS, "minus", "Clear marks", "unmarks every row", frozenset({Shown.PALETTE})
    ),
    AppAction(
        action=Name.EXPORT,
        key="E",
        label="Export",
        help="export a bundle (to your home directory unless told)",
        shown_in=EVERYWHERE,
        needs=Needs.STORE,
        writes=Writes.NOTHING,  # a bundle outside the store
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    AppAction(
        action=Name.IMPORT,
        key="I",
        label="Import",
        help="import a bundle (shows the plan before writing)",
        shown_in=EVERYWHERE,
        needs=Needs.STORE,
        writes=Writes.STORE_DECIDES,  # into the scope its dialog names
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    _view(
        Name.TOGGLE_INACTIVE,
        "A",
        "Show archived/forgotten",
        "show archived and forgotten records",
        EVERYWHERE,
    ),
    _view(
        Name.TOGGLE_DERIVED,
        "D",
        "Review: show derived",
        "review queue: also show auto-derived session digests",
        NOT_IN_KEY_BAR,
    ),
    AppAction(
        action=Name.COMPACT,
        key="C",
        label="Compact",
        help="compact this tab's file (the only way to shrink one over 8 MiB)",
        shown_in=NOT_IN_KEY_BAR,
        needs=Needs.STORE,
        writes=Writes.STORE_DECIDES,  # the way to shrink a read-only file
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    AppAction(
        action=Name.ADOPT,
        key="M",
        label="Adopt moved records",
        help="a moved project: adopt its records under this workspace",
        shown_in=NOT_IN_KEY_BAR,
        needs=Needs.ADOPTABLE,
        writes=Writes.STORE_DECIDES,
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    _view(
        Name.AGENT_VIEW,
        "W",
        "What the agent sees",
        "what an agent is served, per scope, with sizes",
        NOT_IN_KEY_BAR,
    ),
    _view(
        Name.AUDIT,
        "L",
        "Served and exported",
        "the audit log: what was served to agents and exported, to whom",
        NOT_IN_KEY_BAR,
    ),
    _view(
        Name.OPEN_PROPOSAL,
        "o",
        "Open new proposal",
        "open the newest proposal (the one the last notification names)",
        NOT_IN_KEY_BAR,
    ),
    AppAction(
        action=Name.COPY_ID,
        key="y",
        label="Copy id",
        help="copy the selected record's id to the clipboard (OSC 52)",
        shown_in=NOT_IN_KEY_BAR,
        needs=Needs.NOTHING,
        writes=Writes.NOTHING,
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    _view(
        Name.RELOAD,
        "ctrl+r",
        "Reload",
        "reload every tab from its file (after a REVISION_CONFLICT)",
        NOT_IN_KEY_BAR,
    ),
    AppAction(
        action=Name.HELP,
        key="question_mark",
        label="Help",
        help="this help",
        shown_in=frozenset({Shown.KEY_BAR, Shown.HELP}),
        needs=Needs.NOTHING,
        writes=Writes.NOTHING,
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
    AppAction(
        action=Name.QUIT,
        key="q",
        label="Quit",
        help="quit",
        shown_in=frozenset({Shown.KEY_BAR, Shown.HELP}),
        needs=Needs.NOTHING,
        writes=Writes.NOTHING,
        governs=None,
        rule=None,
        session_review=False,
        priority=False,
    ),
]

# By name (a Name is the str it names, so either finds it).
ACTION: dict[str, AppAction] = {a.action: a for a in ACTIONS}
ACTION_OF_KEY = {a.key: a.action for a in ACTIONS}
ACTION_NAMES = frozenset(a.action for a in ACTIONS)
# What needs the store loaded; the rest runs on the first frame of a big store.
NEED_STORE = frozenset(a.action for a in ACTIONS if a.needs is not Needs.NOTHING)
# The writes pointed at records or at the tab's file's lines: with none, nothing to write.
WRITE_ACTIONS = frozenset(
    a.action
    for a in ACTIONS
    if a.writes is not Writes.NOTHING and (a.needs.records or a.needs is Needs.ADOPTABLE)
)


class KeyHelp(tuple[str, str]):
    """A key that is not an app action (the table's, the tabs', Textual's), for the help
    screen: a pair (how it is shown, its line), and the bound keys it tells (``keys``)."""

    keys: tuple[str, ...]

    def __new__(cls, shown: str, help: str, keys: tuple[str, ...] = ()) -> KeyHelp:
        pair = super().__new__(cls, (shown, help))
        pair.keys = keys
        return pair

    @property
    def shown(self) -> str:
        return self[0]

    @property
    def help(self) -> str:
        return self[1]


# Keys that are not app actions, in the help screen before help and quit.
OTHER_KEYS = [
    KeyHelp(
        "space",
        "mark or unmark a row and move down; v x R p a then act on all marked",
        ("space",),
    ),
    KeyHelp(
        "j k g G",
        "down / up / first / last row (the arrows, page up/down, home and end too)",
        ("j", "k", "g", "G", "down", "up", "pagedown", "pageup", "home", "end"),
    ),
    KeyHelp(
        "tab / escape",
        "into the detail pane to scroll a long record / back to the table",
        ("tab", "escape"),
    ),
    KeyHelp("enter", "into the detail pane (as tab)", ("enter",)),
    KeyHelp("m", "the content as raw text instead of Markdown (and back)", ("m",)),
    KeyHelp("1-5", "Review, Session, Project, Shared, User", ("1", "2", "3", "4", "5")),
    KeyHelp("ctrl+p", "command palette: every action", ("ctrl+p",)),
    KeyHelp("markers", MARKER_HELP),
]


def help_lines() -> list[tuple[str, str]]:
    """The help screen's keys: each action's line in the table's order, the keys that are
    not actions before help and quit."""
    own = [(a.shown, a.help) for a in ACTIONS if Shown.HELP in a.shown_in]
    at = next(i for i, a in enumerate(a for a in ACTIONS if Shown.HELP in a.shown_in)
              if a.action is Name.HELP)  # fmt: skip
    return own[:at] + [(k.shown, k.help) for k in OTHER_KEYS] + own[at:]


# The scopes the app writes records into (new, edit, copy, import).
EDITABLE_SCOPES = [Scope.PROJECT, Scope.SHARED, Scope.USER]
NO_ADOPT = (
    "this tab's file has no lines of another workspace to adopt (the Project tab says when it "
    "does; in the shared file other rootIds are teammates' clones: dsh-memory adopt --scope "
    "shared-project takes a moved project's)"
)


def refusal(action: str, records: Sequence[Record], here: Here) -> Refusal | None:
    """Why ``action`` cannot run on ``records`` (the marked rows, else the cursor's; for an
    action that needs the cursor's record the first is the one) now, as (code, one line), or
    None when it can (or when it is not an app action), from its declaration: the load, what
    it needs, a read-only file for a write, its own rule, the host's rules for its transition
    (a batch runs when at least one of its records allows it). A write of the record still
    running is no reason: the app queues this one behind it (``WriteQueue``).
    """
    spec = ACTION.get(action)
    if spec is None:
        return None  # not one of the app's actions (Textual's own: copy_text...)
    if here.loading and spec.needs is not Needs.NOTHING:
        return ("UNAVAILABLE", "the store is still loading")
    if spec.needs is Needs.ADOPTABLE:
        return None if here.adoptable else ("UNAVAILABLE", NO_ADOPT)
    if not spec.needs.records:
        return None
    if spec.needs is Needs.CURSOR:
        records = records[:1]
    if not records:
        return ("UNAVAILABLE", "no record selected")
    if spec.writes is Writes.ITS_RECORDS:
        for r in records:
            name = here.read_only(r.id)
            if name is not None:
                return (
                    ErrorCode.STORE_TOO_LARGE,
                    f"{name} is over 8 MiB and read-only; compact it (C) to write again",
                )
    if spec.needs is Needs.ONE_RECORD and len(records) != 1:
        return ("UNAVAILABLE", f"{action} works on one record; unmark the others")
    if spec.rule is not None and (why := spec.rule(records, here)) is not None:
        return why
    if spec.governs is not None:
        return _governed(spec.governs, records, here.now)
    return None
