"""``dsh-memory merge-file BASE OURS THEIRS [PATH]``: the three-way merge of a shared file by
record id, run as a real process on real files (git's merge driver does the same). Two clones
at different paths start from one base; each changes its copy; the merge of the two copies is
checked in both directions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from teamgit import Clone, all_valid, records_of

from dsh_memory_tui.jsonl import MAX_STORE_BYTES
from dsh_memory_tui.model import Scope, SourceRef, content_hash
from dsh_memory_tui.store import MemoryStore


@pytest.fixture
def team(tmp_path: Path) -> tuple[Clone, Clone]:
    alice = Clone(tmp_path / "a" / "project", tmp_path / "home-a", "Alice")
    bob = Clone(tmp_path / "b" / "elsewhere", tmp_path / "home-b", "Bob")
    for clone in (alice, bob):
        clone.shared.parent.mkdir(parents=True)
    return alice, bob


def fork(alice: Clone, bob: Clone) -> bytes:
    """Bob's clone gets Alice's file (a pull); the file as it is now is the merge base."""
    base = alice.shared.read_bytes() if alice.shared.exists() else b""
    bob.shared.write_bytes(base)
    return base


def run_merge(
    clone: Clone, base: bytes, ours: bytes, theirs: bytes, name: str = "m"
) -> tuple[Any, bytes]:
    """merge-file on three real files in the clone's workspace: (the process, OURS after)."""
    where = clone.path.parent / f"merge-{name}"
    where.mkdir(exist_ok=True)
    paths = []
    for part, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        path = where / part
        path.write_bytes(data)
        paths.append(str(path))
    done = clone.cli("merge-file", *paths, ".dsh/workspace-memory/shared.jsonl")
    return done, Path(paths[1]).read_bytes()


def merge_both(alice: Clone, bob: Clone, base: bytes) -> tuple[bytes, Any]:
    """Alice merges Bob's copy into hers and Bob merges Alice's into his: both must exit 0
    with the same records, every line host-valid. Returns Alice's result and her process.
    """
    ours, theirs = alice.shared.read_bytes(), bob.shared.read_bytes()
    done_a, merged_a = run_merge(alice, base, ours, theirs, "a")
    done_b, merged_b = run_merge(bob, base, theirs, ours, "b")
    assert done_a.returncode == 0, done_a.stderr
    assert done_b.returncode == 0, done_b.stderr
    assert records_of(merged_a) == records_of(merged_b)
    assert sorted(merged_a.splitlines()) == sorted(merged_b.splitlines())
    all_valid(merged_a, alice.root_id)
    return merged_a, done_a


def opened(clone: Clone, data: bytes) -> MemoryStore:
    """The clone's store on ``data`` as its shared file (after the merge was committed)."""
    clone.shared.write_bytes(data)
    return clone.store


def test_records_both_sides_created_are_all_kept(team):
    alice, bob = team
    alice.create("Build", "make build")
    base = fork(alice, bob)
    a = alice.create("Lint", "ruff check")
    b = bob.create("Test", "pytest -q")
    merged, _ = merge_both(alice, bob, base)
    titles = {r["title"]: r["scopeKey"] for r in records_of(merged).values()}
    assert titles == {"Build": alice.root_id, "Lint": alice.root_id, "Test": bob.root_id}
    assert {a.id, b.id} <= records_of(merged).keys()


def test_the_higher_revision_wins_and_every_revision_is_kept_as_history(team):
    alice, bob = team
    record = alice.create("Build", "make build")
    base = fork(alice, bob)
    alice.store.edit(record.id, 1, content="make all", confirm_shared=True)  # r2
    store = bob.store
    store.edit(record.id, 1, content="make -j8", confirm_shared=True)  # r2
    store.edit(record.id, 2, content="make -j16", confirm_shared=True)  # r3
    merged, _ = merge_both(alice, bob, base)
    assert records_of(merged)[record.id]["content"] == "make -j16"
    history = opened(alice, merged).history(record.id)
    assert sorted(r.content for r in history) == [
        "make -j16",
        "make -j8",
        "make all",
        "make build",
    ]
    assert [r.governance.revision for r in history] == sorted(
        r.governance.revision for r in history
    )


def test_a_forget_wins_over_an_edit_and_erases_every_earlier_text(team):
    alice, bob = team
    record = alice.create("Deploy key", "the secret is hunter2")
    base = fork(alice, bob)
    alice.store.forget(record.id, confirm_shared=True)
    store = bob.store
    store.edit(record.id, 1, content="the secret is hunter3", confirm_shared=True)
    merged, _ = merge_both(alice, bob, base)
    assert records_of(merged)[record.id]["status"] == "forgotten"
    assert b"hunter" not in merged and b"Deploy key" not in merged
    assert len([line for line in merged.splitlines() if record.id.encode() in line]) == 1


def test_the_hosts_forget_keeping_the_text_is_scrubbed_by_the_merge(team):
    alice, bob = team
    record = alice.create("Deploy key", "the secret is hunter2")
    base = fork(alice, bob)
    line = json.loads(alice.shared.read_bytes())
    gov = dict(line["governance"], revision=2)
    host_forget = dict(line, status="forgotten", governance=gov, updatedAt=line["updatedAt"] + 1)
    with open(alice.shared, "ab") as f:  # what the host's forget writes: the text stays
        f.write(json.dumps(host_forget).encode() + b"\n")
    bob.create("Other", "unrelated")
    merged, _ = merge_both(alice, bob, base)
    assert records_of(merged)[record.id]["status"] == "forgotten"
    assert b"hunter2" not in merged and b"Deploy key" not in merged


def test_verified_here_rejected_there_is_a_conflict_left_unverified(team):
    alice, bob = team
    record = alice.store.propose(
        Scope.SHARED,
        "fact",
        "Release",
        "tag then push",
        source_refs=[SourceRef(kind="url", id="https://example.com/release")],
        confirm_shared=True,
    ).record
    base = fork(alice, bob)
    alice.store.verify(record.id, confirm_shared=True)
    bob.store.reject(record.id, confirm_shared=True)
    merged, done = merge_both(alice, bob, base)
    now = records_of(merged)[record.id]
    assert now["governance"]["verification"] == "unverified"
    assert now["governance"]["revision"] == 3 and "verifiedAt" not in now["governance"]
    assert record.id in done.stderr and "decided differently" in done.stderr
    # Nothing dropped: both decisions are in the record's history.
    states = [r.governance.verification.value for r in opened(alice, merged).history(record.id)]
    assert {"verified", "rejected"} <= set(states)


def test_two_different_edits_of_one_revision_keep_the_rival_for_k(team):
    alice, bob = team
    record = alice.create("Release", "tag then push")
    alice.store.verify(record.id, confirm_shared=True)
    base = fork(alice, bob)
    alice.store.edit(record.id, 2, content="tag, push, announce", confirm_shared=True)
    bob.store.edit(record.id, 2, content="tag and push to both remotes", confirm_shared=True)
    merged, done = merge_both(alice, bob, base)
    store = opened(alice, merged)
    current = store.get(record.id)
    assert current.governance.verification.value == "unverified"
    group, rivals = store.conflict(record.id)
    assert group is not None and len(rivals) == 1
    rival = rivals[0]
    assert {current.content, rival.content} == {
        "tag, push, announce",
        "tag and push to both remotes",
    }
    assert rival.id in done.stderr
    # The reviewer's K keeps one: it is verified, the other rejected.
    kept = store.keep(rival.id, confirm_shared=True)
    assert kept.kept.governance.verification.value == "verified"
    assert store.get(record.id).governance.verification.value == "rejected"


def test_the_same_change_on_both_sides_is_no_conflict(team):
    alice, bob = team
    record = alice.create("Build", "make build")
    base = fork(alice, bob)
    alice.store.verify(record.id, confirm_shared=True)
    bob.store.verify(record.id, confirm_shared=True)
    merged, done = merge_both(alice, bob, base)
    now = records_of(merged)[record.id]
    assert now["governance"]["verification"] == "verified"
    assert now["governance"]["revision"] == 2
    assert "decided differently" not in done.stderr


def test_foreign_and_newer_schema_lines_are_kept_byte_for_byte(team):
    alice, bob = team
    alice.create("Build", "make build")
    odd = [
        b'{"schemaVersion":2,"id":"memory:future","scope":"shared-project","x":[1,2]}',
        b'{"schemaVersion":1,"id":"memory:old","scope":"shared-project","scopeKey":"/some/path"}',
    ]
    with open(alice.shared, "ab") as f:
        f.write(b"".join(line + b"\n" for line in odd))
    base = fork(alice, bob)
    alice.create("Lint", "ruff")
    bob.create("Test", "pytest")
    extra = b'{"schemaVersion":3,"id":"memory:newer","scope":"shared-project"}'
    with open(bob.shared, "ab") as f:
        f.write(extra + b"\n")
    ours, theirs = alice.shared.read_bytes(), bob.shared.read_bytes()
    for name, (o, t) in {"a": (ours, theirs), "b": (theirs, ours)}.items():
        done, merged = run_merge(alice, base, o, t, name)
        assert done.returncode == 0, done.stderr
        for line in [*odd, extra]:
            assert merged.splitlines().count(line) == 1


def test_a_base_without_the_file_merges_two_new_files(team):
    alice, bob = team
    base = fork(alice, bob)
    assert base == b""
    alice.create("Build", "make build")
    bob.create("Test", "pytest -q")
    merged, _ = merge_both(alice, bob, base)
    assert {r["title"] for r in records_of(merged).values()} == {"Build", "Test"}


def test_a_result_over_8_mib_exits_1_and_leaves_ours_untouched(team):
    alice, bob = team
    alice.create("Build", "make build")
    base = fork(alice, bob)
    line = json.loads(alice.shared.read_bytes())
    big = []
    n = 0
    size = 0
    while size < MAX_STORE_BYTES // 2 + 4096:
        n += 1
        content = f"note {n} " + "x" * 60000
        rec = dict(line, id=f"memory:big-{n}", content=content, contentHash=content_hash(content))
        raw = json.dumps(rec).encode() + b"\n"
        big.append(raw)
        size += len(raw)
    ours = base + b"".join(big)
    theirs = base + b"".join(r.replace(b"memory:big-", b"memory:other-") for r in big)
    done, after = run_merge(alice, base, ours, theirs)
    assert done.returncode == 1
    assert "error[STORE_TOO_LARGE]" in done.stderr and "not merged" in done.stderr
    assert after == ours


def test_an_input_with_conflict_markers_exits_1_and_writes_nothing(team):
    alice, bob = team
    alice.create("Build", "make build")
    base = fork(alice, bob)
    ours = base + b"<<<<<<< HEAD\n" + base + b"=======\n" + base + b">>>>>>> other\n"
    done, after = run_merge(alice, base, ours, base)
    assert done.returncode == 1 and "error[CONFLICT_MARKERS]" in done.stderr
    assert after == ours


def test_an_unreadable_input_exits_1_and_writes_nothing(team):
    alice, bob = team
    alice.create("Build", "make build")
    base = fork(alice, bob)
    where = alice.path.parent / "m"
    where.mkdir()
    (where / "ours").write_bytes(base)
    done = alice.cli("merge-file", str(where / "missing"), str(where / "ours"), str(where / "ours"))
    assert done.returncode == 1 and "error[READ_FAILED]" in done.stderr
    assert "Traceback" not in done.stderr
    assert (where / "ours").read_bytes() == base
    assert sorted(os.listdir(where)) == ["ours"]


def test_a_compaction_on_one_side_merges_without_bringing_history_back(team):
    alice, bob = team
    record = alice.create("Build", "make build")
    store = alice.store
    store.edit(record.id, 1, content="make all", confirm_shared=True)
    store.edit(record.id, 2, content="make -j8", confirm_shared=True)
    base = fork(alice, bob)
    alice.store.compact(alice.store.paths.shared_file(), confirm_shared=True)
    bob.store.verify(record.id, confirm_shared=True)
    merged, _ = merge_both(alice, bob, base)
    assert records_of(merged)[record.id]["governance"]["verification"] == "verified"
    assert b"make build" not in merged and b"make all" not in merged


def test_merging_a_file_with_itself_changes_nothing(team):
    alice, bob = team
    record = alice.create("Build", "make build")
    alice.store.verify(record.id, confirm_shared=True)
    data = alice.shared.read_bytes()
    done, merged = run_merge(alice, data, data, data)
    assert done.returncode == 0 and merged == data
