"""The app's actions and whether one may run here: Textual-free.

``ACTIONS`` is the one table the bindings, the key bar, the command palette and the help screen
read. ``refusal`` answers "may this action run on these records now?" from plain facts (the
records, the clock, the read-only files, the conflict groups, the load), with the words of the
governance and store rules, so it is tested without a pilot (tests/app/test_action_rules.py)
and the app only gathers the facts (``MainScreen.unavailable``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import ErrorCode, StoreError
from ..governance import Action, forgotten_error, is_erased, keep_refusal, refused
from ..model import Record, Scope, Status, Verification
from ..present import MARKER_HELP


class Key(NamedTuple):
    """One app action: its key, the footer/palette label, and the help screen's line."""

    key: str
    action: str
    label: str
    help: str
    footer: bool = True
    # Run as the key arrives, before the keys queued behind it are routed (see action_filter).
    priority: bool = False

    @property
    def shown(self) -> str:
        """The key as a person types it."""
        return (
            self.key.replace("slash", "/")
            .replace("question_mark", "?")
            .replace("asterisk", "*")
            .replace("minus", "-")
        )


ACTIONS: list[Key] = [
    Key("v", "verify", "Verify", "verify the selected (or marked) records; an optional reason"),
    Key("x", "reject", "Reject", "reject, with an optional reason"),
    Key("n", "new", "New", "new record (project, shared-project or user)"),
    Key("e", "edit", "Edit", "edit: keeps the id; a verified record becomes stale"),
    Key("a", "archive", "Archive", "archive"),
    Key("u", "restore", "Restore", "restore an archived record"),
    Key("f", "forget", "Forget", "forget: erase title and content for good (asks first)"),
    Key("c", "copy", "Copy to scope", "copy to another scope (says who will see it)"),
    # After the keys the footer showed before them: at 80 columns it shows what fits.
    Key(
        "R",
        "reverify",
        "Reverify",
        "re-verify a stale record, or one whose cited code changed (its citations re-anchored)",
    ),
    Key("p", "pin", "Pin/unpin", "pin a verified record (the agent sees it first), or unpin"),
    Key(
        "K",
        "keep",
        "Keep version",
        "versions or near-duplicates side by side: keep one, or M merges",
    ),
    Key(
        "d",
        "source_diff",
        "Diff since cited",
        "the diff since each citation; there R re-verifies, e a f as here",
        footer=False,
    ),
    Key(
        "slash",
        "filter",
        "Filter",
        "filter: words, pinned, stale, expired, conflict:, type: ...",
        priority=True,
    ),
    Key(
        "s",
        "sort",
        "Sort",
        "sort this tab: newest first, title, type, status (Review: scope)",
        footer=False,
    ),
    Key(
        "asterisk",
        "mark_all",
        "Mark all shown",
        "mark every row shown (what the filter matches); - unmarks every row",
        footer=False,
    ),
    Key("minus", "clear_marks", "Clear marks", "unmarks every row", footer=False),
    Key("E", "export", "Export", "export a bundle (to your home directory unless told)"),
    Key("I", "import", "Import", "import a bundle (shows the plan before writing)"),
    Key("A", "toggle_inactive", "Show archived/forgotten", "show archived and forgotten records"),
    Key(
        "D",
        "toggle_derived",
        "Review: show derived",
        "review queue: also show auto-derived session digests",
        footer=False,
    ),
    Key(
        "C",
        "compact",
        "Compact",
        "compact this tab's file (the only way to shrink one over 8 MiB)",
        footer=False,
    ),
    Key(
        "M",
        "adopt",
        "Adopt moved records",
        "a moved project: adopt its records under this workspace",
        footer=False,
    ),
    Key(
        "W",
        "agent_view",
        "What the agent sees",
        "what an agent is served, per scope, with sizes",
        footer=False,
    ),
    Key(
        "L",
        "audit",
        "Served and exported",
        "the audit log: what was served to agents and exported, to whom",
        footer=False,
    ),
    Key(
        "o",
        "open_proposal",
        "Open new proposal",
        "open the newest proposal (the one the last notification names)",
        footer=False,
    ),
    Key(
        "y",
        "copy_id",
        "Copy id",
        "copy the selected record's id to the clipboard (OSC 52)",
        footer=False,
    ),
    Key(
        "ctrl+r",
        "reload",
        "Reload",
        "reload every tab from its file (after a REVISION_CONFLICT)",
        footer=False,
    ),
    Key("question_mark", "help", "Help", "this help"),
    Key("q", "quit", "Quit", "quit"),
]

# Keys that are not app actions (the table's, the tabs', Textual's), for the help screen.
OTHER_KEYS = [
    ("space", "mark or unmark a row and move down; v x R p a then act on all marked"),
    ("tab / escape", "into the detail pane to scroll a long record / back to the table"),
    ("1-5", "Review, Session, Project, Shared, User"),
    ("ctrl+p", "command palette: every action"),
    ("markers", MARKER_HELP),
]
ACTION_OF_KEY = {k.key: k.action for k in ACTIONS}
ACTION_NAMES = frozenset(k.action for k in ACTIONS)
# What needs the store loaded; the rest runs on the first frame of a big store.
NEED_STORE = ACTION_NAMES - {"filter", "sort", "help", "quit", "copy_id"}
WRITE_ACTIONS = frozenset(
    {
        "verify",
        "reject",
        "reverify",
        "pin",
        "archive",
        "restore",
        "forget",
        "edit",
        "copy",
        "keep",
        "adopt",
    }
)
WRITE_ACTIONS_IN_ORDER = tuple(sorted(WRITE_ACTIONS))
# The app's actions that are one of the host's transitions, on the marked rows or the cursor's.
GOVERNED = {
    "verify": Action.VERIFY,
    "reject": Action.REJECT,
    "reverify": Action.REVERIFY,
    "archive": Action.ARCHIVE,
    "restore": Action.RESTORE,
}
# A record's receipt: what was done to it.
DONE = {
    Action.VERIFY: "verified",
    Action.REJECT: "rejected",
    Action.REVERIFY: "re-verified",
    Action.PIN: "pinned",
    Action.UNPIN: "unpinned",
    Action.ARCHIVE: "archived",
    Action.RESTORE: "restored",
}
# Actions on the cursor's record only (the others act on the marked rows, else the cursor's).
ON_CURSOR = frozenset({"forget", "keep", "source_diff"})
# The scopes the app writes records into (new, edit, copy, import).
EDITABLE_SCOPES = [Scope.PROJECT, Scope.SHARED, Scope.USER]
# What a session group's header lists as allowed or not (the rest needs another scope's tab).
SESSION_REVIEW_ACTIONS = ("verify", "reject", "pin", "archive", "restore", "forget", "copy")

# (code, one line): a StoreError's code, or UNAVAILABLE for the app's own reasons.
Refusal = tuple[str, str]
NO_ADOPT = (
    "this tab's file has no lines of another workspace to adopt (the Project tab says when it "
    "does; in the shared file other rootIds are teammates' clones: dsh-memory adopt --scope "
    "shared-project takes a moved project's)"
)


def _no_group(_record: Record) -> list[Record]:
    return []


def _writable(_record_id: str) -> str | None:
    return None


@dataclass(frozen=True)
class Here:
    """The facts an action's availability depends on, gathered by the app."""

    now: int
    loading: bool = False  # the store is still loading (a big store's first frame)
    # The name of the record's file when that file is read-only (over 8 MiB), else None.
    read_only: Callable[[str], str | None] = _writable
    # The versions of the record's open conflict group (itself included), or [].
    group: Callable[[Record], list[Record]] = _no_group
    # The record's near-duplicates it can be merged with (K compares them), or [].
    near: Callable[[Record], list[Record]] = _no_group
    adoptable: bool = False  # the tab's file holds lines of another workspace
    # Ids of the records whose cited code changed or is gone (as last checked).
    rereview: Collection[str] = ()


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


def _forgotten(record: Record, now: int) -> Refusal | None:
    """Every action on a forgotten record is refused, with the governance's FORGOTTEN error."""
    if record.status is not Status.FORGOTTEN:
        return None
    error = refused(record, Action.ARCHIVE, now)  # the rule is the record's, not the action's
    assert error is not None
    return (error.code, error.message)


def refusal(action: str, records: Sequence[Record], here: Here) -> Refusal | None:
    """Why ``action`` cannot run on ``records`` (the marked rows, else the cursor's; for an
    action ``ON_CURSOR`` the first is the one) now, as (code, one line), or None when it can:
    the load, the host's rules for each governance action (a batch runs when at least one of
    its records allows it), read-only files and scopes. A write of the record still running
    is no reason: the app queues this one behind it (``StoreWorkers.run_write``).
    """
    if here.loading and action in NEED_STORE:
        return ("UNAVAILABLE", "the store is still loading")
    if action == "adopt":
        return None if here.adoptable else ("UNAVAILABLE", NO_ADOPT)
    if action == "source_diff":
        if not records:
            return ("UNAVAILABLE", "no record selected")
        if any(r.kind == "file" for r in records[0].governance.sourceRefs):
            return None
        return ("UNAVAILABLE", "this record cites no file (e edits its citations)")
    if action not in WRITE_ACTIONS:
        return None
    if action in ON_CURSOR:
        records = records[:1]
    if not records:
        return ("UNAVAILABLE", "no record selected")
    for r in records:
        name = here.read_only(r.id)
        if name is not None:
            return (
                ErrorCode.STORE_TOO_LARGE,
                f"{name} is over 8 MiB and read-only; compact it (C) to write again",
            )
    one = records[0]
    if action in ("edit", "copy"):
        if len(records) != 1:
            return ("UNAVAILABLE", f"{action} works on one record; unmark the others")
        if action == "edit" and one.scope is Scope.SESSION:
            return (
                ErrorCode.READ_ONLY_SCOPE,
                "session records are review material; copy one (c) to keep and edit it",
            )
        return _forgotten(one, here.now)
    if action == "forget":
        if is_erased(one):  # the host's forget keeps the text: ours erases it then
            error = forgotten_error(one)
            return (error.code, error.message)
        return None
    if action == "keep":
        why = keep_refusal(one, here.group(one), here.now)
        if why is None or (not here.group(one) and here.near(one)):
            return None  # a conflict group to resolve, or near-duplicates to compare
        code = (
            ErrorCode.FORGOTTEN if one.status is Status.FORGOTTEN else ErrorCode.INVALID_TRANSITION
        )
        return (code, f"cannot keep {one.id}: {why}")
    if action == "pin":
        governed, records = pin_action(records)
        if governed is Action.PIN and all(r.id in here.rereview for r in records):
            return (
                ErrorCode.INVALID_TRANSITION,
                f"cannot pin {records[0].id}: its cited code changed or is gone; d shows the "
                "diff, R there re-verifies",
            )
    else:
        governed = GOVERNED[action]
    first: StoreError | None = None
    for r in records:
        if governed is Action.REVERIFY and r.id in here.rereview:
            return None  # verified, its cited code changed: re-verify re-anchors it
        refusal = refused(r, governed, here.now)
        if refusal is None:
            return None
        if first is None:
            first = with_hint(refusal, governed, r)
    assert first is not None
    if len(records) > 1:
        return (first.code, f"none of the {len(records)} marked records: {first.message}")
    return (first.code, first.message)
