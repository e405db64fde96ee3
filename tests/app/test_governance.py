"""The host's governance model in the app, driven through Textual's pilot on real store files:
each key on a state the rules allow and on one they refuse (what they refuse is unavailable in
the footer and the palette, and says why when pressed; the whole table is
tests/app/test_action_rules.py's, without the app), a batch on a mixed selection, the conflict
view and "keep this version", markers and filters, the detail pane's facts, adopting a moved
project's records, and what the agent sees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from interop.corpus import CaseDirs, make_case_dirs
from interop.transitions import (
    Case,
    content_hash,
    expected_outcome,
    key_cases,
    outcome,
)
from interop.transitions import line as json_line
from textual.widgets import Static

from dsh_memory_tui.agent_view import Audience, agent_view
from dsh_memory_tui.app import app as app_module
from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.agent import AgentScreen
from dsh_memory_tui.app.screens.conflict import ConflictScreen
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog, ReasonDialog
from dsh_memory_tui.governance import tombstone_content, tombstone_title
from dsh_memory_tui.model import Verification
from dsh_memory_tui.present import CONFLICT_MARK, EXPIRED_MARK, PINNED_MARK
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, goto, reason_asked, select, table_keys, wait_for

# The app's key for each of the host's actions (``p`` pins an unpinned record, unpins a pinned
# one).
KEYS = {
    "verify": "v",
    "reject": "x",
    "reverify": "R",
    "pin": "p",
    "unpin": "p",
    "archive": "a",
    "restore": "u",
    "forget": "f",
}
DAY = 86_400_000


class RecordingApp(MemoryApp):
    """The app, keeping every notification it raised (toasts expire; a long replay needs all)."""

    CSS_PATH = str(Path(app_module.__file__).parent / MemoryApp.CSS_PATH)  # type: ignore[operator]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.told: list[tuple[str, str, str]] = []

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        self.told.append((title, message, str(severity)))
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)


def make_app(dirs: CaseDirs, session: str | None = None) -> RecordingApp:
    return RecordingApp(
        MemoryStore.open(dirs.home, dirs.workspace, "alice"), watch=False, session=session
    )


def write_project(dirs: CaseDirs, records: list[dict[str, Any]]) -> Path:
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(data, "ab") as f:
        f.write(b"".join(json_line(r) for r in records))
    data.chmod(0o600)
    return data


def lines_of(data: Path, record_id: str) -> list[dict[str, Any]]:
    return [
        json.loads(raw)
        for raw in data.read_bytes().splitlines()
        if f'"{record_id}"'.encode() in raw
    ]


def record(
    dirs: CaseDirs,
    rid: str,
    title: str,
    content: str,
    *,
    verification: str = "unverified",
    updated: int = 1_700_000_000_000,
    **extra: Any,
) -> dict[str, Any]:
    """A host-shaped project record (an agent proposal) with ``extra`` governance fields."""
    gov: dict[str, Any] = {
        "origin": "model-suggested",
        "sourceRefs": [{"kind": "session", "id": "s1"}],
        "verification": verification,
    }
    if verification in ("verified", "stale"):
        gov |= {"verifiedAt": updated, "verifiedBy": "user"}
    gov["revision"] = extra.pop("revision", 1)
    gov |= extra
    gov["retention"] = "project-delete"
    return {
        "schemaVersion": 1,
        "id": rid,
        "scope": "project",
        "scopeKey": dirs.root_id,
        "type": "convention",
        "title": title,
        "content": content,
        "tags": ["ci"],
        "provenance": {"kind": "agent", "sessionId": "s1", "note": "memory proposal"},
        "createdAt": updated,
        "updatedAt": updated,
        "useCount": 0,
        "contentHash": content_hash(content),
        "status": "active",
        "governance": gov,
    }


# ----------------------------------------------------------------------------- the table


def _one_per_key() -> list[Case]:
    """For each key, the table's first case it writes and its first it refuses: the whole
    table is ``actions.refusal``'s (tests/app/test_action_rules.py); this is the keys'."""
    chosen: dict[tuple[str, bool], Case] = {}
    for case in key_cases():
        chosen.setdefault((case.action, case.our_code is None), case)
    return list(chosen.values())


PER_KEY = _one_per_key()


async def _press_action(pilot: Any, app: RecordingApp, case: Case) -> None:
    await pilot.press(KEYS[case.action])
    if case.action in ("verify", "reject"):
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        await pilot.press("enter")
    elif case.action == "forget":
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
        await pilot.press("shift+tab", "enter")  # the dialog starts on Cancel
    await wait_for(pilot, lambda: app.screen is app.screen_stack[0], what="back to the table")


async def test_each_key_writes_what_the_rules_allow_and_says_why_they_refuse(
    tmp_path: Path,
) -> None:
    """Each key, on a state the host's rules (and our documented refusals) allow and on one
    they refuse: allowed, it is enabled in the footer and writes the host's ``domain.govern``
    line; refused, it is disabled in the footer, and pressing it says why in one line, writing
    nothing."""
    dirs = make_case_dirs(tmp_path)
    data = write_project(dirs, [c.with_root(dirs.root_id) for c in PER_KEY])
    app = make_app(dirs)
    written = refused = 0
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("A")  # archived and forgotten too
        await wait_for(
            pilot,
            lambda: len(table_keys(app, "project")) == len(PER_KEY),
            what="every starting record",
        )
        table = app.pane("project").table
        t0 = app.store.clock()
        for case in PER_KEY:
            assert table.move_cursor_to_key(case.id), case.name
            await wait_for(pilot, lambda case=case: table.cursor_key == case.id)
            app_action = "pin" if case.action == "unpin" else case.action
            available = app.check_action(app_action, ()) is True
            assert available is (case.our_code is None), (case.name, app.unavailable(app_action))
            shown = app.screen.active_bindings[KEYS[case.action]]
            assert shown.enabled is available, case.name  # the footer's state
            before = lines_of(data, case.id)
            told = len(app.told)
            await _press_action(pilot, app, case) if available else await pilot.press(
                KEYS[case.action]
            )
            if not available:
                await wait_for(pilot, lambda told=told: len(app.told) > told, what=case.name)
                title, message, _ = app.told[-1]
                assert title == f"error[{case.our_code}]", (case.name, title, message)
                assert "\n" not in message and case.id in message
                assert lines_of(data, case.id) == before, case.name
                refused += 1
                continue

            def changed(case: Case = case, before: list[dict[str, Any]] = before) -> bool:
                now = lines_of(data, case.id)
                return now != before and bool(now)

            await wait_for(pilot, changed, what=f"{case.name} written")
            new = lines_of(data, case.id)[-1]
            t1 = app.store.clock()
            assert outcome(new) == expected_outcome(case.domain, new, t0, t1), case.name
            written += 1
    # Forget is refused only on our own tombstone (the table's forgotten records hold the text
    # the host's forget kept: forgetting them erases it): test_forget_of_an_erased_record_...
    assert {(c.action, c.our_code is None) for c in PER_KEY} == {
        (action, allowed) for action in KEYS for allowed in (True, False)
    } - {("forget", False)}
    assert (written, refused) == (len(KEYS), len(KEYS) - 1)


DONE = {
    "verify": "verified",
    "reject": "rejected",
    "reverify": "re-verified",
    "pin": "pinned",
    "unpin": "unpinned",
    "archive": "archived",
    "restore": "restored",
    "forget": "forgotten",
}


async def test_every_action_on_one_record_from_the_table_says_what_it_did(
    tmp_path: Path,
) -> None:
    """A receipt for each key that wrote: a toast naming what was done, to which record."""
    dirs = make_case_dirs(tmp_path)
    allowed = [c for c in PER_KEY if c.our_code is None]
    data = write_project(dirs, [c.with_root(dirs.root_id) for c in allowed])
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("A")  # archived too
        await wait_for(pilot, lambda: len(table_keys(app, "project")) == len(allowed))
        table = app.pane("project").table
        for case in allowed:
            assert table.move_cursor_to_key(case.id), case.name
            await wait_for(pilot, lambda case=case: table.cursor_key == case.id)
            before, told = lines_of(data, case.id), len(app.told)
            await _press_action(pilot, app, case)
            await wait_for(
                pilot, lambda c=case, b=before: lines_of(data, c.id) != b, what=case.name
            )
            await wait_for(pilot, lambda told=told: len(app.told) > told, what=case.name)
            title, message, severity = app.told[-1]
            assert severity == "information", (case.name, message)
            assert message.startswith(f"{DONE[case.action]}: "), (case.name, message)
            assert case.id in message or lines_of(data, case.id)[0]["title"] in message


async def test_forget_of_an_erased_record_says_its_text_is_erased(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    gone = record(dirs, "memory:gone", "x", tombstone_content(None))
    gone |= {"title": tombstone_title("memory:gone"), "tags": [], "status": "forgotten"}
    data = write_project(dirs, [gone])
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await pilot.press("A")  # archived and forgotten too
        await wait_for(pilot, lambda: table_keys(app, "project") == ["memory:gone"])
        before = data.read_bytes()
        await pilot.press(KEYS["forget"])
        await wait_for(pilot, lambda: app.told, what="the refusal")
        title, message, _ = app.told[-1]
        assert (
            title == "error[FORGOTTEN]"
            and message == "memory:gone was forgotten; its text is erased"
        )
        assert data.read_bytes() == before


async def test_a_refused_action_in_the_palette_says_why(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    verified = record(dirs, "memory:v", "Verified", "Done.", verification="verified")
    write_project(dirs, [verified])
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", "memory:v")
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        verify = commands["Verify (v)"]
        assert verify.help.startswith("unavailable: cannot verify memory:v: only unverified")
        assert commands["Pin/unpin (p)"].help.startswith("dsh-memory: ")  # verified: pinnable
        verify.callback()
        await wait_for(pilot, lambda: app.told, what="the explanation")
        assert app.told[-1][0] == "error[INVALID_TRANSITION]"
    assert lines_of(dirs.scope_path("project"), "memory:v")[-1]["governance"]["revision"] == 1


# ----------------------------------------------------------------------------- batches


async def test_a_mixed_batch_does_what_is_allowed_and_lists_what_it_skipped(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    rows = [
        record(dirs, "memory:u1", "Unverified one", "One."),
        record(dirs, "memory:u2", "Unverified two", "Two."),
        record(dirs, "memory:v", "Verified", "Three.", verification="verified"),
        record(dirs, "memory:s", "Stale", "Four.", verification="stale"),
        record(dirs, "memory:r", "Rejected", "Five.", verification="rejected"),
    ]
    data = write_project(dirs, rows)
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        table = app.pane("project").table
        for rid in ("memory:u1", "memory:v", "memory:s", "memory:r", "memory:u2"):
            table.move_cursor_to_key(rid)
            table.toggle_mark()
        await pilot.pause()
        assert app.check_action("verify", ()) is True  # two of the five can be verified
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ReasonDialog))
        prompt = str(app.screen.query_one(".dialog-message", Static).render())
        assert "Verify 5 records?" in prompt and "3 of them cannot be verified" in prompt
        await pilot.press(*"checked in CI", "enter")
        await wait_for(pilot, lambda: any(t == "Skipped" for t, _, _ in app.told))
        [message] = [m for t, m, _ in app.told if t == "Skipped"]
        head, *listed = message.split("\n")
        assert head == "verify: 2 records; 3 skipped:"
        assert listed == [
            "• “Verified”: only unverified memory can be verified; this one is verified",
            "• “Stale”: only unverified memory can be verified; this one is stale",
            "• “Rejected”: only unverified memory can be verified; this one is rejected",
        ]
        assert table.marked_in_order() == []
        # Every marked row refused: the key is disabled and says so for all of them.
        for rid in ("memory:v", "memory:s"):
            table.move_cursor_to_key(rid)
            table.toggle_mark()
        await pilot.pause()
        assert app.check_action("reject", ()) is None
        told = len(app.told)
        await pilot.press("x")
        await wait_for(pilot, lambda: len(app.told) > told)
        assert app.told[-1][1].startswith("none of the 2 marked records: cannot reject memory:v")
    for rid in ("memory:u1", "memory:u2"):
        gov = lines_of(data, rid)[-1]["governance"]
        assert gov["verification"] == "verified" and gov["reviewNote"] == "checked in CI"
    for rid in ("memory:v", "memory:s", "memory:r"):
        assert len(lines_of(data, rid)) == 1  # skipped: nothing written


async def test_verify_asks_for_an_optional_reason_and_escape_cancels(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    data = write_project(dirs, [record(dirs, "memory:u", "Unverified", "One.")])
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", "memory:u")
        await pilot.press("v")
        await wait_for(pilot, lambda: reason_asked(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not reason_asked(app))
        assert app.focused is app.pane("project").table  # back where the reviewer was
        assert len(lines_of(data, "memory:u")) == 1
        await pilot.press("v")
        await wait_for(pilot, lambda: reason_asked(app))
        await pilot.press(*"read the code", "enter")
        await wait_for(pilot, lambda: len(lines_of(data, "memory:u")) == 2)
    gov = lines_of(data, "memory:u")[-1]["governance"]
    assert (gov["verification"], gov["verifiedBy"], gov["reviewNote"]) == (
        "verified",
        "user",
        "read the code",
    )


# ----------------------------------------------------------------------------- conflicts


def _conflict(dirs: CaseDirs) -> list[dict[str, Any]]:
    """Three versions of one title (the host writes the group on the newer ones), one of
    them verified."""
    return [
        record(
            dirs,
            "memory:lint-a",
            "Lint with ruff",
            "CI runs `ruff check`.\nFormatting: black.\nLine length 100.",
            verification="verified",
            updated=1_700_000_000_000,
        ),
        record(
            dirs,
            "memory:lint-b",
            "lint with Ruff",
            "CI runs `ruff check`.\nFormatting: `ruff format`.\nLine length 100.\nNo isort.",
            updated=1_700_000_100_000,
            conflictGroup="conflict:6f031ee6a2ab8b4bc974bdea",
        ),
        record(
            dirs,
            "memory:lint-c",
            "Lint with ruff ",
            "CI runs flake8.",
            updated=1_700_000_200_000,
            conflictGroup="conflict:6f031ee6a2ab8b4bc974bdea",
        ),
        record(dirs, "memory:other", "Use uv", "uv sync.", updated=1_700_000_300_000),
    ]


async def test_keep_this_version_from_the_conflict_view(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    data = write_project(dirs, _conflict(dirs))
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", "memory:lint-b")
        table = app.pane("project").table
        marks = {k: table.get_row(k).cells[2] for k in table_keys(app, "project")}
        assert marks == {
            "memory:lint-a": CONFLICT_MARK,
            "memory:lint-b": CONFLICT_MARK,
            "memory:lint-c": CONFLICT_MARK,
            "memory:other": "",
        }
        await wait_for(pilot, lambda: "2 other active versions" in app.pane("project").detail.text)
        assert app.check_action("keep", ()) is True
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConflictScreen))
        screen = app.screen
        assert [r.id for r in screen.versions] == [
            "memory:lint-b",
            "memory:lint-c",
            "memory:lint-a",
        ]  # then newest first
        diff = str(screen.query_one("#version-2 .version-body", Static).render())
        assert "- Formatting: `ruff format`." in diff and "+ Formatting: black." in diff
        assert "- No isort." in diff and "  Line length 100." in diff
        plan = str(screen.query_one("#plan", Static).render())
        assert plan == (
            "Keep the highlighted version: verify it; reject 1 unverified version; "
            "archive 1 other version (one locked write)."
        )
        await pilot.press("right", "right")  # the verified one instead
        plan = str(screen.query_one("#plan", Static).render())
        assert plan.startswith("Keep the highlighted version: it stays verified; reject 2 ")
        await pilot.press("left", "left")
        before = data.read_bytes().count(b"\n")
        await pilot.press("K")
        await wait_for(pilot, lambda: data.read_bytes().count(b"\n") == before + 3)
        await wait_for(pilot, lambda: any(t == "Conflict resolved" for t, _, _ in app.told))
        await wait_for(
            pilot, lambda: table.get_row("memory:lint-b").cells[2] == "", what="the marker gone"
        )
        assert app.check_action("keep", ()) is None  # resolved: no open group left
    state = {
        rid: (
            lines_of(data, rid)[-1]["status"],
            lines_of(data, rid)[-1]["governance"]["verification"],
        )
        for rid in ("memory:lint-a", "memory:lint-b", "memory:lint-c")
    }
    assert state == {
        "memory:lint-a": ("archived", "verified"),
        "memory:lint-b": ("active", "verified"),
        "memory:lint-c": ("active", "rejected"),
    }


async def test_keep_is_unavailable_outside_a_conflict_group(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    write_project(dirs, _conflict(dirs))
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", "memory:other")
        assert app.check_action("keep", ()) is None
        await pilot.press("K")
        await wait_for(pilot, lambda: app.told)
        assert app.told[-1][0] == "error[INVALID_TRANSITION]"
        assert "no other active, unrejected version has its title" in app.told[-1][1]
        assert app.screen is app.screen_stack[0]


def test_the_conflict_view(snap_compare: Any, tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    write_project(dirs, _conflict(dirs))
    app = MemoryApp(MemoryStore.open(dirs.home, dirs.workspace, "alice"), watch=False)

    async def open_view(pilot: Any) -> None:
        await select(pilot, app, "project", "memory:lint-b")
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConflictScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 36), run_before=open_view)


# ----------------------------------------------------------------------------- what is shown


def _shown_records(dirs: CaseDirs, now: int) -> list[dict[str, Any]]:
    expired = record(
        dirs,
        "memory:expired",
        "Postgres 16 until the upgrade",
        "Until then.",
        verification="verified",
        updated=now - 30 * DAY,
        confidence="high",
        expiresAt=now - 3 * DAY,
    )
    expired |= {"useCount": 7, "lastUsedAt": now - 2 * 3_600_000}
    pinned = record(
        dirs,
        "memory:pinned",
        "Deploy on Tuesdays",
        "Never on Fridays.",
        verification="verified",
        updated=now - DAY,
        pinnedAt=now - DAY,
        pinnedBy="user",
    )
    plain = record(dirs, "memory:plain", "Use uv", "uv sync.", updated=now - 2 * DAY)
    return [expired, pinned, plain]


async def test_markers_filters_and_the_facts_the_host_knows(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    now = MemoryStore.open(dirs.home, dirs.workspace, "alice").clock()
    write_project(dirs, _shown_records(dirs, now) + _conflict(dirs)[:2])
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", "memory:expired")
        table = app.pane("project").table
        assert table.get_row("memory:expired").cells[2] == EXPIRED_MARK
        assert table.get_row("memory:pinned").cells[2] == PINNED_MARK
        assert table.get_row("memory:lint-a").cells[2] == CONFLICT_MARK
        assert table.get_row("memory:expired").cells[4] == "stale"  # the host's view
        detail = app.pane("project").detail
        await wait_for(pilot, lambda: detail.shown == ("memory:expired", 2))
        text = detail.text
        for words in (
            "expired 3 days ago",
            "shown stale",
            "confidence   high",
            "by user",
            "used         7 times, last 2 hours ago",
            "its verification expired; re-verify it with R",
        ):
            assert words in text, words
        filters = {
            "pinned": {"memory:pinned"},
            "stale": {"memory:expired"},
            "expired": {"memory:expired"},
            "conflict:": {"memory:lint-a", "memory:lint-b"},
            "conflict:6f031ee6": {"memory:lint-a", "memory:lint-b"},
            "conflict:ffff": set(),
            "pinned tuesdays": {"memory:pinned"},
        }
        for text_, want in filters.items():
            app.pane("project").set_filter(text_)
            await pilot.pause()
            assert set(table_keys(app, "project")) == want, text_
        app.pane("project").set_filter("")
        await select(pilot, app, "project", "memory:pinned")
        await wait_for(pilot, lambda: detail.shown == ("memory:pinned", 1))
        assert "(served to the agent first)" in detail.text


# ----------------------------------------------------------------------------- a moved project


async def test_a_moved_projects_lines_are_adopted_from_the_banner(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    old_root = "root:" + "cd" * 32
    moved = [
        record(dirs, "memory:moved", "From the old path", "Written before the move."),
        record(
            dirs,
            "memory:moved",
            "From the old path",
            "Written before the move.",
            verification="verified",
            revision=2,
        ),
    ]
    for r in moved:
        r["scopeKey"] = old_root
    data = write_project(dirs, [record(dirs, "memory:here", "Here", "Already here.")] + moved)
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        banner = str(app.pane("project").query_one(".banner", Static).render())
        assert "2 line(s) in records.jsonl belong to another workspace" in banner
        assert "M on the Project tab adopts them" in banner
        assert "memory:moved" not in table_keys(app, "project")
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert old_root in str(app.screen.query_one(".dialog-message", Static).render())
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: "memory:moved" in table_keys(app, "project"), what="the adopted record"
        )
        assert app.record("memory:moved").governance.verification is Verification.VERIFIED
        assert app.index["memory:moved"].history("memory:moved")[0].revision == 1
        await wait_for(
            pilot,
            lambda: (
                "another workspace"
                not in str(app.pane("project").query_one(".banner", Static).render())
            ),
        )
        assert app.check_action("adopt", ()) is None
    assert all(
        json.loads(raw)["scopeKey"] == dirs.root_id for raw in data.read_bytes().splitlines()
    )


# ----------------------------------------------------------------------------- the agent's view


async def test_what_the_agent_sees(tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    now = MemoryStore.open(dirs.home, dirs.workspace, "alice").clock()
    write_project(dirs, _shown_records(dirs, now))
    app = make_app(dirs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("W")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentScreen))
        screen = app.screen
        summary = str(screen.query_one("#agent-summary", Static).render())
        assert "this project (project): 1 record" in summary
        assert f"{PINNED_MARK} Deploy on Tuesdays" in summary
        assert "Postgres 16" not in summary and "Use uv" not in summary  # expired, unverified
        served = agent_view(app.store, Audience(include_shared=True), scope="project")
        assert [r.id for r in served.records] == ["memory:pinned"]
        assert f"{served.size} B of text" in summary
        await pilot.press("t")
        shown = str(screen.query_one("#agent-summary", Static).render())
        assert served.text.strip().splitlines()[0] in shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])
