"""Files an earlier dsh-memory wrote, and readers during the host's compaction.

Before it followed the host, this program named session files by the whole sha256 of their
scopeKey, keyed project records by the workspace path, wrote sourceRefs of kinds ``record`` and
``bundle`` and forget tombstones with an empty title and content. ``check`` lists each as
``migratable``; ``check --repair`` makes them host-valid without losing a record or its history.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from dsh_memory_tui.model import content_hash
from dsh_memory_tui.store import MemoryStore

from .corpus import CaseDirs


def _old_line(
    rid: str,
    scope: str,
    key: str,
    *,
    title: str = "Use ruff",
    content: str = "CI runs ruff.",
    revision: int = 1,
    status: str = "active",
    refs: list[dict[str, str]] | None = None,
    origin: str = "model-suggested",
) -> bytes:
    record: dict[str, Any] = {
        "schemaVersion": 1,
        "id": rid,
        "scope": scope,
        "scopeKey": key,
        "type": "fact",
        "title": title,
        "content": content,
        "tags": [],
        "provenance": {"kind": "agent", "sessionId": "s1"},
        "createdAt": 1_700_000_000_000,
        "updatedAt": 1_700_000_000_000 + revision,
        "useCount": 0,
        "contentHash": content_hash(content),
        "status": status,
        "governance": {
            "origin": origin,
            "sourceRefs": refs if refs is not None else [{"kind": "session", "id": "s1"}],
            "verification": "unverified",
            "revision": revision,
            "retention": "project-delete",
        },
    }
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(data)
    os.chmod(path, 0o600)


def _old_project(dirs: CaseDirs) -> Path:
    path = dirs.workspace / ".dsh" / "workspace-memory" / "records.jsonl"
    key = str(dirs.workspace)
    _write(
        path,
        b"".join(
            [
                _old_line("memory:agent:fact:1", "project", key),
                _old_line("memory:agent:fact:1", "project", key, revision=2, title="Use ruff 0.6"),
                _old_line(
                    "memory:import:fact:2",
                    "project",
                    key,
                    title="Imported",
                    content="From a bundle.",
                    origin="imported",
                    refs=[
                        {"kind": "bundle", "id": "sha256:" + "0" * 64},
                        {"kind": "record", "id": "memory:agent:fact:9"},
                    ],
                ),
                _old_line(
                    "memory:agent:fact:3",
                    "project",
                    dirs.root_id,
                    title="",
                    content="",
                    status="forgotten",
                    revision=3,
                ),
            ]
        ),
    )
    return path


def test_check_lists_what_an_earlier_version_wrote_and_repair_makes_it_host_valid(
    dirs: CaseDirs,
) -> None:
    path = _old_project(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    assert store.records("project", include_inactive=True) == []  # hidden from the host too
    report = store.check()
    migratable = [p for p in report.problems if p.kind == "migratable"]
    assert [p.line_no for p in migratable] == [1, 2, 3, 4]
    assert not report.clean
    repaired = store.check(repair=True)
    assert repaired.clean
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    records = {r.id: r for r in store.records("project", include_inactive=True)}
    assert set(records) == {"memory:agent:fact:1", "memory:import:fact:2", "memory:agent:fact:3"}
    assert records["memory:agent:fact:1"].title == "Use ruff 0.6"
    assert len(store.history("memory:agent:fact:1")) == 2  # history kept
    assert {r.kind for r in records["memory:import:fact:2"].governance.sourceRefs} == {"import"}
    assert records["memory:agent:fact:3"].title.startswith("Forgotten memory ")
    assert all(r.scopeKey == dirs.root_id for r in records.values())
    assert store.check().clean
    assert not path.with_name("records.jsonl.corrupt").exists()


def test_an_old_session_file_gets_the_hosts_name(dirs: CaseDirs) -> None:
    key = f"s1|{dirs.root_id}"
    full = hashlib.sha256(key.encode()).hexdigest()
    old = dirs.home / "workspace-memory" / "sessions" / f"{full}.jsonl"
    _write(old, _old_line("memory:agent:fact:s", "session", key))
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    [problem] = [p for p in store.check().problems if p.kind == "migratable"]
    assert problem.path == old
    assert store.check(repair=True).clean
    new = old.with_name(full[:32] + ".jsonl")
    assert not old.exists() and new.exists()
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    [record] = store.records("session", session=("s1", None))
    assert record.id == "memory:agent:fact:s"


def test_an_old_session_file_beside_a_host_file_of_the_same_session_is_merged(
    dirs: CaseDirs,
) -> None:
    key = f"s1|{dirs.root_id}"
    full = hashlib.sha256(key.encode()).hexdigest()
    sessions = dirs.home / "workspace-memory" / "sessions"
    _write(sessions / f"{full}.jsonl", _old_line("memory:ours", "session", key))
    _write(
        sessions / f"{full[:32]}.jsonl",
        _old_line("memory:hosts", "session", key, content="The host's."),
    )
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    assert store.check(repair=True).clean
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    ids = {r.id for r in store.records("session", session=("s1", None))}
    assert ids == {"memory:ours", "memory:hosts"}


def test_the_host_reads_the_repaired_files(dirs: CaseDirs, host: Any) -> None:
    _old_project(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    before = host.run("list", home=dirs.home, workspace=dirs.workspace)
    store.check(repair=True)
    after = host.run("list", "--full", home=dirs.home, workspace=dirs.workspace)
    assert after["warnings"] == []
    assert len(after["records"]) == 3 > before.get("count", len(before.get("records", [])))


def test_a_reader_keeps_its_records_while_the_host_compacts(dirs: CaseDirs) -> None:
    """The host's compaction renames the file to .bak, then its temporary in: the moment
    with no file is not a deletion."""
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    for i in range(3):
        store.create("project", "fact", f"R{i}", f"Record {i}.")
    file = store.paths.project_file()
    view = store.view(file)
    view.refresh()
    ids = list(view.current)
    path = file.path
    data = path.read_bytes()
    os.rename(path, path.with_name("records.jsonl.bak"))  # step 1 of the host's compaction
    change = view.refresh()
    assert not change.reset and list(view.current) == ids
    tmp = path.with_name(f"records.jsonl.{os.getpid()}.x.tmp")
    _write(tmp, data)
    os.rename(tmp, path)  # step 2
    change = view.refresh()
    assert list(view.current) == ids and view.exists


def test_a_deleted_file_is_a_deletion(dirs: CaseDirs) -> None:
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    store.create("project", "fact", "Only", "One record.")
    view = store.view(store.paths.project_file())
    view.refresh()
    os.unlink(view.path)
    assert view.refresh().reset and not view.current


def test_a_host_line_glued_to_a_dead_writers_piece_is_kept_and_the_piece_quarantined(
    dirs: CaseDirs,
) -> None:
    """The host appends without checking for a final newline: after a writer died mid-line,
    the host's next record is glued to the piece. Our next write keeps the host's record."""
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    store.create("project", "fact", "Before", "Written before the crash.")
    path = store.paths.project_file().path
    host_line = _old_line(
        "memory:hosts-next",
        "project",
        dirs.root_id,
        title="Host's next",
        content="Appended by the host after the crash.",
    )
    with open(path, "ab") as f:
        f.write(b'{"schemaVersion":1,"id":"memory:dead-wri' + host_line)
    view = store.view(store.paths.project_file())
    view.refresh()
    assert len(view.corrupt) == 1 and "memory:hosts-next" not in view.current  # as the host
    store.create("project", "fact", "After", "Our next write.")
    titles = {r.title for r in store.records("project")}
    assert titles == {"Before", "Host's next", "After"}
    [entry] = [
        json.loads(line)
        for line in path.with_name("records.jsonl.corrupt").read_bytes().splitlines()
    ]
    assert entry["raw"] == '{"schemaVersion":1,"id":"memory:dead-wri\n'
