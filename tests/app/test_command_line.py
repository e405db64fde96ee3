"""``dsh-memory-tui``'s command line: usage errors in the ``error[USAGE]`` form, and the theme
(``--theme``, or the one last chosen in the palette, kept under the home)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.main import apply_theme, build_parser, open_app, remember_theme
from dsh_memory_tui.settings import SETTINGS_NAME, load_settings

from .helpers import SIZE, make_app, wait_for

REPO = Path(__file__).parents[2]


def run_tui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_memory_tui.app.main", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


def first_option(app: MemoryApp) -> str | None:
    if not isinstance(app.screen, CommandPalette):
        return None
    options = app.screen.query_one(CommandList)
    return str(options.get_option_at_index(0).prompt) if options.option_count else None


async def choose_theme(pilot: Pilot, app: MemoryApp, theme: str) -> None:
    """``theme`` chosen as a user does: the palette, Theme, its name, enter."""
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.press(*"theme")
    matches = app.screen.query_one(CommandList)
    await wait_for(pilot, lambda: matches.option_count > 0, what="a match")
    await pilot.press("enter")
    await wait_for(pilot, lambda: first_option(app) == "ansi-dark", what="the theme list")
    await pilot.press(*theme)
    await wait_for(pilot, lambda: first_option(app) == theme, what=f"{theme} alone")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.theme == theme, what="the theme")


def test_an_unknown_flag_is_a_usage_error_naming_it_then_the_usage():
    done = run_tui("--bogus")
    assert done.returncode == 2
    first, *rest = done.stderr.splitlines()
    assert first == "error[USAGE]: dsh-memory-tui: unrecognized arguments: --bogus"
    assert rest and rest[0].startswith("usage: dsh-memory-tui ")
    assert done.stdout == ""


def test_an_unknown_theme_is_a_usage_error_listing_the_themes():
    done = run_tui("--theme", "no-such-theme")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error[USAGE]: dsh-memory-tui: argument --theme: invalid theme 'no-such-theme' "
        "(choose from ansi-dark, "
    )
    assert "nord" in done.stderr.splitlines()[0]


async def test_a_theme_chosen_in_the_palette_is_the_next_runs_theme(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    started = apply_theme(app, home, None)
    assert started == "textual-dark"
    async with app.run_test(size=SIZE) as pilot:
        await choose_theme(pilot, app, "nord")
    remember_theme(app, home, started)
    saved = home / SETTINGS_NAME
    assert json.loads(saved.read_text()) == {"theme": "nord"}
    assert saved.stat().st_mode & 0o777 == 0o600
    again = make_app(home, ws)
    assert apply_theme(again, home, None) == "nord"


def test_theme_flag_wins_for_its_run_and_leaves_the_saved_choice(fixture_home):
    home, ws = fixture_home
    (home / SETTINGS_NAME).write_text('{"theme": "nord"}')
    app = make_app(home, ws)
    started = apply_theme(app, home, "gruvbox")
    assert (started, app.theme) == ("gruvbox", "gruvbox")
    remember_theme(app, home, started)  # nothing chosen during the run
    assert load_settings(home).theme == "nord"


def test_a_damaged_or_foreign_settings_file_is_no_settings(fixture_home):
    home, ws = fixture_home
    for text in ("{not json", '["nord"]', '{"theme": 7}', '{"theme": "no-such-theme"}'):
        (home / SETTINGS_NAME).write_text(text)
        assert apply_theme(make_app(home, ws), home, None) == "textual-dark", text


async def test_a_theme_chosen_in_the_demo_is_kept_in_the_users_own_home(tmp_path, monkeypatch):
    mine = tmp_path / "mine"  # the user's DSH_HOME; the demo's home is a temporary one
    monkeypatch.setenv("DSH_HOME", str(mine))
    args = build_parser().parse_args(["--demo", "--no-watch"])
    opened = open_app(args)
    app = opened.app
    try:
        started = apply_theme(app, opened.settings_home, None)
        async with app.run_test(size=SIZE) as pilot:
            await choose_theme(pilot, app, "nord")
        remember_theme(app, opened.settings_home, started)
    finally:
        assert opened.live is not None
        opened.live.set()
    assert load_settings(mine).theme == "nord"
    assert app.store.paths.home != mine and not (app.store.paths.home / SETTINGS_NAME).exists()
    again = open_app(args)
    assert again.live is not None
    again.live.set()
    assert apply_theme(again.app, again.settings_home, None) == "nord"
