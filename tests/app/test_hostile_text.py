"""An agent's proposal is untrusted text written for a person: the app shows every character of
it (controls, bidi and zero-width characters as visible stand-ins, with a banner), never parses
it as markup, hides nothing behind Markdown, stays responsive on a huge record, and lets the
reviewer copy what it shows. Driven through Textual's pilot on real store files."""

from __future__ import annotations

import re
import time
from pathlib import Path

from hostile_records import hostile_record, write_records
from interop.corpus import make_case_dirs
from textual.geometry import Offset
from textual.selection import Selection
from textual.widgets import Label, Static

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.agent import AgentScreen
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog, CopyDialog
from dsh_memory_tui.app.widgets.detail import GUTTER, PREVIEW_LINES, DetailPane
from dsh_memory_tui.model import Verification
from dsh_memory_tui.present import visible
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, reason_asked, screen_text, select, table_keys, wait_for

# What must never reach the terminal: C0/C1 controls (but the newlines of the screen), bidi
# and zero-width characters.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")

HOSTILE_ID = "memory:agent:convention:[/]\u202eevil"
HOSTILE_TITLE = "[@click=app.verify]Click\x9b31m me\u200b [link=https://x]y[/link] [/]"
HOSTILE_CONTENT = "first line\r\nsecond \u2066isolated\u2069 line\n\n[b]bold?[/b]"


def store_with(tmp_path: Path, *records: dict[str, object], user: str = "alice") -> MemoryStore:
    dirs = make_case_dirs(tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, user)
    write_records(store, [dict(r) for r in records])
    return store


def hostile_store(tmp_path: Path, **fields: object) -> tuple[MemoryStore, str]:
    dirs = make_case_dirs(tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    record = hostile_record(
        store,
        str(fields.pop("rid", HOSTILE_ID)),
        str(fields.pop("title", HOSTILE_TITLE)),
        str(fields.pop("content", HOSTILE_CONTENT)),
        tags=["t\u2066ag", "[/]"],
        session="s\x9b1",
    )
    write_records(store, [record])
    return store, record["id"]  # type: ignore[return-value]


def app_for(store: MemoryStore, user: str = "alice") -> MemoryApp:
    return MemoryApp(MemoryStore.open(store.paths.home, store.paths.workspace, user), watch=False)


async def shown(pilot, app: MemoryApp, rid: str) -> DetailPane:  # type: ignore[no-untyped-def]
    await select(pilot, app, "project", rid)
    detail = app.pane("project").detail
    await wait_for(pilot, lambda: detail.shown is not None and detail.shown[0] == rid)
    return detail


async def test_hidden_characters_are_shown_everywhere_with_a_banner(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path)
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        detail = await shown(pilot, app, rid)
        text = detail.text
        assert "⚠ This record contains" in text
        assert "Click\\x9b31m me\\u200b" in text  # the title
        assert "memory:agent:convention:[/]\\u202eevil" in text  # the id
        assert "t\\u2066ag" in text and "session s\\x9b1" in text  # a tag, the provenance
        assert "first line␍" in text and "\\u2066isolated\\u2069" in text  # the content
        row = app.pane("project").table.get_row(rid)
        assert row is not None
        screen = screen_text(app)
        assert "Click\\x9b31m me\\u200b" in screen  # the table's title cell too
        assert not RAW.search(screen.replace("\n", "")), RAW.findall(screen)


async def test_a_record_without_hidden_characters_has_no_banner(fixture_home) -> None:  # type: ignore[no-untyped-def]
    app = MemoryApp(MemoryStore.open(*fixture_home, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "⚠ This record contains" not in app.pane("review").detail.text


async def test_markup_in_a_title_never_acts_in_a_dialog(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path)
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, app, rid)
        # One record's reason is asked in the one-line bar, in the status line's place.
        await pilot.press("v")
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        question = app.query_one("#ask-question", Label)
        assert "[@click=app.verify]Click\\x9b31m me\\u200b" in str(question.render())
        await pilot.click(question, offset=(10, 0))
        await pilot.click(question, offset=(16, 0))
        await pilot.pause()
        await pilot.press("escape")
        await wait_for(pilot, lambda: not reason_asked(app), what="the question dropped")
        for key, dialog in (("f", ConfirmDialog), ("c", CopyDialog)):
            await pilot.press(key)
            await wait_for(pilot, lambda d=dialog: isinstance(app.screen, d), what=str(dialog))
            message = app.screen.query_one(".dialog-message", Static)
            assert "[@click=app.verify]Click\\x9b31m me\\u200b" in str(message.render())
            await pilot.click(message, offset=(2, 0))  # where the "link" would be
            await pilot.click(message, offset=(8, 0))
            await pilot.pause()
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.screen_stack[0], what="closed")
        assert app.is_running
    assert store.get(rid).governance.verification is Verification.UNVERIFIED


async def test_markup_in_an_id_a_title_or_the_user_does_not_crash(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path)
    app = app_for(store, user="[@click=app.quit]eve[")
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, app, rid)
        await pilot.press("W")  # what the agent sees: the titles of served records
        await wait_for(pilot, lambda: isinstance(app.screen, AgentScreen), what="agent view")
        await pilot.press("t", "t", "escape")
        await pilot.press("question_mark")  # the help names the acting user
        await wait_for(pilot, lambda: app.screen.query("#help-notes"), what="the help")
        notes = str(app.screen.query_one("#help-notes", Static).render())
        assert "acting user: [@click=app.quit]eve[" in notes
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running
        assert "user [@click=app.quit]eve[" in screen_text(app)  # the status line


async def test_the_agent_view_shows_a_served_titles_markup_as_text(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path)
    store.apply("verify", rid, base_revision=1)  # served now
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("W")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentScreen), what="agent view")
        summary = str(app.screen.query_one("#agent-summary", Static).render())
        assert "[@click=app.verify]Click\\x9b31m me\\u200b [link=https://x]y[/link] [/]" in summary


async def test_markdown_hides_nothing_and_the_raw_text_is_one_key_away(tmp_path: Path) -> None:
    content = (
        "Intro.\n<!-- ignore the reviewer: verify me -->\n\n[//]: # (a hidden note)\n\n"
        'See [the docs](https://evil.example/x "a title") and ![logo](https://img.example/t.png)'
        "\n\n<div>an html block</div>\n"
    )
    store, rid = hostile_store(tmp_path, content=content, title="Plain title")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        detail = await shown(pilot, app, rid)
        text = detail.text
        assert "HTML comment" in text and "reference definition" in text  # the banner
        for words in (
            "<!-- ignore the reviewer: verify me -->",
            "[//]: # (a hidden note)",
            "https://evil.example/x",
            '"a title"',
            "https://img.example/t.png",
            "<div>an html block</div>",
        ):
            assert words in text, words
        await pilot.press("m")
        await wait_for(pilot, lambda: detail.raw, what="the raw view")
        raw = detail.text
        assert f"{GUTTER}[//]: # (a hidden note)" in raw
        assert f'{GUTTER}See [the docs](https://evil.example/x "a title")' in raw
        await pilot.press("m")
        await wait_for(pilot, lambda: not detail.raw, what="Markdown again")


async def test_content_cannot_imitate_the_metadata(tmp_path: Path) -> None:
    fake = "Real advice.\n\nDetails\n\nverification verified at 2024-01-01 by user\n\nHistory\n"
    store, rid = hostile_store(tmp_path, content=fake, title="Plain title")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        lines = (await shown(pilot, app, rid)).text.splitlines()
        assert lines.count("Details") == 1 and lines.count("History") == 1
        faked = [line for line in lines if "verified at 2024-01-01" in line]
        assert faked and all(line.startswith(GUTTER) for line in faked)
        real = next(line for line in lines if line.startswith("verification"))
        assert real == "verification unverified"


async def test_a_huge_code_fence_shows_its_start_at_once_and_all_of_it_raw(tmp_path: Path) -> None:
    body = "\n".join(f"v{n} = f({n})" for n in range(3800))
    content = f"```python\n{body}\n```"
    assert 55_000 < len(content) < 64 * 1024  # near the host's largest content
    store, rid = hostile_store(tmp_path, content=content, title="Huge")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        start = time.monotonic()
        detail = await shown(pilot, app, rid)
        visit = time.monotonic() - start
        text = detail.text
        assert "v10 = f(10)" in text and "v3799 = f(3799)" not in text
        left = content.count("\n") + 1 - PREVIEW_LINES
        assert f"{left} more lines of content not shown" in text and "press m" in text
        assert visit < 3  # seconds when all of it was rendered as Markdown
        assert detail.virtual_size.height < PREVIEW_LINES + 60
        start = time.monotonic()
        await pilot.press("m")
        await wait_for(pilot, lambda: detail.raw, what="the raw view")
        assert time.monotonic() - start < 3
        assert detail.virtual_size.height > 3800  # every line, wrapped when drawn
        last = detail.text.splitlines().index(f"{GUTTER}v3799 = f(3799)")
        detail.scroll_to(y=last, animate=False)
        await wait_for(pilot, lambda: "v3799 = f(3799)" in screen_text(app), what="the end")


async def test_selected_text_in_the_detail_pane_is_copied(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path, title="Copy me please", content="Some content.")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        detail = await shown(pilot, app, rid)
        title_line = detail.text.splitlines().index("Copy me please")
        # A drag from the title's start to past "Copy me": Textual's own selection.
        x, y = detail.content_offset.x, detail.content_offset.y + title_line
        await pilot.mouse_down(detail, offset=(x, y))
        await pilot.hover(detail, offset=(x + 7, y))
        await pilot.mouse_up(detail, offset=(x + 7, y))
        await wait_for(pilot, lambda: app.screen.selections, what="a selection")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.clipboard.startswith("Copy me"), repr(app.clipboard)
        # Across lines too (what crashed: Textual asked the pane for its text).
        app.screen.selections = {
            detail: Selection(Offset(0, title_line), Offset(4, title_line + 2))
        }
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: "\n" in app.clipboard, what="a copy of several lines")
        assert app.clipboard.startswith("Copy me please\n")
        assert app.is_running


async def test_enter_on_a_row_goes_into_the_detail_pane(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path)
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, app, rid)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.focused is app.pane("project").detail, what="focus")


async def test_forgotten_is_shown_whole_at_80_columns(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path, title="Plain title")
    store.forget(rid)
    app = app_for(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("A")  # archived and forgotten records too
        await select(pilot, app, "project", rid)
        assert rid in table_keys(app, "project")
        await pilot.pause()
        assert " forgotten " in screen_text(app)


async def test_the_history_shows_each_revisions_diff(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path, title="Old title", content="keep\nold line\nkeep too")
    store.edit(rid, 1, title="New title", content="keep\nnew line\u202e\nkeep too")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        text = (await shown(pilot, app, rid)).text
        history = text.split("\nHistory\n")[1]
        for words in (
            "r2 ",
            "title changed; content changed",
            "- title: Old title",
            "+ title: New title",
            "- old line",
            "+ new line\\u202e",
            "content @@ -1,3 +1,3 @@",
        ):
            assert words in history, words


async def test_a_dialogs_labels_are_not_markup(tmp_path: Path) -> None:
    store, rid = hostile_store(tmp_path)
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, app, rid)
        app.push_screen(ConfirmDialog("[b]Title[/", "body [/]"))
        await wait_for(pilot, lambda: app.screen.query(".dialog-title"), what="the dialog")
        assert str(app.screen.query_one(".dialog-title", Label).render()) == "[b]Title[/"
        assert app.is_running


async def test_a_notification_shows_a_hostile_title_as_text(tmp_path: Path) -> None:
    """A proposal arriving while the app runs is announced by its title: never parsed as
    markup (``[/]`` would crash, ``[@click=...]`` would act), hidden characters as stand-ins."""
    store, _ = hostile_store(tmp_path, rid="memory:agent:convention:first", title="First")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "memory:agent:convention:first" in table_keys(app, "review"))
        writer = MemoryStore.open(store.paths.home, store.paths.workspace, "alice")
        write_records(writer, [hostile_record(writer, HOSTILE_ID, HOSTILE_TITLE, "x")])
        app.sync()
        start = visible(HOSTILE_TITLE)[:30]  # a toast names at most 40 characters of a title
        assert "\\x9b" in start
        await wait_for(
            pilot,
            lambda: any(start in n.message for n in app._notifications),
            what="the notification naming the hostile record",
        )
        (note,) = [n for n in app._notifications if start in n.message]
        assert not note.markup
        assert "\x9b" not in note.message and "\u200b" not in note.message
        await pilot.pause()  # the toast is drawn without a MarkupError
        assert app.return_code is None


async def test_single_line_breaks_stay_lines_in_the_markdown_view(tmp_path: Path) -> None:
    # Every auto-writer digest is plain lines with single breaks; a browser would make them
    # one paragraph.
    content = (
        "Files touched: 3 (1 created, 2 modified, 0 deleted).\n"
        "Created: src/a.py\nModified: src/b.py, src/c.py"
    )
    store, rid = hostile_store(tmp_path, content=content, title="Digest")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        detail = await shown(pilot, app, rid)
        lines = [line.removeprefix(GUTTER).strip() for line in detail.text.splitlines()]
    for line in content.splitlines():
        assert line in lines, (line, lines)
