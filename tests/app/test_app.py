"""The reviewer's app, driven as a user would through Textual's pilot, on real store files."""

from __future__ import annotations

import json
import os

from textual.widgets import Button, Input, Select, Static, TextArea

from dsh_memory_tui.app.app import ACTIONS
from dsh_memory_tui.app.panes import GROUP_PREFIX
from dsh_memory_tui.app.screens.dialogs import (
    ConfirmDialog,
    CopyDialog,
    HelpScreen,
)
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.model import Scope, SourceRef, Status, Verification
from dsh_memory_tui.store import MemoryStore

from .helpers import (
    DECISION,
    PROPOSAL,
    SIZE,
    current,
    goto,
    make_app,
    pad_past_cap,
    reason_asked,
    screen_text,
    select,
    table_keys,
    table_titles,
    wait_for,
)
from .test_layout import _rendered

PATHLIB = "memory:agent:preference:b9c48cb01720800e4ca82984fcb042d9"
PYTEST = "memory:agent:preference:e7f137f5a11b5c7df5a6b47b57a73cab"  # alice's, user scope
LEGACY = "memory:agent:fact:a83c546dbc4d13dcd6c93f01a9f18630"  # an agent's, no governance
SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"
ENGLISH = "memory:user:preference:e66c0e9819428e8a34c6049fa9998118"  # alice's unverified draft
BOB = "memory:user:preference:3c19c840d9f9bacda62d2465be71c2d9"


async def verify_with_reason(pilot, app, reason: str = "") -> None:
    """``v``, then the optional reason (none unless given) and Enter."""
    await pilot.press("v")
    await wait_for(pilot, lambda: reason_asked(app), what="the reason")
    if reason:
        await pilot.press(*reason)
    await pilot.press("enter")


async def test_review_queue_lists_waiting_proposals_with_a_count(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        keys = table_keys(app, "review")
        # The agent's proposals, and the drafts a person wrote and never verified (not served).
        assert set(keys) == {PROPOSAL, PATHLIB, PYTEST, ENGLISH, SHARED}
        assert DECISION not in keys  # user-authored and verified: nothing to decide
        # An agent's record without governance reads as derived (the host's defaults): it
        # waits only when derived records are shown too.
        assert LEGACY not in keys
        assert "Review (5)" in screen_text(app)
        assert "5 waiting: 3 proposal · 2 draft  (D: +2 session digests)" in screen_text(app)
        await pilot.press("D")
        await wait_for(pilot, lambda: LEGACY in table_keys(app, "review"), what="derived shown")
        derived = set(table_keys(app, "review")) - {PROPOSAL, PATHLIB, PYTEST, ENGLISH, SHARED}
        assert len(derived) == 2  # the legacy record and the session's auto-written digest
        assert "Review (7)" in screen_text(app)


async def test_second_users_records_never_appear(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        for tab in ("review", "session", "project", "shared", "user"):
            await goto(pilot, app, tab)
            assert BOB not in table_keys(app, tab)
            assert "bob" not in screen_text(app).lower()
        assert len(table_keys(app, "user")) == 2


async def test_verify_key_verifies_the_cursor_record(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        app.pane("review").table.move_cursor_to_key(PROPOSAL)
        await verify_with_reason(pilot, app)
        await wait_for(pilot, lambda: PROPOSAL not in table_keys(app, "review"))
        assert "Review (4)" in screen_text(app)
    record = current(home, ws, PROPOSAL)
    assert record.governance.verification is Verification.VERIFIED
    assert record.governance.verifiedBy == "user"  # the host's actor for a human verify
    assert record.governance.reviewedBy == "alice"


async def test_a_refused_verify_is_one_line_and_writes_nothing(fixture_home):
    home, ws = fixture_home
    data = ws / ".dsh" / "workspace-memory" / "records.jsonl"
    before = data.read_bytes()
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)  # verified already
        await pilot.press("v")
        await wait_for(pilot, lambda: app._notifications, what="the notification")
        [note] = list(app._notifications)
        assert note.title == "error[INVALID_TRANSITION]"
        assert "\n" not in note.message and DECISION in note.message
        assert "verified" in note.message
        assert app.is_running and app.screen is app.screen_stack[0]
        await pilot.press("down")  # the app still answers
    assert data.read_bytes() == before


async def test_a_batch_writes_what_the_rules_allow_and_says_what_it_skipped(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)  # verified: refused
        table = app.pane("project").table
        table.toggle_mark()
        table.move_cursor_to_key(PROPOSAL)  # unverified: verified
        table.toggle_mark()
        await verify_with_reason(pilot, app)
        await wait_for(pilot, lambda: app._notifications, what="the notification")
        [note] = list(app._notifications)
        head, *listed = note.message.split("\n")
        assert head == "verify: 1 record; 1 skipped:"  # then each skipped record and why
        assert len(listed) == 1 and listed[0].startswith("• “Use PostgreSQL")
        assert listed[0].endswith(": only unverified memory can be verified; this one is verified")
        assert table.marked_in_order() == []
    assert current(home, ws, PROPOSAL).governance.verification is Verification.VERIFIED
    assert current(home, ws, DECISION).governance.revision == 2  # untouched


async def test_an_edited_verified_record_is_stale_until_reverified(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        app.screen.query_one("#title", Input).value = "Use PostgreSQL 17"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm))
        await wait_for(
            pilot,
            lambda: app.record(DECISION).governance.verification is Verification.STALE,
            what="the record stale",
        )
        await pilot.press("v")  # verify refuses a stale record, and says what does it
        await wait_for(
            pilot,
            lambda: any("R re-verifies" in n.message for n in app._notifications),
            what="the hint",
        )
        await pilot.press("R")
        await wait_for(
            pilot,
            lambda: current(home, ws, DECISION).governance.verification is Verification.VERIFIED,
            what="re-verified",
        )
    gov = current(home, ws, DECISION).governance
    assert gov.revision == 4 and gov.verifiedBy == "user"


async def test_pin_then_unpin(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)  # verified and active: may be pinned
        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: current(home, ws, DECISION).governance.pinnedAt is not None,
            what="pinned",
        )
        await wait_for(pilot, lambda: "pinned" in app.pane("project").detail.text)
        await pilot.press("p")
        await wait_for(
            pilot, lambda: current(home, ws, DECISION).governance.pinnedAt is None, what="unpinned"
        )
        await select(pilot, app, "project", PROPOSAL)  # unverified: the host refuses a pin
        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: any(n.title == "error[INVALID_TRANSITION]" for n in app._notifications),
            what="the refusal",
        )
    assert current(home, ws, PROPOSAL).governance.revision == 1


async def test_reject_asks_for_a_reason_and_records_it(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        app.pane("review").table.move_cursor_to_key(PATHLIB)
        await pilot.press("x")
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        await pilot.press(*"we use os.path here", "enter")
        await wait_for(pilot, lambda: PATHLIB not in table_keys(app, "review"))
    gov = current(home, ws, PATHLIB).governance
    assert gov.verification is Verification.REJECTED
    assert gov.reviewNote == "we use os.path here"


async def test_bulk_marked_rows_are_verified_together(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        table = app.pane("review").table
        table.move_cursor_to_key(table_keys(app, "review")[0])
        await pilot.press("space", "space")
        assert len(table.marked_in_order()) == 2
        marked = table.marked_in_order()
        await verify_with_reason(pilot, app)
        await wait_for(pilot, lambda: not set(marked) & set(table_keys(app, "review")))
        assert table.marked_in_order() == []
    for rid in marked:
        assert current(home, ws, rid).governance.verification is Verification.VERIFIED


async def test_new_record_form_shows_errors_beside_fields_then_saves(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        await pilot.press("ctrl+s")
        await pilot.pause()
        form = app.screen
        assert "A title is required." in str(form.query_one("#title-error").render())
        assert "Content is required." in str(form.query_one("#content-error").render())
        form.query_one("#title", Input).value = "Deploys go through ArgoCD"
        form.query_one("#content", TextArea).text = "Never `kubectl apply` by hand."
        form.query_one("#tags", Input).value = "ops, deploy"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm))
        await wait_for(pilot, lambda: "Deploys go through ArgoCD" in table_titles(app, "project"))
    records = MemoryStore.open(home, ws, "alice").records(Scope.PROJECT)
    made = [r for r in records if r.title == "Deploys go through ArgoCD"]
    assert len(made) == 1 and made[0].tags == ["ops", "deploy"]
    assert made[0].governance.origin.value == "user-authored"


async def test_the_form_checks_the_hosts_limits_in_bytes(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        form = app.screen
        form.query_one("#title", Input).value = "é" * 129  # 129 characters, 258 bytes
        form.query_one("#content", TextArea).text = "x"
        form.query_one("#tags", Input).value = ", ".join(f"t{n}" for n in range(33))
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "at most 256 bytes" in str(form.query_one("#title-error").render())
        assert "At most 32 tags" in str(form.query_one("#tags-error").render())
        form.query_one("#title", Input).value = "é" * 128  # 256 bytes: the host takes it
        form.query_one("#tags", Input).value = "ok"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm))
    assert any(r.title == "é" * 128 for r in MemoryStore.open(home, ws, "alice").records())


async def test_edit_keeps_the_id_and_bumps_the_revision(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        app.screen.query_one("#title", Input).value = "Use PostgreSQL 17"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm))
    record = current(home, ws, DECISION)
    assert record.title == "Use PostgreSQL 17"
    assert record.governance.revision == 3
    # The host's rule: an edit of a verified record makes it stale.
    assert record.governance.verification is Verification.STALE
    assert record.governance.verifiedAt is None


async def test_edit_conflict_is_merged_field_by_field_keeping_the_reviewers_text(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        # Another reviewer edits the same record meanwhile.
        MemoryStore.open(home, ws, "bob").edit(DECISION, 2, title="Their title")
        form = app.screen
        form.query_one("#title", Input).value = "My title"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        assert "revision 3" in str(form.query_one("#merge-note").render())
        assert current(home, ws, DECISION).title == "Their title"  # nothing overwritten
        assert form.query_one("#title", Input).value == "My title"  # nothing thrown away
        assert form.choices == {"title": "mine"}  # both changed it: mine until told
        await wait_for(pilot, lambda: app.focused is not None and app.focused.name == "mine:title")
        await pilot.click("Button.merge-choice.-theirs")
        await wait_for(pilot, lambda: form.query_one("#title", Input).value == "Their title")
        assert app.focused is not None and app.focused.name == "theirs:title"
        await pilot.click("Button.merge-choice.-mine")
        await wait_for(pilot, lambda: form.query_one("#title", Input).value == "My title")
        form.query_one("#title", Input).value = "Merged title"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm))
    record = current(home, ws, DECISION)
    assert (record.title, record.governance.revision) == ("Merged title", 4)


async def test_session_records_cannot_be_edited(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "session")
        await pilot.pause()
        keys = [k for k in table_keys(app, "session") if not k.startswith(GROUP_PREFIX)]
        assert len(keys) == 1
        app.pane("session").table.move_cursor_to_key(keys[0])
        await pilot.pause()
        assert app.check_action("edit", ()) is None  # shown disabled in the footer
        await pilot.press("e")
        await pilot.pause()
        assert not isinstance(app.screen, RecordForm)


async def test_session_tab_groups_records_by_session(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "session")
        await pilot.pause()
        keys = table_keys(app, "session")
        # The group is the session file's scopeKey: <sessionId>|<rootId of the workspace>.
        assert keys[0] == f"{GROUP_PREFIX}session-abc|{app.store.paths.root_id}"
        assert "session-abc · this workspace  (1)" in screen_text(app)
        assert app.store.paths.root_id not in screen_text(app)
        # Another workspace's session (same home) is its own group, its root shortened.
        other = "root:" + "ab" * 32
        MemoryStore.open(home, ws, "alice").create(
            "session", "fact", "Elsewhere", "x", session=("session-xyz", other)
        )
        app.sync()
        await wait_for(
            pilot,
            lambda: f"{GROUP_PREFIX}session-xyz|{other}" in table_keys(app, "session"),
            what="the other group",
        )
        assert "session-xyz · root:abababababab…  (1)" in screen_text(app)


async def test_shared_write_asks_for_confirmation_naming_the_file(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "shared", SHARED)
        await verify_with_reason(pilot, app)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert "shared.jsonl" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert current(home, ws, SHARED).governance.verification is Verification.UNVERIFIED
        await verify_with_reason(pilot, app)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.click("#yes")
        await wait_for(
            pilot,
            lambda: current(home, ws, SHARED).governance.verification is Verification.VERIFIED,
        )


async def test_archive_hides_and_restore_brings_back(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("a")
        await wait_for(pilot, lambda: DECISION not in table_keys(app, "project"))
        await pilot.press("A")  # show archived/forgotten
        await wait_for(pilot, lambda: DECISION in table_keys(app, "project"))
        app.pane("project").table.move_cursor_to_key(DECISION)
        await pilot.press("u")
        await wait_for(pilot, lambda: current(home, ws, DECISION).status is Status.ACTIVE)
        assert current(home, ws, DECISION).governance.revision == 4


async def test_forget_asks_then_erases_the_text_from_the_directory(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.click("#yes")
        await wait_for(pilot, lambda: DECISION not in table_keys(app, "project"))
    assert current(home, ws, DECISION).status is Status.FORGOTTEN
    store_dir = ws / ".dsh" / "workspace-memory"
    for path in store_dir.iterdir():
        assert b"pgbouncer" not in path.read_bytes(), path


async def test_copy_to_scope_says_who_will_see_it(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CopyDialog))
        text = screen_text(app)
        assert "every project of this user" in text
        assert "everyone sharing this project" in text
        await pilot.press("down", "enter")  # the second choice: user
        await wait_for(
            pilot,
            lambda: any(
                r.title.startswith("Use PostgreSQL")
                for r in MemoryStore.open(home, ws, "alice").records(Scope.USER)
            ),
        )
    copy = next(
        r
        for r in MemoryStore.open(home, ws, "alice").records(Scope.USER)
        if r.title.startswith("Use PostgreSQL")
    )
    original = current(home, ws, DECISION)
    assert {"kind": "import", "id": DECISION, "contentHash": original.contentHash} in [
        s.model_dump(exclude_none=True) for s in copy.governance.sourceRefs
    ]
    # Copying it again: the host's merge finds the same content there; nothing is written.
    user_file = home / "workspace-memory" / "user.jsonl"
    before = user_file.read_bytes()
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CopyDialog))
        await pilot.press("down", "enter")
        await wait_for(
            pilot,
            lambda: any("nothing written" in n.message for n in app._notifications),
            what="the message",
        )
    assert user_file.read_bytes() == before


async def test_filter_narrows_the_table(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("/")
        await pilot.press(*"ruff")
        await wait_for(pilot, lambda: table_keys(app, "review") == [PROPOSAL])
        app.pane("review").query_one(Input).value = "type:pref"
        prefs = {PATHLIB, PYTEST, ENGLISH}
        await wait_for(pilot, lambda: set(table_keys(app, "review")) == prefs)
        app.pane("review").query_one(Input).value = ""
        await wait_for(pilot, lambda: len(table_keys(app, "review")) == 5)


async def test_quarantine_and_newer_schema_lines_are_reported(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.pause()
        text = screen_text(app)
        assert "2 corrupt line(s) skipped in records.jsonl" in text
        assert "newer schema" in text
        # A write moves them to the quarantine file, one JSON entry per line (the host's).
        app.pane("project").table.move_cursor_to_key(PROPOSAL)
        await verify_with_reason(pilot, app)
        await wait_for(
            pilot,
            lambda: "2 corrupt line(s) quarantined in records.jsonl.corrupt" in screen_text(app),
            what="the quarantine banner",
        )
        assert "skipped in records.jsonl" not in screen_text(app)
    corrupt = fixture_home[1] / ".dsh" / "workspace-memory" / "records.jsonl.corrupt"
    entries = [json.loads(line) for line in corrupt.read_bytes().splitlines()]
    assert len(entries) == 2 and all(set(e) == {"line", "capturedAt", "raw"} for e in entries)


async def test_lines_of_another_workspace_are_counted_not_shown(fixture_home):
    home, ws = fixture_home
    data = ws / ".dsh" / "workspace-memory" / "records.jsonl"
    first = json.loads(data.read_bytes().splitlines()[2])  # the proposal
    moved = dict(first, id="memory:agent:convention:" + "1" * 32, scopeKey="root:" + "cd" * 32)
    earlier = dict(first, id="memory:agent:convention:" + "2" * 32, scopeKey=str(ws))
    with open(data, "ab") as f:
        for obj in (moved, moved):
            f.write(json.dumps(obj).encode() + b"\n")
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        assert "2 line(s) in records.jsonl belong to another workspace" in screen_text(app)
        with open(data, "ab") as f:  # appended while the app is open: the banner follows
            f.write(json.dumps(earlier).encode() + b"\n")
        app.sync()
        await pilot.pause()
        text = screen_text(app)
        assert "2 line(s) in records.jsonl belong to another workspace" in text
        assert "1 line(s) in records.jsonl keyed by this workspace's path" in text
        assert moved["id"] not in app.index and earlier["id"] not in app.index
        assert moved["id"] not in table_keys(app, "review")


async def test_read_only_file_shows_a_banner_and_disables_writes(fixture_home):
    home, ws = fixture_home
    data = pad_past_cap(ws)
    before = data.read_bytes()
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        # A store this big loads after the first frame (a preview first): wait for the banner.
        await wait_for(pilot, lambda: "read-only" in screen_text(app), what="the banner")
        app.pane("project").table.move_cursor_to_key(DECISION)
        await pilot.pause()
        assert app.check_action("verify", ()) is None
        await pilot.press("v")
        await pilot.pause()
    assert data.read_bytes() == before


async def test_export_and_import_dialogs(fixture_home, tmp_path):
    from dsh_memory_tui.app.screens.bundles import ExportDialog, ImportDialog

    home, ws = fixture_home
    out = tmp_path / "out.json"
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog))
        app.screen.query_one("#path", Input).value = str(out)
        await pilot.click("#ok")
        await wait_for(pilot, lambda: out.exists())
        assert os.stat(out).st_mode & 0o777 == 0o600
        # Import into a fresh workspace's user scope: the plan first, then the write.
        fresh = MemoryStore.open(home, tmp_path / "other-ws", "carol")
        app2_records = fresh.records(Scope.USER)
        assert app2_records == []
    app = make_app(home, tmp_path / "other-ws", user="carol")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("I")
        await wait_for(pilot, lambda: isinstance(app.screen, ImportDialog))
        dialog = app.screen
        dialog.query_one("#path", Input).value = str(out)
        dialog.query_one("#target", Select).value = Scope.USER
        await pilot.click("#preview")
        await wait_for(pilot, lambda: "new" in str(dialog.query_one("#plan").render()))
        assert not dialog.query_one("#ok", Button).disabled
        assert MemoryStore.open(home, tmp_path / "other-ws", "carol").records(Scope.USER) == []
        await pilot.click("#ok")
        await wait_for(pilot, lambda: not isinstance(app.screen, ImportDialog))
        await wait_for(pilot, lambda: len(table_keys(app, "review")) >= 5)
    imported = MemoryStore.open(home, tmp_path / "other-ws", "carol").records(Scope.USER)
    assert imported and all(r.governance.origin.value == "imported" for r in imported)


async def test_help_lists_the_keys(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=(120, 60)) as pilot:  # the whole list at once (it scrolls)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = screen_text(app)
        # The keys' column as drawn, a wrapped line joined again (a long line, as the filter's
        # list of words, wraps under its own text).
        told = " ".join(" ".join(_rendered(app.screen.query_one("#help-keys", Static))).split())
        for k in ACTIONS:  # every action, with its key
            assert " ".join(k.help.split()) in told, k.action
            assert f"{k.shown} " in text, k.action
        for words in ("mark a row", "scroll a long record", "command palette"):
            assert words in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))


async def test_compact_keeps_only_current_revisions(fixture_home):
    home, ws = fixture_home
    data = ws / ".dsh" / "workspace-memory" / "records.jsonl"
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("C")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.click("#yes")
        await wait_for(pilot, lambda: data.with_name("records.jsonl.bak").exists())
    assert DECISION.encode() in data.read_bytes()
    assert data.read_bytes().count(DECISION.encode()) == 1


async def test_command_palette_offers_every_action(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for name in (
            "Verify",
            "Reject",
            "New",
            "Edit",
            "Archive",
            "Restore",
            "Forget",
            "Copy to scope",
            "Export",
            "Import",
            "Filter",
            "Compact",
        ):
            assert any(t.startswith(name) for t in titles), name
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Verify")
        await pilot.pause(0.3)
        assert "Verify (v)" in screen_text(app)


async def test_a_long_record_scrolls_in_the_detail_pane_from_the_keyboard(fixture_home):
    home, workspace = fixture_home
    steps = "\n".join(f"{n}. step number {n} of the runbook" for n in range(1, 61))
    rid = (
        MemoryStore.open(home, workspace, "alice")
        .create("project", "convention", "Release runbook", steps)
        .id
    )
    app = make_app(home, workspace)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", rid)
        detail = app.pane("project").detail
        await wait_for(pilot, lambda: detail.shown == (rid, 1), what="the runbook shown")
        assert "Release runbook" in detail.text and "step number 60" in detail.text
        assert "step number 1 " in screen_text(app)
        assert "step number 30 " not in screen_text(app)
        await pilot.press("tab")  # from the table to the detail pane
        assert app.focused is detail
        await pilot.press("pagedown", "pagedown")
        await wait_for(
            pilot, lambda: "step number 30 " in screen_text(app), what="the runbook scrolled"
        )
        await pilot.press("escape", "down")  # back to the table, another record
        await wait_for(pilot, lambda: detail.shown not in (None, (rid, 1)))
        assert detail.scroll_y == 0


async def test_the_detail_pane_follows_a_theme_change(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        detail = app.pane("review").detail
        dark = next(iter(detail.render_line(0))).style
        app.theme = "textual-light"
        await pilot.pause()
        light = next(iter(detail.render_line(0))).style
        assert dark is not None and light is not None
        assert dark.bgcolor != light.bgcolor


async def test_review_count_on_the_tab_when_its_width_changes(fixture_home):
    home, workspace = fixture_home
    store = MemoryStore.open(home, workspace, "alice")

    def propose(n: int) -> None:
        store.propose(
            "project",
            "fact",
            f"fact {n}",
            f"content {n}",
            source_refs=[SourceRef(kind="session", id="s1")],
        )

    for n in range(4):  # 5 waiting in the fixture + 4 = 9
        propose(n)
    app = make_app(home, workspace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "Review (9)" in screen_text(app)
        await verify_with_reason(pilot, app)  # same width: the tab is repainted in place
        await wait_for(pilot, lambda: "Review (8)" in screen_text(app), what="Review (8)")
        propose(6)
        propose(7)
        app.sync()  # wider: the tab grows to fit
        await wait_for(pilot, lambda: "Review (10)" in screen_text(app), what="Review (10)")
        assert str(app.query_one("#tabs").get_tab("review").label) == "Review (10)"


async def test_detail_pane_follows_the_cursor_at_once_and_waits_while_a_key_is_held(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        table, detail = app.pane("project").table, app.pane("project").detail
        first = table.cursor_key
        await wait_for(pilot, lambda: detail.shown[0] == first)
        await pilot.pause(0.1)  # the cursor has rested
        await pilot.press("down")
        second = table.cursor_key
        assert second != first
        await pilot.pause()  # one message cycle: a single move draws the pane at once
        assert detail.shown == (second, app.record(second).governance.revision)
        await pilot.press("down", "down")  # a held key: the pane catches up when it rests
        await wait_for(pilot, lambda: detail.shown[0] == table.cursor_key != second)


async def test_the_detail_pane_moves_beside_the_table_on_a_wide_terminal_and_back(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table, detail = app.pane("review").table, app.pane("review").detail

        def beside() -> bool:
            return detail.region.x > table.region.x and detail.region.y == table.region.y

        assert not beside()
        await pilot.resize_terminal(180, 40)
        await wait_for(pilot, beside, what="the detail pane beside the table")
        await pilot.resize_terminal(100, 30)
        await wait_for(
            pilot,
            lambda: not beside() and detail.region.y > table.region.y,
            what="the detail pane below the table",
        )
        # Drawn again at the new width: no line runs past the pane.
        assert max(len(line) for line in detail.text.splitlines()) <= detail.region.width
