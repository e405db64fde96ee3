"""The command line (SPEC 9), run as a real subprocess: tables, --json, errors and exit codes,
ids on the last line, shared confirmation, compact and check.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli, run_cli_process
from interop.corpus import root_id, scope_key_sha16, session_file_name, sha256_hex

from dsh_memory_tui.store import MemoryStore

CONVENTION = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"  # verified
UUID_ID = re.compile(r"memory:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"
BOB_PREF = "memory:user:preference:3c19c840d9f9bacda62d2465be71c2d9"
RECORD_KEYS = {
    "schemaVersion",
    "id",
    "scope",
    "scopeKey",
    "type",
    "title",
    "content",
    "tags",
    "provenance",
    "createdAt",
    "updatedAt",
    "useCount",
    "contentHash",
    "status",
    "governance",
}
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


def seed_digest_id(home: Home) -> str:
    """The id of the fixture's session digest (its scope part hashes the copy's rootId)."""
    sha16 = scope_key_sha16(f"session-abc|{root_id(home[1])}")
    return f"memory:auto:fact:{sha16}:d3a86ce75c09053a2ad7668b"


# The host's lock, taken by another process: O_CREAT|O_EXCL, its pid inside, unlinked after.
_HOLD_LOCK = """import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
os.write(fd, f"{os.getpid()}\\n".encode()); os.close(fd)
print("locked", flush=True)
sys.stdin.readline()
os.unlink(sys.argv[1])
"""


@contextmanager
def lock_held_elsewhere(lock_path: Path) -> Iterator[None]:
    """Another process holds ``lock_path`` the host's way until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(lock_path)],
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready and proc.stdout.readline().strip() == "locked"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(120)
    assert not lock_path.exists()


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
    assert legacy["governance"]["origin"] == "derived"  # the host's default for an agent's
    project = json.loads(ok(fixture_home, "list", "--scope", "project", "--json"))
    assert {r["scope"] for r in project} == {"project"} and len(project) == 4


def test_list_all_sessions_or_one(fixture_home: Home) -> None:
    every = json.loads(ok(fixture_home, "list", "--scope", "session", "--json"))
    # --root defaults to the workspace's rootId: the fixture session's root.
    one = json.loads(
        ok(fixture_home, "list", "--scope", "session", "--session", "session-abc", "--json")
    )
    explicit = json.loads(
        ok(
            fixture_home,
            "list",
            "--scope",
            "session",
            "--session",
            "session-abc",
            "--root",
            root_id(fixture_home[1]),
            "--json",
        )
    )
    assert every == one == explicit and len(one) == 1
    assert one[0]["scopeKey"] == f"session-abc|{root_id(fixture_home[1])}"
    assert json.loads(ok(fixture_home, "list", "--session", "session-abc", "--json")) == one
    for other in (("--session", "nope"), ("--session", "session-abc", "--root", "root:other")):
        assert json.loads(ok(fixture_home, "list", "--scope", "session", *other, "--json")) == []


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


def test_history_names_merged_refs_and_pins(fixture_home: Home) -> None:
    propose = (
        "propose",
        "--scope",
        "user",
        "--type",
        "fact",
        "--title",
        "Port",
        "--content",
        "The API listens on 8080.",
    )
    record_id = last_line(ok(fixture_home, *propose, "--source-ref", "session:s1"))
    assert last_line(ok(fixture_home, *propose, "--source-ref", "session:s2")) == record_id
    for action in ("verify", "pin", "unpin"):
        ok(fixture_home, action, record_id)
    lines = ok(fixture_home, "show", record_id, "--history").split("history:\n")[1].splitlines()
    assert [line.split("  ")[-1] for line in lines] == [
        "created",
        "1 source ref added",
        "verification: unverified -> verified",
        "pinned",
        "unpinned",
    ]


def test_dsh_home_and_dsh_user_id_come_from_the_environment(fixture_home: Home) -> None:
    home, workspace = fixture_home
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DSH_HOME": str(home), "DSH_USER_ID": "bob"}
    result = subprocess.run(
        [sys.executable, "-m", "dsh_memory_tui.cli", "list", "--scope", "user", "--json"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert [r["id"] for r in json.loads(result.stdout)] == [BOB_PREF]


# ---------------------------------------------------------------- writing


def test_a_write_prints_the_id_alone_on_the_last_line(fixture_home: Home) -> None:
    out = ok(
        fixture_home,
        "create",
        "--scope",
        "project",
        "--type",
        "decision",
        "--title",
        "T",
        "--content",
        "Body",
        "--tag",
        "x",
    )
    record_id = last_line(out)
    assert UUID_ID.fullmatch(record_id)  # the host's ids: memory:<uuid4>
    shown = json.loads(ok(fixture_home, "show", record_id, "--json"))
    assert (shown["title"], shown["tags"]) == ("T", ["x"])
    again = ok(
        fixture_home,
        "propose",
        "--scope",
        "project",
        "--type",
        "decision",
        "--title",
        "other",
        "--content",
        "Body",
        "--source-ref",
        "session:s1",
    )
    assert last_line(again) == record_id  # merged into the existing record: its id
    same = ok(
        fixture_home,
        "propose",
        "--scope",
        "project",
        "--type",
        "decision",
        "--title",
        "other",
        "--content",
        "Body",
        "--source-ref",
        "session:s1",
    )
    assert last_line(same) == record_id and "nothing written" in same  # no new ref: no line
    # Each transition the host allows from where the one before left the record.
    for args in (
        ("verify", record_id, "--reason", "fine"),
        ("pin", record_id),
        ("archive", record_id),
        ("restore", record_id),
        ("edit", record_id, "--base-revision", "6", "--title", "T2"),  # -> stale
        ("reverify", record_id, "--reason", "still true"),
        ("pin", record_id),
        ("unpin", record_id),
        ("forget", record_id),
    ):
        assert last_line(ok(fixture_home, *args)) == record_id, args
    history = json.loads(ok(fixture_home, "show", record_id, "--history", "--json"))
    assert [h["governance"]["revision"] for h in history] == [11]  # forget erased the rest
    rejected = last_line(ok(fixture_home, "reject", CONVENTION, "--reason", "not ours"))
    assert rejected == CONVENTION


def test_propose_takes_source_refs(fixture_home: Home) -> None:
    record_id = last_line(
        ok(
            fixture_home,
            "propose",
            "--scope",
            "user",
            "--type",
            "fact",
            "--title",
            "t",
            "--content",
            "c",
            "--source-ref",
            "session:s1",
            "--source-ref",
            "event:4",
        )
    )
    record = json.loads(ok(fixture_home, "show", record_id, "--json"))
    assert record["governance"]["sourceRefs"] == [
        {"kind": "session", "id": "s1"},
        {"kind": "event", "id": "4"},
    ]
    assert record["governance"]["origin"] == "model-suggested"


def test_copy_prints_the_new_id(fixture_home: Home) -> None:
    new_id = last_line(ok(fixture_home, "copy", CONVENTION, "--to-scope", "user"))
    assert UUID_ID.fullmatch(new_id)
    copied = json.loads(ok(fixture_home, "show", new_id, "--json"))
    original = json.loads(ok(fixture_home, "show", CONVENTION, "--json"))
    assert copied["scope"] == "user" and copied["scopeKey"] == "alice"
    assert copied["governance"]["sourceRefs"] == [
        *original["governance"]["sourceRefs"],
        {"kind": "import", "id": CONVENTION, "contentHash": original["contentHash"]},
    ]


def test_a_session_write_needs_a_session_whose_root_defaults_to_the_workspace(
    fixture_home: Home,
) -> None:
    home, workspace = fixture_home
    new = ("create", "--scope", "session", "--type", "fact", "--title", "t", "--content", "c")
    for args in ((), ("--root", root_id(workspace))):  # no session; a root without a session
        result = cli(fixture_home, *new, *args)
        assert result.returncode == 2, result.stderr
        assert "--session" in result.stderr and "Traceback" not in result.stderr
    sessions = home / "workspace-memory" / "sessions"
    record_id = last_line(ok(fixture_home, *new, "--session", "s1"))
    record = json.loads(ok(fixture_home, "show", record_id, "--json"))
    assert record["scopeKey"] == f"s1|{root_id(workspace)}"
    assert (sessions / session_file_name("s1", root_id(workspace))).is_file()
    other = last_line(ok(fixture_home, *new[:-1], "c2", "--session", "s1", "--root", "root:r1"))
    assert json.loads(ok(fixture_home, "show", other, "--json"))["scopeKey"] == "s1|root:r1"
    assert (sessions / (sha256_hex("s1|root:r1")[:32] + ".jsonl")).is_file()


def test_a_shared_write_needs_yes_shared(fixture_home: Home) -> None:
    shared = fixture_home[1] / ".dsh/workspace-memory/shared.jsonl"
    before = shared.read_bytes()
    for args in (
        ("verify", SHARED),
        ("forget", SHARED),
        ("create", "--scope", "shared-project", "--type", "fact", "--title", "t", "--content", "c"),
        ("copy", CONVENTION, "--to-scope", "shared"),
        ("compact", "--scope", "shared-project"),
    ):
        result = fails(fixture_home, *args, code="SHARED_WRITE_UNCONFIRMED")
        assert "--yes-shared" in result.stderr
    assert shared.read_bytes() == before
    assert last_line(ok(fixture_home, "verify", SHARED, "--yes-shared")) == SHARED


def test_a_stale_edit_is_a_revision_conflict(fixture_home: Home) -> None:
    ok(fixture_home, "edit", CONVENTION, "--base-revision", "1", "--title", "first")
    before = project_file(fixture_home).read_bytes()
    result = fails(
        fixture_home,
        "edit",
        CONVENTION,
        "--base-revision",
        "1",
        "--title",
        "second",
        code="REVISION_CONFLICT",
    )
    assert result.stdout == ""
    assert project_file(fixture_home).read_bytes() == before


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("show", "memory:user:fact:" + "0" * 32), "NOT_FOUND"),
        (
            (
                "edit",
                "memory:agent:fact:0f0e0d0c0b0a09080706050403020100",
                "--base-revision",
                "1",
                "--title",
                "x",
            ),
            "READ_ONLY_RECORD",
        ),
        (("edit", "SEED_DIGEST", "--base-revision", "1", "--title", "x"), "READ_ONLY_SCOPE"),
        # The host's transitions: verify only from unverified, reverify only from stale, pin only
        # a verified record, restore only an archived one.
        (("verify", DECISION), "INVALID_TRANSITION"),
        (("reject", DECISION), "INVALID_TRANSITION"),
        (("reverify", DECISION), "INVALID_TRANSITION"),
        (("pin", CONVENTION), "INVALID_TRANSITION"),
        (("restore", CONVENTION), "INVALID_TRANSITION"),
    ],
)
def test_store_errors_exit_1_with_one_line_on_stderr(
    fixture_home: Home, args: tuple[str, ...], code: str
) -> None:
    args = tuple(seed_digest_id(fixture_home) if a == "SEED_DIGEST" else a for a in args)
    before = project_file(fixture_home).read_bytes()
    result = fails(fixture_home, *args, code=code)
    assert result.stdout == ""
    assert project_file(fixture_home).read_bytes() == before


def test_a_repeated_verify_is_a_refused_transition(fixture_home: Home) -> None:
    ok(fixture_home, "verify", CONVENTION)
    result = fails(fixture_home, "verify", CONVENTION, code="INVALID_TRANSITION")
    assert "unverified" in result.stderr
    shown = json.loads(ok(fixture_home, "show", CONVENTION, "--json"))
    assert (shown["governance"]["verification"], shown["governance"]["revision"]) == ("verified", 2)


@pytest.mark.parametrize(
    "args",
    [
        ("frobnicate",),
        ("list", "--scope", "galaxy"),
        ("create", "--scope", "project", "--type", "note", "--title", "t", "--content", "c"),
        ("create", "--scope", "project", "--type", "fact", "--title", "t"),
        ("edit", CONVENTION, "--base-revision", "1"),
        ("edit", CONVENTION, "--base-revision", "one", "--title", "x"),
        (
            "propose",
            "--scope",
            "project",
            "--type",
            "fact",
            "--title",
            "t",
            "--content",
            "c",
            "--source-ref",
            "no-colon",
        ),
        ("list", "--root", "root:without-a-session"),
        ("export", "--out", "x.json", "--root", "root:without-a-session"),
    ],
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
    assert f"{path}:8: corrupt: Memory content hash is invalid" in result.stdout
    assert "newer schema" in result.stdout
    repaired = cli(fixture_home, "check", "--repair")
    assert repaired.returncode == 0, repaired.stdout
    assert "(repaired)" in repaired.stdout
    assert cli(fixture_home, "check").returncode == 0


def _old_line(record_id: str, scope: str, scope_key: str, **over: object) -> bytes:
    """A record as an earlier dsh-memory wrote it (a path scopeKey, a `record` sourceRef)."""
    content = f"Written by an earlier dsh-memory as {record_id}."
    record = {
        "schemaVersion": 1,
        "id": record_id,
        "scope": scope,
        "scopeKey": scope_key,
        "type": "fact",
        "title": "From an earlier dsh-memory",
        "content": content,
        "tags": [],
        "provenance": {"kind": "user"},
        "createdAt": 1764000000000,
        "updatedAt": 1764000000000,
        "useCount": 0,
        "contentHash": "sha256:" + sha256_hex(content),
        "status": "active",
        "governance": {
            "origin": "user-authored",
            "sourceRefs": [],
            "verification": "unverified",
            "revision": 1,
            "retention": "project-delete",
        },
        **over,
    }
    return json.dumps(record).encode() + b"\n"


def test_check_lists_what_an_earlier_version_wrote_as_migratable_and_repairs_it(
    fixture_home: Home,
) -> None:
    home, workspace = fixture_home
    root = root_id(workspace)
    assert cli(fixture_home, "check", "--repair").returncode == 0  # the fixture's own problems
    path = project_file(fixture_home)
    line_no = path.read_bytes().count(b"\n") + 1
    old_id = "memory:user:fact:" + "1" * 32
    governance = {
        "origin": "user-authored",
        "verification": "unverified",
        "revision": 1,
        "retention": "project-delete",
        "sourceRefs": [{"kind": "record", "id": CONVENTION}],
    }
    with path.open("ab") as f:
        f.write(_old_line(old_id, "project", os.path.realpath(workspace), governance=governance))
    # An old session file: named by the full sha256 of its scopeKey.
    sessions = home / "workspace-memory" / "sessions"
    old_session = sessions / (sha256_hex(f"s-old|{root}") + ".jsonl")
    session_id = "memory:user:fact:" + "2" * 32
    old_session.write_bytes(
        _old_line(
            session_id,
            "session",
            f"s-old|{root}",
            provenance={"kind": "user", "sessionId": "s-old"},
        )
    )
    os.chmod(old_session, 0o600)
    assert old_id not in ok(fixture_home, "list", "--json")  # the host does not see it either

    found = cli(fixture_home, "check")
    assert found.returncode == 1, found.stdout
    assert f"{path}:{line_no}: migratable: " in found.stdout
    assert f"{old_session}: migratable: " in found.stdout
    assert ": corrupt: " not in found.stdout

    repaired = cli(fixture_home, "check", "--repair")
    assert repaired.returncode == 0, repaired.stdout
    assert repaired.stdout.count("(repaired)") == 2
    record = json.loads(ok(fixture_home, "show", old_id, "--json"))
    assert record["scopeKey"] == root
    assert record["governance"]["sourceRefs"] == [{"kind": "import", "id": CONVENTION}]
    assert not old_session.exists()
    assert (sessions / session_file_name("s-old", root)).is_file()
    assert [
        r["id"] for r in json.loads(ok(fixture_home, "list", "--session", "s-old", "--json"))
    ] == [session_id]
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
    # Quarantined as the host writes it: {"line", "capturedAt", "raw"} per line.
    entry = json.loads(path.with_name("records.jsonl.corrupt").read_bytes().splitlines()[-1])
    assert set(entry) == {"line", "capturedAt", "raw"}
    assert (entry["line"], entry["raw"]) == (7, '{"schemaVersion":1,"id":"memory:agent:fact:half\n')
    assert cli(fixture_home, "check").returncode == 0


def test_check_reports_an_oversized_file(fixture_home: Home) -> None:
    path = project_file(fixture_home)
    with path.open("ab") as f:
        f.write(b"x" * (8 * 1024 * 1024) + b"\n")
    result = cli(fixture_home, "check")
    assert result.returncode == 1
    assert "oversized" in result.stdout
    assert cli(fixture_home, "list").returncode == 0  # reads still work


# ----------------------------------------------------------------- what the host knows, keep, adopt


def test_show_says_what_the_host_knows_of_a_record(fixture_home: Home) -> None:
    """Pins, who verified it and when, confidence, expiry in words, use, conflict group."""
    now = MemoryStore.open(*fixture_home, "alice").clock()
    day = 86_400_000
    data = project_file(fixture_home)
    line = json.loads(data.read_bytes().splitlines()[1])  # DECISION, revision 2, verified
    line["governance"] |= {
        "revision": 3,
        "confidence": "medium",
        "expiresAt": now - 3 * day,
        "pinnedAt": now - 10 * day,
        "pinnedBy": "user",
        "verifiedBy": "user",
    }
    line |= {"useCount": 4, "lastUsedAt": now - 5 * 60_000, "updatedAt": now - 10 * day}
    with open(data, "ab") as f:
        f.write(json.dumps(line).encode() + b"\n")
    text = ok(fixture_home, "show", DECISION)
    assert "verification: stale" in text and "by user" in text  # expired: the host's view
    assert "its verification expired; re-verify it" in text
    assert "expires:      expired 3 days ago" in text and "shown stale" in text
    assert "confidence:   medium" in text
    assert "used:         4 times, last 5 minutes ago" in text
    assert "pinned:" not in text  # the expired view is unpinned, as the host shows it
    assert "revision:     4" in text
    ok(fixture_home, "reverify", DECISION)
    assert "verification: stale" in ok(fixture_home, "show", DECISION)  # expiresAt is past


def test_keep_resolves_a_conflict_group_from_the_command_line(fixture_home: Home) -> None:
    propose = ("propose", "--scope", "project", "--type", "convention", "--source-ref", "url:x")
    a = last_line(ok(fixture_home, *propose, "--title", "Deploy", "--content", "Fridays."))
    b = last_line(ok(fixture_home, *propose, "--title", " deploy", "--content", "Tuesdays."))
    shown = ok(fixture_home, "show", b)
    assert re.search(r"conflict:     conflict:[0-9a-f]{24} \(1 other active version\)", shown)
    result = ok(fixture_home, "keep", b, "--reason", "we deploy on Tuesdays")
    assert result.splitlines() == [f"rejected: {a}", "kept: verified, revision 2", b]
    kept = json.loads(ok(fixture_home, "show", b, "--json"))["governance"]
    assert (kept["verification"], kept["reviewNote"]) == ("verified", "we deploy on Tuesdays")
    rival = json.loads(ok(fixture_home, "show", a, "--json"))["governance"]
    assert rival["verification"] == "rejected"
    refused = fails(fixture_home, "keep", b, code="INVALID_TRANSITION")
    assert "no other active, unrejected version" in refused.stderr


def test_adopt_takes_a_moved_projects_records(fixture_home: Home) -> None:
    old_root = "root:" + "cd" * 32
    data = project_file(fixture_home)
    line = json.loads(data.read_bytes().splitlines()[2])  # the proposal
    moved = dict(line, id="memory:moved", scopeKey=old_root)
    shared = data.with_name("shared.jsonl")
    shared_line = json.loads(shared.read_bytes().splitlines()[0])
    with open(data, "ab") as f:
        f.write(json.dumps(moved).encode() + b"\n")
    with open(shared, "ab") as f:
        f.write(
            json.dumps(dict(shared_line, id="memory:moved-shared", scopeKey=old_root)).encode()
            + b"\n"
        )
    listed = ok(fixture_home, "list")
    assert "memory:moved " not in listed  # a project file's other rootId: foreign, hidden
    assert "memory:moved-shared" in listed  # a shared file's: a team record, shown
    out = ok(fixture_home, "adopt")
    assert f"records.jsonl: 1 line(s) of {old_root} adopted" in out
    assert "shared.jsonl: skipped (shared-project needs --yes-shared)" in out
    assert last_line(out) == "memory:moved"
    assert "memory:moved" in ok(fixture_home, "list")
    out = ok(fixture_home, "adopt", "--scope", "shared-project", "--yes-shared")
    assert last_line(out) == "memory:moved-shared"
    fails(
        fixture_home, "adopt", "--from", "root:" + "00" * 32, "--scope", "project", code="NOT_FOUND"
    )
    assert ok(fixture_home, "adopt") == ""  # nothing left anywhere


# ------------------------------------------------------------------------- flags


@pytest.mark.parametrize(
    ("args", "status"),
    [(("list", "--scope", "user"), 0), (("verify", DECISION), 1), (("frobnicate",), 2)],
)
def test_the_real_process_exits_with_the_status_of_its_outcome(
    fixture_home: Home, args: tuple[str, ...], status: int
) -> None:
    # The other tests run the CLI in this process: here the interpreter's own exit status and
    # real pipes, as a shell sees them.
    done = run_cli_process(*fixture_home, *args)
    assert done.returncode == status, done.stderr
    if status == 0:
        assert done.stdout and done.stderr == ""
    else:
        assert done.stdout == "" and done.stderr.startswith("error[")
        assert "Traceback" not in done.stderr


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    from dsh_memory_tui import __version__

    done = run_cli(tmp_path / "h", tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"dsh-memory {__version__}\n" and done.stderr == ""


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--bogus",), "unrecognized arguments: --bogus"),
        (("--bogus", "list"), "unrecognized arguments: --bogus"),
        (("list", "--bogus=1"), "unrecognized arguments: --bogus=1"),
        ((), "a COMMAND is needed"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
    ],
)
def test_a_bad_command_line_names_what_is_wrong_on_its_first_line(
    tmp_path: Path, args: tuple[str, ...], named: str
) -> None:
    done = run_cli(tmp_path / "h", tmp_path, *args)
    assert done.returncode == 2 and done.stdout == ""
    first, *rest = done.stderr.splitlines()
    assert first.startswith("error[USAGE]: dsh-memory") and named in first, done.stderr
    assert rest[0].startswith("usage: dsh-memory") and "Traceback" not in done.stderr


def _bundle_with_an_invalid_record(fixture_home: Home, tmp_path: Path) -> Path:
    out = tmp_path / "b.json"
    ok(fixture_home, "export", "--out", str(out), "--scope", "project")
    bundle = json.loads(out.read_text())
    bundle["records"].append({"schemaVersion": 1, "id": "memory:broken", "content": "x"})
    out.write_text(json.dumps(bundle))
    return out


def test_a_strict_dry_run_with_an_invalid_record_exits_1_and_writes_nothing(
    fixture_home: Home, tmp_path: Path
) -> None:
    bundle = _bundle_with_an_invalid_record(fixture_home, tmp_path)
    ws = tmp_path / "elsewhere"
    ws.mkdir()
    target = (tmp_path / "h2", ws)
    done = cli(target, "import", str(bundle), "--scope", "project", "--dry-run", "--strict")
    assert done.returncode == 1, done
    assert "dry run: nothing written" in done.stdout
    assert done.stderr.splitlines()[-1].startswith("error[BUNDLE_INVALID]: ")
    assert "(memory:broken)" in done.stderr and "Traceback" not in done.stderr
    assert not (ws / ".dsh").exists()
    # Without --strict the same dry run is a plan, exit 0; a valid bundle passes --strict.
    assert cli(target, "import", str(bundle), "--scope", "project", "--dry-run").returncode == 0
    good = tmp_path / "good.json"
    ok(fixture_home, "export", "--out", str(good), "--scope", "project")
    strict = cli(target, "import", str(good), "--scope", "project", "--dry-run", "--strict")
    assert strict.returncode == 0, strict.stderr
    assert not (ws / ".dsh").exists()


def test_show_history_prints_each_revisions_diff(fixture_home: Home) -> None:
    created = ok(
        fixture_home,
        "create",
        "--scope",
        "user",
        "--type",
        "fact",
        "--title",
        "Old title",
        "--content",
        "keep\nold line\nkeep too",
    )
    record_id = last_line(created)
    new_content = "keep\nnew line\nkeep too"
    ok(fixture_home, "edit", record_id, "--base-revision", "1", "--content", new_content)
    ok(fixture_home, "edit", record_id, "--base-revision", "2", "--title", "New title")
    history = ok(fixture_home, "show", record_id, "--history").split("history:\n")[1]
    assert history.splitlines()[1:6] == [
        history.splitlines()[1],  # r2 and its time
        "      content @@ -1,3 +1,3 @@",
        "        keep",
        "      - old line",
        "      + new line",
    ]
    assert history.splitlines()[1].endswith("content changed")
    assert "      - title: Old title\n      + title: New title\n" in history
