"""What helps the reviewer decide before acting: each proposal's scope (a shared-project one is
the whole team's), marking every shown row and seeing the list a batch will touch, filters that
say what they could not use, and a demo that says where it lives."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.panes import GROUP_PREFIX
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog, HelpScreen, ReasonDialog
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.demo import build_demo
from dsh_memory_tui.model import SourceRef, Status, Verification
from dsh_memory_tui.paths import StorePaths
from dsh_memory_tui.store import MemoryStore

from .helpers import (
    DECISION,
    SIZE,
    current,
    goto,
    make_app,
    reason_asked,
    select,
    table_keys,
    wait_for,
)

REFS = [SourceRef(kind="session", id="s1")]


def review_store(root: Path) -> tuple[Path, Path, MemoryStore]:
    home, ws = root / "home", root / "ws"
    store = MemoryStore.open(home, ws, "carol")
    for i in range(3):
        store.propose("project", "fact", f"Fact {i}", f"Fact content {i}.", source_refs=REFS)
    store.propose("project", "decision", "A decision", "Decided.", source_refs=REFS)
    store.propose(
        "shared-project",
        "convention",
        "Team rule",
        "Everyone does this.",
        source_refs=REFS,
        confirm_shared=True,
    )
    return home, ws, store


def message_of(screen: object) -> str:
    return "\n".join(str(s.content) for s in screen.query(".dialog-message").results(Static))  # type: ignore[attr-defined]


async def loaded(pilot, app: MemoryApp, tab: str = "review", rows: int = 5) -> None:
    await wait_for(pilot, lambda: app.pane(tab).table.row_count == rows, what=f"{rows} rows")


def rid_of(app: MemoryApp, title: str) -> str:
    return next(r.id for r in app.pane("review").records.values() if r.title == title)


# ---------------------------------------------------------------- scope


async def test_the_review_queue_names_each_proposals_scope(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        table = app.pane("review").table
        assert [c.label for c in table.columns][3:5] == ["Why", "Scope"]
        scopes = {
            table.get_row(k).cells[1]: table.get_row(k).cells[4] for k in table_keys(app, "review")
        }
        assert scopes == {
            "Fact 0": "project",
            "Fact 1": "project",
            "Fact 2": "project",
            "A decision": "project",
            "Team rule": "SHARED",
        }


async def test_a_shared_proposal_warns_in_its_detail_and_before_verifying(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        assert app.pane("review").table.move_cursor_to_key(rid_of(app, "Team rule"))
        detail = app.pane("review").detail
        await wait_for(pilot, lambda: "seen by the whole team" in detail.text, what="warning")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ReasonDialog))
        assert "shared-project: ⚠ seen by the whole team" in message_of(app.screen)


# ---------------------------------------------------------------- bulk


async def test_mark_all_marks_the_rows_shown_and_minus_clears_them(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        pane = app.pane("review")
        pane.set_filter("type:fact")
        await pilot.pause()
        await pilot.press("asterisk")
        await wait_for(pilot, lambda: len(pane.table.marked_keys) == 3, what="three marks")
        assert {pane.records[k].title for k in pane.table.marked_keys} == {
            "Fact 0",
            "Fact 1",
            "Fact 2",
        }
        status = app.query_one("#status-line", Static)
        await wait_for(pilot, lambda: "3 marked" in str(status.content), what="the count")
        await pilot.press("minus")
        await wait_for(pilot, lambda: not pane.table.marked_keys, what="no marks")


async def test_a_batch_lists_what_it_will_touch_before_it_writes(tmp_path: Path) -> None:
    home, ws, store = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        await pilot.press("asterisk")
        await wait_for(pilot, lambda: len(app.pane("review").table.marked_keys) == 5)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the list")
        text = message_of(app.screen)
        for title in ("Fact 0", "Fact 1", "Fact 2", "A decision"):
            assert f"• “{title}” · project" in text
        assert "• “Team rule” · SHARED" in text
        assert "1 of them shared-project: ⚠ seen by the whole team" in text
        assert all(r.status is Status.ACTIVE for r in store.records("project"))  # nothing yet
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmDialog))
    assert all(r.status is Status.ACTIVE for r in MemoryStore.open(home, ws, "carol").records())


async def test_a_batch_verify_lists_the_records_and_what_it_skips(tmp_path: Path) -> None:
    home, ws, store = review_store(tmp_path)
    rejected = store.propose("project", "fact", "Refused", "No.", source_refs=REFS).id
    store.reject(rejected)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await loaded(pilot, app, "project", 5)
        await pilot.press("asterisk")
        await wait_for(pilot, lambda: len(app.pane("project").table.marked_keys) == 5)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ReasonDialog), what="the list")
        text = message_of(app.screen)
        assert "• “Fact 0” · project" in text
        assert "• “Refused” · project · skipped: " in text


async def test_help_says_space_marks_and_moves_down(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        keys = app.screen.text("keys")
        assert "mark or unmark a row and move down" in keys
        assert "mark every row shown" in keys and "- unmarks every row" in keys
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert "mark or unmark the row and move down" in readme


# ---------------------------------------------------------------- filter


def problems(app: MemoryApp, tab: str = "review") -> Static:
    return app.pane(tab).query_one(".filter-problems", Static)


async def test_an_unknown_filter_prefix_says_so(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        app.pane("review").set_filter("typ:fact")
        await pilot.pause()
        line = problems(app)
        assert line.display
        assert "unknown filter prefix typ:" in str(line.content)
        assert "did you mean type:?" in str(line.content)
        app.pane("review").set_filter("type:fact")
        await pilot.pause()
        assert not line.display


async def test_a_filter_value_no_record_can_have_says_so(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        app.pane("review").set_filter("type:bogus")
        await pilot.pause()
        assert "no such type 'bogus'" in str(problems(app).content)
        assert app.pane("review").table.row_count == 0


async def test_a_repeated_filter_field_matches_either_value(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        app.pane("review").set_filter("type:fact type:decision")
        await pilot.pause()
        titles = {app.pane("review").records[k].title for k in table_keys(app, "review")}
        assert titles == {"Fact 0", "Fact 1", "Fact 2", "A decision"}
        assert not problems(app).display


async def test_a_record_saved_while_the_filter_hides_it_says_so(tmp_path: Path) -> None:
    home, ws, _ = review_store(tmp_path)
    app = make_app(home, ws, user="carol")
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        await loaded(pilot, app)
        await goto(pilot, app, "project")
        app.pane("project").set_filter("type:decision")
        await pilot.pause()
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        form = app.screen
        form.query_one("#title").value = "A new fact"  # type: ignore[attr-defined]
        form.query_one("#content").text = "Written while only decisions are shown."  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("filter hides it" in n for n in notes), what="notice")


# ---------------------------------------------------------------- demo


async def test_the_demo_names_its_directory_in_the_status_line_and_help(tmp_path: Path) -> None:
    demo = build_demo(tmp_path / "demo")
    app = MemoryApp(
        MemoryStore(StorePaths.resolve(demo.home, demo.workspace, demo.user)),
        watch=False,
        demo=True,
    )
    root = tmp_path / "demo"
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.query_one("#status-line", Static)
        await wait_for(pilot, lambda: f"DEMO in {root}" in str(status.content), what="status")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        notes = app.screen.text("notes")
        assert f"dsh-memory demo {root} --live" in notes
        assert f"dsh-memory-tui --home {demo.home} --workspace {demo.workspace}" in notes


# -------------------------------------- before acting: forget asks, a session says what may be done


async def test_forget_asks_with_cancel_focused_so_enter_erases_nothing(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "no")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0], what="dismissed")
        await app.workers.wait_for_complete()
    assert current(home, ws, DECISION).status.value == "active"


async def test_a_session_group_says_what_may_be_done_and_the_keys_agree(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "session")
        keys = table_keys(app, "session")
        [digest] = [k for k in keys if not k.startswith(GROUP_PREFIX)]
        app.pane("session").table.move_cursor_to_key(keys[0])  # the group's header row
        await pilot.pause()
        text = app.pane("session").detail.text
        assert "read-only" not in text
        assert "allowed       verify (v), reject (x), archive (a), forget (f)" in text
        assert "not allowed   edit (e)" in text
        app.pane("session").table.move_cursor_to_key(digest)
        await pilot.pause()
        await pilot.press("e")  # refused, and said so
        await wait_for(
            pilot,
            lambda: any(n.title == "error[READ_ONLY_SCOPE]" for n in app._notifications),
            what="the refusal",
        )
        assert not isinstance(app.screen, RecordForm)
        await pilot.press("v")  # allowed, as the header says
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: app.record(digest).governance.verification is Verification.VERIFIED,
            what="verified",
        )
