"""Every screen and dialog at 80x24, the smallest terminal the README promises (issue 37, item
2): each one's buttons are drawn whole, cell by cell, on the screen and under nothing; and each
is a snapshot (``pytest tests/app/test_every_screen_at_80x24.py --snapshot-update`` after a
deliberate change; look at the report first). ``every_screen.SCREENS`` opens each as a reviewer
does, on one store that is the same every run."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button

from dsh_memory_tui.app.screens import (
    agent,
    audit,
    bundles,
    conflict,
    dialogs,
    form,
    merge,
    modal,
    source_diff,
)

from . import every_screen
from .every_screen import SCREENS, Ids, build, covered_cell_by_cell, loaded, make, still_cursor
from .test_layout import SMALL, displayed

MODULES = (agent, audit, bundles, conflict, dialogs, form, merge, modal, source_diff)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Ids]:
    monkeypatch.setenv("HOME", str(tmp_path))  # paths under it show as ~/..., the same each run
    return build(tmp_path)


def test_every_modal_screen_is_listed():
    """A dialog added without its entry in every_screen.SCREENS fails here."""
    listed = {entry.shows for entry in SCREENS.values()}
    concrete = {
        cls
        for module in MODULES
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__
        and issubclass(cls, (modal.Modal, modal.Palette))
        and not inspect.isabstract(cls)
        and cls not in (modal.Modal, form.FormScreen, conflict.SideBySide)
    }
    assert sorted(c.__name__ for c in concrete - listed) == []


@pytest.mark.parametrize("name", list(SCREENS))
async def test_at_80x24_every_button_is_drawn_whole(store, name: str) -> None:
    home, ws, ids = store
    app = make(home, ws)
    async with app.run_test(size=SMALL) as pilot:
        await loaded(pilot, app)
        await SCREENS[name].open(pilot, app, ids)
        assert isinstance(app.screen, SCREENS[name].shows)
        buttons = [b for b in app.screen.query(Button) if displayed(b)]
        for button in buttons:
            assert button.region.area, f"{button!r} is not drawn"
            assert covered_cell_by_cell(app, button) == [], button


@pytest.mark.parametrize("name", list(SCREENS))
def test_at_80x24_every_screen_looks_as_it_did(snap_compare, store, name: str) -> None:
    home, ws, ids = store
    app = make(home, ws)

    async def opened(pilot: Pilot) -> None:
        await loaded(pilot, app)
        await SCREENS[name].open(pilot, app, ids)
        still_cursor(app)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SMALL, run_before=opened)


def test_the_store_is_the_same_every_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    first = build(tmp_path / "a")
    second = build(tmp_path / "b")
    assert first[2] == second[2]
    files = every_screen.open_store(first[0], first[1]).files()
    assert files
