"""The Export and Import dialogs, driven through Textual's pilot on real files: both formats
both ways, and the import plan at 80x24 (its counts in view, its lines scrolling)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.containers import VerticalScroll
from textual.widgets import Button, Checkbox, Input, Select, Static

from dsh_memory_tui.app.screens.bundles import ExportDialog, ImportDialog
from dsh_memory_tui.bundle import export_bundle, plan_import
from dsh_memory_tui.model import Scope
from dsh_memory_tui.store import MemoryStore

from .helpers import make_app, screen_text, wait_for

SMALL = (80, 24)


def reading(app) -> bool:
    """A read of ``MemoryApp.run_read`` is running (or waiting for the store)."""
    return any(w.group == "read" and not w.is_finished for w in app.workers)


def many_records_bundle(tmp_path: Path, n: int = 40) -> Path:
    """A bundle of ``n`` records, under a long directory name (a long path to show)."""
    store = MemoryStore.open(tmp_path / "src-home", tmp_path / "src-ws", "dana")
    for i in range(n):
        store.create("project", "fact", f"Fact number {i:02d}", f"Content of fact {i}.")
    out = tmp_path / ("a-directory-with-a-rather-long-name-" * 2) / "bundle-of-many-records.json"
    out.parent.mkdir()
    export_bundle(store, out)
    return out


async def open_import(pilot, app, path: Path) -> ImportDialog:
    """``I``, and the bundle's path typed in."""
    await pilot.press("I")
    await wait_for(pilot, lambda: isinstance(app.screen, ImportDialog))
    dialog = app.screen
    assert isinstance(dialog, ImportDialog)
    dialog.query_one("#path", Input).value = str(path)
    return dialog


async def preview(pilot, app, path: Path, target: Scope = Scope.PROJECT, fmt: str = "auto"):
    dialog = await open_import(pilot, app, path)
    dialog.query_one("#target", Select).value = target
    dialog.query_one("#format", Select).value = fmt
    await pilot.pause()
    await pilot.click("#preview")
    await wait_for(pilot, lambda: dialog.plan is not None, what="the plan")
    await pilot.pause()
    return dialog


async def test_at_80x24_the_import_plan_shows_its_counts_and_scrolls(tmp_path):
    bundle = many_records_bundle(tmp_path)
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        dialog = await preview(pilot, app, bundle)
        text = screen_text(app)
        assert "40 new, 0 duplicate, 0 invalid" in text  # the counts line is on screen
        box = dialog.query_one("#import-plan", VerticalScroll)
        assert box.region.height >= 5  # a plan box, not three lines
        assert box.max_scroll_y > 0  # 40 lines do not fit: it scrolls
        assert "Fact number 39" not in text
        # The keyboard reaches the plan: focus it and page to its end.
        box.focus()
        await pilot.press("end")
        await wait_for(pilot, lambda: box.scroll_y == box.max_scroll_y, what="the plan's end")
        await pilot.pause()
        text = screen_text(app)
        assert "Fact number 39" in text
        assert "40 new, 0 duplicate, 0 invalid" in text  # still in view
        assert dialog.query_one("#ok", Button).region.height > 0  # the buttons too
        assert not dialog.query_one("#ok", Button).disabled
        await pilot.click("#ok")
        await wait_for(pilot, lambda: not isinstance(app.screen, ImportDialog))
    assert (
        len(MemoryStore.open(tmp_path / "home", tmp_path / "ws", "carol").records("project")) == 40
    )


async def test_an_error_shows_on_the_counts_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schemaVersion": 2, "records": []}')
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        dialog = await open_import(pilot, app, bad)
        await pilot.click("#preview")
        line = dialog.query_one("#plan-counts", Static)
        await wait_for(pilot, lambda: "BUNDLE_INVALID" in str(line.render()))
        assert line.has_class("error") and dialog.query_one("#ok", Button).disabled
        assert "BUNDLE_INVALID" in screen_text(app)


async def test_export_offers_markdown_and_import_reads_it(fixture_home, tmp_path):
    home, ws = fixture_home
    app = make_app(home, ws)
    out = tmp_path / "memory.json"
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        dialog = app.screen
        dialog.query_one("#path", Input).value = str(out)
        dialog.query_one("#format", Select).value = "markdown"
        await pilot.pause()
        # The path follows the format.
        assert dialog.query_one("#path", Input).value == str(tmp_path / "memory.md")
        await pilot.click("#ok")
        await wait_for(pilot, lambda: (tmp_path / "memory.md").exists())
    text = (tmp_path / "memory.md").read_text()
    assert text.startswith("# ") and "\n\n---\n\n" in text and "origin: " in text
    assert not out.exists()

    app = make_app(home, tmp_path / "other-ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        dialog = await preview(pilot, app, tmp_path / "memory.md", Scope.USER)
        assert dialog.plan is not None and dialog.plan.format == "markdown"
        counts = str(dialog.query_one("#plan-counts", Static).render())
        assert "0 invalid (Markdown," in counts
        assert "section 1" in str(dialog.query_one("#plan", Static).render())
        n = len(dialog.plan.new)
        await pilot.click("#ok")
        await wait_for(pilot, lambda: not isinstance(app.screen, ImportDialog))
    imported = MemoryStore.open(home, tmp_path / "other-ws", "carol").records(Scope.USER)
    assert len(imported) == n > 0
    assert all(r.governance.sourceRefs[0].kind == "import" for r in imported)


async def test_the_import_format_can_be_forced(tmp_path):
    # A Markdown file without the .md suffix: "by file" sees its heading; JSON says it is not.
    notes = tmp_path / "notes.txt"
    notes.write_text("# Kept\n\nA note.\n")
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        dialog = await preview(pilot, app, notes)
        assert dialog.plan is not None and dialog.plan.format == "markdown"
        dialog.query_one("#format", Select).value = "json"
        await pilot.pause()
        assert dialog.plan is None and dialog.query_one("#ok", Button).disabled
        await pilot.click("#preview")
        line = dialog.query_one("#plan-counts", Static)
        await wait_for(pilot, lambda: "not valid JSON" in str(line.render()))


async def test_export_json_lists_what_it_left_out(tmp_path):
    from dsh_memory_tui.model import SourceRef

    store = MemoryStore.open(tmp_path / "home", tmp_path / "ws", "carol")
    store.propose(
        "project",
        "fact",
        "Full",
        "Thirty-two refs.",
        source_refs=[SourceRef(kind="url", id=f"https:r{i}") for i in range(32)],
    )
    store.create("project", "fact", "Plain", "A plain record.")
    out = tmp_path / "b.json"
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    messages: list[str] = []
    async with app.run_test(size=SMALL) as pilot:
        app.notify = lambda message, **kw: messages.append(str(message))  # type: ignore
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        app.screen.query_one("#path", Input).value = str(out)
        await pilot.click("#ok")
        await wait_for(pilot, lambda: bool(messages), what="the summary")
    assert messages[0].startswith(
        f"wrote 1 record to {out}: project 1, shared-project 0, user 0, session 0; 1 left out"
    )
    assert [r["title"] for r in json.loads(out.read_bytes())["records"]] == ["Plain"]


async def test_a_preview_and_an_export_wait_for_a_running_write_and_keys_still_answer(tmp_path):
    bundle = many_records_bundle(tmp_path)
    out = tmp_path / "while-busy.json"
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        dialog = await open_import(pilot, app, bundle)
        app._store_gate.acquire()  # as a write of the app's worker holds it
        try:
            await pilot.click("#preview")
            counts = dialog.query_one("#plan-counts", Static)
            await wait_for(pilot, lambda: "Reading the bundle" in str(counts.render()))
            await wait_for(pilot, lambda: reading(app), what="the read started")
            await pilot.press("tab")  # the dialog still answers
            await pilot.pause()
            assert reading(app) and dialog.plan is None  # the read waits for the write
        finally:
            app._store_gate.release()
        await wait_for(pilot, lambda: dialog.plan is not None, what="the plan")
        assert len(dialog.plan.new) == 40
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ImportDialog))

        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        app.screen.query_one("#path", Input).value = str(out)
        app._store_gate.acquire()
        try:
            await pilot.click("#ok")
            await wait_for(pilot, lambda: reading(app), what="the export started")
            assert not out.exists() and isinstance(app.screen, ExportDialog)
        finally:
            app._store_gate.release()
        await wait_for(pilot, lambda: out.exists() and not isinstance(app.screen, ExportDialog))


async def test_a_plan_for_what_was_typed_before_is_not_shown(tmp_path):
    bundle = many_records_bundle(tmp_path)
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        dialog = await open_import(pilot, app, bundle)
        app._store_gate.acquire()
        try:
            await pilot.click("#preview")
            await wait_for(pilot, lambda: reading(app), what="the read started")
            dialog.query_one("#path", Input).value = str(bundle) + ".other"  # typed meanwhile
            await pilot.pause()
        finally:
            app._store_gate.release()
        await wait_for(pilot, lambda: not reading(app), what="the read done")
        await pilot.pause()  # its result, posted back to the event loop
        assert dialog.plan is None and dialog.query_one("#ok", Button).disabled


async def test_what_the_agent_sees_is_read_after_a_running_write(tmp_path):
    from dsh_memory_tui.app.screens.agent import AgentScreen

    store = MemoryStore.open(tmp_path / "home", tmp_path / "ws", "carol")
    rid = store.create("project", "fact", "Served", "A verified fact.").id
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        app._store_gate.acquire()  # a write of the app's worker runs
        try:
            await pilot.press("W")
            await wait_for(pilot, lambda: reading(app), what="the read started")
            await pilot.press("down")  # the tabs still answer
            await pilot.pause()
            assert not isinstance(app.screen, AgentScreen)
        finally:
            app._store_gate.release()
        await wait_for(pilot, lambda: isinstance(app.screen, AgentScreen), what="the view")
        await wait_for(  # the screen is up before its widgets are mounted
            pilot,
            lambda: any("Served" in str(s.render()) for s in app.screen.query("#agent-summary")),
            what="the view's summary",
        )
    assert store.get(rid).title == "Served"


async def test_what_arrived_while_a_read_held_the_store_is_shown_after_it(tmp_path):
    from dsh_memory_tui.model import SourceRef

    store = MemoryStore.open(tmp_path / "home", tmp_path / "ws", "carol")
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")  # no watcher
    async with app.run_test(size=SMALL) as pilot:
        app._store_gate.acquire()
        try:
            await pilot.press("W")
            await wait_for(pilot, lambda: reading(app), what="the read started")
            ref = [SourceRef(kind="session", id="agent")]
            rid = store.propose("project", "fact", "Arrived", "meanwhile", source_refs=ref).id
        finally:
            app._store_gate.release()
        await wait_for(pilot, lambda: rid in app.pane("review").records, what="the proposal")


async def test_an_export_cancelled_while_it_waits_for_a_write_writes_nothing(tmp_path):
    """Cancel pressed while the export waits for a running write: once the write is done the
    export does not run (it used to write the file anyway, with the dialog gone, saying
    nothing); the next export goes through."""
    out = tmp_path / "cancelled.json"
    app = make_app(tmp_path / "home", tmp_path / "ws", user="carol")
    async with app.run_test(size=SMALL) as pilot:
        app.store.create("project", "fact", "Exported later", "Its content.")
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        app.screen.query_one("#path", Input).value = str(out)
        app._store_gate.acquire()  # as a write of the app's worker holds it
        try:
            await pilot.click("#ok")
            await wait_for(pilot, lambda: reading(app), what="the export started")
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, ExportDialog))
        finally:
            app._store_gate.release()
        await wait_for(pilot, lambda: not reading(app), what="the export's read to end")
        await pilot.pause()
        assert not out.exists(), "a cancelled export wrote its file"
        assert not [n for n in app._notifications if "Exported" in n.message]

        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        app.screen.query_one("#path", Input).value = str(out)
        await pilot.click("#ok")
        await wait_for(pilot, lambda: out.exists() and not isinstance(app.screen, ExportDialog))
        assert json.loads(out.read_text())["records"][0]["title"] == "Exported later"


async def test_export_picks_the_format_by_the_paths_suffix_as_the_cli_does(fixture_home, tmp_path):
    home, ws = fixture_home
    app = make_app(home, ws)
    out = tmp_path / "notes.md"
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        assert app.screen.query_one("#format", Select).value == "json"
        app.screen.query_one("#path", Input).value = str(out)  # typed: the format left as is
        await pilot.click("#ok")
        await wait_for(pilot, lambda: out.exists() and not isinstance(app.screen, ExportDialog))
    assert out.read_text().startswith("# ")  # Markdown, which import reads back
    plan = plan_import(MemoryStore.open(home, tmp_path / "ws2", "carol"), out, "user")
    assert plan.format == "markdown" and plan.new


async def test_export_takes_every_scope_and_says_how_many_from_each(fixture_home, tmp_path):
    home, ws = fixture_home
    store = MemoryStore.open(home, ws, "alice")
    app = make_app(home, ws)
    out = tmp_path / "all.json"
    messages: list[str] = []
    async with app.run_test(size=SMALL) as pilot:
        app.notify = lambda message, **kw: messages.append(str(message))  # type: ignore
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        boxes = {s: app.screen.query_one(f"#x-{s.value}", Checkbox) for s in Scope}
        assert all(box.value for box in boxes.values())  # the session's records too
        app.screen.query_one("#path", Input).value = str(out)
        await pilot.click("#ok")
        await wait_for(pilot, lambda: bool(messages), what="the summary")
    counts = {
        s.value: len(
            [r for r in store.records(s, include_inactive=True) if r.status.value != "forgotten"]
        )
        for s in Scope
    }
    order = ("project", "shared-project", "user", "session")
    named = ", ".join(f"{scope} {counts[scope]}" for scope in order)
    assert counts["session"] > 0
    assert messages[0].startswith(f"wrote {sum(counts.values())} records to {out}: {named}")


async def test_each_scope_boxs_state_reads_without_colour(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        box = app.screen.query_one("#x-session", Checkbox)
        assert "X" in box.render().plain
        box.toggle()
        await wait_for(pilot, lambda: not box.value, what="unchecked")
        assert "X" not in box.render().plain
        assert "session" in box.render().plain
