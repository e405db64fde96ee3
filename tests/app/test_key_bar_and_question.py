"""The key bar (our footer, one line of text) and the one-line question for a reason: what a
reviewer sees and types, on the real app and real files."""

from __future__ import annotations

from textual.widgets import Input

from dsh_memory_tui.app.screens.dialogs import HelpScreen, ReasonDialog
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.app.widgets.ask_bar import AskBar
from dsh_memory_tui.app.widgets.keybar import KeyBar
from dsh_memory_tui.model import Verification

from .helpers import (
    DECISION,
    PROPOSAL,
    SIZE,
    burst,
    current,
    make_app,
    reason_asked,
    select,
    table_keys,
    wait_for,
)


async def test_the_key_bar_shows_what_fits_and_points_to_help(fixture_home):
    home, ws = fixture_home
    for width in (80, 120, 250):
        app = make_app(home, ws)
        async with app.run_test(size=(width, 30)) as pilot:
            bar = app.query_one(KeyBar)
            await wait_for(pilot, lambda b=bar: "v Verify" in b.text, what="the keys")
            text = bar.text
            assert len(text) <= width
            assert text.startswith("space Mark v Verify x Reject")
            assert text.endswith("^p palette")
            if width < 250:  # not every key fits: the rest are one key away
                assert "… ? Help" in text
            else:
                assert "… " not in text and "? Help" in text and "q Quit" in text


async def test_clicking_a_key_in_the_bar_presses_it(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.query_one(KeyBar)
        await wait_for(pilot, lambda: "? Help" in bar.text, what="the keys")
        x = bar.text.index("? Help")
        await pilot.click(KeyBar, offset=(x + 2, 0))
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")


async def test_an_unavailable_action_is_dim_in_the_bar_and_clicking_it_does_nothing(
    fixture_home,
):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        # A verified record: verify is not allowed (the host's rules), edit is.
        await select(pilot, app, "project", DECISION)
        bar = app.query_one(KeyBar)
        await wait_for(
            pilot,
            lambda: any(k.description == "Verify" and not k.enabled for k in bar.keys),
            what="verify disabled",
        )
        assert any(k.description == "Edit" and k.enabled for k in bar.keys)
        await pilot.click(KeyBar, offset=(bar.text.index("v Verify"), 0))
        await pilot.pause()
        assert app.screen is app.screen_stack[0] and not reason_asked(app)
    assert current(home, ws, DECISION).governance.revision == 2


async def test_one_records_reason_is_asked_in_one_line_and_typed_keys_land_in_it(
    fixture_home,
):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        # "v" and the reason in one burst: "e" must not open the edit form, "a" not archive.
        burst(app, "v", *"read the code", "enter")
        await wait_for(
            pilot,
            lambda: current(home, ws, PROPOSAL).governance.verification is Verification.VERIFIED,
            what="verified",
        )
        assert not isinstance(app.screen, (RecordForm, ReasonDialog))
        bar = app.query_one(AskBar)
        await wait_for(pilot, lambda: not bar.asking and bar.display is False)
        assert app.query_one("#status-line").display  # the status line is back
        assert app.focused is app.pane("project").table
    record = current(home, ws, PROPOSAL)
    assert record.governance.reviewNote == "read the code"
    assert record.status.value == "active"  # nothing archived by the "a" in "read"


async def test_keys_typed_after_the_reasons_enter_go_to_the_app_not_the_reason(fixture_home):
    """One burst (tmux, a paste, a laggy ssh link): "v", the reason, Enter and "?". The
    reason is what came before Enter; "?" opens the help."""
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        burst(app, "v", *"ok", "enter", "?")
        await wait_for(
            pilot,
            lambda: current(home, ws, PROPOSAL).governance.verification is Verification.VERIFIED,
            what="verified",
        )
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
    assert current(home, ws, PROPOSAL).governance.reviewNote == "ok"


async def test_keys_typed_behind_enter_in_the_reason_box_go_to_the_app(fixture_home):
    """The question already has the focus; the end of the reason, Enter and "?" come in one
    read of the terminal: the reason ends before Enter, "?" opens the help (tmux showed
    "looks right", Enter, "q" saved as "looks rightq" and no quit)."""
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        await pilot.press("v", *"looks")
        await wait_for(pilot, lambda: reason_asked(app), what="the question")
        burst(app, *" right", "enter", "?")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        await wait_for(
            pilot,
            lambda: current(home, ws, PROPOSAL).governance.verification is Verification.VERIFIED,
            what="verified",
        )
    assert current(home, ws, PROPOSAL).governance.reviewNote == "looks right"


async def _batch_reason_asked(pilot, app) -> list[str]:
    """The review queue's first two rows marked and ``v`` pressed: the batch's reason dialog
    is up. Returns the marked ids."""
    await select(pilot, app, "review", PROPOSAL)
    table = app.pane("review").table
    marked = table_keys(app, "review")[:2]
    table.move_cursor_to_key(marked[0])
    await pilot.press("space", "space", "v")
    await wait_for(pilot, lambda: isinstance(app.screen, ReasonDialog), what="the dialog")
    return marked


async def test_keys_typed_behind_enter_in_the_batch_reason_dialog_go_to_the_app(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        marked = await _batch_reason_asked(pilot, app)
        await pilot.press(*"both")
        burst(app, *" fine", "enter", "?")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        await wait_for(
            pilot,
            lambda: all(
                current(home, ws, rid).governance.verification is Verification.VERIFIED
                for rid in marked
            ),
            what="both verified",
        )
    assert [current(home, ws, rid).governance.reviewNote for rid in marked] == ["both fine"] * 2


async def test_quit_typed_behind_the_batch_reasons_enter_quits_once_both_are_verified(
    fixture_home,
):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        marked = await _batch_reason_asked(pilot, app)
        burst(app, *"ok", "enter", "ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None, what="the quit")
    assert [current(home, ws, rid).governance.reviewNote for rid in marked] == ["ok"] * 2


async def test_the_question_names_the_record_and_moving_away_drops_it(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        title = current(home, ws, PROPOSAL).title
        await pilot.press("x")
        await wait_for(pilot, lambda: reason_asked(app), what="the question")
        bar = app.query_one(AskBar)
        assert bar.question.startswith(f"Reject “{title}”?")
        assert "enter: reject" in bar.query_one(Input).placeholder
        await pilot.press(*"not ours")
        await pilot.click(f"#table-{app.active_pane.spec.id}")  # focus leaves the question
        await wait_for(pilot, lambda: not bar.asking, what="the question dropped")
        await pilot.press("enter")  # on the table now: opens the detail, writes nothing
        await pilot.pause()
    assert current(home, ws, PROPOSAL).governance.revision == 1


async def test_keys_before_v_in_one_burst_choose_the_record_it_asks_about(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "review", PROPOSAL)
        table = app.pane("review").table
        keys = table_keys(app, "review")
        below = keys[keys.index(PROPOSAL) + 1]
        burst(app, "down", "v")
        await wait_for(pilot, lambda: reason_asked(app), what="the question")
        assert table.cursor_key == below
        title = current(home, ws, below).title
        assert app.query_one(AskBar).question.startswith(f"Verify “{title[:20]}")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not reason_asked(app))
        # Marks made in the same burst count too: the batch's dialog lists both.
        table.move_cursor_to_key(PROPOSAL)
        await pilot.pause()
        burst(app, "space", "space", "v")
        await wait_for(pilot, lambda: isinstance(app.screen, ReasonDialog), what="the batch")
        assert len(table.marked_keys) == 2
