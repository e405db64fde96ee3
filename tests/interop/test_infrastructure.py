"""Tests of the interop helpers themselves (corpus naming rules, hostwriter's lock protocol, the
host runner). None of them needs ``dsh_memory_tui``."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from . import hostwriter
from .corpus import (
    CaseDirs,
    corpus_json,
    install_store_case,
    root_id,
    root_id_of_canonical,
    scope_key_file_name,
    session_file_name,
    session_scope_key,
)
from .host import HostHarness

pytestmark = pytest.mark.processes

PATHS = corpus_json("paths.json")
WAIT_S = 60.0


def run_writer(file: Path, *options: str) -> dict[str, Any]:
    done = subprocess.run(
        hostwriter.command(file, *options), capture_output=True, text=True, timeout=WAIT_S
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def writer_options(dirs: CaseDirs, prefix: str, count: int) -> list[str]:
    return [
        "--scope",
        "project",
        "--scope-key",
        dirs.root_id,
        "--prefix",
        prefix,
        "--count",
        str(count),
    ]


def busy_pids(busy_log: Path) -> set[str]:
    """The lock contents a hostwriter saw when refused (``<ms> <pid>`` lines)."""
    return {line.split(" ", 1)[1] for line in busy_log.read_text().splitlines()}


# ------------------------------------------------------------------ naming vectors
@pytest.mark.parametrize(
    "vector", [v for v in PATHS["rootIds"] if "canonicalRoot" in v], ids=lambda v: v["cwd"]
)
def test_root_id_vectors(vector: dict[str, Any]) -> None:
    assert root_id_of_canonical(vector["canonicalRoot"]) == vector["rootId"]


def test_root_id_hashes_the_realpath(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    expected = root_id_of_canonical(os.path.realpath(tmp_path / "real"))
    assert root_id(tmp_path / "link") == root_id(tmp_path / "real" / ".") == expected


@pytest.mark.parametrize(
    "vector", [v for v in PATHS["sessionFiles"] if "file" in v], ids=lambda v: v["fileStem"]
)
def test_session_file_vectors(vector: dict[str, Any]) -> None:
    if "sessionId" in vector:
        session_id = vector["sessionId"]
    else:
        session_id = vector["sessionIdRepeat"]["char"] * vector["sessionIdRepeat"]["count"]
    scope_key = session_scope_key(session_id, vector["rootId"])
    assert len(scope_key.encode("utf-8")) == vector["scopeKeyBytes"]
    name = session_file_name(session_id, vector["rootId"])
    assert name == scope_key_file_name(scope_key) == vector["fileStem"] + ".jsonl"
    assert vector["file"].endswith(f"/sessions/{name}")


def test_store_case_session_file_is_renamed(tmp_path: Path) -> None:
    dirs = install_store_case("lifecycle-session", tmp_path)
    sessions = dirs.home / "workspace-memory" / "sessions"
    assert [p.name for p in sessions.iterdir()] == [session_file_name("s-life", dirs.root_id)]
    text = (sessions / session_file_name("s-life", dirs.root_id)).read_text(encoding="utf-8")
    assert "__" not in text and dirs.root_id in text
    assert (
        sessions.stat().st_mode & 0o777,
        (sessions / os.listdir(sessions)[0]).stat().st_mode & 0o777,
    ) == (0o700, 0o600)


# ------------------------------------------------------------------ hostwriter
def test_two_hostwriters_race_without_losing_a_write(dirs: CaseDirs) -> None:
    file = dirs.scope_path("project")
    go = dirs.tmp / "go"
    count = 150
    procs = []
    for name in ("a", "b"):
        options = [
            *writer_options(dirs, f"writer-{name}", count),
            "--wait-for",
            str(go),
            "--ready",
            str(dirs.tmp / f"ready-{name}"),
            "--acks",
            str(dirs.tmp / name),
            "--busy-log",
            str(dirs.tmp / f"busy-{name}"),
        ]
        procs.append(
            subprocess.Popen(hostwriter.command(file, *options), stdout=subprocess.PIPE, text=True)
        )
    wait_for(
        lambda: all((dirs.tmp / f"ready-{n}").exists() for n in "ab"),
        "both writers ready",
        WAIT_S,
    )
    go.touch()
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == 0
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["ok"] + r["busy"] == count and r["errors"] == {} for r in results), results
    acked = [line for n in "ab" for line in (dirs.tmp / n).read_text().splitlines()]
    assert len(acked) == sum(r["ok"] for r in results) > 0
    text = file.read_text(encoding="utf-8")
    assert text.endswith("\n")
    ids = Counter(json.loads(line)["id"] for line in text.splitlines())
    assert set(ids) == set(acked) and set(ids.values()) == {1}
    assert not Path(f"{file}.lock").exists()
    for name, other in (("a", procs[1].pid), ("b", procs[0].pid)):
        seen = busy_pids(dirs.tmp / f"busy-{name}")
        assert seen <= {str(other), "(gone)", "(empty)"}, (name, seen)


def test_fresh_lock_makes_hostwriter_busy_at_once(dirs: CaseDirs) -> None:
    file = dirs.scope_path("project")
    file.parent.mkdir(parents=True, mode=0o700)
    lock = Path(f"{file}.lock")
    lock.write_text("4242\n")
    busy_log = dirs.tmp / "busy.log"
    result = run_writer(file, *writer_options(dirs, "p", 3), "--busy-log", str(busy_log))
    # No waiting for the holder: a wait would outlive the fresh lock (60 s) and break it.
    assert (result["ok"], result["busy"], result["errors"]) == (0, 3, {})
    assert len(busy_log.read_text().splitlines()) == 3 and busy_pids(busy_log) == {"4242"}
    assert not file.exists() and lock.read_text() == "4242\n"


def test_stale_lock_is_broken(dirs: CaseDirs) -> None:
    file = dirs.scope_path("project")
    file.parent.mkdir(parents=True, mode=0o700)
    lock = Path(f"{file}.lock")
    lock.write_text("4242\n")
    past = time.time() - 61
    os.utime(lock, (past, past))
    acks = dirs.tmp / "acks"
    result = run_writer(file, *writer_options(dirs, "p", 1), "--acks", str(acks))
    assert (result["ok"], result["busy"]) == (1, 0)
    record = json.loads(file.read_text(encoding="utf-8"))
    assert [record["id"]] == acks.read_text().split()
    assert not lock.exists() and file.stat().st_mode & 0o777 == 0o600


def test_hostwriter_compacts_like_the_host(dirs: CaseDirs) -> None:
    file = dirs.scope_path("project")
    run_writer(file, *writer_options(dirs, "p", 2))
    with file.open("a", encoding="utf-8") as handle:
        handle.write("not json\n\n")
    before = file.read_text(encoding="utf-8")
    assert run_writer(file, "--compact")["ok"] == 1
    assert Path(f"{file}.bak").read_text(encoding="utf-8") == before
    assert file.read_text(encoding="utf-8") == before.replace("not json\n\n", "")
    assert sorted(p.name for p in file.parent.iterdir()) == ["records.jsonl", "records.jsonl.bak"]


# ------------------------------------------------------------------ the real host
def test_host_agrees_on_root_id(host: HostHarness, dirs: CaseDirs) -> None:
    ids = host.run("ids", home=dirs.home, workspace=dirs.workspace)
    assert ids["rootId"] == dirs.root_id
    assert Path(ids["file"]) == dirs.scope_path("project")
    session = host.run(
        "ids", home=dirs.home, workspace=dirs.workspace, scope="session", session="s-1"
    )
    assert Path(session["file"]) == dirs.scope_path("session", f"s-1|{dirs.root_id}")


@pytest.mark.parametrize("scope", ["project", "shared-project", "user", "session"])
def test_host_opens_hostwriter_records(host: HostHarness, dirs: CaseDirs, scope: str) -> None:
    scope_key = {"user": "alice", "session": f"s-1|{dirs.root_id}"}.get(scope, dirs.root_id)
    file = dirs.scope_path(scope, scope_key)
    options = ["--scope", scope, "--scope-key", scope_key, "--prefix", "hw", "--count", "5"]
    assert run_writer(file, *options)["ok"] == 5
    opened = host.run(
        "open-warnings",
        home=dirs.home,
        workspace=dirs.workspace,
        scope=scope,
        user="alice",
        session="s-1",
    )
    assert (opened["warnings"], opened["records"], opened["readOnly"]) == ([], 5, False)


def test_host_busy_while_hostwriter_holds_the_lock(host: HostHarness, dirs: CaseDirs) -> None:
    file = dirs.scope_path("project")
    lock = Path(f"{file}.lock")
    writer = subprocess.Popen(
        hostwriter.command(file, *writer_options(dirs, "hw", 1), "--hold-ms", "60000"),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(file.exists, "the hostwriter's write under its lock", WAIT_S)
        assert lock.read_text() == f"{writer.pid}\n"
        refused = host.run(
            "propose",
            "--type",
            "fact",
            "--title",
            "t",
            "--content",
            "c",
            home=dirs.home,
            workspace=dirs.workspace,
            check=False,
        )
        assert refused["rc"] == 1 and refused["error"]["code"] == "SAVE_FAILURE", refused
    finally:
        writer.kill()
        writer.communicate(timeout=WAIT_S)


def test_hostwriter_busy_while_the_host_holds_its_lock(host: HostHarness, dirs: CaseDirs) -> None:
    file = dirs.scope_path("project")
    signal = dirs.tmp / "held"
    cmd = host.command(
        "hold-lock",
        "--seconds",
        "60",
        "--signal",
        str(signal),
        home=dirs.home,
        workspace=dirs.workspace,
    )
    holder = subprocess.Popen(cmd, env=host.env(), stdout=subprocess.PIPE, text=True)
    try:
        wait_for(signal.exists, "the host holding its lock", WAIT_S)
        busy_log = dirs.tmp / "busy.log"
        result = run_writer(file, *writer_options(dirs, "hw", 2), "--busy-log", str(busy_log))
        assert (result["ok"], result["busy"]) == (0, 2)
        assert busy_pids(busy_log) == {str(holder.pid)}
    finally:
        holder.kill()
        holder.communicate(timeout=WAIT_S)
