"""Team records (SPEC 3): in shared-project, every clone's records are this project's. Two
workspaces at different paths (two clones) hold the same ``shared.jsonl``: each lists, shows,
governs and serves the other's records, marked with whose clone wrote them; a new revision of a
teammate's record keeps its scopeKey, a new record takes this clone's rootId; the project file
keeps the foreign-line rule.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from teamgit import Clone, make_team
from test_mcp import client, read, served_titles

from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import Scope, Verification


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Clone, Clone]:
    """Two workspaces at different paths sharing one shared.jsonl (copied, as a pull would)."""
    alice = Clone(tmp_path / "a" / "project", tmp_path / "home-a", "Alice")
    bob = Clone(tmp_path / "b" / "other" / "project", tmp_path / "home-b", "Bob")
    alice.path.mkdir(parents=True)
    bob.path.mkdir(parents=True)
    return alice, bob


def pull(src: Clone, dst: Clone) -> None:
    dst.shared.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src.shared, dst.shared)


def test_a_teammates_shared_records_are_listed_in_another_clone(clones):
    alice, bob = clones
    record = alice.create("Build", "make build")
    pull(alice, bob)
    assert alice.root_id != bob.root_id
    listed = bob.store.records(Scope.SHARED)
    assert [r.id for r in listed] == [record.id]
    assert listed[0].scopeKey == alice.root_id
    assert bob.store.get(record.id).content == "make build"


def test_a_new_revision_of_a_teammates_record_keeps_its_scopekey(clones):
    alice, bob = clones
    record = alice.create("Build", "make build")
    pull(alice, bob)
    verified = bob.store.verify(record.id, confirm_shared=True)
    assert verified.scopeKey == alice.root_id and verified.governance.revision == 2
    pull(bob, alice)
    # The author's clone sees the verify: the line is keyed to its rootId.
    mine = alice.store.get(record.id)
    assert mine.governance.verification is Verification.VERIFIED
    assert mine.governance.revision == 2


def test_a_new_record_takes_this_clones_rootid(clones):
    alice, bob = clones
    alice.create("Build", "make build")
    pull(alice, bob)
    mine = bob.create("Test", "pytest -q")
    assert mine.scopeKey == bob.root_id
    keys = {line["title"]: line["scopeKey"] for line in bob.lines()}
    assert keys == {"Build": alice.root_id, "Test": bob.root_id}


def test_an_edit_and_a_forget_of_a_teammates_record_work_here(clones):
    alice, bob = clones
    record = alice.create("Build", "make build")
    pull(alice, bob)
    edited = bob.store.edit(record.id, 1, content="make all", confirm_shared=True)
    assert (edited.scopeKey, edited.content) == (alice.root_id, "make all")
    bob.store.forget(record.id, confirm_shared=True)
    assert b"make build" not in bob.shared.read_bytes()
    assert b"make all" not in bob.shared.read_bytes()


def test_a_teammates_record_still_needs_the_shared_confirmation(clones):
    alice, bob = clones
    record = alice.create("Build", "make build")
    pull(alice, bob)
    with pytest.raises(StoreError) as exc:
        bob.store.verify(record.id)
    assert exc.value.code is ErrorCode.SHARED_WRITE_UNCONFIRMED


def test_the_project_file_keeps_other_rootids_as_foreign_lines(clones):
    alice, bob = clones
    alice.store.create(Scope.PROJECT, "fact", "Local", "only here")
    project = Path(".dsh/workspace-memory/records.jsonl")
    (bob.path / project).parent.mkdir(parents=True)
    shutil.copyfile(alice.path / project, bob.path / project)
    store = bob.store
    assert store.records(Scope.PROJECT) == []
    assert store.view(store.paths.project_file()).foreign == {alice.root_id: 1}


def test_a_teammates_line_our_rules_refuse_is_kept_byte_for_byte(clones):
    alice, bob = clones
    alice.create("Build", "make build")
    line = alice.lines()[0]
    bad = (
        json.dumps(dict(line, id="memory:bad", contentHash="sha256:" + "0" * 64)) + "\n"
    ).encode()
    with open(alice.shared, "ab") as f:
        f.write(bad)
    pull(alice, bob)
    store = bob.store
    view = store.view(store.paths.shared_file())
    view.refresh()
    assert view.corrupt == [] and view.foreign == {alice.root_id: 1}
    bob.create("Test", "pytest -q")  # a write: nothing of the teammate's is quarantined
    data = bob.shared.read_bytes()
    assert bad in data
    assert not (bob.shared.parent / "shared.jsonl.corrupt").exists()


def test_check_does_not_call_a_teammates_records_foreign(clones):
    alice, bob = clones
    alice.create("Build", "make build")
    pull(alice, bob)
    out = bob.ok("check")
    assert "other scopeKeys" not in out and "0 problem(s)" in out


def test_list_marks_a_teammates_record_with_the_git_author(tmp_path):
    _, alice, bob = make_team(tmp_path)
    alice.create("Build", "make build")
    alice.commit("alice's memory")
    alice.git("push", "-q", "origin", "main")
    bob.git("pull", "-q", "origin", "main")
    bob.create("Test", "pytest -q")
    rows = {line.split()[-1]: line.split()[0] for line in bob.ok("list").splitlines()[1:]}
    assert rows == {"Build": "Alice", "Test": "-"}
    shown = bob.ok("show", alice.lines()[0]["id"])
    assert "written by:   Alice (another clone of this project)" in shown


def test_a_clone_outside_git_is_marked_by_its_rootid(clones):
    alice, bob = clones
    record = alice.create("Build", "make build")
    pull(alice, bob)
    header, row = bob.ok("list", "--scope", "shared").splitlines()
    assert header.split()[0] == "BY"
    assert row.split()[:3] == ["clone", alice.root_id[5:13], record.id]


def test_a_list_of_this_clones_records_only_has_no_by_column(clones):
    alice, _ = clones
    alice.create("Build", "make build")
    assert alice.ok("list").splitlines()[0].split()[0] == "ID"


async def test_the_server_serves_a_teammates_verified_shared_record(clones):
    alice, bob = clones
    record = alice.create("Build", "make build")
    alice.store.verify(record.id, confirm_shared=True)
    pull(alice, bob)
    async with client(bob.home, bob.path, "--include-shared") as session:
        shared = await read(session, "memory://verified/shared-project")
    assert served_titles(shared) == ["Build"]
