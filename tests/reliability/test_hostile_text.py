"""Hostile text: records made of random control characters, escapes, bidi and zero-width
characters, markup and Markdown (hypothesis), read through ``dsh-memory`` and through the app.
Every character stored is shown (as its visible stand-in), nothing crashes, and no raw ESC, C1
or bidi character reaches the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT
from hostile_records import hostile_record, write_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interop.corpus import make_case_dirs

from dsh_memory_tui import cli
from dsh_memory_tui.model import Record, Scope
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
    from app.helpers import screen_text, select, wait_for

    from dsh_memory_tui.app.app import MemoryApp
    from dsh_memory_tui.app.widgets.detail import GUTTER

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
            assert all(line.startswith(GUTTER.rstrip()) for line in lines[start : end - 1])
            shown = "".join(line[len(GUTTER) :] for line in lines[start : end - 1])
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
