"""The audit log (issue 25): every serving of ``dsh-memory mcp`` and every export appends one
entry to ``$DSH_HOME/audit/audit.jsonl`` (time, client, session, what was asked, each record's
id, revision and hash, bytes; never text), private, rotated, readable after a crash, shared by
two servers at once; ``dsh-memory audit`` reads it. Real files, real server subprocesses
through the SDK's client, real CLI processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
from conftest import REPO_ROOT, run_cli
from mcp.types import Implementation
from test_mcp import client, ok, read, store_of

from dsh_memory_tui.audit import AuditLog, export_entry, served_entry
from dsh_memory_tui.bundle import export_bundle
from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.store import MemoryStore

AGENT = Implementation(name="test-agent", version="9.1")
SECRET_TITLE = "Zebra protocol codename"
SECRET_CONTENT = "The launch passphrase is quartz-heron-42"


def _verified(store: MemoryStore, title: str, content: str, scope: str = "project") -> str:
    rid = store.create(scope, "fact", title, content).id
    store.verify(rid)
    return rid


def _entries(home: Path) -> list[dict[str, Any]]:
    return AuditLog(home).read().entries


def _all_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (home / "audit").iterdir())


# ----------------------------------------------------------------------------- servings


async def test_every_serving_appends_one_entry_naming_client_session_and_records(dirs, tmp_path):
    home, workspace = dirs
    store = store_of(home, workspace)
    rid = _verified(store, SECRET_TITLE, SECRET_CONTENT)
    async with client(home, workspace, "--session", "s7", client_info=AGENT) as session:
        listed = await ok(session, "workspace_memory_list", scope="project")
        await ok(session, "workspace_memory_search", query="zebra", limit=5)
        await read(session, "memory://verified")
        await ok(session, "workspace_memory_propose", type="fact", title="t", content="c")
    entries = _entries(home)
    assert [e["asked"] for e in entries] == [
        {"tool": "workspace_memory_list", "scope": "project"},
        {"tool": "workspace_memory_search", "query": "zebra", "limit": 5},
        {"resource": "memory://verified"},
    ]  # a proposal serves nothing, so it is not an entry
    record = store.get(rid)
    for entry in entries:
        assert entry["kind"] == "served"
        assert entry["client"] == {"name": "test-agent", "version": "9.1"}
        assert entry["session"] == "s7"
        assert entry["records"] == [
            {
                "id": rid,
                "scope": "project",
                "revision": record.governance.revision,
                "contentHash": record.contentHash,
            }
        ]
        assert entry["cut"] == 0
    assert entries[0]["bytes"] == len(listed.encode())


async def test_the_log_never_holds_a_records_title_or_content(dirs, tmp_path):
    home, workspace = dirs
    _verified(store_of(home, workspace), SECRET_TITLE, SECRET_CONTENT)
    async with client(home, workspace) as session:
        await ok(session, "workspace_memory_list")
        await ok(session, "workspace_memory_search", query="launch")
        await read(session, "memory://verified/project")
    export_bundle(store_of(home, workspace), tmp_path / "out.json")
    data = _all_bytes(home)
    assert len(_entries(home)) == 4
    for secret in (SECRET_TITLE, SECRET_CONTENT, "Zebra", "quartz-heron"):
        assert secret.encode() not in data


async def test_the_log_is_0600_in_a_0700_directory_whatever_the_umask(dirs, tmp_path):
    home, workspace = dirs
    _verified(store_of(home, workspace), "a", "b")
    old = os.umask(0)
    try:
        AuditLog(home).append(
            served_entry(client=None, session="s", asked={}, records=[], cut=0, size=0)
        )
    finally:
        os.umask(old)
    assert (home / "audit").stat().st_mode & 0o777 == 0o700
    assert (home / "audit" / "audit.jsonl").stat().st_mode & 0o777 == 0o600


async def test_a_cut_by_the_budget_is_counted_in_the_entry(dirs, tmp_path):
    home, workspace = dirs
    store = store_of(home, workspace)
    for i in range(12):
        _verified(store, f"title {i}", f"content {i} " + "z" * 300)
    async with client(home, workspace, "--budget-bytes", "2000") as session:
        text = await ok(session, "workspace_memory_list")
    (entry,) = _entries(home)
    assert entry["cut"] == 12 - len(entry["records"]) > 0
    assert f"{entry['cut']} more verified records not sent" in text


async def test_two_servers_at_once_both_get_every_entry_in(dirs, tmp_path):
    home, workspace = dirs
    _verified(store_of(home, workspace), "shared fact", "both servers serve it")
    calls = 25

    async def agent(session_id: str) -> None:
        async with client(home, workspace, "--session", session_id) as session:
            for _ in range(calls):
                await ok(session, "workspace_memory_search", query="fact")

    async with anyio.create_task_group() as group:
        group.start_soon(agent, "left")
        group.start_soon(agent, "right")
    read_back = AuditLog(home).read()
    assert read_back.unreadable == 0
    sessions = [e["session"] for e in read_back.entries]
    assert sessions.count("left") == calls and sessions.count("right") == calls


async def test_a_failing_log_does_not_take_the_answer_away(dirs, tmp_path):
    home, workspace = dirs
    _verified(store_of(home, workspace), "still served", "even without a log")
    (home / "audit").mkdir(mode=0o700)
    (home / "audit" / "audit.jsonl").symlink_to(tmp_path / "elsewhere")
    async with client(home, workspace) as session:
        text = await ok(session, "workspace_memory_list")
    assert "still served" in text
    assert not (tmp_path / "elsewhere").exists()
    log = (home.parent / "server-stderr.log").read_text()
    assert "audit entry not written" in log and "error[UNSAFE_PATH]" in log


# ----------------------------------------------------------------------------- the file


def test_a_line_cut_short_by_a_crash_is_skipped_and_the_next_entry_stands_apart(tmp_path):
    log = AuditLog(tmp_path)
    log.append(served_entry(client=None, session="a", asked={}, records=[], cut=0, size=1))
    with open(log.path, "ab") as f:
        f.write(b'{"at": 17, "kind": "serv')  # a crash in the middle of a line
    log.append(served_entry(client=None, session="b", asked={}, records=[], cut=0, size=2))
    got = log.read()
    assert [e["session"] for e in got.entries] == ["a", "b"]
    assert got.unreadable == 1


def test_past_its_size_the_log_rotates_and_keeps_three_older_files(tmp_path):
    log = AuditLog(tmp_path, max_bytes=2_000)
    for i in range(200):
        log.append(served_entry(client=None, session=f"s{i}", asked={}, records=[], cut=0, size=i))
    names = sorted(p.name for p in log.dir.iterdir())
    assert names == ["audit.1.jsonl", "audit.2.jsonl", "audit.3.jsonl", "audit.jsonl"]
    for path in log.files():
        assert path.stat().st_size <= 2_000 + 300
        assert path.stat().st_mode & 0o777 == 0o600
    sessions = [e["session"] for e in log.read().entries]
    assert sessions[-1] == "s199"
    assert sessions == [f"s{i}" for i in range(200 - len(sessions), 200)]  # in order, no gap
    assert len(sessions) < 200  # the oldest went with the fourth file


ROTATING_WRITER = textwrap.dedent(
    """
    import sys
    from dsh_memory_tui.audit import AuditLog, served_entry
    log = AuditLog(sys.argv[1], max_bytes=int(sys.argv[3]))
    for i in range(int(sys.argv[4])):
        log.append(served_entry(client=None, session=f"{sys.argv[2]}-{i}", asked={},
                                records=[], cut=0, size=i))
    """
)


def test_two_writers_rotating_at_once_lose_no_entry_and_break_no_line(tmp_path):
    n = 300
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ROTATING_WRITER, str(tmp_path), name, "40000", str(n)],
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
        for name in ("p", "q")
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    got = AuditLog(tmp_path).read()
    assert got.unreadable == 0
    sessions = sorted(e["session"] for e in got.entries)
    assert sessions == sorted(f"{w}-{i}" for w in "pq" for i in range(n))
    assert not (tmp_path / "audit" / "audit.jsonl.lock").exists()


def test_a_symlinked_log_is_refused(tmp_path):
    (tmp_path / "audit").mkdir(mode=0o700)
    (tmp_path / "audit" / "audit.jsonl").symlink_to(tmp_path / "target")
    try:
        AuditLog(tmp_path).append(export_entry(path="x", fmt="json", records=[], size=0))
    except StoreError as exc:
        assert exc.code is ErrorCode.UNSAFE_PATH
    else:
        raise AssertionError("the symlink was followed")
    assert not (tmp_path / "target").exists()


# ----------------------------------------------------------------------------- exports


def test_an_export_is_an_entry_naming_where_and_which_revisions(dirs, tmp_path):
    home, workspace = dirs
    store = store_of(home, workspace)
    rid = _verified(store, SECRET_TITLE, SECRET_CONTENT)
    result = run_cli(home, workspace, "export", "--out", str(tmp_path / "b.md"))
    assert result.returncode == 0, result.stderr
    (entry,) = _entries(home)
    assert entry["kind"] == "exported"
    assert entry["path"] == str((tmp_path / "b.md").resolve())
    assert entry["format"] == "markdown"
    assert [r["id"] for r in entry["records"]] == [rid]
    assert entry["bytes"] == (tmp_path / "b.md").stat().st_size


# ----------------------------------------------------------------------------- the CLI


def _three_entries(home: Path) -> list[str]:
    log = AuditLog(home)
    day = 86_400_000
    refs = [{"id": "memory:a"}, {"id": "memory:b"}]
    log.append(
        {
            **served_entry(
                client=("claude-code", "2.1"),
                session="s1",
                asked={"tool": "workspace_memory_list"},
                records=[],
                cut=0,
                size=10,
                at=1_000 * day,
            ),
            "records": refs[:1],
        }
    )
    log.append(
        {
            **served_entry(
                client=("codex", "0.5"),
                session="s2",
                asked={"tool": "workspace_memory_search", "query": "db"},
                records=[],
                cut=0,
                size=20,
                at=1_001 * day,
            ),
            "records": refs,
        }
    )
    log.append(
        {
            **export_entry(path="/tmp/x.json", fmt="json", records=[], size=30, at=1_002 * day),
            "records": refs[1:],
        }
    )
    return ["memory:a", "memory:b"]


def test_audit_lists_every_entry_and_filters_by_record_session_and_time(dirs, tmp_path):
    home, workspace = dirs
    _three_entries(home)
    every = run_cli(home, workspace, "audit")
    assert every.returncode == 0, every.stderr
    assert "3 entries in" in every.stdout
    assert 'search "db"' in every.stdout and "claude-code 2.1" in every.stdout
    by_record = json.loads(
        run_cli(home, workspace, "audit", "--record", "memory:a", "--json").stdout
    )
    assert [e["session"] for e in by_record] == ["s1", "s2"]
    by_session = json.loads(run_cli(home, workspace, "audit", "--session", "s2", "--json").stdout)
    assert [e["client"]["name"] for e in by_session] == ["codex"]
    since = json.loads(
        run_cli(home, workspace, "audit", "--since", "1972-09-28T00:00", "--json").stdout
    )
    assert [e["kind"] for e in since] == ["served", "exported"]


def test_audit_of_a_record_ends_with_where_it_went(dirs, tmp_path):
    home, workspace = dirs
    _three_entries(home)
    out = run_cli(home, workspace, "audit", "--record", "memory:b").stdout
    assert "served once to 1 session (s2)" in out and "to codex 0.5" in out
    assert "exported 1972-09-29 00:00 UTC to /tmp/x.json" in out
    assert "cannot be recalled" in out


def test_audit_with_a_bad_since_is_a_usage_error(dirs, tmp_path):
    home, workspace = dirs
    result = run_cli(home, workspace, "audit", "--since", "yesterday-ish")
    assert result.returncode == 2
    assert result.stderr.startswith("error[USAGE]: --since 'yesterday-ish' is not a time")


def test_audit_of_an_empty_home_says_so(dirs, tmp_path):
    home, workspace = dirs
    result = run_cli(home, workspace, "audit")
    assert result.returncode == 0
    assert result.stdout.startswith("0 entries in ")
