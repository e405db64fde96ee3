"""Going back to a record reuses its drawn lines; a new revision, a toggle or a theme never
shows the old ones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console, Group
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from dsh_memory_tui.app.widgets.detail import text_strips
from dsh_memory_tui.store import MemoryStore

from .helpers import DECISION, PROPOSAL, SIZE, make_app, select, wait_for


async def test_a_revisited_record_shows_what_it_showed_and_a_new_revision_its_own(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        detail = app.pane("project").detail
        await wait_for(pilot, lambda: detail.shown == (DECISION, 2))
        first = detail.text
        table = app.pane("project").table
        table.move_cursor_to_key(PROPOSAL)
        await wait_for(pilot, lambda: detail.shown is not None and detail.shown[0] == PROPOSAL)
        assert detail.text != first
        table.move_cursor_to_key(DECISION)
        await wait_for(pilot, lambda: detail.shown == (DECISION, 2))
        assert detail.text == first  # drawn again from what it kept
        assert len(detail._seen) >= 2

        await pilot.press("m")  # raw text: not the Markdown lines it kept
        await wait_for(pilot, lambda: "Content: raw text" in detail.text)
        await pilot.press("m")
        await wait_for(pilot, lambda: detail.text == first)

        store = MemoryStore.open(home, ws, "alice")
        store.edit(DECISION, title="A new title for the decision", base_revision=2)
        app.sync()
        await wait_for(pilot, lambda: detail.shown == (DECISION, 3), what="revision 3")
        assert "A new title for the decision" in detail.text
        assert "r3" in detail.text  # its history too

        dark = [seg.style for seg in detail.render_line(0)]
        app.theme = "textual-light"  # other colours: drawn again, same words
        await wait_for(pilot, lambda: [seg.style for seg in detail.render_line(0)] != dark)
        assert "A new title for the decision" in detail.text


# ---------------------------------------------------------------- the fast text path

_PIECES = st.sampled_from(["alpha", "β", "日本語", "x" * 30, "", " ", "🙂", "end  ", "a\tb"])
_STYLES = st.sampled_from([None, Style(bold=True), Style(color="red"), Style(dim=True)])


@st.composite
def _texts(draw: st.DrawFn) -> list[Text]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        text = Text(style=draw(st.sampled_from(["", "dim", Style(italic=True)])))
        for _ in range(draw(st.integers(0, 10))):
            text.append(draw(_PIECES) + draw(st.sampled_from(["", " ", "\n", "  "])), draw(_STYLES))
        out.append(text)
    return out


def _cells(strip: Strip) -> list[tuple[str, Style | None]]:
    return [(ch, seg.style) for seg in strip for ch in seg.text]


@settings(max_examples=400, deadline=None)
@given(_texts(), st.integers(3, 60))
def test_text_strips_draw_what_rich_draws_cell_for_cell(texts: list[Text], width: int) -> None:
    console = Console(width=200, color_system="truecolor", force_terminal=True)
    base = Style(color="white", bgcolor="black")
    options = console.options.update(width=width, highlight=False)
    rich = console.render_lines(Group(*[t.copy() for t in texts]), options, style=base, pad=True)
    ours = text_strips([t.copy() for t in texts], width, base, console)
    assert [_cells(Strip(line, width)) for line in rich] == [_cells(s) for s in ours]
