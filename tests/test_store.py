"""The store (SPEC 2 and 4): paths, the current view and history, every write, conflicts,
idempotent merges, shared-write confirmation, profile isolation, forget, compaction and the
8 MiB cap. Real files in tmp_path (copies of tests/fixtures/host).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.jsonl import MAX_STORE_BYTES
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Retention,
    Scope,
    SourceRef,
    Status,
    Verification,
    make_record,
    next_revision,
)
from dsh_memory_tui.paths import StorePaths, resolve_home, resolve_user, resolve_workspace
from dsh_memory_tui.store import MemoryStore

FIXTURE = Path(__file__).parent / "fixtures" / "host"
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"  # two revisions
CONVENTION = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
PREFERENCE = "memory:agent:preference:b9c48cb01720800e4ca82984fcb042d9"  # has hostHints
LEGACY = "memory:agent:fact:a83c546dbc4d13dcd6c93f01a9f18630"  # no governance
FUTURE = "memory:agent:fact:0f0e0d0c0b0a09080706050403020100"  # schemaVersion 2
SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"
ALICE_PREF = "memory:user:preference:e66c0e9819428e8a34c6049fa9998118"
BOB_PREF = "memory:user:preference:3c19c840d9f9bacda62d2465be71c2d9"
SESSION_DIGEST = "memory:auto:fact:e7e26cdefa2414a7:1899925c2fa2f12bdde45c62"


def project_path(store: MemoryStore) -> Path:
    return store.file_for(Scope.PROJECT).path


def fixture_lines(name: str) -> list[bytes]:
    path = {
        "records": FIXTURE / "workspace/.dsh/workspace-memory/records.jsonl",
        "user": FIXTURE / "home/workspace-memory/user.jsonl",
    }[name]
    return path.read_bytes().splitlines(keepends=True)


def bob_line() -> bytes:
    (line,) = [x for x in fixture_lines("user") if b'"scopeKey":"bob"' in x]
    return line


def store_dir_bytes(*dirs: Path) -> bytes:
    return b"".join(p.read_bytes() for d in dirs for p in sorted(d.rglob("*")) if p.is_file())


# ---------------------------------------------------------------- paths (SPEC 2)


def test_dsh_home_defaults_to_dot_dsh_and_env_overrides(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.delenv("DSH_HOME", raising=False)
    assert resolve_home() == Path.home() / ".dsh"
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "h"))
    assert resolve_home() == tmp_path / "h"
    assert resolve_home(tmp_path / "flag") == tmp_path / "flag"


def test_the_workspace_defaults_to_the_resolved_current_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path / "link")
    assert resolve_workspace() == (tmp_path / "real").resolve()


def test_the_user_is_the_flag_else_dsh_user_id_else_the_login_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DSH_USER_ID", "from-env")
    assert resolve_user("from-flag") == "from-flag"
    assert resolve_user() == "from-env"
    monkeypatch.delenv("DSH_USER_ID")
    assert resolve_user() == getpass.getuser()


def test_each_scope_has_its_file(tmp_path: Path) -> None:
    paths = StorePaths(tmp_path / "home", tmp_path / "ws", "alice")
    digest = hashlib.sha256(b"sess-1|root-1").hexdigest()
    session = paths.session_file("sess-1", "root-1")
    assert session.path == tmp_path / f"home/workspace-memory/sessions/{digest}.jsonl"
    assert session.scope_key == "sess-1|root-1"
    assert paths.project_file().path == tmp_path / "ws/.dsh/workspace-memory/records.jsonl"
    assert paths.shared_file().path == tmp_path / "ws/.dsh/workspace-memory/shared.jsonl"
    assert paths.project_file().scope_key == str(tmp_path / "ws")
    assert paths.user_file().path == tmp_path / "home/workspace-memory/user.jsonl"
    assert paths.user_file().scope_key == "alice"


def test_a_record_s_retention_defaults_by_scope(alice_store: MemoryStore) -> None:
    expected = {Scope.PROJECT: Retention.PROJECT_DELETE, Scope.SHARED: Retention.PROJECT_DELETE,
                Scope.USER: Retention.USER_MANAGED, Scope.SESSION: Retention.SESSION_END}
    for scope, retention in expected.items():
        result = alice_store.create(scope, "fact", "t", f"retention {scope}",
                                    session=("s", "r"), confirm_shared=True)
        assert result.record.governance.retention is retention


# ---------------------------------------------------------------- reading the fixture


def test_the_current_view_is_the_highest_revision_of_each_id(alice_store: MemoryStore) -> None:
    project = {r.id: r for r in alice_store.records("project")}
    assert list(project) == [DECISION, CONVENTION, PREFERENCE, LEGACY]
    assert project[DECISION].governance.revision == 2
    assert project[DECISION].governance.verification is Verification.VERIFIED
    assert [r.governance.revision for r in alice_store.history(DECISION)] == [1, 2]
    view = alice_store.view(alice_store.file_for("project"))
    assert len(view.corrupt) == 2 and len(view.future) == 1
    assert [c.line_no for c in view.corrupt] == [7, 8]


def test_a_revision_tie_goes_to_the_later_line(alice_store: MemoryStore) -> None:
    path = project_path(alice_store)
    current = alice_store.get(CONVENTION)
    twin = next_revision(current, current.updatedAt, {"title": "first of two"})
    later = next_revision(current, current.updatedAt, {"title": "second of two"})
    with path.open("ab") as f:
        f.write(twin.to_line() + later.to_line())
    assert alice_store.get(CONVENTION).title == "second of two"


def test_a_legacy_record_reads_with_defaults_and_its_first_write_is_complete(
    alice_store: MemoryStore,
) -> None:
    legacy = alice_store.get(LEGACY)
    assert legacy.governance.origin is Origin.MODEL_SUGGESTED
    assert legacy.in_review_queue()
    verified = alice_store.verify(LEGACY)
    line = json.loads(project_path(alice_store).read_bytes().splitlines()[-1])
    assert line["governance"]["revision"] == 2 == verified.governance.revision
    assert line["governance"]["origin"] == "model-suggested"
    assert line["governance"]["sourceRefs"] == [{"kind": "session", "id": "sess-host"},
                                                {"kind": "event", "id": "1"}]


def test_alice_never_sees_bobs_profile(alice_store: MemoryStore) -> None:
    assert {r.id for r in alice_store.records("user")} == {
        ALICE_PREF, "memory:agent:preference:e7f137f5a11b5c7df5a6b47b57a73cab",
    }
    with pytest.raises(StoreError) as err:
        alice_store.get(BOB_PREF)
    assert err.value.code == "NOT_FOUND"
    bob = MemoryStore.open(alice_store.paths.home, alice_store.paths.workspace, "bob")
    assert [r.id for r in bob.records("user")] == [BOB_PREF]


def test_a_newer_schema_record_is_read_only(alice_store: MemoryStore) -> None:
    assert FUTURE not in {r.id for r in alice_store.records(include_inactive=True)}
    with pytest.raises(StoreError) as err:
        alice_store.verify(FUTURE)
    assert err.value.code == "READ_ONLY_RECORD"


def test_an_external_append_is_picked_up_by_refresh(alice_store: MemoryStore) -> None:
    alice_store.refresh()
    other = MemoryStore.open(alice_store.paths.home, alice_store.paths.workspace, "alice")
    new = other.propose("project", "fact", "from elsewhere", "appended by another process",
                        source_refs=[SourceRef(kind="session", id="x")])
    changes = {c.file.scope: c for c in alice_store.refresh()}
    # That write also quarantined the fixture's corrupt lines (a rewrite): read anew.
    assert changes[Scope.PROJECT].reset is True
    assert changes[Scope.PROJECT].ids[-1] == new.id
    third = other.propose("project", "fact", "another", "a second append",
                          source_refs=[SourceRef(kind="session", id="x")])
    change = alice_store.refresh(Scope.PROJECT)[0]
    assert (change.reset, change.ids) == (False, [third.id])


# ---------------------------------------------------------------- creating


def test_create_writes_a_user_authored_unverified_record(alice_store: MemoryStore) -> None:
    result = alice_store.create("project", "decision", "  Title  ", "Body\n", ["a", "a", " b "])
    assert result.written
    record = alice_store.get(result.id)
    assert result.id.startswith("memory:user:decision:")
    assert (record.title, record.content, record.tags) == ("Title", "Body", ["a", "b"])
    assert record.governance.origin is Origin.USER_AUTHORED
    assert record.governance.verification is Verification.UNVERIFIED
    assert record.provenance.kind is ProvenanceKind.USER
    assert record.scopeKey == str(alice_store.paths.workspace)


def test_propose_writes_a_model_suggested_record_with_sources(alice_store: MemoryStore) -> None:
    result = alice_store.propose("user", "preference", "Tabs", "Prefers tabs.",
                                 source_refs=[SourceRef(kind="session", id="s9")])
    record = alice_store.get(result.id)
    assert result.id.startswith("memory:agent:preference:")
    assert record.governance.origin is Origin.MODEL_SUGGESTED
    assert record.in_review_queue()
    assert record.scopeKey == "alice"
    with pytest.raises(StoreError) as err:
        alice_store.propose("project", "fact", "t", "no sources")
    assert err.value.code == "INVALID_RECORD"
    session = alice_store.propose("session", "fact", "t", "c", session=("s1", "r1"))
    assert [(r.kind, r.id) for r in session.record.governance.sourceRefs] == [("session", "s1")]


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [({"record_type": "note"}, "INVALID_RECORD"), ({"title": " "}, "INVALID_RECORD"),
     ({"content": "\n"}, "INVALID_RECORD"), ({"scope": "session"}, "USAGE")],
)
def test_a_bad_create_writes_nothing(alice_store: MemoryStore, kwargs: dict[str, str],
                                     code: str) -> None:
    before = project_path(alice_store).read_bytes()
    args = {"scope": "project", "record_type": "fact", "title": "t", "content": "c"} | kwargs
    with pytest.raises(StoreError) as err:
        alice_store.create(args.pop("scope"), **args)
    assert err.value.code == code
    assert project_path(alice_store).read_bytes() == before


# ---------------------------------------------------------------- idempotent merge


def test_the_same_type_and_content_merges_into_the_existing_record(
    alice_store: MemoryStore,
) -> None:
    first = alice_store.create("project", "fact", "one", "same content")
    size = project_path(alice_store).stat().st_size
    again = alice_store.propose("project", "fact", "other title", "same content",
                                source_refs=[SourceRef(kind="session", id="s")])
    assert (again.id, again.written) == (first.id, False)
    assert project_path(alice_store).stat().st_size == size
    other_type = alice_store.create("project", "decision", "one", "same content")
    assert other_type.written and other_type.id != first.id
    elsewhere = alice_store.create("user", "fact", "one", "same content")
    assert elsewhere.written


@pytest.mark.parametrize("action", ["archive", "reject"])
def test_an_archived_or_rejected_record_absorbs_a_re_proposal(alice_store: MemoryStore,
                                                              action: str) -> None:
    getattr(alice_store, action)(CONVENTION)
    content = alice_store.get(CONVENTION).content
    again = alice_store.propose("project", "convention", "again", content,
                                source_refs=[SourceRef(kind="session", id="s")])
    assert (again.id, again.written) == (CONVENTION, False)
    assert not any(r.id == CONVENTION for r in alice_store.review_queue())


def test_a_forgotten_record_does_not_absorb(alice_store: MemoryStore) -> None:
    first = alice_store.create("project", "fact", "t", "to forget")
    alice_store.forget(first.id)
    again = alice_store.create("project", "fact", "t", "to forget")
    assert again.written and again.id != first.id


# ---------------------------------------------------------------- edits and conflicts


def test_edit_appends_a_revision_with_the_same_id(alice_store: MemoryStore) -> None:
    record = alice_store.edit(CONVENTION, 1, title="Run ruff", content="ruff first",
                              record_type="decision", tags=["lint"])
    assert record.id == CONVENTION
    assert record.governance.revision == 2
    assert (record.title, record.content, record.type, record.tags) == (
        "Run ruff", "ruff first", RecordType.DECISION, ["lint"])
    assert [r.governance.revision for r in alice_store.history(CONVENTION)] == [1, 2]
    assert alice_store.get(CONVENTION).updatedAt >= alice_store.history(CONVENTION)[0].updatedAt


def test_edit_with_stale_base_revision_is_refused(alice_store: MemoryStore) -> None:
    reviewer_a = alice_store
    reviewer_b = MemoryStore.open(alice_store.paths.home, alice_store.paths.workspace, "alice")
    base = reviewer_b.get(CONVENTION).governance.revision
    reviewer_a.edit(CONVENTION, base, content="A's version")
    before = project_path(alice_store).read_bytes()
    with pytest.raises(StoreError) as err:
        reviewer_b.edit(CONVENTION, base, content="B's version")
    assert err.value.code == "REVISION_CONFLICT"
    assert project_path(alice_store).read_bytes() == before
    assert reviewer_b.get(CONVENTION).content == "A's version"


def test_an_edit_that_changes_nothing_writes_nothing(alice_store: MemoryStore) -> None:
    alice_store.create("project", "fact", "t", "c")  # quarantines the fixture's bad lines
    before = project_path(alice_store).read_bytes()
    current = alice_store.get(CONVENTION)
    same = alice_store.edit(CONVENTION, 1, title=current.title)
    assert same.governance.revision == 1
    assert project_path(alice_store).read_bytes() == before


def test_a_session_record_s_text_cannot_be_edited(alice_store: MemoryStore) -> None:
    with pytest.raises(StoreError) as err:
        alice_store.edit(SESSION_DIGEST, 1, title="mine now")
    assert err.value.code == "READ_ONLY_SCOPE"
    assert alice_store.verify(SESSION_DIGEST).governance.verification is Verification.VERIFIED
    assert alice_store.archive(SESSION_DIGEST).status is Status.ARCHIVED


# ---------------------------------------------------------------- review actions


def test_verify_records_who_when_and_why(alice_store: MemoryStore) -> None:
    record = alice_store.verify(CONVENTION, "checked the CI config")
    g = record.governance
    assert g.verification is Verification.VERIFIED
    assert g.verifiedAt == record.updatedAt == g.reviewedAt
    assert (g.reviewedBy, g.reviewNote, g.revision) == ("alice", "checked the CI config", 2)


def test_review_actions_on_a_record_already_in_that_state_write_nothing(
    alice_store: MemoryStore,
) -> None:
    alice_store.create("project", "fact", "t", "c")
    for action, record_id in (("verify", DECISION), ("restore", CONVENTION)):
        before = project_path(alice_store).read_bytes()
        getattr(alice_store, action)(record_id)
        assert project_path(alice_store).read_bytes() == before
    alice_store.archive(CONVENTION)
    alice_store.reject(PREFERENCE)
    for action, record_id in (("archive", CONVENTION), ("reject", PREFERENCE)):
        before = project_path(alice_store).read_bytes()
        getattr(alice_store, action)(record_id)
        assert project_path(alice_store).read_bytes() == before


def test_reject_then_restore_returns_it_to_the_queue(alice_store: MemoryStore) -> None:
    rejected = alice_store.reject(CONVENTION, "not our policy")
    assert rejected.governance.verification is Verification.REJECTED
    assert rejected.governance.reviewNote == "not our policy"
    assert CONVENTION not in {r.id for r in alice_store.review_queue()}
    restored = alice_store.restore(CONVENTION)
    assert restored.status is Status.ACTIVE
    assert restored.governance.verification is Verification.UNVERIFIED
    assert CONVENTION in {r.id for r in alice_store.review_queue()}


def test_archive_and_restore(alice_store: MemoryStore) -> None:
    assert alice_store.archive(DECISION).status is Status.ARCHIVED
    assert DECISION not in {r.id for r in alice_store.records("project")}
    assert DECISION in {r.id for r in alice_store.records("project", include_inactive=True)}
    restored = alice_store.restore(DECISION)
    assert restored.status is Status.ACTIVE
    assert restored.governance.verification is Verification.VERIFIED
    assert restored.governance.revision == 4


def test_apply_many_is_one_batch_per_file(alice_store: MemoryStore) -> None:
    done = alice_store.apply_many("verify", [CONVENTION, PREFERENCE, ALICE_PREF])
    assert {r.id for r in done} == {CONVENTION, PREFERENCE, ALICE_PREF}
    assert all(alice_store.get(i).governance.verification is Verification.VERIFIED
               for i in (CONVENTION, PREFERENCE, ALICE_PREF))


def test_an_action_with_a_stale_base_revision_is_refused(alice_store: MemoryStore) -> None:
    with pytest.raises(StoreError) as err:
        alice_store.verify(CONVENTION, base_revision=7)
    assert err.value.code == "REVISION_CONFLICT"


def test_an_unknown_id_is_not_found(alice_store: MemoryStore) -> None:
    with pytest.raises(StoreError) as err:
        alice_store.verify("memory:user:fact:" + "0" * 32)
    assert err.value.code == "NOT_FOUND"


# ---------------------------------------------------------------- copy


def test_copy_makes_a_new_record_that_names_the_original(alice_store: MemoryStore) -> None:
    result = alice_store.copy(SESSION_DIGEST, "project")
    copy_ = alice_store.get(result.id)
    source = alice_store.get(SESSION_DIGEST)
    assert copy_.scope is Scope.PROJECT and copy_.id != source.id
    assert copy_.id.startswith("memory:auto:fact:")
    assert (copy_.content, copy_.type, copy_.tags) == (source.content, source.type, source.tags)
    assert copy_.governance.origin is source.governance.origin
    assert copy_.governance.verification is source.governance.verification
    assert copy_.governance.retention is Retention.PROJECT_DELETE
    refs = [(r.kind, r.id) for r in copy_.governance.sourceRefs]
    assert refs[-1] == ("record", SESSION_DIGEST)
    assert refs[:-1] == [(r.kind, r.id) for r in source.governance.sourceRefs]
    again = alice_store.copy(SESSION_DIGEST, "project")
    assert (again.id, again.written) == (result.id, False)


def test_copy_keeps_verification(alice_store: MemoryStore) -> None:
    result = alice_store.copy(DECISION, "user")
    g = result.record.governance
    assert g.verification is Verification.VERIFIED and g.verifiedAt is not None
    assert result.record.scopeKey == "alice"


# ---------------------------------------------------------------- shared-project confirmation

SHARED_WRITES: dict[str, Callable[..., Any]] = {
    "create": lambda s, **kw: s.create("shared-project", "fact", "t", "new shared", **kw),
    "propose": lambda s, **kw: s.propose("shared-project", "fact", "t", "proposed",
                                         source_refs=[SourceRef(kind="session", id="x")], **kw),
    "edit": lambda s, **kw: s.edit(SHARED, 1, title="edited", **kw),
    "verify": lambda s, **kw: s.verify(SHARED, **kw),
    "reject": lambda s, **kw: s.reject(SHARED, **kw),
    "archive": lambda s, **kw: s.archive(SHARED, **kw),
    "forget": lambda s, **kw: s.forget(SHARED, **kw),
    "copy into": lambda s, **kw: s.copy(CONVENTION, "shared-project", **kw),
    "compact": lambda s, **kw: s.compact(s.file_for("shared-project"), **kw),
    "apply_many": lambda s, **kw: s.apply_many("archive", [SHARED, CONVENTION], **kw),
}


@pytest.mark.parametrize("name", list(SHARED_WRITES))
def test_every_shared_write_needs_confirmation(alice_store: MemoryStore, name: str) -> None:
    shared = alice_store.file_for("shared-project").path
    before = store_dir_bytes(shared.parent)
    with pytest.raises(StoreError) as err:
        SHARED_WRITES[name](alice_store)
    assert err.value.code == "SHARED_WRITE_UNCONFIRMED"
    assert str(shared) in err.value.message
    assert store_dir_bytes(shared.parent) == before
    SHARED_WRITES[name](alice_store, confirm_shared=True)


def test_restore_in_shared_needs_confirmation(alice_store: MemoryStore) -> None:
    alice_store.archive(SHARED, confirm_shared=True)
    with pytest.raises(StoreError) as err:
        alice_store.restore(SHARED)
    assert err.value.code == "SHARED_WRITE_UNCONFIRMED"
    assert alice_store.restore(SHARED, confirm_shared=True).status is Status.ACTIVE


# ---------------------------------------------------------------- profile isolation


def test_bobs_line_is_byte_identical_after_every_operation(alice_store: MemoryStore) -> None:
    user = alice_store.file_for("user").path
    bob = bob_line()
    with user.open("ab") as f:  # a corrupt line and a newer-schema line of bob's too
        f.write(b'{"schemaVersion":2,"scopeKey":"bob","id":"memory:agent:fact:x"}\n')
        f.write(b"not json at all\n")

    def check() -> None:
        data = user.read_bytes()
        assert data.count(bob) == 1
        assert b'{"schemaVersion":2,"scopeKey":"bob","id":"memory:agent:fact:x"}\n' in data

    created = alice_store.create("user", "fact", "mine", "alice only")
    check()
    assert b"not json at all" in alice_store.view(alice_store.file_for("user")).safe.corrupt_path\
        .read_bytes()
    alice_store.edit(created.id, 1, content="alice edited")
    check()
    for action in ("verify", "reject", "restore", "archive"):
        getattr(alice_store, action)(ALICE_PREF)
        check()
    alice_store.apply_many("verify", [created.id])
    check()
    alice_store.forget(created.id)
    check()
    alice_store.compact(alice_store.file_for("user"))
    check()
    assert alice_store.check(repair=True).clean
    check()
    bob_store = MemoryStore.open(alice_store.paths.home, alice_store.paths.workspace, "bob")
    assert [r.id for r in bob_store.records("user")] == [BOB_PREF]


def test_compaction_keeps_other_profiles_history(alice_store: MemoryStore) -> None:
    bob = MemoryStore.open(alice_store.paths.home, alice_store.paths.workspace, "bob")
    bob.edit(BOB_PREF, 1, content="bob's second revision")
    bob_lines = [x for x in alice_store.file_for("user").path.read_bytes().splitlines()
                 if b'"scopeKey":"bob"' in x]
    alice_store.edit(ALICE_PREF, 1, content="alice's second")
    alice_store.compact(alice_store.file_for("user"))
    lines = alice_store.file_for("user").path.read_bytes().splitlines()
    assert [x for x in lines if b'"scopeKey":"bob"' in x] == bob_lines
    assert len(alice_store.history(ALICE_PREF)) == 1


# ---------------------------------------------------------------- forget


def test_forget_leaves_a_tombstone_and_the_text_nowhere(alice_store: MemoryStore) -> None:
    secret = "the staging password is hunter2-XYZZY"
    result = alice_store.create("project", "fact", "Secret title XYZZY", secret, ["tag-XYZZY"])
    alice_store.edit(result.id, 1, content=secret + " (rotated)")
    alice_store.verify(result.id, "reviewed XYZZY")
    alice_store.compact(alice_store.file_for("project"))  # .bak now holds the secret
    alice_store.edit(result.id, 3, title="Secret title XYZZY v2")
    directory = project_path(alice_store).parent
    assert b"XYZZY" in store_dir_bytes(directory)
    decision_history = alice_store.history(DECISION)

    tombstone = alice_store.forget(result.id)
    assert tombstone.status is Status.FORGOTTEN
    assert (tombstone.title, tombstone.content, tombstone.tags) == ("", "", [])
    assert tombstone.governance.revision == 5
    assert [r.governance.revision for r in alice_store.history(result.id)] == [5]
    for path in directory.iterdir():
        assert b"hunter2" not in path.read_bytes(), path
        assert b"Secret title" not in path.read_bytes(), path
    assert alice_store.history(DECISION) == decision_history
    for action in (lambda: alice_store.edit(result.id, 5, title="x"),
                   lambda: alice_store.verify(result.id),
                   lambda: alice_store.forget(result.id),
                   lambda: alice_store.copy(result.id, "user")):
        with pytest.raises(StoreError) as err:
            action()
        assert err.value.code == "FORGOTTEN"
    assert result.id in {r.id for r in alice_store.records(include_inactive=True)}
    assert result.id not in {r.id for r in alice_store.records()}


def test_forget_keeps_corrupt_pieces_of_the_record_out_of_the_backup(
    alice_store: MemoryStore,
) -> None:
    """A torn revision of the record still in the file holds its text: the forget's rewrite
    quarantines it (SPEC 5: appended to .corrupt, never dropped) and keeps it out of the .bak
    and the file (SPEC 4)."""
    rid = alice_store.create("project", "fact", "Secret ABRACADABRA", "body ABRACADABRA").id
    line = project_path(alice_store).read_bytes().splitlines()[-1]
    torn = line[: line.index(b"ABRACADABRA") + 20]  # id and title, cut off: not JSON
    assert rid.encode() in torn
    with open(project_path(alice_store), "ab") as f:
        f.write(torn + b"\n")
    view = alice_store.view(alice_store.file_for("project"))

    alice_store.forget(rid)

    assert b"ABRACADABRA" not in project_path(alice_store).read_bytes()
    assert b"ABRACADABRA" not in view.safe.bak_path.read_bytes()
    assert torn + b"\n" in view.safe.corrupt_path.read_bytes()  # quarantined verbatim


def test_forget_keeps_every_other_line_as_it_was(alice_store: MemoryStore) -> None:
    original = fixture_lines("records")
    alice_store.forget(CONVENTION)
    lines = project_path(alice_store).read_bytes().splitlines(keepends=True)
    kept = [original[i] for i in (0, 1, 3, 4, 5)]  # every line but the forgotten and corrupt
    assert lines[:-1] == kept
    assert json.loads(lines[-1])["status"] == "forgotten"


# ---------------------------------------------------------------- faithful rewrites


def test_a_write_quarantines_the_fixture_s_corrupt_lines_and_keeps_the_rest(
    alice_store: MemoryStore,
) -> None:
    original = fixture_lines("records")
    created = alice_store.create("project", "fact", "t", "c")
    lines = project_path(alice_store).read_bytes().splitlines(keepends=True)
    assert lines[:6] == original[:6]  # hostHints, the legacy record, schemaVersion 2: verbatim
    assert json.loads(lines[6])["id"] == created.id
    corrupt = alice_store.view(alice_store.file_for("project")).safe.corrupt_path.read_bytes()
    assert corrupt == original[6] + original[7] + b"\n"[: not original[7].endswith(b"\n")]
    assert alice_store.view(alice_store.file_for("project")).corrupt == []


def test_a_record_with_unknown_fields_keeps_them_through_a_new_revision(
    alice_store: MemoryStore,
) -> None:
    alice_store.verify(PREFERENCE)
    last = json.loads(project_path(alice_store).read_bytes().splitlines()[-1])
    assert last["hostHints"] == {"confidence": 0.82}
    assert list(last)[-1] == "hostHints"


def test_compaction_keeps_current_lines_and_newer_schema_lines_verbatim(
    alice_store: MemoryStore,
) -> None:
    original = fixture_lines("records")
    result = alice_store.compact(alice_store.file_for("project"))
    path = project_path(alice_store)
    assert path.read_bytes() == b"".join(original[i] for i in (1, 2, 3, 4, 5))
    assert path.with_name("records.jsonl.bak").read_bytes() == b"".join(original[:7]) + \
        original[7] + b"\n"[: not original[7].endswith(b"\n")]
    assert (result.quarantined, result.lines_removed) == (2, 3)
    assert len(alice_store.history(DECISION)) == 1


def test_a_hand_written_file_in_the_host_format_round_trips(fixture_home: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    home, workspace = fixture_home
    path = workspace / ".dsh/workspace-memory/records.jsonl"
    hand = (
        b'{"schemaVersion":1,"id":"memory:agent:fact:00000000000000000000000000000001",'
        b'"scope":"project","scopeKey":"/elsewhere","type":"fact","title":"Caf\xc3\xa9 \\u00e9",'
        b'"content":"x","tags":["a"],"provenance":{"kind":"agent","sessionId":"s","eventSeq":3},'
        b'"createdAt":1700000000000,"updatedAt":1700000000001,"useCount":2,'
        b'"contentHash":"sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",'
        b'"status":"active","extra":{"nested":[1,2.5,null,true]},"z":1}\n'
    )
    path.write_bytes(hand)
    store = MemoryStore.open(home, workspace, "alice")
    (record,) = store.records("project")
    assert record.governance.origin is Origin.MODEL_SUGGESTED
    assert record.createdAt == 1700000000000 and record.useCount == 2
    store.compact(store.file_for("project"))
    assert path.read_bytes() == hand  # a rewrite keeps the line byte for byte
    store.verify(record.id)
    new = json.loads(path.read_bytes().splitlines()[-1])
    assert new["extra"] == {"nested": [1, 2.5, None, True]} and new["z"] == 1
    assert new["title"] == "Café é"
    assert new["governance"]["revision"] == 2
    assert new["createdAt"] == 1700000000000


def test_a_torn_tail_is_quarantined_by_the_next_writer(alice_store: MemoryStore) -> None:
    alice_store.create("project", "fact", "t", "c")
    path = project_path(alice_store)
    with path.open("ab") as f:
        f.write(b'{"schemaVersion":1,"id":"half')
    assert alice_store.view(alice_store.file_for("project")).refresh() is not None
    assert alice_store.view(alice_store.file_for("project")).torn
    created = alice_store.create("project", "fact", "t2", "c2")
    assert path.read_bytes().endswith(b"\n")
    assert b'"id":"half' not in path.read_bytes()
    corrupt = path.with_name("records.jsonl.corrupt").read_bytes()
    assert corrupt.endswith(b'{"schemaVersion":1,"id":"half\n')
    assert alice_store.get(created.id)


# ---------------------------------------------------------------- the 8 MiB cap


def _record(i: int, content: str, scope_key: str) -> Record:
    return make_record(
        scope=Scope.PROJECT, scope_key=scope_key, record_type=RecordType.FACT,
        title=f"filler {i:05d}", content=content, tags=[],
        provenance=Provenance(kind=ProvenanceKind.USER), origin=Origin.USER_AUTHORED,
        source_refs=[], now=1764000000000, record_id=f"memory:user:fact:{i:032x}",
    )


def fill(store: MemoryStore, size: int, *, revisions: int = 1) -> bytes:
    """Write a project file of exactly ``size`` bytes of valid records (each id with
    ``revisions`` lines, but the last) and return its bytes."""
    key = str(store.paths.workspace)
    filler = "y" * (64 * 1024)
    lines: list[bytes] = []
    total, i = 0, 0
    while True:
        record = _record(i, f"{i:08d}{filler}", key)
        block = []
        for _ in range(revisions - 1):
            block.append(record.to_line())
            record = next_revision(record, record.updatedAt, {"title": f"filler {i:05d}'"})
        block.append(record.to_line())
        if total + sum(map(len, block)) + 200_000 > size:
            break
        lines += block
        total += sum(map(len, block))
        i += 1
    # The last record takes exactly what is left.
    base = len(_record(i, "", key).to_line())
    lines.append(_record(i, "z" * (size - total - base), key).to_line())
    data = b"".join(lines)
    assert len(data) == size
    project_path(store).write_bytes(data)
    return data


def test_a_file_of_exactly_8_mib_is_writable_but_a_line_more_is_too_large(
    alice_store: MemoryStore,
) -> None:
    data = fill(alice_store, MAX_STORE_BYTES)
    view = alice_store.view(alice_store.file_for("project"))
    assert len(alice_store.records("project")) > 100
    assert not view.read_only
    with pytest.raises(StoreError) as err:
        alice_store.create("project", "fact", "t", "one line more")
    assert err.value.code == "STORE_TOO_LARGE"
    assert project_path(alice_store).read_bytes() == data
    # A review action that writes nothing is still fine.
    assert alice_store.restore(f"memory:user:fact:{0:032x}").status is Status.ACTIVE


def test_a_file_of_8_mib_plus_one_byte_is_read_only_but_readable(
    alice_store: MemoryStore,
) -> None:
    data = fill(alice_store, MAX_STORE_BYTES + 1)
    records = alice_store.records("project")
    assert len(records) > 100
    view = alice_store.view(alice_store.file_for("project"))
    assert view.read_only
    for write in (lambda: alice_store.create("project", "fact", "t", "c"),
                  lambda: alice_store.verify(records[0].id)):
        with pytest.raises(StoreError) as err:
            write()
        assert err.value.code == "STORE_TOO_LARGE"
    assert project_path(alice_store).read_bytes() == data
    assert alice_store.create("user", "fact", "t", "other files still take writes").written


def test_forget_is_allowed_on_an_oversized_file_when_the_result_fits(
    alice_store: MemoryStore,
) -> None:
    fill(alice_store, MAX_STORE_BYTES + 1)
    victim = alice_store.records("project")[3].id
    tombstone = alice_store.forget(victim)
    assert tombstone.content == ""
    assert project_path(alice_store).stat().st_size <= MAX_STORE_BYTES


def test_explicit_compaction_shrinks_an_oversized_file(alice_store: MemoryStore) -> None:
    fill(alice_store, MAX_STORE_BYTES + 1, revisions=2)
    ids = {r.id for r in alice_store.records("project")}
    assert alice_store.view(alice_store.file_for("project")).read_only
    result = alice_store.compact(alice_store.file_for("project"))
    assert result.bytes_after < MAX_STORE_BYTES // 2 + 1024 * 1024
    assert {r.id for r in alice_store.records("project")} == ids
    assert not alice_store.view(alice_store.file_for("project")).read_only
    assert alice_store.create("project", "fact", "t", "writable again").written


def test_a_write_that_would_cross_the_cap_compacts_first(alice_store: MemoryStore) -> None:
    fill(alice_store, MAX_STORE_BYTES - 100, revisions=2)
    ids = {r.id for r in alice_store.records("project")}
    created = alice_store.create("project", "fact", "t", "crosses the cap")
    path = project_path(alice_store)
    assert path.stat().st_size < MAX_STORE_BYTES // 2 + 1024 * 1024
    assert {r.id for r in alice_store.records("project")} == ids | {created.id}
    assert all(len(alice_store.history(i)) == 1 for i in ids)
    assert path.with_name("records.jsonl.bak").stat().st_size == MAX_STORE_BYTES - 100


# ---------------------------------------------------------------- check


def test_check_reports_and_repairs(alice_store: MemoryStore) -> None:
    report = alice_store.check()
    kinds = sorted((p.path.name, p.kind, p.line_no) for p in report.problems)
    assert kinds == [("records.jsonl", "corrupt", 7), ("records.jsonl", "corrupt", 8)]
    assert not report.clean
    assert any("newer schema" in n for n in report.notes)
    repaired = alice_store.check(repair=True)
    assert repaired.clean and all(p.repaired for p in repaired.problems)
    assert alice_store.check().problems == []


def test_check_reports_an_unsafe_path(alice_store: MemoryStore, tmp_path: Path) -> None:
    path = alice_store.file_for("shared-project").path
    (tmp_path / "target").write_bytes(b"x")
    bak = path.with_name(path.name + ".bak")
    bak.symlink_to(tmp_path / "target")
    report = alice_store.check(repair=True)
    assert [(p.path, p.kind) for p in report.problems if p.kind == "unsafe"] == [(path, "unsafe")]
    assert not report.clean
    assert os.readlink(bak) == str(tmp_path / "target")


def test_forget_removes_temporaries_a_crashed_rewrite_left(alice_store: MemoryStore) -> None:
    result = alice_store.create("project", "fact", "t", "temporary secret QWERTY")
    directory = project_path(alice_store).parent
    for name in (".records.jsonl.4242.dead.tmp", ".records.jsonl.bak.4242.dead.tmp"):
        (directory / name).write_bytes(b"temporary secret QWERTY\n")
    (directory / ".shared.jsonl.4242.dead.tmp").write_bytes(b"another file's temporary\n")
    alice_store.forget(result.id)
    assert sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp")) == [
        ".shared.jsonl.4242.dead.tmp",
    ]
    assert b"QWERTY" not in store_dir_bytes(directory)


def test_a_symlinked_dsh_directory_in_the_workspace_is_refused(tmp_path):
    """A cloned project carrying `.dsh -> elsewhere` must not make us write elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "workspace-memory").mkdir(parents=True, mode=0o700)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".dsh").symlink_to(elsewhere)
    store = MemoryStore.open(tmp_path / "home", ws, "alice")
    with pytest.raises(StoreError) as exc:
        store.create("project", "fact", "t", "c")
    assert exc.value.code == "UNSAFE_PATH"
    assert list((elsewhere / "workspace-memory").iterdir()) == []
