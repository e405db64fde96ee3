"""``dsh-memory payload`` (issue 25): exactly the bytes ``dsh-memory mcp`` would send now for a
session (its list tool and its ``memory://verified``), under the same budget; ``--json`` adds
the included and cut ids, the bytes and a token estimate. Real CLI processes, and a real server
through the SDK's client to compare with.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, run_cli
from test_mcp import client, ok, store_of

from dsh_memory_tui import agent_view as av
from dsh_memory_tui import settings


def _fill(home: Path, workspace: Path, n: int = 12) -> list[str]:
    store = store_of(home, workspace)
    ids = [
        store.create("project", "fact", f"title {i}", f"content {i} " + "q" * 300).id
        for i in range(n)
    ]
    store.apply_many("verify", ids)
    session = store.create("session", "fact", "session note", "s", session=("s1", None)).id
    store.verify(session)
    return ids


def _payload_bytes(home: Path, workspace: Path, *args: str) -> bytes:
    """``dsh-memory payload`` with its stdout a pipe: the raw bytes."""
    cmd = [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(home)]
    cmd += ["--workspace", str(workspace), "--user", "alice", "payload", *args]
    done = subprocess.run(
        cmd, capture_output=True, cwd=workspace, env={"PYTHONPATH": str(REPO_ROOT)}, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_payload_is_byte_for_byte_what_the_server_sends_for_that_session(dirs, tmp_path):
    home, workspace = dirs
    _fill(home, workspace)
    payload = _payload_bytes(home, workspace, "--session", "s1", "--budget-bytes", "2500")
    async with client(home, workspace, "--session", "s1", "--budget-bytes", "2500") as session:
        sent = await ok(session, "workspace_memory_list")
    assert payload == sent.encode()
    assert b"session note" in payload  # the session's own records are in it
    assert b"more verified records not sent: over the budget (2,500 bytes)" in payload


def test_payload_json_names_the_included_and_cut_ids_the_bytes_and_tokens(dirs, tmp_path):
    home, workspace = dirs
    _fill(home, workspace)
    result = run_cli(
        home, workspace, "payload", "--session", "s1", "--budget-bytes", "2500", "--json"
    )
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    expected = av.agent_view(store_of(home, workspace), av.Audience(("s1", None)), budget=2500)
    assert got["included"] == [r.id for r in expected.records]
    assert got["cut"] == [r.id for r in expected.cut] and got["cut"]
    assert got["bytes"] == len(got["text"].encode()) == expected.size <= 2500
    assert got["tokens"] == -(-got["bytes"] // 4)
    assert got["budget"] == 2500 and got["session"] == "s1" and got["beyondLimit"] == 0


def test_payload_takes_the_budget_from_the_environment_like_the_server(dirs, tmp_path):
    home, workspace = dirs
    _fill(home, workspace)
    result = run_cli(home, workspace, "payload", "--json", env={settings.BUDGET_ENV: "1500"})
    got = json.loads(result.stdout)
    assert got["budget"] == 1500 and got["bytes"] <= 1500


def test_payload_says_its_size_and_cut_on_stderr(dirs, tmp_path):
    home, workspace = dirs
    _fill(home, workspace)
    result = run_cli(home, workspace, "payload", "--session", "s1", "--budget-bytes", "2500")
    assert result.stdout.startswith("# Verified workspace memory")
    summary = result.stderr.strip()
    assert "of 2,500 bytes" in summary and "cut by the budget" in summary
    assert summary.endswith("session s1")


def test_payload_shows_hidden_characters_on_a_terminal_only(dirs, tmp_path):
    """A pipe gets the exact bytes; a terminal (``script`` gives the command one) gets
    ``visible`` text: a record's bidi override never reaches it raw."""
    home, workspace = dirs
    store = store_of(home, workspace)
    rid = store.create("project", "fact", "escape", "before \u202e after").id
    store.verify(rid, "its hidden character is the point of the test")
    assert "\u202e".encode() in _payload_bytes(home, workspace)
    cmd = (
        f"{sys.executable} -m dsh_memory_tui.cli --home {home} --workspace {workspace} "
        "--user alice payload"
    )
    shown = subprocess.run(
        ["script", "-qec", cmd, "/dev/null"],
        capture_output=True,
        env={"PYTHONPATH": str(REPO_ROOT), "TERM": "dumb"},
        timeout=60,
    )
    assert b"escape" in shown.stdout
    assert "\u202e".encode() not in shown.stdout


def test_payload_with_a_bad_budget_exits_2(dirs, tmp_path):
    home, workspace = dirs
    result = run_cli(home, workspace, "payload", "--budget-bytes", "many")
    assert result.returncode == 2
    assert result.stderr.startswith("error[USAGE]: --budget-bytes 'many'")
