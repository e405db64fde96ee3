"""The command line (SPEC 9), run as a real subprocess: tables, --json, errors and exit codes,
ids on the last line, shared confirmation, compact and check.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli

from dsh_memory_tui.store import MemoryStore

CONVENTION = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"
BOB_PREF = "memory:user:preference:3c19c840d9f9bacda62d2465be71c2d9"
RECORD_KEYS = {"schemaVersion", "id", "scope", "scopeKey", "type", "title", "content", "tags",
               "provenance", "createdAt", "updatedAt", "useCount", "contentHash", "status",
               "governance"}
Home = tuple[Path, Path]


def cli(home: Home, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_cli(home[0], home[1], *args, **kw)  # type: ignore[arg-type]


def ok(home: Home, *args: str) -> str:
    result = cli(home, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def last_line(stdout: str) -> str:
    return stdout.rstrip("\n").splitlines()[-1]


def fails(home: Home, *args: str, code: str) -> subprocess.CompletedProcess[str]:
    result = cli(home, *args)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr.startswith(f"error[{code}]: ")
    assert result.stderr.count("\n") == 1  # one line, no traceback
    return result


def project_file(home: Home) -> Path:
    return home[1] / ".dsh/workspace-memory/records.jsonl"


@contextmanager
def lock_held_elsewhere(lock_path: Path) -> Iterator[None]:
    """Another process holds ``lock_path`` (a FileLock) until the block ends."""
    code = ("import sys\nfrom filelock import FileLock\nwith FileLock(sys.argv[1]):\n"
            "    print('locked', flush=True)\n    sys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(lock_path)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready and proc.stdout.readline().strip() == "locked"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(20)


# ---------------------------------------------------------------- reading


def test_list_prints_a_readable_table_of_current_records(fixture_home: Home) -> None:
    out = ok(fixture_home, "list")
    header, *rows = out.splitlines()
    assert header.split()[:4] == ["ID", "SCOPE", "TYPE", "STATUS"]
    assert len(rows) == 8
    assert BOB_PREF not in out
    assert not out.lstrip().startswith(("[", "{"))


def test_list_json_is_exactly_the_record_objects(fixture_home: Home) -> None:
    records = json.loads(ok(fixture_home, "list", "--json"))
    store = MemoryStore.open(*fixture_home, "alice")
    assert records == [r.to_json() for r in store.records()]
    assert all(set(r) >= RECORD_KEYS and r["schemaVersion"] == 1 for r in records)
    assert all(r["id"] != BOB_PREF for r in records)
    legacy = next(r for r in records if r["id"].endswith("a83c546dbc4d13dcd6c93f01a9f18630"))
    assert legacy["governance"]["origin"] == "model-suggested"
    project = json.loads(ok(fixture_home, "list", "--scope", "project", "--json"))
    assert {r["scope"] for r in project} == {"project"} and len(project) == 4


def test_list_all_sessions_or_one(fixture_home: Home) -> None:
    every = json.loads(ok(fixture_home, "list", "--scope", "session", "--json"))
    one = json.loads(ok(fixture_home, "list", "--scope", "session", "--session", "session-abc",
                        "--root", "root-xyz", "--json"))
    assert every == one and len(one) == 1
    assert json.loads(ok(fixture_home, "list", "--scope", "session", "--session", "nope",
                         "--root", "none", "--json")) == []


def test_list_all_includes_archived(fixture_home: Home) -> None:
    ok(fixture_home, "archive", CONVENTION)
    assert CONVENTION not in ok(fixture_home, "list")
    assert CONVENTION in ok(fixture_home, "list", "--all")


def test_show_prints_the_record_and_its_history(fixture_home: Home) -> None:
    decision = "memory:user:decision:f768064f958507ad239eed24c2c063fe"
    text = ok(fixture_home, "show", decision, "--history")
    assert "Use PostgreSQL 16 for the main store" in text
    assert "r1" in text and "r2" in text and "verification: unverified -> verified" in text
    one = json.loads(ok(fixture_home, "show", decision, "--json"))
    assert one["governance"]["revision"] == 2
    history = json.loads(ok(fixture_home, "show", decision, "--history", "--json"))
    assert [h["governance"]["revision"] for h in history] == [1, 2]


def test_dsh_home_and_dsh_user_id_come_from_the_environment(fixture_home: Home) -> None:
    home, workspace = fixture_home
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DSH_HOME": str(home),
           "DSH_USER_ID": "bob"}
    result = subprocess.run(
        [sys.executable, "-m", "dsh_memory_tui.cli", "list", "--scope", "user", "--json"],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    assert [r["id"] for r in json.loads(result.stdout)] == [BOB_PREF]


# ---------------------------------------------------------------- writing


def test_a_write_prints_the_id_alone_on_the_last_line(fixture_home: Home) -> None:
    out = ok(fixture_home, "create", "--scope", "project", "--type", "decision", "--title", "T",
             "--content", "Body", "--tag", "x")
    record_id = last_line(out)
    assert record_id.startswith("memory:user:decision:")
    shown = json.loads(ok(fixture_home, "show", record_id, "--json"))
    assert (shown["title"], shown["tags"]) == ("T", ["x"])
    again = ok(fixture_home, "propose", "--scope", "project", "--type", "decision", "--title",
               "other", "--content", "Body", "--source-ref", "session:s1")
    assert last_line(again) == record_id  # idempotent merge: the existing id
    for args in (("verify", record_id, "--reason", "fine"), ("reject", record_id),
                 ("restore", record_id), ("archive", record_id), ("restore", record_id),
                 ("edit", record_id, "--base-revision", "6", "--title", "T2"),
                 ("forget", record_id)):
        assert last_line(ok(fixture_home, *args)) == record_id


def test_propose_takes_source_refs(fixture_home: Home) -> None:
    record_id = last_line(ok(fixture_home, "propose", "--scope", "user", "--type", "fact",
                             "--title", "t", "--content", "c", "--source-ref", "session:s1",
                             "--source-ref", "event:4"))
    record = json.loads(ok(fixture_home, "show", record_id, "--json"))
    assert record["governance"]["sourceRefs"] == [{"kind": "session", "id": "s1"},
                                                  {"kind": "event", "id": "4"}]
    assert record["governance"]["origin"] == "model-suggested"


def test_copy_prints_the_new_id(fixture_home: Home) -> None:
    new_id = last_line(ok(fixture_home, "copy", CONVENTION, "--to-scope", "user"))
    copied = json.loads(ok(fixture_home, "show", new_id, "--json"))
    assert copied["scope"] == "user"
    assert copied["governance"]["sourceRefs"][-1] == {"kind": "record", "id": CONVENTION}


def test_a_session_write_needs_session_and_root(fixture_home: Home) -> None:
    result = cli(fixture_home, "create", "--scope", "session", "--type", "fact", "--title", "t",
                 "--content", "c")
    assert result.returncode == 2
    out = ok(fixture_home, "create", "--scope", "session", "--type", "fact", "--title", "t",
             "--content", "c", "--session", "s1", "--root", "r1")
    assert last_line(out).startswith("memory:user:fact:")


def test_a_shared_write_needs_yes_shared(fixture_home: Home) -> None:
    shared = fixture_home[1] / ".dsh/workspace-memory/shared.jsonl"
    before = shared.read_bytes()
    for args in (("verify", SHARED), ("forget", SHARED),
                 ("create", "--scope", "shared-project", "--type", "fact", "--title", "t",
                  "--content", "c"),
                 ("copy", CONVENTION, "--to-scope", "shared"),
                 ("compact", "--scope", "shared-project")):
        result = fails(fixture_home, *args, code="SHARED_WRITE_UNCONFIRMED")
        assert "--yes-shared" in result.stderr
    assert shared.read_bytes() == before
    assert last_line(ok(fixture_home, "verify", SHARED, "--yes-shared")) == SHARED


def test_a_stale_edit_is_a_revision_conflict(fixture_home: Home) -> None:
    ok(fixture_home, "edit", CONVENTION, "--base-revision", "1", "--title", "first")
    before = project_file(fixture_home).read_bytes()
    result = fails(fixture_home, "edit", CONVENTION, "--base-revision", "1", "--title", "second",
                   code="REVISION_CONFLICT")
    assert result.stdout == ""
    assert project_file(fixture_home).read_bytes() == before


@pytest.mark.parametrize(
    ("args", "code"),
    [(("show", "memory:user:fact:" + "0" * 32), "NOT_FOUND"),
     (("edit", "memory:agent:fact:0f0e0d0c0b0a09080706050403020100", "--base-revision", "1",
       "--title", "x"), "READ_ONLY_RECORD"),
     (("edit", "memory:auto:fact:e7e26cdefa2414a7:1899925c2fa2f12bdde45c62",
       "--base-revision", "1", "--title", "x"), "READ_ONLY_SCOPE")],
)
def test_store_errors_exit_1_with_one_line_on_stderr(fixture_home: Home, args: tuple[str, ...],
                                                     code: str) -> None:
    fails(fixture_home, *args, code=code)


@pytest.mark.parametrize(
    "args",
    [("frobnicate",), ("list", "--scope", "galaxy"),
     ("create", "--scope", "project", "--type", "note", "--title", "t", "--content", "c"),
     ("create", "--scope", "project", "--type", "fact", "--title", "t"),
     ("edit", CONVENTION, "--base-revision", "1"),
     ("edit", CONVENTION, "--base-revision", "one", "--title", "x"),
     ("propose", "--scope", "project", "--type", "fact", "--title", "t", "--content", "c",
      "--source-ref", "no-colon"),
     ("list", "--session", "s-without-root")],
)
def test_usage_errors_exit_2(fixture_home: Home, args: tuple[str, ...]) -> None:
    result = cli(fixture_home, *args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_an_unsafe_path_is_an_error_not_a_traceback(fixture_home: Home, tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"keep\n")
    lock = project_file(fixture_home).with_name("records.jsonl.lock")
    lock.symlink_to(tmp_path / "target")
    fails(fixture_home, "verify", CONVENTION, code="UNSAFE_PATH")
    assert (tmp_path / "target").read_bytes() == b"keep\n"


# ---------------------------------------------------------------- compact and check


def test_compact_reports_each_file_and_skips_shared_without_confirmation(
    fixture_home: Home,
) -> None:
    out = ok(fixture_home, "compact")
    assert "records.jsonl: " in out and "2 quarantined" in out
    assert "shared.jsonl: skipped" in out
    assert "shared.jsonl: " in ok(fixture_home, "compact", "--scope", "shared", "--yes-shared")


def test_check_lists_problems_with_file_and_line_and_repairs_them(fixture_home: Home) -> None:
    result = cli(fixture_home, "check")
    assert result.returncode == 1
    path = project_file(fixture_home)
    assert f"{path}:7: corrupt: " in result.stdout
    assert f"{path}:8: corrupt: contentHash does not match" in result.stdout
    assert "newer schema" in result.stdout
    repaired = cli(fixture_home, "check", "--repair")
    assert repaired.returncode == 0, repaired.stdout
    assert "(repaired)" in repaired.stdout
    assert cli(fixture_home, "check").returncode == 0


def test_check_tells_a_torn_tail_from_a_write_in_progress(fixture_home: Home) -> None:
    ok(fixture_home, "check", "--repair")
    path = project_file(fixture_home)
    with path.open("ab") as f:
        f.write(b'{"schemaVersion":1,"id":"memory:agent:fact:half')
    with lock_held_elsewhere(path.with_name("records.jsonl.lock")):
        busy = cli(fixture_home, "check", env={"DSH_LOCK_TIMEOUT": "0.2"})
    assert busy.returncode == 0, busy.stdout
    assert "write is in progress" in busy.stdout
    assert ": torn: " not in busy.stdout

    torn = cli(fixture_home, "check")
    assert torn.returncode == 1
    assert f"{path}:" in torn.stdout and ": torn: " in torn.stdout
    fixed = cli(fixture_home, "check", "--repair")
    assert fixed.returncode == 0
    assert path.read_bytes().endswith(b"\n")
    assert path.with_name("records.jsonl.corrupt").read_bytes().endswith(
        b'{"schemaVersion":1,"id":"memory:agent:fact:half\n')
    assert cli(fixture_home, "check").returncode == 0


def test_check_reports_an_oversized_file(fixture_home: Home) -> None:
    path = project_file(fixture_home)
    with path.open("ab") as f:
        f.write(b"x" * (8 * 1024 * 1024) + b"\n")
    result = cli(fixture_home, "check")
    assert result.returncode == 1
    assert "oversized" in result.stdout
    assert cli(fixture_home, "list").returncode == 0  # reads still work
