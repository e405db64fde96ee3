"""What the filter takes is declared once (``actions.FILTER_FLAGS``, ``FILTER_FIELDS``) and the
filter's parser, its placeholder and its help line are made from it, so they cannot drift
(issue 37, item 3: the placeholder left out ``flag:`` and ``rereview``): each word is taken by
the parser, drawn in the placeholder (as much as fits, then a pointer to the help), told in the
help screen and in the README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsh_memory_tui.app.actions import (
    FIELD_VALUES,
    FILTER_FIELDS,
    FILTER_FLAGS,
    FILTER_WORDS,
    filter_hint,
)
from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.panes import RecordFilter
from dsh_memory_tui.app.screens.dialogs import HelpScreen

from .helpers import make_app, wait_for
from .test_layout import SMALL, open_screen

README = Path(__file__).parents[2] / "README.md"


def drawn_placeholder(app: MemoryApp) -> str:
    """The filter box's row as drawn, inside its border."""
    box = app.active_pane.query_one(".filter")
    region = box.content_region
    row = app.screen._compositor.render_strips()[region.y].text  # noqa: SLF001
    return row[region.x : region.right].rstrip()


def test_the_parser_takes_every_declared_word():
    for flag in FILTER_FLAGS:
        parsed = RecordFilter.parse(flag)
        assert parsed.flags == (flag,) and parsed.problems == ()
    for name in FILTER_FIELDS:
        value = FIELD_VALUES.get(name, ("x",))[0]
        parsed = RecordFilter.parse(f"{name}:{value}")
        assert parsed.fields == ((name, (value,)),) and parsed.problems == ()


@pytest.mark.parametrize("width", range(24, 140, 3))
def test_the_hint_at_any_width_fits_and_names_the_first_words_whole(width: int):
    hint, full = filter_hint(width), filter_hint()
    assert hint == full or len(hint) <= width
    if hint != full:
        assert hint.endswith("… (? lists all)")
        named = hint.removeprefix("filter: ").removesuffix("… (? lists all)").rstrip(", ")
        words = named.split(", ") if named else []
        assert words == list(FILTER_WORDS[: len(words)])


@pytest.mark.parametrize("size", [SMALL, (200, 50)])
async def test_the_placeholder_drawn_names_what_fits_and_points_to_the_help(fixture_home, size):
    app = make_app(*fixture_home)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: drawn_placeholder(app).startswith("filter:"), what="it")
        await pilot.pause()
        drawn = drawn_placeholder(app)
        assert drawn == filter_hint(app.active_pane.query_one(".filter").content_size.width)
        if size == SMALL:
            assert drawn.endswith("… (? lists all)")
            assert "rereview, flag:" in drawn  # the two it used to leave out, at 80 columns too
        else:
            assert all(word in drawn for word in FILTER_WORDS)


async def test_the_help_screen_tells_every_filter_word(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_screen(pilot, app, "question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        line = next(x for x in help_screen.text("keys").splitlines() if x.startswith("/  "))
        for word in FILTER_WORDS:
            assert re.search(rf"[ ,]{re.escape(word)}[ ,]", line), word


def test_the_readme_tells_every_filter_word():
    row = next(line for line in README.read_text().splitlines() if line.startswith("| `/` |"))
    for word in FILTER_WORDS[1:]:
        assert f"`{word}`" in row, word
