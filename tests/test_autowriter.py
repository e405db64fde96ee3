"""The auto-writer (SPEC 6): digests from tool results, the stable id, silence on failure, and
``dsh-memory auto-write`` as a real process (stdin, --events, --follow, SIGINT/SIGTERM).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO_ROOT, WAIT_S, finish, run_cli, wait_for
from interop.corpus import root_id, scope_key_sha16, session_file_name

from dsh_memory_tui.autowriter import AutoWriter, digest_id_prefix
from dsh_memory_tui.model import Location, Record, Scope, content_hash, parse_line, sha256_hex
from dsh_memory_tui.store import MemoryStore

LOGGER = "dsh_memory_tui.autowriter"
# The seed's digest as the host's writeAutoFact writes it (its digestKey: the path lists).
SEED_CONTENT = (
    "Files touched: 3 (2 created, 1 modified, 0 deleted).\n"
    "Created: out/report.md, out/data.json\n"
    "Modified: src/util.ts\n"
    "Artifacts: 2 — out/data.json, out/report.md."
)
SEED_DIGEST_HASH = sha256_hex(
    json.dumps(
        {
            "created": ["out/report.md", "out/data.json"],
            "modified": ["src/util.ts"],
            "deleted": [],
            "artifacts": ["out/data.json", "out/report.md"],
        },
        separators=(",", ":"),
    )
)[:24]


class FakeClock:
    """Seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class MsClock:
    """Store time in ms, one second further on each call (so "oldest" is well defined)."""

    def __init__(self) -> None:
        self.now = 1_764_000_000_000

    def __call__(self) -> int:
        self.now += 1000
        return self.now


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def store(home: Path, workspace: Path) -> MemoryStore:
    return MemoryStore.open(home, workspace, "alice", clock=MsClock())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def writer(store: MemoryStore, clock: FakeClock) -> AutoWriter:
    return AutoWriter(store, clock=clock)


def event(
    seq: int,
    cwd: Path | str,
    *files: tuple[str, str] | tuple[str, str, bool],
    session: str = "s1",
    root: str = "r1",
    ok: bool = True,
) -> dict[str, Any]:
    return {
        "sessionId": session,
        "rootId": root,
        "seq": seq,
        "cwd": str(cwd),
        "tool": "edit",
        "ok": ok,
        "files": [
            {"path": f[0], "op": f[1], "artifact": f[2] if len(f) > 2 else False}  # type: ignore[misc]
            for f in files
        ],
    }


def seed_events(cwd: Path) -> list[str]:
    """The fixture's three tool results in the workspace ``cwd`` (its path and rootId)."""
    text = (FIXTURES / "events" / "session-abc.jsonl").read_text()
    text = text.replace("__WORKSPACE__", str(cwd)).replace("__ROOT_ID__", root_id(cwd))
    return text.splitlines()


def seed_id(workspace: Path) -> str:
    """The stable id of the seed's digest in ``workspace``'s session ``session-abc``."""
    sha16 = scope_key_sha16(f"session-abc|{root_id(workspace)}")
    return f"memory:auto:fact:{sha16}:{SEED_DIGEST_HASH}"


def session_path(home: Path, session: str = "s1", root: str = "r1") -> Path:
    """The host's name of a session's file: 32 hex of sha256("<session>|<root>")."""
    return home / "workspace-memory" / "sessions" / session_file_name(session, root)


def session_lines(home: Path, session: str = "s1", root: str = "r1") -> list[dict[str, Any]]:
    path = session_path(home, session, root)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def current(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each id's current line: its last one (as the host reads a file)."""
    return {line["id"]: line for line in lines}


def written_content(writer: AutoWriter, clock: FakeClock, home: Path, **kw: str) -> str:
    clock.advance(writer.debounce_s)
    ids = writer.flush_due()
    assert len(ids) == 1
    return current(session_lines(home, **kw))[ids[0]]["content"]


# ------------------------------------------------------------------ the digest


def host_json(value: object) -> str:
    """``JSON.stringify`` of plain lists and strings (the host's digestKey input)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def digest_key(
    created: list[str], modified: list[str], deleted: list[str], artifacts: list[str]
) -> str:
    payload = {"created": created, "modified": modified, "deleted": deleted, "artifacts": artifacts}
    return sha256_hex(host_json(payload))[:24]


def test_the_seed_events_give_the_hosts_digest_byte_for_byte(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    root = root_id(workspace)
    for line in seed_events(workspace):
        writer.on_tool_result(line)
    clock.advance(0.5)
    assert writer.flush_due() == [seed_id(workspace)]
    raw = session_path(home, "session-abc", root).read_bytes()
    [line] = session_lines(home, "session-abc", root)
    scope_key = f"session-abc|{root}"
    # The line exactly as the host's writeAutoFact writes it: its keys in its order.
    expected = {
        "schemaVersion": 1,
        "id": seed_id(workspace),
        "scope": "session",
        "scopeKey": scope_key,
        "type": "fact",
        "title": "Session workspace digest (auto)",
        "content": SEED_CONTENT,
        "tags": ["auto", "workspace"],
        "provenance": {
            "kind": "tool",
            "sessionId": "session-abc",
            "eventSeq": 42,
            "note": "workspace auto-writer",
        },
        "createdAt": line["createdAt"],
        "updatedAt": line["createdAt"],
        "useCount": 0,
        "contentHash": content_hash(SEED_CONTENT),
        "status": "active",
        "governance": {
            "origin": "derived",
            "sourceRefs": [{"kind": "session", "id": "session-abc"}, {"kind": "event", "id": "42"}],
            "verification": "unverified",
            "revision": 1,
            "retention": "session-end",
        },
    }
    assert raw == (host_json(expected) + "\n").encode()
    assert isinstance(parse_line(raw, Location(Scope.SESSION, scope_key)), Record)


def test_the_id_hashes_the_path_lists_and_the_scope_key(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(7, workspace, ("a.txt", "create")))
    writer.on_tool_result(event(9, workspace, ("b.txt", "modify")))
    clock.advance(0.5)
    [record_id] = writer.flush_due()
    key = digest_key(["a.txt"], ["b.txt"], [], ["a.txt"])
    assert record_id == f"memory:auto:fact:{sha256_hex('s1|r1')[:16]}:{key}"
    [line] = session_lines(home)
    assert (line["scope"], line["scopeKey"], line["type"]) == ("session", "s1|r1", "fact")
    assert line["provenance"] == {
        "kind": "tool",
        "sessionId": "s1",
        "eventSeq": 9,
        "note": "workspace auto-writer",
    }
    assert line["governance"]["sourceRefs"] == [
        {"kind": "session", "id": "s1"},
        {"kind": "event", "id": "9"},
    ]


def test_each_path_counts_by_its_latest_operation_in_first_touched_order(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere" / "notes.txt"
    writer.on_tool_result(event(1, workspace, ("src/a.py", "create"), ("src/b.py", "create")))
    writer.on_tool_result(event(2, workspace, ("src/c.py", "modify"), ("src/d.py", "modify")))
    writer.on_tool_result(event(3, workspace, ("src/e.py", "delete"), ("src/f.py", "delete")))
    # Outside the workspace, or with a ".." anywhere: dropped, as the host drops them.
    writer.on_tool_result(
        event(
            4,
            workspace,
            (str(outside), "modify"),
            ("../other/x.md", "modify"),
            ("src/../g.py", "create"),
        )
    )
    writer.on_tool_result(event(5, workspace, ("src/a.py", "modify"), ("./src/b.py", "delete")))
    writer.on_tool_result(event(6, workspace, (str(workspace / "src/c.py"), "delete")))
    writer.on_tool_result(event(7, workspace, ("src/f.py", "create")))
    assert written_content(writer, clock, home) == (
        "Files touched: 6 (1 created, 2 modified, 3 deleted).\n"
        "Created: src/f.py\n"
        "Modified: src/a.py, src/d.py\n"
        "Deleted: src/b.py, src/c.py, src/e.py\n"
        "Artifacts: 3 — src/a.py, src/b.py, src/f.py."
    )


def test_results_out_of_seq_order_count_in_seq_order(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    # The host sorts a session's tool records by seq before it replays them.
    writer.on_tool_result(event(5, workspace, ("a.txt", "delete")))
    writer.on_tool_result(event(3, workspace, ("a.txt", "create"), ("b.txt", "modify")))
    assert written_content(writer, clock, home) == (
        "Files touched: 2 (0 created, 1 modified, 1 deleted).\n"
        "Modified: b.txt\nDeleted: a.txt\nArtifacts: 1 — a.txt."
    )


def test_one_path_twice_in_one_result_counts_once(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    # Both tool calls of the line carry its seq: the host's second observation has the same id.
    writer.on_tool_result(event(1, workspace, ("a.txt", "create"), ("a.txt", "modify")))
    assert written_content(writer, clock, home) == (
        "Files touched: 1 (1 created, 0 modified, 0 deleted).\nCreated: a.txt\n"
        "Artifacts: 1 — a.txt."
    )


def test_artifacts_are_the_files_created_in_the_session_in_locale_order(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    # The artifact flag is not read (the host has none); deleted created files stay artifacts.
    writer.on_tool_result(
        event(
            1,
            workspace,
            ("report.pdf", "modify", True),
            ("notes.md", "create"),
            ("B.md", "create", True),
            ("é.txt", "create"),
            ("a.md", "create"),
        )
    )
    writer.on_tool_result(event(2, workspace, ("tmp.bin", "create", True)))
    writer.on_tool_result(event(3, workspace, ("tmp.bin", "delete"), ("notes.md", "modify")))
    assert written_content(writer, clock, home) == (
        "Files touched: 6 (3 created, 2 modified, 1 deleted).\n"
        "Created: B.md, é.txt, a.md\n"
        "Modified: report.pdf, notes.md\n"
        "Deleted: tmp.bin\n"
        "Artifacts: 5 — a.md, B.md, é.txt, notes.md, tmp.bin."
    )


def test_empty_lists_are_left_out_and_no_artifact_says_0(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(1, workspace, ("old.txt", "delete")))
    assert written_content(writer, clock, home) == (
        "Files touched: 1 (0 created, 0 modified, 1 deleted).\nDeleted: old.txt\nArtifacts: 0."
    )


def test_every_path_is_listed(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    names = [f"gen/f{i:02d}.txt" for i in range(25)]
    for seq, name in enumerate(names, 1):
        writer.on_tool_result(event(seq, workspace, (name, "create")))
    writer.on_tool_result(event(99, workspace, *((f"m{i}", "modify") for i in range(21))))
    listed = ", ".join(names)
    assert written_content(writer, clock, home) == (
        "Files touched: 46 (25 created, 21 modified, 0 deleted).\n"
        f"Created: {listed}\n"
        "Modified: " + ", ".join(f"m{i}" for i in range(21)) + "\n"
        f"Artifacts: 25 — {listed}."
    )


def test_the_same_paths_at_a_later_event_merge_that_event_in(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(1, workspace, ("a.txt", "modify")))
    [first] = writer.flush_all()
    writer.on_tool_result(event(5, workspace, ("a.txt", "modify")))
    assert writer.flush_all() == [first]
    lines = session_lines(home)
    assert [line["id"] for line in lines] == [first, first]
    assert [line["governance"]["revision"] for line in lines] == [1, 2]
    assert lines[1]["governance"]["sourceRefs"] == [
        {"kind": "session", "id": "s1"},
        {"kind": "event", "id": "1"},
        {"kind": "event", "id": "5"},
    ]
    # The host merges only the refs: provenance (its eventSeq) stays the first write's.
    assert lines[1]["provenance"]["eventSeq"] == 1
    assert lines[1]["createdAt"] == lines[0]["createdAt"] < lines[1]["updatedAt"]
    assert writer.flush_all() == []  # nothing pending
    writer.on_tool_result(event(5, workspace, ("a.txt", "modify")))
    assert writer.flush_all() == []  # the same event again: no new ref, no line
    assert len(session_lines(home)) == 2


def test_other_paths_are_a_new_digest_next_to_the_first(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(1, workspace, ("a.txt", "create"), ("b.txt", "create")))
    [first] = writer.flush_all()
    writer.on_tool_result(event(2, workspace, ("a.txt", "delete"), ("c.txt", "create")))
    [second] = writer.flush_all()
    assert first != second
    state = current(session_lines(home))
    assert [r["status"] for r in state.values()] == ["active", "active"]
    assert state[second]["content"] == (
        "Files touched: 3 (2 created, 0 modified, 1 deleted).\n"
        "Created: b.txt, c.txt\nDeleted: a.txt\nArtifacts: 3 — a.txt, b.txt, c.txt."
    )


def test_a_verified_digest_stays_verified_when_an_event_merges_in(
    writer: AutoWriter, store: MemoryStore, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(1, workspace, ("a.txt", "create")))
    [record_id] = writer.flush_all()
    store.verify(record_id)
    writer.on_tool_result(event(2, workspace, ("a.txt", "create")))
    assert writer.flush_all() == [record_id]
    governance = store.get(record_id).governance
    # The content did not change: the host's merge keeps the verification as it was.
    assert (governance.verification.value, governance.revision) == ("verified", 3)
    assert governance.verifiedAt is not None


def test_a_burst_is_written_once_after_the_debounce(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    assert writer.due() is None
    for seq in range(100):
        writer.on_tool_result(event(seq, workspace, (f"f{seq % 7}.txt", "modify")))
        clock.advance(0.01)
        assert writer.flush_due() == []
    assert writer.due() == pytest.approx(0.49)
    clock.advance(0.48)
    assert writer.flush_due() == []
    clock.advance(0.01)
    assert len(writer.flush_due()) == 1
    assert writer.due() is None
    assert len(session_lines(home)) == 1


def test_failed_results_touch_no_file_but_their_seq_is_the_latest_event(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(1, workspace, ("kept.txt", "create")))
    writer.on_tool_result(event(2, workspace, ("kept.txt", "delete"), ok=False))
    writer.on_tool_result(event(3, workspace, ("failed.txt", "create"), ok=False))
    content = written_content(writer, clock, home)
    assert content == (
        "Files touched: 1 (1 created, 0 modified, 0 deleted).\n"
        "Created: kept.txt\nArtifacts: 1 — kept.txt."
    )
    # The host's latestEventSeq is over every tool record, failed ones too.
    [line] = session_lines(home)
    assert line["provenance"]["eventSeq"] == 3
    assert line["governance"]["sourceRefs"][1] == {"kind": "event", "id": "3"}


def test_a_session_that_touched_no_file_writes_nothing(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path, tmp_path: Path
) -> None:
    writer.on_tool_result(event(1, workspace))
    writer.on_tool_result(event(2, workspace, ("a.txt", "create"), ok=False))
    writer.on_tool_result(event(3, workspace, (str(tmp_path / "outside.txt"), "create")))
    clock.advance(0.5)
    assert writer.flush_due() == []
    assert not session_path(home).exists()


def test_created_then_deleted_is_a_deleted_artifact(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(2, workspace, ("scratch.txt", "create")))
    writer.on_tool_result(event(3, workspace, ("scratch.txt", "delete")))
    assert written_content(writer, clock, home) == (
        "Files touched: 1 (0 created, 0 modified, 1 deleted).\nDeleted: scratch.txt\n"
        "Artifacts: 1 — scratch.txt."
    )


def test_seq_0_alone_gives_no_event_ref(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(0, workspace, ("a.txt", "modify")))
    writer.flush_all()
    [line] = session_lines(home)
    assert "eventSeq" not in line["provenance"]
    assert line["governance"]["sourceRefs"] == [{"kind": "session", "id": "s1"}]


def test_rerunning_the_same_events_writes_no_line(
    home: Path, workspace: Path, clock: FakeClock
) -> None:
    root = root_id(workspace)
    events = seed_events(workspace) + [
        json.dumps(event(50, workspace, ("x.txt", "delete"), session="session-abc", root=root))
    ]
    first = AutoWriter(MemoryStore.open(home, workspace, "alice"), clock=clock)
    for line in events:
        first.on_tool_result(line)
    assert len(first.flush_all()) == 1
    before = session_path(home, "session-abc", root).read_bytes()

    again = AutoWriter(MemoryStore.open(home, workspace, "alice"), clock=clock)
    for line in events:
        again.on_tool_result(line)
    assert again.flush_all() == []
    assert session_path(home, "session-abc", root).read_bytes() == before


def seven_digests(writer: AutoWriter, clock: FakeClock, workspace: Path) -> list[str]:
    """Seven results in a row, each creating one more file and each written as a digest."""
    ids = []
    for n in range(1, 8):
        writer.on_tool_result(event(n, workspace, (f"f{n}.txt", "create")))
        clock.advance(0.5)
        ids.extend(writer.flush_due())
    return ids


def test_seven_distinct_digests_leave_six_active_and_archive_the_oldest(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    ids = seven_digests(writer, clock, workspace)
    assert len(set(ids)) == 7
    state = current(session_lines(home))
    assert {i for i, r in state.items() if r["status"] == "active"} == set(ids[1:])
    assert state[ids[0]]["status"] == "archived"
    # As the host's domain.archive: the revision stays.
    assert state[ids[0]]["governance"]["revision"] == 1
    assert len(session_lines(home)) == 8  # seven digests and one archive line


def test_a_repeat_of_an_archived_digest_merges_into_it_and_it_stays_archived(
    writer: AutoWriter, store: MemoryStore, clock: FakeClock, home: Path, workspace: Path
) -> None:
    ids = seven_digests(writer, clock, workspace)
    # Another run that saw only the first result, at a later seq: the first digest again.
    again = AutoWriter(store, clock=clock)
    again.on_tool_result(event(20, workspace, ("f1.txt", "create")))
    assert again.flush_all() == [ids[0]]
    state = current(session_lines(home))
    assert state[ids[0]]["status"] == "archived"
    assert state[ids[0]]["governance"]["revision"] == 2
    assert state[ids[0]]["governance"]["sourceRefs"][-1] == {"kind": "event", "id": "20"}
    # The host prunes the others around the written one: five stay active.
    assert state[ids[1]]["status"] == "archived"
    assert sum(r["status"] == "active" for r in state.values()) == 5


def test_two_sessions_interleaved_stay_apart(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path, tmp_path: Path
) -> None:
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    for seq in range(10):
        writer.on_tool_result(event(seq, workspace, (f"one/{seq}.txt", "create"), session="A"))
        writer.on_tool_result(
            event(seq, other_ws, (f"two/{seq % 3}.txt", "modify"), session="B", root="r2")
        )
    clock.advance(0.5)
    assert len(writer.flush_due()) == 2
    [a] = session_lines(home, "A", "r1")
    [b] = session_lines(home, "B", "r2")
    assert a["content"].startswith("Files touched: 10 (10 created, 0 modified, 0 deleted).")
    assert b["content"] == (
        "Files touched: 3 (0 created, 3 modified, 0 deleted).\n"
        "Modified: two/0.txt, two/1.txt, two/2.txt\nArtifacts: 0."
    )
    assert a["id"].startswith(digest_id_prefix("A|r1"))
    assert b["id"].startswith(digest_id_prefix("B|r2"))


def test_a_result_in_a_subdirectory_names_its_path_from_the_workspace(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    # The session's first result sets its workspace (the host's session cwd); a later result
    # run in a subdirectory gives paths relative to that subdirectory.
    (workspace / "pkg").mkdir()
    writer.on_tool_result(event(1, workspace, ("README.md", "modify")))
    writer.on_tool_result(event(2, workspace / "pkg", ("mod.py", "create")))
    assert written_content(writer, clock, home) == (
        "Files touched: 2 (1 created, 1 modified, 0 deleted).\n"
        "Created: pkg/mod.py\nModified: README.md\nArtifacts: 1 — pkg/mod.py."
    )


def test_each_session_has_its_own_debounce(
    writer: AutoWriter, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(1, workspace, ("a", "create"), session="early"))
    clock.advance(0.3)
    writer.on_tool_result(event(1, workspace, ("b", "create"), session="late"))
    assert writer.due() == pytest.approx(0.2)
    clock.advance(0.2)
    assert len(writer.flush_due()) == 1
    assert session_lines(home, "early") and not session_lines(home, "late")
    assert writer.due() == pytest.approx(0.3)
    clock.advance(0.3)
    assert len(writer.flush_due()) == 1
    assert session_lines(home, "late")


# ------------------------------------------------------------------ silence on failure


@pytest.mark.parametrize(
    "bad",
    [
        "not json at all",
        "[1, 2]",
        b"\xff\xfe",
        '{"rootId": "r1", "seq": 1, "cwd": "/", "ok": true, "files": []}',
        '{"sessionId": "s1", "rootId": "r1", "seq": "7", "cwd": "/", "ok": true}',
        '{"sessionId": "s1", "rootId": "r1", "seq": 1, "cwd": "relative/dir", "ok": true}',
        '{"sessionId": "s1", "rootId": "r1", "seq": 1, "cwd": "/", "files": []}',
        '{"sessionId": "s1", "rootId": "r1", "seq": 1, "cwd": "/", "ok": true, "files": {}}',
        '{"sessionId": "s1", "rootId": "r1", "seq": 1, "cwd": "/", "ok": true,'
        ' "files": [{"path": "a", "op": "rename"}]}',
        '{"sessionId": "s1", "rootId": "r1", "seq": 1, "cwd": "/", "ok": true,'
        ' "files": [{"path": "a", "op": "create", "artifact": "yes"}]}',
        '{"sessionId": "s1", "rootId": "r1", "seq": 1, "cwd": "/", "ok": true, "files": [7]}',
        "[" * 100_000,
    ],
)
def test_a_malformed_event_is_skipped_with_a_debug_line(
    writer: AutoWriter, bad: str | bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    writer.on_tool_result(bad)
    assert writer.due() is None
    assert any("malformed" in r.getMessage() for r in caplog.records)


def test_a_malformed_object_is_skipped_too(writer: AutoWriter, workspace: Path) -> None:
    writer.on_tool_result(
        {"sessionId": 5, "rootId": "r", "seq": 1, "cwd": str(workspace), "ok": True}
    )
    writer.on_tool_result(None)  # type: ignore[arg-type]
    assert writer.due() is None


def test_a_cwd_that_does_not_exist_is_skipped(
    writer: AutoWriter,
    clock: FakeClock,
    home: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    writer.on_tool_result(event(1, tmp_path / "gone", ("a.txt", "create")))
    clock.advance(1)
    assert writer.flush_all() == []
    assert not session_path(home).exists()
    assert any("does not exist" in r.getMessage() for r in caplog.records)


def test_no_store_is_skipped(
    clock: FakeClock, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    writer = AutoWriter(None, clock=clock)
    writer.on_tool_result(event(1, workspace, ("a.txt", "create")))
    clock.advance(0.5)
    assert writer.flush_due() == []
    assert any("no store" in r.getMessage() for r in caplog.records)


def test_a_home_that_cannot_be_created_is_skipped(
    tmp_path: Path, workspace: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    writer = AutoWriter(MemoryStore.open(blocker / "home", workspace, "alice"), clock=clock)
    writer.on_tool_result(event(1, workspace, ("a.txt", "create")))
    assert writer.flush_all() == []
    assert any("not written" in r.getMessage() for r in caplog.records)


def _oversized(home: Path) -> Path:
    path = session_path(home)
    path.parent.mkdir(parents=True, mode=0o700)
    junk = b"x" * (1 << 20) + b"\n"
    path.write_bytes(junk * 9)  # nine 1 MiB lines: over the 8 MiB cap, so read-only
    return path


def test_a_read_only_store_is_skipped(
    writer: AutoWriter, home: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    path = _oversized(home)
    size = path.stat().st_size
    writer.on_tool_result(event(1, workspace, ("a.txt", "create")))
    assert writer.flush_all() == []
    assert path.stat().st_size == size
    assert any("STORE_TOO_LARGE" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("damage", ["directory", "symlink"])
def test_a_damaged_store_is_skipped(
    writer: AutoWriter,
    home: Path,
    workspace: Path,
    tmp_path: Path,
    damage: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    path = session_path(home)
    path.parent.mkdir(parents=True, mode=0o700)
    target = tmp_path / "target.jsonl"
    target.write_text("")
    if damage == "directory":
        path.mkdir()
    else:
        path.symlink_to(target)
    writer.on_tool_result(event(1, workspace, ("a.txt", "create")))
    assert writer.flush_all() == []
    assert target.read_text() == ""
    assert any("UNSAFE_PATH" in r.getMessage() for r in caplog.records)


@pytest.fixture
def held_lock(home: Path) -> Iterator[Path]:
    """The session file's lock held by another process the host's way (O_CREAT|O_EXCL, its
    pid inside, unlinked when done) until the test ends."""
    path = session_path(home)
    path.parent.mkdir(parents=True, mode=0o700)
    lock_path = Path(f"{path}.lock")
    code = (
        "import os, sys\n"
        f"fd = os.open({str(lock_path)!r}, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)\n"
        "os.write(fd, f'{os.getpid()}\\n'.encode()); os.close(fd)\n"
        "print('locked', flush=True)\nsys.stdin.read()\n"
        f"os.unlink({str(lock_path)!r})\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield path
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=WAIT_S)


def test_a_lock_timeout_is_skipped(
    held_lock: Path,
    home: Path,
    workspace: Path,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    store = MemoryStore.open(home, workspace, "alice", lock_timeout_s=0.05)
    writer = AutoWriter(store, clock=clock)
    writer.on_tool_result(event(1, workspace, ("a.txt", "create")))
    assert writer.flush_all() == []
    assert not held_lock.exists()
    assert any("LOCK_TIMEOUT" in r.getMessage() for r in caplog.records)


def test_a_forgotten_digest_is_not_written_again(
    writer: AutoWriter, store: MemoryStore, clock: FakeClock, home: Path, workspace: Path
) -> None:
    writer.on_tool_result(event(1, workspace, ("a.txt", "create")))
    [record_id] = writer.flush_all()
    store.forget(record_id)
    # The same digest at a later event (the host would write it again under a random id).
    writer.on_tool_result(event(2, workspace, ("a.txt", "create")))
    assert writer.flush_all() == []
    assert store.get(record_id).status.value == "forgotten"
    assert len(store.records("session", session=("s1", "r1"), include_inactive=True)) == 1


# ------------------------------------------------------------------ dsh-memory auto-write


def _no_noise(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "Traceback" not in result.stdout


def test_cli_reads_stdin_and_writes_at_eof(home: Path, workspace: Path) -> None:
    result = run_cli(home, workspace, "auto-write", input="\n".join(seed_events(workspace)))
    _no_noise(result)
    assert result.stdout == ""
    [line] = session_lines(home, "session-abc", root_id(workspace))
    assert (line["id"], line["content"]) == (seed_id(workspace), SEED_CONTENT)


def test_cli_writes_one_digest_per_session_after_a_burst(home: Path, workspace: Path) -> None:
    lines = []
    for seq in range(200):
        session = "A" if seq % 2 else "B"
        lines.append(
            json.dumps(event(seq, workspace, (f"{session}/{seq % 9}", "modify"), session=session))
        )
    events = workspace / "events.jsonl"
    events.write_text("\n".join(lines) + "\n")
    _no_noise(run_cli(home, workspace, "auto-write", "--events", str(events)))
    assert len(session_lines(home, "A")) == 1
    assert len(session_lines(home, "B")) == 1


def test_cli_rerun_of_the_same_events_writes_no_line(home: Path, workspace: Path) -> None:
    events = workspace / "events.jsonl"
    events.write_text("\n".join(seed_events(workspace)) + "\n")
    _no_noise(run_cli(home, workspace, "auto-write", "--events", str(events)))
    before = session_path(home, "session-abc", root_id(workspace)).read_bytes()
    _no_noise(run_cli(home, workspace, "auto-write", "--events", str(events)))
    _no_noise(run_cli(home, workspace, "auto-write", input=events.read_text()))
    assert session_path(home, "session-abc", root_id(workspace)).read_bytes() == before


def test_cli_names_each_malformed_line_and_exits_1_a_missing_cwd_is_silent(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    lines = [
        "garbage",
        "{}",
        '{"sessionId": "s1"}',
        "[]",
        "\x00\x01",
        json.dumps(event(1, tmp_path / "missing", ("a.txt", "create"))),
        json.dumps(event(2, "not/absolute", ("a.txt", "create"))),
        '{"sessionId": "s1", "rootId": "r1", "seq": 3, "cwd": "/", "ok": true, "files": [{"path"',
    ]
    lines.append(json.dumps(event(4, workspace, ("kept.md", "create"))))
    result = run_cli(home, workspace, "auto-write", input="\n".join(lines))
    assert result.returncode == 1, result.stderr
    *warnings, last = result.stderr.splitlines()
    # Line 6 (its cwd is gone, as a deleted worktree's) is the host's case, skipped quietly.
    assert [w.split(" skipped: ")[0] for w in warnings] == [
        f"warning: events line {n}" for n in (1, 2, 3, 4, 5, 7, 8)
    ]
    assert "warning: events line 7 skipped: cwd 'not/absolute' is not an absolute path" in warnings
    assert last == (
        "error[INVALID_EVENT]: 7 events line(s) skipped as malformed (the others were taken)"
    )
    [line] = session_lines(home)  # the good line after them was taken
    assert "kept.md" in line["content"]


@pytest.mark.parametrize("failure", ["no-store", "read-only", "damaged", "lock-timeout"])
def test_cli_failures_are_silent_store_problems(
    request: pytest.FixtureRequest, home: Path, workspace: Path, tmp_path: Path, failure: str
) -> None:
    env = {}
    target_home = home
    if failure == "no-store":
        blocker = tmp_path / "blocker"
        blocker.write_text("")
        target_home = blocker / "home"
    elif failure == "read-only":
        _oversized(home)
    elif failure == "damaged":
        session_path(home).mkdir(parents=True)
    else:
        request.getfixturevalue("held_lock")
        env["DSH_LOCK_TIMEOUT"] = "0.1"
    before = sorted(p.name for p in session_path(home).parent.glob("*")) if home.exists() else []
    result = run_cli(
        target_home,
        workspace,
        "auto-write",
        env=env,
        input=json.dumps(event(1, workspace, ("a.txt", "create"))) + "\n",
    )
    _no_noise(result)
    assert result.stdout == ""
    after = sorted(p.name for p in session_path(home).parent.glob("*")) if home.exists() else []
    assert [n for n in after if n.endswith(".jsonl")] == [n for n in before if n.endswith(".jsonl")]


def _start(home: Path, workspace: Path, *args: str) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "dsh_memory_tui.cli",
        "--home",
        str(home),
        "--workspace",
        str(workspace),
        "--user",
        "alice",
        "auto-write",
        *args,
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )


def _append(path: Path, *events: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write("".join(json.dumps(e) + "\n" for e in events))


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    err = finish(proc)
    return proc.returncode, err  # type: ignore[return-value]


def test_cli_follow_writes_as_the_file_grows(home: Path, workspace: Path) -> None:
    events = workspace / "events.jsonl"
    proc = _start(home, workspace, "--events", str(events), "--follow")  # file not there yet
    try:
        _append(events, event(1, workspace, ("a.txt", "create")))
        wait_for(lambda: len(session_lines(home)) == 1, "the first digest")
        _append(events, event(2, workspace, ("a.txt", "create")))
        wait_for(lambda: len(session_lines(home)) == 2, "the merge of event 2")
        _append(events, event(3, workspace, ("c.txt", "modify")))
        wait_for(lambda: len(session_lines(home)) == 3, "a new digest")
    finally:
        proc.send_signal(signal.SIGTERM)
        code, err = _finish(proc)
    assert (code, err) == (0, b"")
    lines = session_lines(home)
    assert lines[0]["id"] == lines[1]["id"] != lines[2]["id"]
    assert lines[1]["governance"]["revision"] == 2
    assert lines[2]["content"].startswith("Files touched: 2 (1 created, 1 modified, 0 deleted).")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("source", ["stdin", "follow"])
def test_cli_writes_the_pending_digest_on_a_signal(
    home: Path, workspace: Path, signum: int, source: str
) -> None:
    events = workspace / "events.jsonl"
    args = ("--events", str(events), "--follow") if source == "follow" else ()
    proc = _start(home, workspace, *args)
    assert proc.stdin is not None

    def send(*evs: dict[str, Any]) -> None:
        if source == "follow":
            _append(events, *evs)
        else:
            proc.stdin.write(b"".join(json.dumps(e).encode() + b"\n" for e in evs))
            proc.stdin.flush()

    try:
        # A first digest on disk says the reader is running with its handlers in place.
        send(event(1, workspace, ("warm.txt", "create"), session="warm-up"))
        wait_for(lambda: bool(session_lines(home, "warm-up")), "the warm-up digest")
        send(*(event(seq, workspace, (f"out/{seq}.md", "create", True)) for seq in range(5)))
    finally:
        proc.send_signal(signum)
        code, err = _finish(proc)
    assert (code, err) == (0, b"")
    [line] = session_lines(home)
    assert line["content"] == (
        "Files touched: 5 (5 created, 0 modified, 0 deleted).\n"
        "Created: out/0.md, out/1.md, out/2.md, out/3.md, out/4.md\n"
        "Artifacts: 5 — out/0.md, out/1.md, out/2.md, out/3.md, out/4.md."
    )


def test_cli_events_file_that_does_not_exist_is_a_usage_error(home: Path, workspace: Path) -> None:
    result = run_cli(home, workspace, "auto-write", "--events", str(workspace / "nope.jsonl"))
    assert result.returncode == 2
    assert result.stderr.startswith("error[USAGE]:")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_line_over_1_mib_is_skipped_and_the_next_one_taken(
    home: Path, workspace: Path, source: str
) -> None:
    from dsh_memory_tui.autowriter import MAX_EVENT_BYTES

    huge = b"x" * (3 * MAX_EVENT_BYTES)  # spans many reads, newline only at its end
    good = json.dumps(event(7, workspace, ("after.md", "create"))).encode()
    data = huge + b"\n" + good + b"\n" + b"y" * (MAX_EVENT_BYTES + 1)  # the last: no newline
    events = workspace / "events.jsonl"
    events.write_bytes(data)
    if source == "file":
        result = run_cli(home, workspace, "auto-write", "--events", str(events))
    else:
        result = subprocess.run(
            [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(home)]
            + ["--workspace", str(workspace), "--user", "alice", "auto-write"],
            input=data,
            capture_output=True,
            timeout=WAIT_S,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
    stderr = result.stderr if isinstance(result.stderr, str) else result.stderr.decode()
    assert result.returncode == 1
    assert stderr.splitlines()[:2] == [
        f"warning: events line {n} skipped: longer than {MAX_EVENT_BYTES} bytes" for n in (1, 3)
    ]
    [line] = session_lines(home)
    assert (
        line["content"].startswith("Files touched: 1 (1 created") and "after.md" in line["content"]
    )
