"""Receipts (issue 25): ``forget``, ``archive`` and ``reject`` say where the record already
went, from the audit log: served how many times, to which sessions and clients, last when;
exported when and where; and that those copies cannot be recalled. The id stays the last line.
Real CLI processes; servings through a real server and the SDK's client.
"""

from __future__ import annotations

from conftest import run_cli
from mcp.types import Implementation
from test_mcp import client, ok, store_of

RECALL = "copies already sent or exported cannot be recalled"


async def test_forget_says_which_sessions_and_clients_got_the_record(dirs, tmp_path):
    home, workspace = dirs
    store = store_of(home, workspace)
    rid = store.create("project", "fact", "db", "PostgreSQL 16").id
    store.verify(rid)
    agent = Implementation(name="claude-code", version="2.1")
    async with client(home, workspace, "--session", "a1", client_info=agent) as session:
        await ok(session, "workspace_memory_list")
        await ok(session, "workspace_memory_search", query="postgresql")
    async with client(home, workspace, "--session", "b2") as session:
        await ok(session, "workspace_memory_list")
    result = run_cli(home, workspace, "forget", rid)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("served 3 times to 2 sessions (b2, a1), last just now, to ")
    assert "claude-code 2.1" in lines[0] and "mcp 0.1.0" in lines[0]
    assert lines[1] == "never exported"
    assert lines[2].startswith(RECALL)
    assert lines[-1] == rid


def test_archive_says_where_the_record_was_exported(dirs, tmp_path):
    home, workspace = dirs
    store = store_of(home, workspace)
    rid = store.create("project", "fact", "t", "c").id
    run_cli(home, workspace, "export", "--out", str(tmp_path / "team.json"))
    result = run_cli(home, workspace, "archive", rid)
    assert result.returncode == 0, result.stderr
    assert "never served to an agent" in result.stdout
    assert f"to {(tmp_path / 'team.json').resolve()}" in result.stdout
    assert RECALL in result.stdout
    assert result.stdout.splitlines()[-1] == rid


def test_reject_of_a_record_that_never_went_out_says_so(dirs, tmp_path):
    home, workspace = dirs
    rid = store_of(home, workspace).propose("project", "fact", "t", "c", session=("s1", None)).id
    result = run_cli(home, workspace, "reject", rid, "--reason", "wrong")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("never served to an agent nor exported")
    assert RECALL not in result.stdout
    assert result.stdout.splitlines()[-1] == rid


def test_a_refused_forget_prints_no_receipt(dirs, tmp_path):
    home, workspace = dirs
    result = run_cli(home, workspace, "forget", "memory:nope")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error[NOT_FOUND]")
