"""The Review tab is the queue of what waits on a human (``dsh_memory_tui.queue``), driven
through Textual's pilot on real stores: it lists what ``dsh-memory queue`` lists, each row's Why
cell names its reason, the line above the filter counts them, and a decision takes a record
out; after a real two-clone git merge that decided a record two ways, both versions are there.
"""

from __future__ import annotations

import json
from pathlib import Path

from citing import workspace
from conftest import run_cli, run_cli_process
from teamgit import decided_two_ways, make_team, verified_by_alice_pulled_by_bob
from test_queue import expire

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens import main as main_screen
from dsh_memory_tui.bundle import apply_import, plan_import
from dsh_memory_tui.demo import build_demo
from dsh_memory_tui.model import SourceRef, Verification, next_revision
from dsh_memory_tui.queue import BY_CODE
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, goto, make_app, screen_text, table_keys, wait_for

KEY = "AKIA81U33XTPLPFT75V2"  # an AWS access key's format (random): lint's secret flag
WHY = 3  # the Why column's place in a Review row


def why_of(app: MemoryApp, rid: str) -> str:
    row = app.pane("review").table.get_row(rid)
    assert row is not None, rid
    return row.cells[WHY]


def counts_line(app: MemoryApp) -> str:
    return str(app.pane("review").query_one(".queue-counts").render())


def queue_json(home: Path, ws: Path, user: str = "alice") -> dict[str, list[str]]:
    """``dsh-memory queue --json`` in its own process: id -> its reasons' codes."""
    done = run_cli_process(home, ws, "queue", "--json", user=user)
    assert done.returncode == 0, done.stderr
    return {item["id"]: item["reasons"] for item in json.loads(done.stdout)}


async def test_the_review_tab_lists_what_dsh_memory_queue_lists(tmp_path: Path):
    demo = build_demo(tmp_path / "demo")
    app = make_app(demo.home, demo.workspace, demo.user)
    done = run_cli(demo.home, demo.workspace, "queue", "--json", user=demo.user)
    listed = [item["id"] for item in json.loads(done.stdout)]
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.pane("review").table.row_count == len(listed))
        assert set(table_keys(app, "review")) == set(listed)
        assert counts_line(app).startswith(f"{len(listed)} waiting: ")
        with_digests = run_cli(
            demo.home, demo.workspace, "queue", "--json", "--derived", user=demo.user
        )
        every = {item["id"] for item in json.loads(with_digests.stdout)}
        await pilot.press("D")
        await wait_for(pilot, lambda: set(table_keys(app, "review")) == every, what="digests")


async def test_each_row_says_why_and_a_decision_takes_it_out_and_off_the_counts(
    tmp_path: Path,
):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(home, ws, "alice")
    ref = [SourceRef(kind="session", id="s1")]
    proposal = store.propose("project", "fact", "Build", "make build", source_refs=ref).id
    stale = store.create("project", "fact", "Deploy", "make deploy").id
    store.verify(stale)
    store.edit(stale, 2, content="make deploy-all")
    draft = store.create("user", "preference", "Tabs", "two spaces").id
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.pane("review").table.row_count == 3)
        assert [why_of(app, r) for r in (proposal, stale, draft)] == ["proposal", "stale", "draft"]
        assert counts_line(app) == "3 waiting: 1 stale · 1 proposal · 1 draft"
        app.pane("review").table.move_cursor_to_key(stale)
        await pilot.pause()
        assert "waits        for a human: stale" in screen_text(app)
        await pilot.press("R")  # re-verify: served again, nothing left to decide
        await wait_for(pilot, lambda: stale not in table_keys(app, "review"), what="reverified")
        assert counts_line(app) == "2 waiting: 1 proposal · 1 draft"
    assert store.get(stale).governance.verification is Verification.VERIFIED


async def test_every_reason_of_one_store_is_a_row_saying_it_as_dsh_memory_queue_does(
    tmp_path: Path,
):
    home, ws = workspace(tmp_path)  # a git repository holding app.py
    store = MemoryStore.open(home, ws, "alice")
    ref = [SourceRef(kind="session", id="s1")]
    bundle = tmp_path / "bundle.json"
    exported = store.create("project", "fact", "Lint", "ruff check").id
    assert run_cli(home, ws, "export", "--out", str(bundle), "--scope", "project").returncode == 0
    store.forget(exported)
    [imported] = apply_import(store, plan_import(store, bundle, "user")).written
    store.propose("project", "fact", "Build", "make build", source_refs=ref)
    store.create("user", "preference", "Tabs", "two spaces")
    stale = store.create("project", "fact", "Deploy", "make deploy").id
    store.verify(stale)
    store.mark_stale([stale])
    expired = store.create("project", "fact", "Token TTL", "tokens live 1 h").id
    store.verify(expired)
    expire(store, expired)
    cited = store.create("project", "fact", "Line 3", "says line 3", citations=["app.py:3-3"]).id
    store.verify(cited)
    later = store.create("project", "fact", "Line 7", "says line 7", citations=["app.py:7-7"]).id
    store.verify(later)
    port = store.create("project", "fact", "Port", "8080").id
    store.verify(port)
    store.propose("project", "fact", "port", "9090", source_refs=ref)
    code = ws / "app.py"
    code.write_text(code.read_text().replace("line 3", "line three"))
    expected = queue_json(home, ws)
    assert {reasons[0] for reasons in expected.values()} == {
        "proposal",
        "import",
        "draft",
        "stale",
        "expired",
        "code-changed",
        "conflict",
    }
    assert expected[imported] == ["import"] and expected[cited] == ["code-changed"]
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: set(table_keys(app, "review")) == set(expected), what="the queue"
        )
        for rid, codes in expected.items():
            label = BY_CODE[codes[0]].label
            assert why_of(app, rid) == (f"{label} +{len(codes) - 1}" if codes[1:] else label)
        assert counts_line(app) == (
            "8 waiting: 2 conflict · 1 code changed · 1 expired · 1 stale"
            " · 2 proposal · 1 import · 1 draft"  # the rival proposal counts in both
        )
        # Cited code that changes while the app is open: no store file changed, yet it joins.
        code.write_text(code.read_text().replace("line 7", "line seven"))
        await wait_for(pilot, lambda: later in table_keys(app, "review"), what="the change")
        assert why_of(app, later) == "code changed"
        assert "2 code changed" in counts_line(app)
        # why: keeps the rows waiting for that reason, as the CLI names it (by prefix).
        await pilot.press("slash", *"why:code")
        await wait_for(
            pilot, lambda: set(table_keys(app, "review")) == {cited, later}, what="why:code"
        )
        await pilot.press(*["backspace"] * 4, *"conflict")
        conflicted = {rid for rid, codes in expected.items() if "conflict" in codes}
        await wait_for(
            pilot, lambda: set(table_keys(app, "review")) == conflicted, what="why:conflict"
        )
        await pilot.press(*["backspace"] * 8, *"bogus")
        await wait_for(pilot, lambda: "no such why 'bogus'" in screen_text(app), what="said")
    assert set(queue_json(home, ws)) == set(expected) | {later}


async def test_an_older_record_joining_for_its_changed_code_takes_its_place_not_the_top(
    tmp_path: Path,
):
    home, ws = workspace(tmp_path)
    ticks = iter(range(1_800_000_000_000, 1_900_000_000_000, 1_000))
    store = MemoryStore.open(home, ws, "alice", clock=lambda: next(ticks))
    cited = store.create("project", "fact", "Line 3", "says line 3", citations=["app.py:3-3"]).id
    store.verify(cited)
    ref = [SourceRef(kind="session", id="s1")]
    newer = [
        store.propose("project", "fact", f"Fact {n}", f"x{n}", source_refs=ref).id for n in (1, 2)
    ]
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.source_review.states.checked, what="a first check")
        await wait_for(pilot, lambda: table_keys(app, "review") == newer[::-1], what="the load")
        code = ws / "app.py"
        code.write_text(code.read_text().replace("line 3", "line three"))
        await wait_for(pilot, lambda: cited in table_keys(app, "review"), what="the change")
        assert table_keys(app, "review") == [*newer[::-1], cited]  # newest first, as on a load


async def test_a_record_whose_expiry_passes_while_the_app_is_open_joins(
    tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(main_screen, "EXPIRY_CHECK_S", 0.05)
    now = {"ms": 1_800_000_000_000}
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(home, ws, "alice", clock=lambda: now["ms"])
    rid = store.create("project", "fact", "Token TTL", "tokens live 1 h").id
    store.verify(rid)
    view, current = store.locate(rid)
    until = next_revision(current, now["ms"], None, {"expiresAt": now["ms"] + 60_000})
    store.write(view.file, lambda _view: ([until], None))
    app = MemoryApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        assert table_keys(app, "project") == [rid] and table_keys(app, "review") == []
        now["ms"] += 61_000  # no file changes: only the clock
        await wait_for(pilot, lambda: rid in app.pane("review").records, what="the expiry")
        assert "Review (1)" in screen_text(app)
        await goto(pilot, app, "review")
        assert table_keys(app, "review") == [rid] and why_of(app, rid) == "expired"
        assert counts_line(app) == "1 waiting: 1 expired"


async def test_a_teammates_unverified_shared_record_waits_as_theirs(tmp_path: Path):
    _, alice, bob = make_team(tmp_path)
    record = bob.create("Test", "pytest -q")
    bob.publish("test")
    alice.git("pull", "-q", "origin", "main")
    assert queue_json(alice.home, alice.path) == {record.id: ["teammate"]}
    app = make_app(alice.home, alice.path, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: table_keys(app, "review") == [record.id])
        assert why_of(app, record.id) == "teammate"
        assert counts_line(app) == "1 waiting: 1 teammate"


async def test_a_verified_record_with_a_secret_joins_once_the_evidence_worker_finds_it(
    tmp_path: Path,
):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(home, ws, "alice")
    rid = store.create("project", "fact", "Deploy key", f"Deploy with {KEY}").id
    store.verify(rid, reason="we thought it was revoked")
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: rid in table_keys(app, "review"), what="the secret")
        assert why_of(app, rid) == "secret"
        assert counts_line(app) == "1 waiting: 1 secret"


async def test_at_80_columns_the_why_column_stays_and_origin_and_time_go(tmp_path: Path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(home, ws, "alice")
    store.create("project", "fact", "A title long enough to be cut at eighty columns", "x")
    app = make_app(home, ws)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.pane("review").table.row_count == 1)
        text = screen_text(app)
        header = next(line for line in text.splitlines() if "Type" in line and "Why" in line)
        assert header.split()[-3:] == ["Why", "Scope", "Rev"]  # no Origin, no Updated column
        assert "Origin" not in header
        row = next(line for line in text.splitlines() if "A title long" in line)
        assert "draft" in row and len(row.rstrip()) <= 80


# ------------------------------------------------------------------ the team


async def test_a_merge_that_decided_a_record_two_ways_waits_in_review_until_k(tmp_path):
    _, alice, bob = make_team(tmp_path)
    record = verified_by_alice_pulled_by_bob(alice, bob)
    rival = decided_two_ways(alice, bob, record)
    assert queue_json(alice.home, alice.path) == {record.id: ["merge"], rival.id: ["merge"]}
    app = make_app(alice.home, alice.path, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.pane("review").table.row_count == 2)
        assert why_of(app, record.id) == why_of(app, rival.id) == "merge rival"
        assert counts_line(app) == "2 waiting: 2 merge rival"
        assert "Review (2)" in screen_text(app)
        app.pane("review").table.move_cursor_to_key(record.id)
        await pilot.press("K")  # the versions side by side; enter keeps the chosen one
        await wait_for(pilot, lambda: len(app.screen_stack) > 1, what="the conflict view")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.screen_stack) > 1, what="the shared confirmation")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.pane("review").table.row_count == 0, what="kept")
        assert counts_line(app) == "Nothing waits on a human"
    assert queue_json(alice.home, alice.path) == {}
