"""Citations in the app, through Textual's pilot on real files: a verified record whose cited
code changes is marked, waits in the Review tab with why, answers the ``rereview`` filter and
cannot be pinned; ``d`` shows the diff since the citation, from which R re-verifies, e edits,
a archives and f forgets; the form takes citations; the first frame never waits for a check.
"""

from __future__ import annotations

import threading
from pathlib import Path

from citing import store_on, verified, workspace

from dsh_memory_tui.agent_view import eligible
from dsh_memory_tui.app import source_review
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.app.screens.source_diff import CitationLinesDialog, SourceDiffScreen
from dsh_memory_tui.app.widgets.ordered_keys import OrderedInput
from dsh_memory_tui.present import SOURCE_MARK
from dsh_memory_tui.sources import State

from .helpers import (
    SIZE,
    current,
    goto,
    make_app,
    screen_text,
    select,
    table_keys,
    wait_for,
)


def _break(ws: Path) -> None:
    path = ws / "app.py"
    path.write_text(path.read_text().replace("line 3", "line three"))


def _marked(app, tab: str, rid: str) -> bool:
    row = app.pane(tab).table.get_row(rid)
    return row is not None and SOURCE_MARK in row.cells[2]


async def test_a_changed_cited_line_marks_the_record_and_sends_it_to_review(tmp_path):
    home, ws = workspace(tmp_path)
    rid = verified(store_on(home, ws), "app.py:3-3", title="Line three")
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await wait_for(pilot, lambda: app.source_review.states.checked, what="a first check")
        assert not _marked(app, "project", rid)
        assert rid not in app.pane("review").records
        _break(ws)  # while the app is open: no store file changes
        await wait_for(pilot, lambda: _marked(app, "project", rid), what="the marker")
        assert rid in app.pane("review").records
        await select(pilot, app, "project", rid)
        await wait_for(
            pilot, lambda: "re-review" in app.pane("project").detail.text, what="the detail's why"
        )
        text = app.pane("project").detail.text
        assert "changed app.py:3-3  (lines 3-3 changed)" in text


async def test_the_rereview_filter_shows_the_records_whose_code_changed(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    bad = verified(store, "app.py:3-3", title="Line three")
    good = verified(store, "app.py:7-7", title="Line seven")
    _break(ws)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await wait_for(pilot, lambda: _marked(app, "project", bad), what="the marker")
        assert set(table_keys(app, "project")) == {bad, good}
        await pilot.press("slash", *"rereview")
        await wait_for(pilot, lambda: table_keys(app, "project") == [bad], what="the filter")


async def test_d_shows_the_diff_and_R_reverifies_with_todays_text(tmp_path):
    home, ws = workspace(tmp_path)
    rid = verified(store_on(home, ws), "app.py:3-3", title="Line three")
    _break(ws)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: rid in table_keys(app, "review"), what="the review row")
        await select(pilot, app, "review", rid)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SourceDiffScreen), what="the diff")
        shown = screen_text(app)
        assert "-line 3" in shown and "+line three" in shown
        # Opening it recorded the host's stale transition.
        await wait_for(
            pilot,
            lambda: store_on(home, ws).get(rid).governance.verification.value == "stale",
            what="the stale transition",
        )
        await pilot.press("R")
        await wait_for(
            pilot,
            lambda: store_on(home, ws).get(rid).governance.verification.value == "verified",
            what="the re-verify",
        )
        record = store_on(home, ws).get(rid)
        (check,) = store_on(home, ws).sources.checks(record)
        assert check.state is State.OK
        await wait_for(pilot, lambda: rid not in table_keys(app, "review"), what="review left")


async def test_a_and_f_from_the_diff_archive_and_forget(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    first = verified(store, "app.py:3-3", title="First")
    second = verified(store, "app.py:3-3", title="Second")
    _break(ws)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await wait_for(pilot, lambda: _marked(app, "project", first), what="the marker")
        await select(pilot, app, "project", first)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SourceDiffScreen), what="the diff")
        await pilot.press("a")
        await wait_for(
            pilot,
            lambda: store_on(home, ws).get(first).status.value == "archived",
            what="the archive",
        )
        await select(pilot, app, "project", second)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SourceDiffScreen), what="the diff")
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
        await pilot.click("#yes")
        await wait_for(
            pilot,
            lambda: store_on(home, ws).get(second).status.value == "forgotten",
            what="the forget",
        )


async def test_e_from_the_diff_opens_the_form_with_the_citations(tmp_path):
    home, ws = workspace(tmp_path)
    rid = verified(store_on(home, ws), "app.py:3-3", title="Line three")
    _break(ws)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: rid in table_keys(app, "review"), what="the review row")
        await select(pilot, app, "review", rid)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SourceDiffScreen), what="the diff")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        cites = app.screen.query_one("#citations")
        assert cites.value == "app.py:3-3"
        cites.value = "app.py:4-5"
        await pilot.press("ctrl+s")
        await wait_for(
            pilot,
            lambda: (
                [r.id for r in store_on(home, ws).get(rid).governance.sourceRefs] == ["app.py:4-5"]
            ),
            what="the new citation",
        )


async def test_the_form_refuses_a_citation_past_the_end_and_writes_nothing(tmp_path):
    home, ws = workspace(tmp_path)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        app.screen.query_one("#title").value = "Cited"
        app.screen.query_one("#content").text = "about the app"
        app.screen.query_one("#citations").value = "app.py:5-99"
        await pilot.press("ctrl+s")
        await wait_for(
            pilot, lambda: "lines 5-99 are past its end" in screen_text(app), what="the error"
        )
        assert isinstance(app.screen, RecordForm)
        assert store_on(home, ws).records() == []


async def test_pin_is_refused_while_the_cited_code_changed(tmp_path):
    home, ws = workspace(tmp_path)
    rid = verified(store_on(home, ws), "app.py:3-3", title="Line three")
    _break(ws)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await wait_for(pilot, lambda: _marked(app, "project", rid), what="the marker")
        await select(pilot, app, "project", rid)
        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: any("its cited code changed" in n.message for n in app._notifications),
            what="the refusal",
        )
        assert store_on(home, ws).get(rid).governance.pinnedAt is None


async def test_the_first_frame_does_not_wait_for_citation_checks(tmp_path, monkeypatch):
    home, ws = workspace(tmp_path)
    rid = verified(store_on(home, ws), "app.py:3-3", title="Line three")
    _break(ws)
    release = threading.Event()
    real_check = source_review.check

    def slow_check(sources, records):
        release.wait(30)  # a disk that takes its time
        return real_check(sources, records)

    monkeypatch.setattr(source_review, "check", slow_check)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await wait_for(pilot, lambda: rid in table_keys(app, "project"), what="the row")
        assert not app.source_review.states.checked
        assert not _marked(app, "project", rid)
        release.set()
        await wait_for(pilot, lambda: _marked(app, "project", rid), what="the marker")


def _move_and_change(ws: Path) -> None:
    """Two lines above (lines 3-4 move to 5-6), and line 4 changed."""
    text = (ws / "app.py").read_text().replace("line 4\n", "line 4 (changed)\n")
    (ws / "app.py").write_text("# a\n# b\n" + text)


async def test_R_reanchors_a_citation_that_moved_and_changed_and_it_is_served_again(tmp_path):
    home, ws = workspace(tmp_path)
    rid = verified(store_on(home, ws), "app.py:3-4", title="Lines three and four")
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await wait_for(pilot, lambda: app.source_review.states.checked, what="a first check")
        _move_and_change(ws)
        await wait_for(pilot, lambda: _marked(app, "project", rid), what="the marker")
        store = store_on(home, ws)
        assert not eligible(store.get(rid), store.clock(), store.sources)
        await select(pilot, app, "project", rid)
        await pilot.press("R")  # on the table: the record is verified, its code changed
        await wait_for(
            pilot,
            lambda: [r.id for r in current(home, ws, rid).governance.sourceRefs] == ["app.py:5-6"],
            what="the re-anchored citation",
        )
        store = store_on(home, ws)
        record = store.get(rid)
        assert [r.governance.verification.value for r in store.history(rid)[-2:]] == [
            "stale",
            "verified",
        ]
        assert eligible(record, store.clock(), store.sources)
        await wait_for(pilot, lambda: not _marked(app, "project", rid), what="the marker gone")


async def test_R_asks_where_text_it_cannot_find_is_now_prefilled_with_its_guess(tmp_path):
    home, ws = workspace(tmp_path)
    rid = verified(store_on(home, ws), "app.py:3-4", title="Lines three and four")
    (ws / "app.py").write_text("alpha\nbeta\ngamma\ndelta\nepsilon\n")
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: rid in table_keys(app, "review"), what="the review row")
        await select(pilot, app, "review", rid)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SourceDiffScreen), what="the diff")
        await pilot.press("R")
        await wait_for(
            pilot, lambda: isinstance(app.screen, CitationLinesDialog), what="the question"
        )
        (box,) = app.screen.query(OrderedInput)
        assert box.value == "app.py:3-4"  # its best guess: where it was
        assert "re-verify did not find this text" in screen_text(app)
        await pilot.press("end", "backspace", "backspace", "backspace", *"2-3", "enter")
        await wait_for(
            pilot,
            lambda: current(home, ws, rid).governance.verification.value == "verified",
            what="the re-verify",
        )
        (ref,) = current(home, ws, rid).governance.sourceRefs
        assert ref.id == "app.py:2-3"
        store = store_on(home, ws)
        assert eligible(store.get(rid), store.clock(), store.sources)


def test_reverify_is_offered_for_a_verified_record_whose_code_changed(tmp_path):
    from dsh_memory_tui.app.actions import Here, refusal

    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    record = store.get(verified(store, "app.py:3-3", title="Line three"))
    now = store.clock()
    assert refusal("reverify", [record], Here(now)) is not None  # holds: nothing to re-verify
    assert refusal("reverify", [record], Here(now, rereview={record.id})) is None


async def test_ctrl_y_in_the_form_cites_the_method_holding_a_line_range_and_saves_it(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "net.py").write_text(
        "class Client:\n    def fetch(self, url):\n        return get(url)\n\n\nx = 1\n"
    )
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        app.screen.query_one("#title").value = "Fetch"
        app.screen.query_one("#content").text = "fetch gets the url"
        cites = app.screen.query_one("#citations")
        cites.value = "net.py:6-6"  # not inside a definition
        await pilot.press("ctrl+y")
        assert cites.value == "net.py:6-6"
        assert "No line range here lies inside" in screen_text(app)
        cites.value = "net.py:3-3, app.py:2-3"
        await pilot.press("ctrl+y")
        assert cites.value == "net.py#Client.fetch, app.py:2-3"
        assert "1 line range now cites the function or class holding it" in screen_text(app)
        await pilot.press("ctrl+s")
        await wait_for(
            pilot,
            lambda: (
                [[ref.id for ref in r.governance.sourceRefs] for r in store_on(home, ws).records()]
                == [["net.py#Client.fetch", "app.py:2-3"]]
            ),
            what="the symbol citation saved",
        )
