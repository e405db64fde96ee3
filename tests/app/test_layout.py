"""At 80x24, the smallest terminal the app promises, every screen keeps what the reviewer acts
with in view: each dialog's buttons, the export's error, the import plan's counts, the text a
dialog asks about (scrolling when long). And the footer draws only its keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Static
from textual.widgets._toast import Toast

from dsh_memory_tui.app.actions import ACTIONS, OTHER_KEYS
from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.bundles import ExportDialog, ImportDialog
from dsh_memory_tui.app.screens.main import MainScreen
from dsh_memory_tui.app.screens.modal import Palette
from dsh_memory_tui.bundle import export_bundle
from dsh_memory_tui.model import SourceRef
from dsh_memory_tui.store import MemoryStore

from . import every_screen
from .every_screen import SCREENS
from .helpers import goto, make_app, wait_for

SMALL = (80, 24)
# Every screen over the main one that has buttons (the palette has none).
DIALOGS = [name for name, e in SCREENS.items() if e.shows not in (MainScreen, Palette)]
LONG = "a title long enough to wrap in a dialog at eighty columns, " * 2


def strips(app: MemoryApp) -> list[str]:
    """The screen as drawn, one string per row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]  # noqa: SLF001


def displayed(widget: Widget) -> bool:
    node: object = widget
    while isinstance(node, Widget):
        if not node.display:
            return False
        node = node.parent
    return True


def assert_in_view(app: MemoryApp, widget: Widget) -> None:
    """``widget`` is drawn whole: inside the screen and not under or clipped by anything (each
    corner of its region is the widget itself, or one of its children)."""
    region = widget.region
    what = f"{widget!r} at {region}"
    assert region.area, f"{what}: not drawn"
    assert app.screen.region.contains_region(region), f"{what}: off the 80x24 screen"
    for x, y in (
        (region.x, region.y),
        (region.right - 1, region.y),
        (region.x, region.bottom - 1),
        (region.right - 1, region.bottom - 1),
    ):
        found, _ = app.screen.get_widget_at(x, y)
        assert found is widget or widget in found.ancestors, f"{what}: ({x},{y}) is {found!r}"


def assert_buttons_in_view(app: MemoryApp) -> None:
    buttons = [b for b in app.screen.query(Button) if displayed(b)]
    assert buttons
    for button in buttons:
        assert_in_view(app, button)


def long_store(root: Path, n: int = 40) -> tuple[Path, Path]:
    """``n`` proposals with titles that wrap, a conflict group, one shared proposal."""
    home, ws = root / "home", root / "ws"
    store = MemoryStore.open(home, ws, "carol")
    refs = [SourceRef(kind="session", id="s1")]
    for i in range(n):
        store.propose("project", "fact", f"{i:02d} {LONG}", f"Content {i}.", source_refs=refs)
    for content in ("CI runs ruff check.", "CI runs ruff format too."):
        store.propose("project", "convention", "Lint with ruff", content, source_refs=refs)
    store.propose(
        "shared-project",
        "convention",
        "Shared rule",
        "For everyone.",
        source_refs=refs,
        confirm_shared=True,
    )
    return home, ws


async def open_screen(pilot: Pilot, app: MemoryApp, *keys: str) -> ModalScreen:
    base = app.screen
    await pilot.press(*keys)
    await wait_for(pilot, lambda: app.screen is not base, what=f"a screen after {keys}")
    await pilot.pause()
    return app.screen  # type: ignore[return-value]


async def loaded(pilot: Pilot, app: MemoryApp) -> None:
    # Proposals of long_store: 40, two rival versions and the shared one.
    await wait_for(pilot, lambda: app.pane("review").table.row_count == 43, what="the store")


async def mark_everything(pilot: Pilot, app: MemoryApp) -> None:
    await wait_for(pilot, lambda: app.active_pane.table.row_count > 1, what="rows")
    await pilot.press("asterisk")
    table = app.active_pane.table
    await wait_for(pilot, lambda: len(table.marked_keys) == table.row_count > 1, what="marks")


async def import_plan(pilot: Pilot, app: MemoryApp) -> None:
    dialog = await open_screen(pilot, app, "I")
    bundle = Path(app.store.paths.home).parent / "bundle.json"
    export_bundle(app.store, bundle, scopes=["project"])
    dialog.query_one("#path", Input).value = str(bundle)
    await pilot.click("#preview")
    assert isinstance(dialog, ImportDialog)
    await wait_for(pilot, lambda: dialog.plan is not None, what="the plan")
    await pilot.pause()
    assert_in_view(app, dialog.query_one("#plan-counts", Static))
    assert dialog.query_one("#import-plan", VerticalScroll).max_scroll_y > 0


async def batch_archive(pilot: Pilot, app: MemoryApp) -> None:
    await goto(pilot, app, "project")
    await mark_everything(pilot, app)
    await open_screen(pilot, app, "a")


@pytest.mark.parametrize("name", DIALOGS)
async def test_at_80x24_toasts_over_a_dialog_leave_its_buttons_uncovered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """An error, a receipt or a refusal raised while a dialog is open (a write that ends, the
    reason a flagged verify needs) shows where the dialog's buttons are not: every dialog of
    ``every_screen.SCREENS``."""
    monkeypatch.setenv("HOME", str(tmp_path))
    home, ws, ids = every_screen.build(tmp_path)
    app = every_screen.make(home, ws)
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        await every_screen.loaded(pilot, app)
        await SCREENS[name].open(pilot, app, ids)
        app.notify(
            "cannot write records.jsonl: No space left on device\nNothing was written; the "
            "file is as it was.",
            title="error[WRITE_FAILED]",
            severity="error",
        )
        app.notify("verified: “00 a title long enough to wrap in a dialog”")
        app.notify("A record with risk flags is verified only with a reason.", title="Reason")

        def on_top(x: int, y: int) -> Widget:
            widget, _ = app.screen.get_widget_at(x, y)
            return widget

        def toast_cells() -> list[tuple[int, int]]:
            """The cells where a toast is what is drawn (its rack may show only some)."""
            if len(app.screen.query(Toast)) < 3:
                return []
            screen = app.screen.region
            return [
                (x, y)
                for y in range(screen.height)
                for x in range(screen.width)
                if isinstance(on_top(x, y), Toast)
            ]

        await wait_for(pilot, toast_cells, what="the toasts drawn")
        await pilot.pause()
        buttons = [b for b in app.screen.query(Button) if displayed(b)]
        assert buttons
        for button in buttons:
            assert button.region.area
            assert every_screen.covered_cell_by_cell(app, button) == [], button


def _rendered(widget: Widget) -> list[str]:
    """Every line ``widget`` draws (all of it, what is scrolled out of view too)."""
    size = widget.size
    return [strip.text for strip in widget.render_lines(Region(0, 0, size.width, size.height))]


def _text_column(line: str) -> int:
    """Where the text starts on a line that starts with its label (labels hold no two
    spaces in a row)."""
    label = line.split("  ")[0]
    rest = line[len(label) :]
    return len(label) + len(rest) - len(rest.lstrip())


def _two_columns(lines: list[str]) -> dict[str, str]:
    """Label -> its text (spaces collapsed), from lines where a label starts at column 0 and
    its text, and every line that text wraps onto, at the same column further right."""
    at = min(_text_column(line) for line in lines if line[:1] != " ")
    rows: dict[str, str] = {}
    label = ""
    for line in lines:
        head, text = line[:at], line[at:]
        if head.strip():
            label = head.strip()
            rows[label] = ""
        assert line[at - 1 : at] == " ", f"{line!r}: text under the labels"
        rows[label] = " ".join([*rows[label].split(), *text.split()])
    return rows


async def test_at_80x24_the_help_wraps_each_line_under_its_own_text(tmp_path: Path) -> None:
    app = make_app(*long_store(tmp_path, n=1), user="carol")
    async with app.run_test(size=SMALL) as pilot:
        await open_screen(pilot, app, "question_mark")
        keys = app.screen.query_one("#help-keys", Static)
        lines = _rendered(keys)
        assert all(len(line) <= keys.size.width for line in lines)
        wrapped = [line for line in lines if line.startswith(" ")]
        assert wrapped  # at 80 columns some do wrap: under their own text
        rows = _two_columns(lines)
        expected = {k.shown: k.help for k in ACTIONS if k.action != "clear_marks"}
        expected.update(OTHER_KEYS)
        assert rows == {k: " ".join(v.split()) for k, v in expected.items()}  # nothing cut
        notes = _two_columns(
            [
                line
                for line in _rendered(app.screen.query_one("#help-notes", Static))
                if line.strip()
            ]
        )
        # A path too long for its column folds onto the next line, under itself.
        where = str(app.store.paths.workspace_memory_dir)
        assert notes["workspace"].replace(" ", "") == where.replace(" ", "")


async def test_a_long_confirmation_scrolls_between_its_title_and_buttons(tmp_path: Path) -> None:
    app = make_app(*long_store(tmp_path), user="carol")
    async with app.run_test(size=SMALL) as pilot:
        await batch_archive(pilot, app)
        box = app.screen.query_one(".dialog-scroll", VerticalScroll)
        assert box.max_scroll_y > 0
        assert "… and" not in "\n".join(strips(app))
        box.scroll_end(animate=False)
        await wait_for(pilot, lambda: "… and" in "\n".join(strips(app)), what="the list's end")
        assert_buttons_in_view(app)


async def test_the_footer_draws_nothing_after_the_palette_key(tmp_path: Path) -> None:
    # Textual's compact footer gave the docked palette key a right margin: the cell under it
    # showed the end of a key label ("^p paletteo"), in every screenshot.
    home, ws = long_store(tmp_path)
    for size in (SMALL, (120, 36)):
        app = make_app(home, ws, user="carol")
        async with app.run_test(size=size) as pilot:
            await loaded(pilot, app)
            await pilot.pause()
            last = strips(app)[-1]
            assert last.rstrip().endswith("^p palette"), last
            assert last.endswith(" "), last


async def test_export_to_a_missing_directory_says_so_in_words(tmp_path: Path) -> None:
    app = make_app(*long_store(tmp_path), user="carol")
    missing = tmp_path / "no-such-dir"
    async with app.run_test(size=SMALL) as pilot:
        await loaded(pilot, app)
        dialog = await open_screen(pilot, app, "E")
        assert isinstance(dialog, ExportDialog)
        dialog.query_one("#path", Input).value = str(missing / "out.json")
        await pilot.click("#ok")
        error = dialog.query_one("#export-error", Static)
        await wait_for(pilot, lambda: displayed(error), what="the error")
        assert str(error.content) == f"error[USAGE]: no such directory: {missing}"
        assert ".tmp" not in str(error.content)
        assert_in_view(app, error)
        assert_buttons_in_view(app)
    assert not missing.exists()


async def test_export_defaults_to_the_home_directory_not_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "person"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    app = make_app(*long_store(tmp_path), user="carol")
    async with app.run_test(size=SMALL) as pilot:
        await loaded(pilot, app)
        dialog = await open_screen(pilot, app, "E")
        path = dialog.query_one("#path", Input).value
        assert path.startswith("~/dsh-memory-") and path.endswith(".json")
        await pilot.click("#ok")
        await wait_for(pilot, lambda: not isinstance(app.screen, ExportDialog), what="export")
    assert [p.parent for p in home.glob("dsh-memory-*.json")] == [home]
    assert not list(tmp_path.glob("dsh-memory-*.json"))


async def test_the_import_plan_names_its_target_under_home_as_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    app = make_app(*long_store(tmp_path), user="carol")
    async with app.run_test(size=SMALL) as pilot:
        await loaded(pilot, app)
        await import_plan(pilot, app)
        plan = str(app.screen.query_one("#plan", Static).content)
        assert plan.splitlines()[0].endswith(": ~/ws/.dsh/workspace-memory/records.jsonl")
        assert str(tmp_path) not in plan


async def test_the_review_table_at_80_columns_names_each_scope(tmp_path: Path) -> None:
    app = make_app(*long_store(tmp_path), user="carol")
    async with app.run_test(size=SMALL) as pilot:
        await loaded(pilot, app)
        header = next(line for line in strips(app) if "Title" in line)
        assert "Scope" in header and "Status" not in header
        app.pane("review").set_filter("shared")
        await pilot.pause()
        row = next(s for s in strips(app) if "Shared rule" in s)
        assert "SHARED" in row
