"""``dsh-memory mcp`` through a second, independent client: the official MCP Inspector's CLI
mode (npm ``@modelcontextprotocol/inspector``, ``--cli``), which speaks the protocol with its
own TypeScript SDK. What it receives is ``dsh-memory payload``'s bytes, bounded by the budget,
and every call it makes is an audit entry naming it (issue 25).

The Inspector is installed once per machine by the session fixture (``npm install --prefix``
into ``$DSH_INSPECTOR_DIR``, default ``~/.cache/dsh-memory-tui/inspector-<version>``): npm and
its registry are needed, as on CI. Nothing is skipped: without npm the tests fail saying so.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, run_cli
from test_mcp import store_of

from dsh_memory_tui.audit import AuditLog

INSPECTOR_VERSION = "2.12.0"
INSPECTOR_PACKAGE = f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"
# Generous, for a busy machine (a load of 10 on two cores): the Inspector's own connect timeout
# (15 s by default) waits for our server's start (python, the store, the SDK) and its reply to
# `initialize`; the run's for the Inspector's whole call.
CONNECT_TIMEOUT_S = 180
RUN_TIMEOUT_S = 300


def _inspector_dir() -> Path:
    configured = os.environ.get("DSH_INSPECTOR_DIR")
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "dsh-memory-tui" / f"inspector-{INSPECTOR_VERSION}"


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The Inspector's launcher, installed with npm the first time (one install at a time)."""
    where = _inspector_dir()
    launcher = where / "node_modules" / ".bin" / "mcp-inspector"
    if launcher.exists():
        return launcher
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("the Inspector tests need node and npm on PATH (npm install -g is not needed)")
    where.mkdir(parents=True, exist_ok=True)
    with open(where / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not launcher.exists():
            done = subprocess.run(
                [npm, "install", "--prefix", str(where), "--no-audit", "--no-fund"]
                + ["--loglevel", "error", INSPECTOR_PACKAGE],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not launcher.exists():
                pytest.fail(f"npm install {INSPECTOR_PACKAGE} failed: {done.stderr[-2000:]}")
    return launcher


def inspect(
    launcher: Path, home: Path, workspace: Path, *method: str, server_args: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One Inspector CLI call against ``dsh-memory mcp SERVER_ARGS`` (a real subprocess it
    starts): its JSON answer."""
    server = [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(home)]
    server += ["--workspace", str(workspace), "--user", "alice", "mcp", *server_args]
    cmd = [str(launcher), "--cli", "-e", f"PYTHONPATH={REPO_ROOT}", "--cwd", str(workspace)]
    cmd += ["--connect-timeout", str(CONNECT_TIMEOUT_S * 1000)]
    done = subprocess.run(
        [*cmd, *method, "--", *server],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        # The Inspector keeps a catalog under $HOME: a temporary one, not the user's.
        env={**os.environ, "HOME": str(home.parent)},
    )
    assert done.returncode == 0, f"the Inspector's call failed: {done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


def call_tool(
    launcher: Path,
    home: Path,
    workspace: Path,
    tool: str,
    *args: str,
    server_args: tuple[str, ...] = (),
) -> str:
    """The text of one ``tools/call`` of ``tool`` (``args``: ``--tool-arg key=value``...)."""
    method = ("--method", "tools/call", "--tool-name", tool, *args)
    answer = inspect(launcher, home, workspace, *method, server_args=server_args)
    assert answer["isError"] is False, answer
    return _text(answer)


def _text(answer: dict[str, Any]) -> str:
    items = answer.get("content") or answer.get("contents")
    assert items, answer
    return "".join(item["text"] for item in items)


def _fill(home: Path, workspace: Path, n: int = 15) -> None:
    store = store_of(home, workspace)
    ids = [
        store.create("project", "fact", f"title {i}", f"content {i} " + "w" * 300).id
        for i in range(n)
    ]
    store.apply_many("verify", ids)


def test_the_inspector_lists_exactly_the_payload_and_is_audited_by_name(inspector, dirs, tmp_path):
    home, workspace = dirs
    _fill(home, workspace)
    payload = run_cli(home, workspace, "payload", "--session", "i1", "--budget-bytes", "3000")
    text = call_tool(
        inspector,
        home,
        workspace,
        "workspace_memory_list",
        server_args=("--session", "i1", "--budget-bytes", "3000"),
    )
    assert text == payload.stdout
    assert len(text.encode()) <= 3000 and "more verified records not sent" in text
    (entry,) = AuditLog(home).read().entries
    assert entry["client"] == {"name": "inspector-cli", "version": INSPECTOR_VERSION}
    assert entry["session"] == "i1"
    assert entry["asked"] == {"tool": "workspace_memory_list"}
    assert entry["bytes"] == len(text.encode())
    assert entry["cut"] == 15 - len(entry["records"]) > 0


def test_the_inspectors_search_is_bounded_and_audited_with_its_query(inspector, dirs, tmp_path):
    home, workspace = dirs
    _fill(home, workspace)
    text = call_tool(
        inspector,
        home,
        workspace,
        "workspace_memory_search",
        "--tool-arg",
        "query=content",
        server_args=("--budget-bytes", "2000"),
    )
    assert len(text.encode()) <= 2000 and "more matching records not sent" in text
    (entry,) = AuditLog(home).read().entries
    assert entry["asked"] == {"tool": "workspace_memory_search", "query": "content"}


def test_the_inspectors_resource_read_is_audited_as_that_resource(inspector, dirs, tmp_path):
    home, workspace = dirs
    _fill(home, workspace, n=2)
    answer = inspect(
        inspector,
        home,
        workspace,
        "--method",
        "resources/read",
        "--uri",
        "memory://verified/project",
    )
    assert "title 1" in _text(answer)
    (entry,) = AuditLog(home).read().entries
    assert entry["asked"] == {"resource": "memory://verified/project"}
    assert entry["client"]["name"] == "inspector-cli"
    assert len(entry["records"]) == 2
