"""Hostile text: records made of random control characters, escapes, bidi and zero-width
characters, markup and Markdown (hypothesis), read through ``dsh-memory`` and through the app.
Every character stored is shown (as its visible stand-in), nothing crashes, and no raw ESC, C1
or bidi character reaches the terminal. In the app (Textual's pilot, real files): a banner says
a record hides characters, markup never acts (titles, ids, dialogs, notifications), Markdown
hides nothing, a huge record stays responsive, and what the detail pane shows can be copied.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

from app.helpers import SIZE, screen_text, select, table_keys, wait_for
from conftest import REPO_ROOT
from hostile_records import hostile_record, write_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interop.corpus import make_case_dirs
from textual.containers import VerticalScroll
from textual.geometry import Offset
from textual.selection import Selection
from textual.widgets import Label, Static

from dsh_memory_tui import cli
from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.agent import AgentScreen
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog, CopyDialog, ReasonDialog
from dsh_memory_tui.app.widgets.detail import GUTTER, PREVIEW_LINES, DetailPane
from dsh_memory_tui.model import Record, Scope, Verification
from dsh_memory_tui.present import record_hidden_characters, visible
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures

# What must never be printed (the screen's and the CLI's newlines and tabs aside).
RAW = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
    "\ud800-\udfff\U000e0000-\U000e007f]"
)

# Pieces of hostile text: controls the host lets through, escapes, markup, Markdown.
HOSTILE_PIECES = [
    "\x9b31m",  # C1 CSI
    "\x85",
    "\x9d8;;https://evil\x9c",  # C1 OSC hyperlink
    "\u202e",
    "\u2066",
    "\u2069",
    "\u200b",
    "\u200d",
    "\ufeff",
    "\u2028",
    "\U000e0041",
    "[",
    "]",
    "[/]",
    "[b]",
    "[@click=app.verify]",
    "[link=https://x]",
    "\\",
    "<!-- ",
    " -->",
    "<div>",
    "`",
    "```",
    "*",
    "_",
    "# ",
    "[//]: # (",
    ")",
    "![i](",
    "](",
    "&#x1b;",
    "&#8238;",
    "word",
    "Ünï",
    "漢字",
    " ",
]
# A lone surrogate is valid JSON and passes the host in a title or an id (not in content,
# whose hash needs UTF-8).
ONE_LINE = st.lists(st.sampled_from([*HOSTILE_PIECES, "\ud800"]), min_size=1, max_size=8).map(
    "".join
)
CONTENT = st.lists(
    st.sampled_from([*HOSTILE_PIECES, "\n", "\n\n", "\r", "\r\n", "\t"]), min_size=1, max_size=30
).map("".join)
RECORD = st.tuples(ONE_LINE, CONTENT, st.lists(ONE_LINE, max_size=2), ONE_LINE)
STORE = st.lists(RECORD, min_size=1, max_size=3)


def hostile_store(
    root: Path, records: list[tuple[str, str, list[str], str]]
) -> tuple[MemoryStore, list[Record]]:
    """A store whose project file holds ``records`` (title, content, tags, id suffix); returns
    the ones the host accepts (a blank or oversized title, say, is a corrupt line)."""
    dirs = make_case_dirs(root)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    lines = [
        hostile_record(store, f"memory:agent:convention:{n}{suffix}", title, content, tags=tags)
        for n, (title, content, tags, suffix) in enumerate(records)
    ]
    write_records(store, lines)
    reader = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    return reader, reader.records(Scope.PROJECT)


def run_main(store: MemoryStore, *args: str) -> str:
    out = io.StringIO()
    paths = store.paths
    with contextlib.redirect_stdout(out):
        code = cli.main(
            ["--home", str(paths.home), "--workspace", str(paths.workspace), "--user", "alice"]
            + list(args)
        )
    assert code == 0, out.getvalue()
    return out.getvalue()


def test_cli_text_output_never_prints_a_raw_control_or_bidi_character(tmp_path: Path) -> None:
    """``dsh-memory list`` and ``show --history`` as a real process: stand-ins, a warning."""
    store, [record] = hostile_store(
        tmp_path, [("Run \x9b8m\u202eruff\ud800", "a\rb\u200b\n", ["t\u2066"], "\u202e")]
    )
    paths = store.paths
    base = [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(paths.home)]
    base += ["--workspace", str(paths.workspace), "--user", "alice"]
    env = {"PYTHONPATH": str(REPO_ROOT), "PYTHONIOENCODING": "utf-8"}
    for args in (["list"], ["show", record.id, "--history"]):
        done = subprocess.run([*base, *args], capture_output=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode("utf-8")
        assert not RAW.search(text.replace("\n", "").replace("\t", "")), RAW.findall(text)
        assert "Run \\x9b8m\\u202eruff\\ud800" in text
    assert "warning:      this record contains 7 control, bidi or invisible characters" in text
    assert "a␍b\\u200b" in text and "t\\u2066" in text


def test_cli_json_output_escapes_what_would_act_on_a_terminal_and_keeps_the_values(
    tmp_path: Path,
) -> None:
    """``list --json`` and ``show --json`` as a real process: C1 controls, bidi, tag characters
    and a lone surrogate are ``\\u`` escapes (without this the surrogate could not even be
    printed), and the JSON still holds exactly the stored values."""
    title = "Run \x9b8m\u202eruff\ud800\U000e0041"
    store, [record] = hostile_store(tmp_path, [(title, "a\rb\u200b\n", ["t\u2066"], "\u202e")])
    paths = store.paths
    base = [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(paths.home)]
    base += ["--workspace", str(paths.workspace), "--user", "alice"]
    env = {"PYTHONPATH": str(REPO_ROOT), "PYTHONIOENCODING": "utf-8"}
    for args in (["list", "--json"], ["show", record.id, "--json"]):
        done = subprocess.run([*base, *args], capture_output=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode("utf-8")
        assert not RAW.search(text.replace("\n", "")), RAW.findall(text)
        value = json.loads(text)
        shown = value[0] if isinstance(value, list) else value
        shown = shown.get("record", shown)
        assert shown["title"] == title and shown["id"] == record.id
        assert shown["content"] == record.content and shown["tags"] == ["t\u2066"]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=STORE)
def test_cli_shows_every_character_of_random_hostile_records(
    tmp_path_factory, figures: Figures, records: list[tuple[str, str, list[str], str]]
) -> None:  # type: ignore[no-untyped-def]
    """Random hostile records through ``list`` and ``show --history`` (in process)."""
    store, shown = hostile_store(tmp_path_factory.mktemp("cli"), records)
    figures.add("examples")
    listing = run_main(store, "list")
    assert not RAW.search(listing.replace("\n", "")), RAW.findall(listing)
    for record in shown:
        figures.add("records")
        assert visible(record.title[:60]).rstrip() in listing  # the last column: rstripped
        text = run_main(store, "show", record.id, "--history")
        assert not RAW.search(text.replace("\n", "").replace("\t", "")), RAW.findall(text)
        assert visible(record.title) in text and visible(record.id) in text
        assert visible(record.content, multiline=True) in text
        for tag in record.tags:
            assert visible(tag) in text
        assert ("warning:" in text) == (record_hidden_characters(record) > 0)


_SPACE = re.compile(r"\s")


async def _read_in_the_app(store: MemoryStore, records: list[Record]) -> int:
    """Visit each record in the app, as Markdown and raw; return how many were checked."""
    app = MemoryApp(store, watch=False)
    checked = 0
    async with app.run_test(size=(100, 60)) as pilot:
        detail = app.pane("project").detail
        for record in records:
            await select(pilot, app, "project", record.id)
            await wait_for(pilot, lambda r=record: detail.shown == (r.id, 1), what=record.id)
            markdown = detail.text
            screen = screen_text(app)
            assert not RAW.search(screen.replace("\n", "")), RAW.findall(screen)
            assert _SPACE.sub("", visible(record.title)) in _SPACE.sub("", markdown)
            assert ("⚠ This record contains" in markdown) == (record_hidden_characters(record) > 0)
            await pilot.press("m")
            await wait_for(pilot, lambda: detail.raw, what="the raw view")
            lines = detail.text.split("\n")
            start = lines.index("Content: raw text (m: as Markdown)") + 1
            end = lines.index("Details", start)
            # The content's lines, each behind the gutter; then a blank line and the risk
            # flags' section (hidden characters are one), or Details.
            body = list(
                itertools.takewhile(lambda line: line.startswith(GUTTER.rstrip()), lines[start:end])
            )
            assert body and not lines[start + len(body)].strip()
            shown = "".join(line[len(GUTTER) :] for line in body)
            wanted = visible(record.content, multiline=True)
            assert _SPACE.sub("", shown) == _SPACE.sub("", wanted)
            await pilot.press("m")
            checked += 1
        assert app.is_running
    return checked


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=STORE)
def test_the_app_shows_every_character_of_random_hostile_records(
    tmp_path_factory, figures: Figures, records: list[tuple[str, str, list[str], str]]
) -> None:  # type: ignore[no-untyped-def]
    """Random hostile records in the table and the detail pane (Markdown and raw), through
    Textual's pilot: nothing crashes, no raw control reaches the screen, every character of
    the content is in the raw view."""
    store, shown = hostile_store(tmp_path_factory.mktemp("app"), records)
    figures.add("examples")
    figures.add("records", asyncio.run(_read_in_the_app(store, shown)))


# -------------------------------------------------------------- in the app, through Textual's pilot

# What must never reach the terminal: C0/C1 controls (but the newlines of the screen), bidi
# and zero-width characters.
RAW_ON_SCREEN = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)

HOSTILE_ID = "memory:agent:convention:[/]\u202eevil"
HOSTILE_TITLE = "[@click=app.verify]Click\x9b31m me\u200b [link=https://x]y[/link] [/]"
HOSTILE_CONTENT = "first line\r\nsecond \u2066isolated\u2069 line\n\n[b]bold?[/b]"


def store_with(tmp_path: Path, *records: dict[str, object], user: str = "alice") -> MemoryStore:
    dirs = make_case_dirs(tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, user)
    write_records(store, [dict(r) for r in records])
    return store


def one_hostile_store(tmp_path: Path, **fields: object) -> tuple[MemoryStore, str]:
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
    store, rid = one_hostile_store(tmp_path)
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
        assert not RAW_ON_SCREEN.search(screen.replace("\n", "")), RAW_ON_SCREEN.findall(screen)


async def test_a_record_without_hidden_characters_has_no_banner(fixture_home) -> None:  # type: ignore[no-untyped-def]
    app = MemoryApp(MemoryStore.open(*fixture_home, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "⚠ This record contains" not in app.pane("review").detail.text


async def test_markup_in_a_title_never_acts_in_a_dialog(tmp_path: Path) -> None:
    store, rid = one_hostile_store(tmp_path)
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, app, rid)
        # Its hidden characters are a risk flag, so its reason is asked in the dialog.
        for key, dialog in (("v", ReasonDialog), ("f", ConfirmDialog), ("c", CopyDialog)):
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
    store, rid = one_hostile_store(tmp_path)
    app = app_for(store, user="[@click=app.quit]eve[")
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, app, rid)
        await pilot.press("W")  # what the agent sees: the titles of served records
        await wait_for(pilot, lambda: isinstance(app.screen, AgentScreen), what="agent view")
        await pilot.press("t", "t", "escape")
        await pilot.press("question_mark")  # the help names the acting user
        await wait_for(pilot, lambda: app.screen.query("#help-notes"), what="the help")
        scroll = app.screen.query_one(VerticalScroll)  # the notes come last: scroll to them
        await wait_for(pilot, lambda: scroll.max_scroll_y > 0, what="the help laid out")
        scroll.scroll_end(animate=False, immediate=True)
        await wait_for(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y, what="the end")
        await pilot.pause()
        drawn = screen_text(app)  # as drawn: the help's two columns, label then text
        assert re.search(r"acting user *\[@click=app\.quit\]eve\[", drawn), drawn
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running
        assert "user [@click=app.quit]eve[" in screen_text(app)  # the status line


async def test_the_agent_view_shows_a_served_titles_markup_as_text(tmp_path: Path) -> None:
    store, rid = one_hostile_store(tmp_path)
    store.apply("verify", rid, base_revision=1, reason="checked")  # served now
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
    store, rid = one_hostile_store(tmp_path, content=content, title="Plain title")
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
    store, rid = one_hostile_store(tmp_path, content=fake, title="Plain title")
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
    store, rid = one_hostile_store(tmp_path, content=content, title="Huge")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        detail = await shown(pilot, app, rid)
        text = detail.text
        assert "v10 = f(10)" in text and "v3799 = f(3799)" not in text
        left = content.count("\n") + 1 - PREVIEW_LINES
        assert f"{left} more lines of content not shown" in text and "press m" in text
        # The work done, not seconds: only the preview's lines went through Markdown.
        assert detail.virtual_size.height < PREVIEW_LINES + 60
        await pilot.press("m")
        await wait_for(pilot, lambda: detail.raw, what="the raw view")
        assert detail.virtual_size.height > 3800  # every line, wrapped when drawn
        last = detail.text.splitlines().index(f"{GUTTER}v3799 = f(3799)")
        detail.scroll_to(y=last, animate=False)
        await wait_for(pilot, lambda: "v3799 = f(3799)" in screen_text(app), what="the end")


async def test_selected_text_in_the_detail_pane_is_copied(tmp_path: Path) -> None:
    store, rid = one_hostile_store(tmp_path, title="Copy me please", content="Some content.")
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
    store, rid = one_hostile_store(tmp_path)
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, app, rid)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.focused is app.pane("project").detail, what="focus")


async def test_forgotten_is_shown_whole_at_80_columns(tmp_path: Path) -> None:
    store, rid = one_hostile_store(tmp_path, title="Plain title")
    store.forget(rid)
    app = app_for(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("A")  # archived and forgotten records too
        await select(pilot, app, "project", rid)
        assert rid in table_keys(app, "project")
        await pilot.pause()
        assert " forgotten " in screen_text(app)


async def test_the_history_shows_each_revisions_diff(tmp_path: Path) -> None:
    store, rid = one_hostile_store(tmp_path, title="Old title", content="keep\nold line\nkeep too")
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
    store, rid = one_hostile_store(tmp_path)
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
    store, _ = one_hostile_store(tmp_path, rid="memory:agent:convention:first", title="First")
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
    store, rid = one_hostile_store(tmp_path, content=content, title="Digest")
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        detail = await shown(pilot, app, rid)
        lines = [line.removeprefix(GUTTER).strip() for line in detail.text.splitlines()]
    for line in content.splitlines():
        assert line in lines, (line, lines)


async def test_lone_surrogates_in_every_field_go_through_every_view_of_the_app(
    tmp_path: Path,
) -> None:
    """A verified record whose id, title, tag and content hold a lone surrogate, with times
    past the year 9999 (all host-valid): the table, the detail pane, what the agent sees and
    the audit log draw it (as ``\\udcff``), and the app goes on answering keys."""
    from dsh_memory_tui.app.screens.audit import AuditScreen

    from .test_hostile_cli import surrogate_store

    store, rid = surrogate_store(tmp_path)
    app = app_for(store)
    async with app.run_test(size=SIZE) as pilot:
        detail = await shown(pilot, app, rid)
        assert "Odd \\udcff title" in detail.text and "ms (past 9999)" in detail.text
        await pilot.press("W")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentScreen), what="agent view")
        await wait_for(pilot, lambda: "Odd \\udcff" in screen_text(app), what="its title")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, AgentScreen), what="closed")
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, AuditScreen), what="the audit")
        await pilot.press("escape")
        await pilot.press("j", "k")
        await pilot.pause()
        assert app.is_running
        assert not RAW.search(screen_text(app).replace("\n", ""))
