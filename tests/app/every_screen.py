"""Every screen and dialog of the app, each opened as a reviewer opens it, on one store that has
what each needs (long titles that wrap, a conflict group, near-duplicates, a shared proposal, a
citation whose code changed, servings in the audit log, a moved project's line). The store is
the same on every run (a fixed clock, ids and rootId), so a screen's snapshot is too.

``SCREENS`` names each (name -> the keys and waits that open it, and the screen class it
shows); ``tests/app/test_every_screen_at_80x24.py`` holds each at 80x24, and
``test_every_modal_screen_is_listed`` fails for a dialog added without its entry here.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, TextArea

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.agent import AgentScreen
from dsh_memory_tui.app.screens.audit import AuditScreen
from dsh_memory_tui.app.screens.bundles import ExportDialog, ImportDialog
from dsh_memory_tui.app.screens.conflict import ConflictScreen
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog, CopyDialog, HelpScreen, ReasonDialog
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.app.screens.main import MainScreen
from dsh_memory_tui.app.screens.merge import MergeForm, NearDuplicateScreen
from dsh_memory_tui.app.screens.modal import Palette
from dsh_memory_tui.app.screens.source_diff import CitationLinesDialog, SourceDiffScreen
from dsh_memory_tui.app.widgets.record_table import RecordTable
from dsh_memory_tui.audit import AuditLog, export_entry, served_entry
from dsh_memory_tui.bundle import export_bundle
from dsh_memory_tui.model import SourceRef
from dsh_memory_tui.paths import StorePaths
from dsh_memory_tui.store import MemoryStore

from .helpers import goto, wait_for

NOW = 1_764_000_000_000  # 2025-11-24 16:00 UTC: every write and every "ago" is from here
ROOT = "root:" + hashlib.sha256(b"/home/dev/projects/acme-api").hexdigest()
OTHER_ROOT = "root:" + hashlib.sha256(b"/home/dev/old/acme-api").hexdigest()
USER = "carol"
LONG = "a title long enough to wrap in a dialog at eighty columns, " * 2
REFS = [SourceRef(kind="session", id="s1")]
NET_PY = "".join(f"line {n}: retry with backoff\n" for n in range(1, 21))


@dataclass(frozen=True)
class Ids:
    """The records the openers go to."""

    long: str  # a proposal with a long title
    conflict: str  # one version of an open conflict group
    near: str  # a proposal with a near-duplicate
    shared: str  # a shared-project proposal
    cited: str  # a verified record whose cited code changed
    verified: str  # a verified project record


def fixed_ids() -> Callable[[], uuid.UUID]:
    counter = itertools.count(1)
    return lambda: uuid.UUID(int=next(counter), version=4)


def build(root: Path) -> tuple[Path, Path, Ids]:
    """The store every screen is opened on: ``(home, workspace, ids)``."""
    home, ws = root / "home", root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "net.py").write_text(NET_PY)
    store = open_store(home, ws)
    with mock.patch("uuid.uuid4", fixed_ids()):

        def propose(title: str, content: str, scope: str = "project") -> str:
            return store.propose(
                scope, "fact", title, content, source_refs=REFS, confirm_shared=True
            ).id

        long = [propose(f"{i:02d} {LONG}", f"Content {i}.") for i in range(12)]
        conflict = [
            propose("Lint with ruff", content)
            for content in ("CI runs ruff check.", "CI runs ruff format too.")
        ]
        near = propose("Run ruff before every commit", "Run ruff check before each commit.")
        propose("run RUFF before committing!", "Always run ruff before committing.")
        shared = propose("Shared rule", "For everyone on the project.", "shared-project")
        cited = store.create(
            "project",
            "fact",
            "Retries back off",
            "fetch() retries 3 times with exponential backoff.",
            citations=["src/net.py:3-8"],
        ).id
        verified = store.create(
            "project", "decision", "Use PostgreSQL 16", "SQLite only in tests."
        ).id
        store.apply_many("verify", [cited, verified])
        pinned = store.create("user", "preference", "Prefer pathlib", "Over os.path.").id
        store.apply("verify", pinned)
        store.apply("pin", pinned)
    (ws / "src" / "net.py").write_text(NET_PY.replace("line 5: retry", "line 5: give up"))
    log = AuditLog(home)
    for n, (client, session) in enumerate(
        [(("claude-code", "2.1"), "s1"), (("codex", "0.9"), "s2")]
    ):
        log.append(
            served_entry(
                client=client,
                session=session,
                asked={"tool": "workspace_memory_search", "query": "ruff"},
                records=[store.get(verified), store.get(pinned)],
                cut=0,
                size=1234,
                workspace="/home/dev/projects/acme-api",
                at=NOW - (n + 1) * 3_600_000,
            )
        )
    log.append(
        export_entry(
            path="/home/dev/team.json",
            fmt="json",
            records=[store.get(verified)],
            size=980,
            workspace="/home/dev/projects/acme-api",
            at=NOW - 86_400_000,
        )
    )
    moved_project_line(store)
    return home, ws, Ids(long[0], conflict[0], near, shared, cited, verified)


def moved_project_line(store: MemoryStore) -> None:
    """A line of the project file written under the workspace's earlier path (M adopts it)."""
    data = store.file_for("project").path
    last = json.loads(data.read_bytes().splitlines()[0])
    last.update(id="memory:00000000-0000-4000-8000-0000000000ff", scopeKey=OTHER_ROOT)
    last["title"] = "Written before the project moved"
    with open(data, "ab") as f:
        f.write(json.dumps(last, separators=(",", ":")).encode() + b"\n")


def open_store(home: Path, ws: Path) -> MemoryStore:
    return MemoryStore(StorePaths(home, ws, USER, root_id=ROOT), clock=lambda: NOW)


def make(home: Path, ws: Path) -> MemoryApp:
    return MemoryApp(open_store(home, ws), watch=False)


# ------------------------------------------------------------------ what is drawn


def scrolled_into(widget: Widget) -> Region | None:
    """Where the nearest ancestor that scrolls shows its content (a button inside it may be
    scrolled out of view: scrolling brings it back), or None."""
    for node in widget.ancestors:
        if not isinstance(node, Widget):
            continue
        if node.allow_vertical_scroll or node.allow_horizontal_scroll:
            return node.scrollable_content_region
    return None


def covered_cell_by_cell(app: MemoryApp, button: Button) -> list[str]:
    """Each cell of ``button`` that is off the screen or where something else is drawn (a
    cell its scrolling container does not show counts only for the focused button)."""
    region, screen = button.region, app.screen.region
    shown = None if button.has_focus else scrolled_into(button)
    wrong = []
    for y in range(region.y, region.bottom):
        for x in range(region.x, region.right):
            if shown is not None and not shown.contains(x, y):
                continue
            if not screen.contains(x, y):
                wrong.append(f"({x},{y}) off the screen")
                continue
            top: Widget = app.screen.get_widget_at(x, y)[0]
            if top is not button and button not in top.ancestors:
                wrong.append(f"({x},{y}) is {top!r}")
    return wrong


# ------------------------------------------------------------------ opening each screen

Opener = Callable[[Pilot, MemoryApp, Ids], Awaitable[None]]


async def loaded(pilot: Pilot, app: MemoryApp) -> None:
    # The 12 long ones, the two versions, the near-duplicate pair, the shared proposal, and
    # the verified record whose cited code changed (once the citation check has run).
    await wait_for(pilot, lambda: review_rows(app) == 18, what="the store")


def review_rows(app: MemoryApp) -> int | None:
    """The Review tab's rows, None before the main screen has composed it."""
    tables = app.pane("review").query(RecordTable)
    return tables.first().row_count if tables else None


async def on(pilot: Pilot, app: MemoryApp, tab: str, record_id: str) -> None:
    await goto(pilot, app, tab)
    table = app.pane(tab).table
    await wait_for(pilot, lambda: table.move_cursor_to_key(record_id), what=record_id)
    await wait_for(pilot, lambda: app.current_record().id == record_id, what="the cursor")


async def shows(pilot: Pilot, app: MemoryApp, kind: type[Screen], *keys: str) -> None:
    await pilot.press(*keys)
    await wait_for(pilot, lambda: isinstance(app.screen, kind), what=f"{kind.__name__}")
    await pilot.pause()


async def mark_all(pilot: Pilot, app: MemoryApp) -> None:
    table = app.active_pane.table
    await pilot.press("asterisk")
    await wait_for(pilot, lambda: len(table.marked_keys) == table.row_count > 1, what="marks")


def still_cursor(app: MemoryApp) -> None:
    """No blinking cursor: the picture is the same whichever phase it is taken in."""
    for box in app.screen.query(Input):
        box.cursor_blink = False
    for area in app.screen.query(TextArea):
        area.cursor_blink = False


async def help_screen(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await shows(pilot, app, HelpScreen, "question_mark")


async def new_form(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await shows(pilot, app, RecordForm, "n")


async def edit_form(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "project", ids.long)
    await shows(pilot, app, RecordForm, "e")


async def edit_form_unsaved(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await edit_form(pilot, app, ids)
    await pilot.press(*" (edited)", "escape")
    await wait_for(pilot, lambda: "Discard" in str(app.screen.query_one("#cancel").label))


async def edit_form_conflict(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await edit_form(pilot, app, ids)
    other = open_store(app.store.paths.home, app.store.paths.workspace)
    other.edit(ids.long, 1, title="Retitled by a teammate", content="Changed by them.")
    await pilot.press(*" (mine)", "ctrl+s")
    await wait_for(pilot, lambda: app.screen.query(".merge-row"), what="the merge rows")
    await pilot.pause()


async def forget_question(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "review", ids.long)
    await shows(pilot, app, ConfirmDialog, "f")


async def compact_question(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await goto(pilot, app, "project")
    await shows(pilot, app, ConfirmDialog, "C")


async def adopt_question(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await goto(pilot, app, "project")
    await shows(pilot, app, ConfirmDialog, "M")


async def shared_reason(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "review", ids.shared)
    await shows(pilot, app, ReasonDialog, "v")


async def batch_question(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await goto(pilot, app, "project")
    await mark_all(pilot, app)
    await shows(pilot, app, ConfirmDialog, "a")


async def batch_reason(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await mark_all(pilot, app)
    await shows(pilot, app, ReasonDialog, "v")


async def copy_dialog(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "review", ids.long)
    await shows(pilot, app, CopyDialog, "c")


async def export_dialog(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await shows(pilot, app, ExportDialog, "E")
    app.screen.query_one("#path", Input).value = "~/memory.json"  # its default names the time


async def import_plan(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    """A bundle of the project's records, at ``~/bundle.json`` (HOME is the test's root)."""
    bundle = app.store.paths.home.parent / "bundle.json"
    export_bundle(open_store(app.store.paths.home, app.store.paths.workspace), bundle)
    await shows(pilot, app, ImportDialog, "I")
    dialog = app.screen
    assert isinstance(dialog, ImportDialog)
    dialog.query_one("#path", Input).value = "~/bundle.json"
    await pilot.click("#preview")
    await wait_for(pilot, lambda: dialog.plan is not None, what="the plan")
    await pilot.pause()


async def conflict_view(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "project", ids.conflict)
    await shows(pilot, app, ConflictScreen, "K")


async def near_duplicates(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "review", ids.near)
    await wait_for(pilot, lambda: app.evidence.generation > 0, what="the near-duplicates")
    await shows(pilot, app, NearDuplicateScreen, "K")


async def merge_form(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await near_duplicates(pilot, app, ids)
    await shows(pilot, app, MergeForm, "M")


async def agent_view(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await shows(pilot, app, AgentScreen, "W")


async def audit_view(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await shows(pilot, app, AuditScreen, "L")


async def diff_view(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "project", ids.cited)
    states = app.source_review.states
    await wait_for(pilot, lambda: ids.cited in states.rereview, what="the citation check")
    await shows(pilot, app, SourceDiffScreen, "d")


async def citation_lines(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    """R in the diff view when the cited text is nowhere in its file any more."""
    await diff_view(pilot, app, ids)
    (app.store.paths.workspace / "src" / "net.py").write_text("rewritten\n" * 5)
    await shows(pilot, app, CitationLinesDialog, "R")


async def palette(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await shows(pilot, app, Palette, "ctrl+p")


async def review_tab(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "review", ids.near)


async def one_line_reason(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "project", ids.near)
    await pilot.press("x")
    await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "reason")


async def project_tab(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await on(pilot, app, "project", ids.cited)


async def user_tab(pilot: Pilot, app: MemoryApp, ids: Ids) -> None:
    await goto(pilot, app, "user")


@dataclass(frozen=True)
class Entry:
    open: Opener
    shows: type[Screen]


SCREENS: dict[str, Entry] = {
    "review tab": Entry(review_tab, MainScreen),
    "project tab": Entry(project_tab, MainScreen),
    "user tab": Entry(user_tab, MainScreen),
    "one-line reason": Entry(one_line_reason, MainScreen),
    "help": Entry(help_screen, HelpScreen),
    "new record form": Entry(new_form, RecordForm),
    "edit form": Entry(edit_form, RecordForm),
    "edit form, unsaved changes": Entry(edit_form_unsaved, RecordForm),
    "edit form, a conflict": Entry(edit_form_conflict, RecordForm),
    "forget question": Entry(forget_question, ConfirmDialog),
    "compact question": Entry(compact_question, ConfirmDialog),
    "adopt question": Entry(adopt_question, ConfirmDialog),
    "shared-project reason": Entry(shared_reason, ReasonDialog),
    "batch question": Entry(batch_question, ConfirmDialog),
    "batch reason": Entry(batch_reason, ReasonDialog),
    "copy": Entry(copy_dialog, CopyDialog),
    "export": Entry(export_dialog, ExportDialog),
    "import plan": Entry(import_plan, ImportDialog),
    "conflict view": Entry(conflict_view, ConflictScreen),
    "near-duplicates": Entry(near_duplicates, NearDuplicateScreen),
    "merge form": Entry(merge_form, MergeForm),
    "agent view": Entry(agent_view, AgentScreen),
    "audit view": Entry(audit_view, AuditScreen),
    "diff view": Entry(diff_view, SourceDiffScreen),
    "where is the cited text now": Entry(citation_lines, CitationLinesDialog),
    "command palette": Entry(palette, Palette),
}
