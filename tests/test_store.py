"""The store (SPEC 2 and 4): paths, the current view and history, every write, conflicts,
idempotent merges, shared-write confirmation, profile isolation, forget, compaction and the
8 MiB cap. Real files in tmp_path (copies of tests/fixtures/host).
"""

from __future__ import annotations

import getpass
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURE_SESSION

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
    content_hash,
    make_record,
    next_revision,
    parse_line,
    sha256_hex,
)
from dsh_memory_tui.paths import StorePaths, resolve_home, resolve_user, resolve_workspace
from dsh_memory_tui.store import FileView, MemoryStore

FIXTURE = Path(__file__).parent / "fixtures" / "host"
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"  # two revisions
CONVENTION = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
PREFERENCE = "memory:agent:preference:b9c48cb01720800e4ca82984fcb042d9"  # has hostHints
LEGACY = "memory:agent:fact:a83c546dbc4d13dcd6c93f01a9f18630"  # no governance
FUTURE = "memory:agent:fact:0f0e0d0c0b0a09080706050403020100"  # schemaVersion 2
SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"
ALICE_PREF = "memory:user:preference:e66c0e9819428e8a34c6049fa9998118"
BOB_PREF = "memory:user:preference:3c19c840d9f9bacda62d2465be71c2d9"
UUID_ID = re.compile(r"memory:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def session_digest(store: MemoryStore) -> str:
    """The fixture session's auto-writer digest id (its scope part depends on the rootId)."""
    key = f"{FIXTURE_SESSION[0]}|{store.paths.root_id}"
    return f"memory:auto:fact:{sha256_hex(key)[:16]}:d3a86ce75c09053a2ad7668b"


def project_path(store: MemoryStore) -> Path:
    return store.file_for(Scope.PROJECT).path


def fixture_lines(name: str, store: MemoryStore | None = None) -> list[bytes]:
    """The fixture file's lines, with the rootId of ``store``'s workspace filled in."""
    path = {
        "records": FIXTURE / "workspace/.dsh/workspace-memory/records.jsonl",
        "user": FIXTURE / "home/workspace-memory/user.jsonl",
    }[name]
    data = path.read_bytes()
    if store is not None:
        data = data.replace(b"__ROOT_ID__", store.paths.root_id.encode())
    return data.splitlines(keepends=True)


def corrupt_entries(store: MemoryStore, scope: Scope = Scope.PROJECT) -> list[dict[str, Any]]:
    """The ``.corrupt`` file's entries (the host's format: line, capturedAt, raw)."""
    path = store.view(store.file_for(scope)).safe.corrupt_path
    return [json.loads(x) for x in path.read_bytes().splitlines()]


def bob_line() -> bytes:
    (line,) = [x for x in fixture_lines("user") if b'"scopeKey":"bob"' in x]
    return line


def store_dir_bytes(*dirs: Path) -> bytes:
    return b"".join(p.read_bytes() for d in dirs for p in sorted(d.rglob("*")) if p.is_file())


# ---------------------------------------------------------------- paths (SPEC 2)


def test_dsh_home_defaults_to_dot_dsh_and_env_overrides(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
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
    (tmp_path / "real-ws").mkdir()
    (tmp_path / "ws").symlink_to(tmp_path / "real-ws")
    paths = StorePaths(tmp_path / "home", tmp_path / "ws", "alice")
    # rootId: "root:" + sha256 of the workspace's real path.
    root = "root:" + sha256_hex(os.path.realpath(tmp_path / "real-ws"))
    assert paths.root_id == root
    sessions = tmp_path / "home/workspace-memory/sessions"
    # A session file: the first 32 hex of sha256(scopeKey).
    session = paths.session_file("sess-1", "root-1")
    assert session.path == sessions / f"{sha256_hex('sess-1|root-1')[:32]}.jsonl"
    assert session.scope_key == "sess-1|root-1"
    default = paths.session_file("sess-1")  # the root defaults to this workspace's
    assert default.scope_key == f"sess-1|{root}"
    assert default.path == sessions / f"{sha256_hex('sess-1|' + root)[:32]}.jsonl"
    assert paths.project_file().path == tmp_path / "ws/.dsh/workspace-memory/records.jsonl"
    assert paths.shared_file().path == tmp_path / "ws/.dsh/workspace-memory/shared.jsonl"
    assert paths.project_file().scope_key == paths.shared_file().scope_key == root
    assert paths.user_file().path == tmp_path / "home/workspace-memory/user.jsonl"
    assert paths.user_file().scope_key == "alice"


def test_a_record_s_retention_defaults_by_scope(alice_store: MemoryStore) -> None:
    expected = {
        Scope.PROJECT: Retention.PROJECT_DELETE,
        Scope.SHARED: Retention.PROJECT_DELETE,
        Scope.USER: Retention.USER_MANAGED,
        Scope.SESSION: Retention.SESSION_END,
    }
    for scope, retention in expected.items():
        result = alice_store.create(
            scope, "fact", "t", f"retention {scope}", session=("s", "r"), confirm_shared=True
        )
        assert result.record.governance.retention is retention


# ---------------------------------------------------------------- reading the fixture


def test_the_current_view_is_the_last_valid_line_of_each_id(alice_store: MemoryStore) -> None:
    project = {r.id: r for r in alice_store.records("project")}
    assert list(project) == [DECISION, CONVENTION, PREFERENCE, LEGACY]
    assert project[DECISION].governance.revision == 2
    assert project[DECISION].governance.verification is Verification.VERIFIED
    assert [r.governance.revision for r in alice_store.history(DECISION)] == [1, 2]
    view = alice_store.view(alice_store.file_for("project"))
    assert len(view.corrupt) == 2 and len(view.future) == 1
    assert [c.line_no for c in view.corrupt] == [7, 8]


def test_the_last_line_wins_even_with_a_lower_revision(alice_store: MemoryStore) -> None:
    path = project_path(alice_store)
    current = alice_store.get(CONVENTION)
    twin = next_revision(current, current.updatedAt, {"title": "first of two"})
    later = next_revision(current, current.updatedAt, {"title": "second of two"})
    with path.open("ab") as f:
        f.write(twin.to_line() + later.to_line())
    assert alice_store.get(CONVENTION).title == "second of two"
    # The host's load keeps the last valid line of an id, whatever its revision.
    with path.open("ab") as f:
        f.write(current.to_line())
    assert alice_store.get(CONVENTION) == current
    assert [r.title for r in alice_store.history(CONVENTION)][-3:] == [
        "first of two",
        "second of two",
        current.title,
    ]
    # An invalid later line does not count.
    broken = json.loads(later.to_line()) | {"contentHash": "sha256:" + "0" * 64}
    with path.open("ab") as f:
        f.write(json.dumps(broken).encode() + b"\n")
    assert alice_store.get(CONVENTION) == current


def test_a_legacy_record_reads_with_defaults_and_its_first_write_is_complete(
    alice_store: MemoryStore,
) -> None:
    legacy = alice_store.get(LEGACY)
    assert legacy.is_legacy
    # The host's memoryGovernance(): an agent record without governance is derived.
    assert legacy.governance.origin is Origin.DERIVED
    assert legacy.governance.verification is Verification.UNVERIFIED
    assert not legacy.in_review_queue() and legacy.in_review_queue(include_derived=True)
    legacy_line = fixture_lines("records", alice_store)[4]
    assert legacy_line in project_path(alice_store).read_bytes()  # reading changes nothing
    verified = alice_store.verify(LEGACY)
    line = json.loads(project_path(alice_store).read_bytes().splitlines()[-1])
    assert line["governance"]["revision"] == 2 == verified.governance.revision
    assert line["governance"]["origin"] == "derived"
    assert line["governance"]["verification"] == "verified"
    assert line["governance"]["verifiedBy"] == "user"
    assert line["governance"]["sourceRefs"] == [{"kind": "session", "id": "sess-host"}]
    assert not alice_store.get(LEGACY).is_legacy


def test_alice_never_sees_bobs_profile(alice_store: MemoryStore) -> None:
    assert {r.id for r in alice_store.records("user")} == {
        ALICE_PREF,
        "memory:agent:preference:e7f137f5a11b5c7df5a6b47b57a73cab",
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
    new = other.propose(
        "project",
        "fact",
        "from elsewhere",
        "appended by another process",
        source_refs=[SourceRef(kind="session", id="x")],
    )
    changes = {c.file.scope: c for c in alice_store.refresh()}
    # That write also quarantined the fixture's corrupt lines (a rewrite): read anew.
    assert changes[Scope.PROJECT].reset is True
    assert changes[Scope.PROJECT].ids[-1] == new.id
    third = other.propose(
        "project",
        "fact",
        "another",
        "a second append",
        source_refs=[SourceRef(kind="session", id="x")],
    )
    change = alice_store.refresh(Scope.PROJECT)[0]
    assert (change.reset, change.ids) == (False, [third.id])


# ---------------------------------------------------------------- creating


def test_create_writes_a_user_authored_unverified_record(alice_store: MemoryStore) -> None:
    result = alice_store.create("project", "decision", "  Title  ", "Body\n", ["a", "a", " b "])
    assert result.written
    record = alice_store.get(result.id)
    assert UUID_ID.fullmatch(result.id)  # the host's ids: memory:<uuid4>
    assert (record.title, record.content, record.tags) == ("Title", "Body", ["a", "b"])
    assert record.governance.origin is Origin.USER_AUTHORED
    assert record.governance.verification is Verification.UNVERIFIED
    assert record.governance.sourceRefs == []
    assert record.provenance.kind is ProvenanceKind.USER
    assert record.scopeKey == alice_store.paths.root_id


def test_propose_writes_a_model_suggested_record_with_sources(alice_store: MemoryStore) -> None:
    result = alice_store.propose(
        "user",
        "preference",
        "Tabs",
        "Prefers tabs.",
        source_refs=[SourceRef(kind="session", id="s9")],
    )
    record = alice_store.get(result.id)
    assert UUID_ID.fullmatch(result.id)
    assert record.governance.origin is Origin.MODEL_SUGGESTED
    assert record.in_review_queue()
    assert record.scopeKey == "alice"
    # The host's proposeMemory: provenance agent with its note.
    assert record.provenance.model_dump(exclude_none=True) == {
        "kind": "agent",
        "note": "memory proposal",
    }
    with pytest.raises(StoreError) as err:
        alice_store.propose("project", "fact", "t", "no sources")
    assert err.value.code == "INVALID_RECORD"
    session = alice_store.propose("session", "fact", "t", "c", session=("s1", None))
    assert [(r.kind, r.id) for r in session.record.governance.sourceRefs] == [("session", "s1")]
    assert session.record.provenance.sessionId == "s1"
    assert session.record.scopeKey == f"s1|{alice_store.paths.root_id}"


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"record_type": "note"}, "INVALID_RECORD"),
        ({"title": " "}, "INVALID_RECORD"),
        ({"content": "\n"}, "INVALID_RECORD"),
        ({"scope": "session"}, "USAGE"),
    ],
)
def test_a_bad_create_writes_nothing(
    alice_store: MemoryStore, kwargs: dict[str, str], code: str
) -> None:
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
    before = project_path(alice_store).read_bytes()
    # A create brings no source refs: nothing to merge, nothing written.
    same = alice_store.create("project", "fact", "other title", "same content")
    assert (same.id, same.written) == (first.id, False)
    assert project_path(alice_store).read_bytes() == before
    # A proposal with a new ref: a revision of the existing record with the refs unioned
    # (its title is discarded).
    again = alice_store.propose(
        "project",
        "fact",
        "other title",
        "same content",
        source_refs=[SourceRef(kind="session", id="s")],
    )
    assert (again.id, again.written) == (first.id, True)
    merged = alice_store.get(first.id)
    assert merged.governance.revision == 2
    assert merged.title == "one"
    assert merged.governance.origin is Origin.USER_AUTHORED
    assert [(r.kind, r.id) for r in merged.governance.sourceRefs] == [("session", "s")]
    # The same ref again: nothing new, nothing written.
    before = project_path(alice_store).read_bytes()
    repeat = alice_store.propose(
        "project", "fact", "t", "same content", source_refs=[SourceRef(kind="session", id="s")]
    )
    assert (repeat.id, repeat.written) == (first.id, False)
    assert project_path(alice_store).read_bytes() == before
    other_type = alice_store.create("project", "decision", "one", "same content")
    assert other_type.written and other_type.id != first.id
    elsewhere = alice_store.create("user", "fact", "one", "same content")
    assert elsewhere.written


def test_a_new_record_with_a_rivals_title_gets_their_conflict_group(
    alice_store: MemoryStore,
) -> None:
    first = alice_store.create("project", "fact", "Port of the API", "8080")
    rival = alice_store.create("project", "fact", "  port OF the api ", "9090")
    group = "conflict:" + sha256_hex("port of the api")[:24]
    assert rival.record.governance.conflictGroup == group
    # Stored on the newer record only (the host's way); the first line is unchanged.
    assert alice_store.get(first.id).governance.conflictGroup is None
    other_type = alice_store.create("project", "decision", "Port of the API", "9090")
    assert other_type.record.governance.conflictGroup is None


@pytest.mark.parametrize("action", ["archive", "reject"])
def test_an_archived_or_rejected_record_absorbs_a_re_proposal(
    alice_store: MemoryStore, action: str
) -> None:
    done = getattr(alice_store, action)(CONVENTION)
    content = alice_store.get(CONVENTION).content
    known = alice_store.propose(
        "project",
        "convention",
        "again",
        content,
        source_refs=[SourceRef(kind="session", id="sess-host")],
    )
    assert (known.id, known.written) == (CONVENTION, False)
    again = alice_store.propose(
        "project", "convention", "again", content, source_refs=[SourceRef(kind="session", id="s")]
    )
    assert (again.id, again.written) == (CONVENTION, True)  # the new ref is merged in...
    merged = alice_store.get(CONVENTION)
    # ...and the record stays archived or rejected: a re-proposal does not resurrect it.
    assert (merged.status, merged.governance.verification) == (
        done.status,
        done.governance.verification,
    )
    assert merged.governance.revision == done.governance.revision + 1
    assert not any(r.id == CONVENTION for r in alice_store.review_queue())


def test_a_forgotten_record_does_not_absorb(alice_store: MemoryStore) -> None:
    first = alice_store.create("project", "fact", "t", "to forget")
    alice_store.forget(first.id)
    again = alice_store.create("project", "fact", "t", "to forget")
    assert again.written and again.id != first.id


# ---------------------------------------------------------------- edits and conflicts


def test_edit_appends_a_revision_with_the_same_id(alice_store: MemoryStore) -> None:
    record = alice_store.edit(
        CONVENTION, 1, title="Run ruff", content="ruff first", record_type="decision", tags=["lint"]
    )
    assert record.id == CONVENTION
    assert record.governance.revision == 2
    assert (record.title, record.content, record.type, record.tags) == (
        "Run ruff",
        "ruff first",
        RecordType.DECISION,
        ["lint"],
    )
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
    digest = session_digest(alice_store)
    assert alice_store.records(session=FIXTURE_SESSION)[0].id == digest
    with pytest.raises(StoreError) as err:
        alice_store.edit(digest, 1, title="mine now")
    assert err.value.code == "READ_ONLY_SCOPE"
    assert alice_store.verify(digest).governance.verification is Verification.VERIFIED
    assert alice_store.archive(digest).status is Status.ARCHIVED


def test_an_edit_of_a_verified_record_makes_it_stale_and_unpins_it(
    alice_store: MemoryStore,
) -> None:
    alice_store.verify(CONVENTION)
    pinned = alice_store.apply("pin", CONVENTION)
    assert pinned.governance.pinned
    edited = alice_store.edit(CONVENTION, pinned.governance.revision, content="ruff, then mypy")
    g = edited.governance
    assert g.verification is Verification.STALE
    assert (g.verifiedAt, g.verifiedBy, g.pinnedAt, g.pinnedBy) == (None, None, None, None)
    assert g.revision == pinned.governance.revision + 1
    with pytest.raises(StoreError) as err:
        alice_store.verify(CONVENTION)  # stale: only reverify
    assert err.value.code == "INVALID_TRANSITION"
    again = alice_store.apply("reverify", CONVENTION)
    assert again.governance.verification is Verification.VERIFIED
    assert again.governance.verifiedBy == "user"


# ---------------------------------------------------------------- review actions


def test_verify_records_who_when_and_why(alice_store: MemoryStore) -> None:
    record = alice_store.verify(CONVENTION, "checked the CI config")
    g = record.governance
    assert g.verification is Verification.VERIFIED
    assert g.verifiedAt == record.updatedAt == g.reviewedAt
    assert (g.reviewedBy, g.reviewNote, g.revision) == ("alice", "checked the CI config", 2)


def test_review_actions_the_hosts_rules_refuse_write_nothing(
    alice_store: MemoryStore,
) -> None:
    alice_store.create("project", "fact", "t", "c")  # quarantines the fixture's bad lines
    alice_store.archive(CONVENTION)
    alice_store.reject(PREFERENCE)
    refused = (
        ("verify", DECISION),  # already verified: verify only from unverified
        ("reject", DECISION),
        ("verify", PREFERENCE),  # rejected
        ("reject", PREFERENCE),
        ("reverify", DECISION),  # only from stale
        ("restore", DECISION),  # only from archived
        ("archive", CONVENTION),  # only from active
        ("pin", LEGACY),  # only verified, active, unexpired
        ("pin", CONVENTION),
        ("stale", LEGACY),  # only from verified
    )
    for action, record_id in refused:
        before = project_path(alice_store).read_bytes()
        with pytest.raises(StoreError) as err:
            alice_store.apply(action, record_id)
        assert err.value.code == "INVALID_TRANSITION", (action, record_id)
        assert record_id in err.value.message
        assert project_path(alice_store).read_bytes() == before


def test_restore_brings_back_an_archived_record_but_does_not_unreject(
    alice_store: MemoryStore,
) -> None:
    rejected = alice_store.reject(CONVENTION, "not our policy")
    assert rejected.governance.verification is Verification.REJECTED
    assert rejected.governance.reviewNote == "not our policy"
    assert CONVENTION not in {r.id for r in alice_store.review_queue()}
    with pytest.raises(StoreError) as err:
        alice_store.restore(CONVENTION)  # active: nothing to restore
    assert err.value.code == "INVALID_TRANSITION"
    alice_store.archive(CONVENTION)
    restored = alice_store.restore(CONVENTION)
    assert restored.status is Status.ACTIVE
    assert restored.governance.verification is Verification.REJECTED
    assert CONVENTION not in {r.id for r in alice_store.review_queue()}


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
    assert all(
        alice_store.get(i).governance.verification is Verification.VERIFIED
        for i in (CONVENTION, PREFERENCE, ALICE_PREF)
    )


def test_apply_many_skips_what_the_rules_refuse_and_writes_the_rest(
    alice_store: MemoryStore,
) -> None:
    written, skipped = alice_store.apply_many_report("verify", [DECISION, CONVENTION, LEGACY])
    assert [r.id for r in written] == [CONVENTION, LEGACY]
    assert [rid for rid, _ in skipped] == [DECISION]
    assert "verified" in skipped[0][1]
    assert alice_store.get(DECISION).governance.revision == 2
    assert alice_store.get(LEGACY).governance.verification is Verification.VERIFIED


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
    digest = session_digest(alice_store)
    result = alice_store.copy(digest, "project")
    copy_ = alice_store.get(result.id)
    source = alice_store.get(digest)
    assert copy_.scope is Scope.PROJECT and copy_.id != source.id
    assert UUID_ID.fullmatch(copy_.id)
    assert copy_.scopeKey == alice_store.paths.root_id
    assert (copy_.content, copy_.type, copy_.tags) == (source.content, source.type, source.tags)
    assert copy_.governance.origin is source.governance.origin
    assert copy_.governance.verification is source.governance.verification
    assert copy_.governance.retention is Retention.PROJECT_DELETE
    refs = [(r.kind, r.id, r.contentHash) for r in copy_.governance.sourceRefs]
    # The host allows no "record" kind: the original is named by an import ref.
    assert refs[-1] == ("import", digest, source.contentHash)
    assert refs[:-1] == [(r.kind, r.id, r.contentHash) for r in source.governance.sourceRefs]
    again = alice_store.copy(digest, "project")
    assert (again.id, again.written) == (result.id, False)


def test_copy_keeps_verification(alice_store: MemoryStore) -> None:
    result = alice_store.copy(DECISION, "user")
    g = result.record.governance
    assert g.verification is Verification.VERIFIED and g.verifiedAt is not None
    assert result.record.scopeKey == "alice"


# ---------------------------------------------------------------- shared-project confirmation

SHARED_WRITES: dict[str, Callable[..., Any]] = {
    "create": lambda s, **kw: s.create("shared-project", "fact", "t", "new shared", **kw),
    "propose": lambda s, **kw: s.propose(
        "shared-project",
        "fact",
        "t",
        "proposed",
        source_refs=[SourceRef(kind="session", id="x")],
        **kw,
    ),
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
    assert (
        b"not json at all"
        in alice_store.view(alice_store.file_for("user")).safe.corrupt_path.read_bytes()
    )
    alice_store.edit(created.id, 1, content="alice edited")
    check()
    for action in ("verify", "pin", "unpin", "stale", "reverify", "archive", "restore"):
        alice_store.apply(action, ALICE_PREF)
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
    bob_lines = [
        x
        for x in alice_store.file_for("user").path.read_bytes().splitlines()
        if b'"scopeKey":"bob"' in x
    ]
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
    # A host-valid tombstone: placeholder title and content holding nothing of the record.
    assert tombstone.title == f"Forgotten memory {sha256_hex(result.id)[:12]}"
    assert tombstone.content.startswith("This memory was forgotten")
    assert tombstone.tags == []
    assert tombstone.governance.revision == 5
    assert tombstone.governance.reviewNote is None and not tombstone.governance.pinned
    line = project_path(alice_store).read_bytes().splitlines()[-1]
    assert parse_line(line, alice_store.view(alice_store.file_for("project")).location) == (
        tombstone
    )
    assert [r.governance.revision for r in alice_store.history(result.id)] == [5]
    for path in directory.iterdir():
        assert b"hunter2" not in path.read_bytes(), path
        assert b"Secret title" not in path.read_bytes(), path
    assert alice_store.history(DECISION) == decision_history
    for action in (
        lambda: alice_store.edit(result.id, 5, title="x"),
        lambda: alice_store.verify(result.id),
        lambda: alice_store.forget(result.id),
        lambda: alice_store.copy(result.id, "user"),
    ):
        with pytest.raises(StoreError) as err:
            action()
        assert err.value.code == "FORGOTTEN"
    assert result.id in {r.id for r in alice_store.records(include_inactive=True)}
    assert result.id not in {r.id for r in alice_store.records()}


def _forgotten_by_the_host(store: MemoryStore, text: str) -> str:
    """A record forgotten the host's way (``domain.forget``: status forgotten, the next
    revision, title, content and tags kept), after a compaction that put its text in .bak."""
    rid = store.create("project", "fact", f"Title {text}", f"Content {text}", [f"tag-{text}"]).id
    store.compact(store.file_for("project"))

    def host_forget(view: FileView) -> tuple[list[Record], None]:
        current = view.current[rid]
        return [next_revision(current, current.updatedAt + 1, {"status": Status.FORGOTTEN})], None

    store.write(store.file_for("project"), host_forget)
    assert text.encode() in project_path(store).read_bytes()
    return rid


def _text_anywhere(store: MemoryStore, text: str) -> list[str]:
    directory = project_path(store).parent
    return [p.name for p in directory.iterdir() if text.encode() in p.read_bytes()]


def test_a_record_the_host_forgot_is_refused_without_claiming_its_text_is_gone(
    alice_store: MemoryStore,
) -> None:
    rid = _forgotten_by_the_host(alice_store, "KEPT-BY-HOST")
    for action in (lambda: alice_store.verify(rid), lambda: alice_store.edit(rid, 2, title="x")):
        with pytest.raises(StoreError) as err:
            action()
        assert err.value.code == "FORGOTTEN"
        assert "gone" not in err.value.message and "erased" not in err.value.message
        assert "still in the file" in err.value.message


def test_forget_of_a_record_the_host_forgot_erases_its_text(alice_store: MemoryStore) -> None:
    rid = _forgotten_by_the_host(alice_store, "KEPT-BY-HOST")
    dead = alice_store.forget(rid)
    assert dead.title == f"Forgotten memory {sha256_hex(rid)[:12]}" and dead.tags == []
    assert dead.governance.revision == 3
    assert _text_anywhere(alice_store, "KEPT-BY-HOST") == []
    assert [r.governance.revision for r in alice_store.history(rid)] == [3]
    with pytest.raises(StoreError) as err:
        alice_store.forget(rid)
    assert err.value.code == "FORGOTTEN" and err.value.message.endswith("its text is erased")


def test_compaction_erases_the_text_the_hosts_forget_kept(alice_store: MemoryStore) -> None:
    rid = _forgotten_by_the_host(alice_store, "KEPT-BY-HOST")
    other = alice_store.create("project", "fact", "Still here", "Kept content").id
    result = alice_store.compact(alice_store.file_for("project"))
    assert result.erased == 1
    assert _text_anywhere(alice_store, "KEPT-BY-HOST") == []
    forgotten = alice_store.get(rid)
    assert forgotten.status is Status.FORGOTTEN and forgotten.title.startswith("Forgotten memory")
    assert alice_store.get(other).content == "Kept content"
    # Once erased, a second compaction has nothing more to erase.
    assert alice_store.compact(alice_store.file_for("project")).erased == 0


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
    # Quarantined as it was (the host's entry format).
    assert torn.decode() + "\n" in [e["raw"] for e in corrupt_entries(alice_store)]


def test_forget_keeps_every_other_line_as_it_was(alice_store: MemoryStore) -> None:
    original = fixture_lines("records", alice_store)
    alice_store.forget(CONVENTION)
    lines = project_path(alice_store).read_bytes().splitlines(keepends=True)
    kept = [original[i] for i in (0, 1, 3, 4, 5)]  # every line but the forgotten and corrupt
    assert lines[:-1] == kept
    assert json.loads(lines[-1])["status"] == "forgotten"


# ---------------------------------------------------------------- faithful rewrites


def test_a_write_quarantines_the_fixture_s_corrupt_lines_and_keeps_the_rest(
    alice_store: MemoryStore,
) -> None:
    original = fixture_lines("records", alice_store)
    created = alice_store.create("project", "fact", "t", "c")
    lines = project_path(alice_store).read_bytes().splitlines(keepends=True)
    assert lines[:6] == original[:6]  # hostHints, the legacy record, schemaVersion 2: verbatim
    assert json.loads(lines[6])["id"] == created.id
    entries = corrupt_entries(alice_store)
    assert [(e["line"], e["raw"].encode()) for e in entries] == [
        (7, original[6]),
        (8, original[7].rstrip(b"\n") + b"\n"),
    ]
    assert all(type(e["capturedAt"]) is int for e in entries)
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
    original = fixture_lines("records", alice_store)
    result = alice_store.compact(alice_store.file_for("project"))
    path = project_path(alice_store)
    assert path.read_bytes() == b"".join(original[i] for i in (1, 2, 3, 4, 5))
    assert (
        path.with_name("records.jsonl.bak").read_bytes()
        == b"".join(original[:7]) + original[7] + b"\n"[: not original[7].endswith(b"\n")]
    )
    assert (result.quarantined, result.lines_removed) == (2, 3)
    assert len(alice_store.history(DECISION)) == 1


def test_a_hand_written_file_in_the_host_format_round_trips(
    fixture_home: tuple[Path, Path], tmp_path: Path
) -> None:
    home, workspace = fixture_home
    path = workspace / ".dsh/workspace-memory/records.jsonl"
    root = StorePaths(home, workspace, "alice").root_id.encode()
    hand = (
        b'{"schemaVersion":1,"id":"memory:agent:fact:00000000000000000000000000000001",'
        b'"scope":"project","scopeKey":"' + root + b'","type":"fact","title":"Caf\xc3\xa9 \\u00e9",'
        b'"content":"x","tags":["a"],"provenance":{"kind":"agent","sessionId":"s","eventSeq":3},'
        b'"createdAt":1700000000000,"updatedAt":1700000000001,"useCount":2,'
        b'"contentHash":"sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",'
        b'"status":"active","extra":{"nested":[1,2.5,null,true]},"z":1}\n'
    )
    path.write_bytes(hand)
    store = MemoryStore.open(home, workspace, "alice")
    (record,) = store.records("project")
    assert record.governance.origin is Origin.DERIVED  # a legacy agent record
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
    assert corrupt_entries(alice_store)[-1]["raw"] == '{"schemaVersion":1,"id":"half\n'
    assert alice_store.get(created.id)


def test_a_valid_last_line_without_newline_is_read_and_kept(alice_store: MemoryStore) -> None:
    alice_store.create("project", "fact", "t", "c")
    path = project_path(alice_store)
    current = alice_store.get(CONVENTION)
    unterminated = next_revision(current, current.updatedAt + 1, {"title": "no LF"}).to_line()
    with path.open("ab") as f:
        f.write(unterminated[:-1])
    assert alice_store.get(CONVENTION).title == "no LF"  # the host reads it: so do we
    created = alice_store.create("project", "fact", "t2", "c2")
    data = path.read_bytes()
    assert unterminated in data  # our append added the newline first
    assert data.endswith(alice_store.get(created.id).to_line())
    assert alice_store.get(CONVENTION).title == "no LF"


# ---------------------------------------------------------------- the 8 MiB cap


def _record(i: int, content: str, scope_key: str) -> Record:
    return make_record(
        scope=Scope.PROJECT,
        scope_key=scope_key,
        record_type=RecordType.FACT,
        title=f"filler {i:05d}",
        content=content,
        tags=[],
        provenance=Provenance(kind=ProvenanceKind.USER),
        origin=Origin.USER_AUTHORED,
        source_refs=[],
        now=1764000000000,
        record_id=f"memory:user:fact:{i:032x}",
    )


def fill(store: MemoryStore, size: int, *, revisions: int = 1) -> bytes:
    """Write a project file of exactly ``size`` bytes of valid records (each id with
    ``revisions`` lines, but the last few) and return its bytes."""
    key = store.paths.root_id
    max_content = 64 * 1024  # the host's limit
    filler = "y" * (max_content - 8)
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
    # The last records (one line each) take exactly what is left.
    base = len(_record(i, "z", key).to_line()) - 1  # a record line without its content
    while True:
        left = size - total
        if left <= base + max_content:
            lines.append(_record(i, "z" * (left - base), key).to_line())
            break
        record = _record(i, f"{i:08d}" + "z" * (min(max_content, left - 2 * base - 1) - 8), key)
        lines.append(record.to_line())
        total += len(lines[-1])
        i += 1
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
    assert not view.safe.bak_path.exists()  # nothing touched, not even a backup
    # An edit that changes nothing writes nothing: still fine.
    first = alice_store.get(f"memory:user:fact:{0:032x}")
    assert alice_store.edit(first.id, 1, title=first.title) == first
    assert project_path(alice_store).read_bytes() == data


def test_a_file_of_8_mib_plus_one_byte_is_read_only_but_readable(
    alice_store: MemoryStore,
) -> None:
    data = fill(alice_store, MAX_STORE_BYTES + 1)
    records = alice_store.records("project")
    assert len(records) > 100
    view = alice_store.view(alice_store.file_for("project"))
    assert view.read_only
    for write in (
        lambda: alice_store.create("project", "fact", "t", "c"),
        lambda: alice_store.verify(records[0].id),
    ):
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
    assert tombstone.title.startswith("Forgotten memory ")
    assert victim in {r.id for r in alice_store.records("project", include_inactive=True)}
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


def _old_lines(store: MemoryStore) -> list[bytes]:
    """Lines an earlier version of ours wrote: keyed by the workspace path, with a sourceRef
    of kind ``record``, and an empty forget tombstone (all invalid or foreign to the host)."""
    base = json.loads(store.get(CONVENTION).to_line())
    keyed = base | {"id": "memory:old-copy", "scopeKey": str(store.paths.workspace)}
    keyed["governance"] = keyed["governance"] | {
        "sourceRefs": [{"kind": "record", "id": CONVENTION}]
    }
    empty = base | {
        "id": "memory:old-forgotten",
        "title": "",
        "content": "",
        "tags": [],
        "contentHash": content_hash(""),
        "status": "forgotten",
    }
    return [json.dumps(x).encode() + b"\n" for x in (keyed, empty)]


def test_check_finds_and_repairs_what_an_earlier_version_wrote(alice_store: MemoryStore) -> None:
    alice_store.check(repair=True)  # the fixture's own corrupt lines
    path = project_path(alice_store)
    with path.open("ab") as f:
        f.writelines(_old_lines(alice_store))
    session = alice_store.file_for("session", FIXTURE_SESSION).path
    old_session = session.with_name(
        sha256_hex(f"session-abc|{alice_store.paths.root_id}") + ".jsonl"
    )
    session.rename(old_session)  # named by the full sha256, as we used to
    n_lines = len(path.read_bytes().splitlines())

    report = MemoryStore.open(alice_store.paths.home, alice_store.paths.workspace, "alice").check()
    found = sorted((p.path.name, p.kind, p.line_no) for p in report.problems)
    assert found == sorted(
        [
            (old_session.name, "migratable", None),
            ("records.jsonl", "migratable", n_lines - 1),
            ("records.jsonl", "migratable", n_lines),
        ]
    )
    assert not report.clean
    repaired = alice_store.check(repair=True)
    assert repaired.clean
    assert not old_session.exists() and session.exists()
    fresh = MemoryStore.open(alice_store.paths.home, alice_store.paths.workspace, "alice")
    assert fresh.check().problems == []
    copy_ = fresh.get("memory:old-copy")
    assert copy_.scopeKey == fresh.paths.root_id
    assert [(r.kind, r.id) for r in copy_.governance.sourceRefs] == [("import", CONVENTION)]
    forgotten = fresh.get("memory:old-forgotten")
    assert forgotten.status is Status.FORGOTTEN
    assert forgotten.title == f"Forgotten memory {sha256_hex('memory:old-forgotten')[:12]}"
    assert fresh.records(session=FIXTURE_SESSION)[0].id == session_digest(fresh)
    assert (
        not fresh.view(fresh.file_for("project"))
        .safe.corrupt_path.read_bytes()
        .count(b"memory:old-")
    )  # made host-valid, not quarantined


def test_a_rewrite_migrates_old_lines_instead_of_quarantining_them(
    alice_store: MemoryStore,
) -> None:
    path = project_path(alice_store)
    with path.open("ab") as f:  # after the fixture's corrupt lines: the next write rewrites
        f.writelines(_old_lines(alice_store))
    alice_store.create("project", "fact", "t", "c")
    entries = corrupt_entries(alice_store)
    assert [e["line"] for e in entries] == [7, 8]  # only the fixture's own corrupt lines
    assert alice_store.get("memory:old-copy").scopeKey == alice_store.paths.root_id
    assert alice_store.get("memory:old-forgotten").title.startswith("Forgotten memory ")
    assert alice_store.view(alice_store.file_for("project")).foreign == {}


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


# ----------------------------------------------------------------- conflict groups and keep


def _versions(store: MemoryStore) -> tuple[str, str, str]:
    """Three proposals of one title (case and spaces differ), three contents; one verified."""
    ref = [SourceRef(kind="session", id="s1")]
    a = store.propose("project", "fact", "Lint with ruff", "CI runs ruff.", source_refs=ref).id
    b = store.propose("project", "fact", " lint with RUFF", "CI runs flake8.", source_refs=ref).id
    c = store.propose("project", "fact", "Lint with ruff", "CI runs pylint.", source_refs=ref).id
    store.verify(a)
    return a, b, c


def test_new_versions_of_a_title_get_the_hosts_conflict_group(alice_store: MemoryStore) -> None:
    a, b, c = _versions(alice_store)
    group, rivals = alice_store.conflict(c)
    assert group is not None and group.startswith("conflict:") and len(group) == 33
    assert {r.id for r in rivals} == {a, b}  # the other active versions
    assert alice_store.get(b).governance.conflictGroup == group  # written on the newer ones
    assert alice_store.get(a).governance.conflictGroup is None  # the host's: only shown
    assert alice_store.conflict(a)[0] == group


def test_keep_verifies_the_kept_rejects_unverified_rivals_archives_verified_ones(
    alice_store: MemoryStore,
) -> None:
    a, b, c = _versions(alice_store)
    path = project_path(alice_store)
    before = path.read_bytes().count(b"\n")
    result = alice_store.keep(c)
    assert path.read_bytes().count(b"\n") == before + 3  # one locked append of three lines
    assert result.kept.id == c and [r.id for r in result.written[1:]] in ([b, a], [a, b])
    kept, rival, verified = (alice_store.get(r) for r in (c, b, a))
    assert (kept.status, kept.governance.verification, kept.governance.verifiedBy) == (
        Status.ACTIVE,
        Verification.VERIFIED,
        "user",
    )
    assert (rival.status, rival.governance.verification) == (Status.ACTIVE, Verification.REJECTED)
    assert rival.governance.reviewNote == f"another version was kept: {c}"
    assert (verified.status, verified.governance.verification) == (
        Status.ARCHIVED,
        Verification.VERIFIED,
    )
    assert alice_store.conflict(c)[1] == []  # resolved: no open rival left
    with pytest.raises(StoreError) as err:
        alice_store.keep(c)
    assert err.value.code == "INVALID_TRANSITION"


def test_keep_of_a_stale_version_reverifies_it_and_refuses_a_rejected_one(
    alice_store: MemoryStore,
) -> None:
    a, b, c = _versions(alice_store)
    alice_store.reject(b)
    with pytest.raises(StoreError) as err:
        alice_store.keep(b)
    assert err.value.code == "INVALID_TRANSITION" and "rejected" in err.value.message
    edited = alice_store.edit(a, 2, tags=["ci"])  # verified -> stale
    assert edited.governance.verification is Verification.STALE
    result = alice_store.keep(a)
    assert result.kept.governance.verification is Verification.VERIFIED
    assert [r.id for r in result.rejected] == [c] and result.archived == []
    assert alice_store.get(b).governance.verification is Verification.REJECTED  # left as it was


def test_keep_checks_the_base_revision(alice_store: MemoryStore) -> None:
    a, b, c = _versions(alice_store)
    path = project_path(alice_store)
    before = path.read_bytes()
    with pytest.raises(StoreError) as err:
        alice_store.keep(c, base_revision=5)
    assert err.value.code == "REVISION_CONFLICT"
    assert path.read_bytes() == before


# ----------------------------------------------------------------- a project that moved


def _moved_lines(store: MemoryStore, old_root: str) -> list[bytes]:
    """Two records (one with two revisions) written under ``old_root``: what a project file
    holds after the project moved."""
    now = 1_700_000_000_000
    first = make_record(
        scope=Scope.PROJECT,
        scope_key=old_root,
        record_type=RecordType.DECISION,
        title="From before the move",
        content="Written at the old path.",
        tags=["old"],
        provenance=Provenance(kind=ProvenanceKind.USER),
        origin=Origin.USER_AUTHORED,
        source_refs=[],
        record_id="memory:moved-1",
        now=now,
    )
    second = next_revision(
        first,
        now + 1,
        None,
        {"verification": Verification.VERIFIED, "verifiedAt": now + 1, "verifiedBy": "user"},
    )
    other = make_record(
        scope=Scope.PROJECT,
        scope_key=old_root,
        record_type=RecordType.FACT,
        title="Another",
        content="Also old.",
        tags=[],
        provenance=Provenance(kind=ProvenanceKind.USER),
        origin=Origin.USER_AUTHORED,
        source_refs=[],
        record_id="memory:moved-2",
        now=now,
    )
    return [r.to_line() for r in (first, second, other)]


def test_adopt_takes_a_moved_projects_lines_in_one_rewrite_history_kept(
    alice_store: MemoryStore,
) -> None:
    old_root = "root:" + "cd" * 32
    path = project_path(alice_store)
    lines = _moved_lines(alice_store, old_root)
    with open(path, "ab") as f:
        f.write(b"".join(lines))
    assert alice_store.adoptable(alice_store.file_for(Scope.PROJECT)) == {old_root: 3}
    assert "memory:moved-1" not in {r.id for r in alice_store.records(Scope.PROJECT)}
    before = path.read_bytes()
    result = alice_store.adopt(alice_store.file_for(Scope.PROJECT))
    assert result.adopted == {old_root: 3} and result.ids == ["memory:moved-1", "memory:moved-2"]
    assert result.left == []
    history = alice_store.history("memory:moved-1")
    assert [h.revision for h in history] == [1, 2]
    assert all(h.scopeKey == alice_store.paths.root_id for h in history)
    assert alice_store.get("memory:moved-1").governance.verification is Verification.VERIFIED
    assert path.with_name("records.jsonl.bak").read_bytes().count(old_root.encode()) == 3
    assert old_root.encode() not in path.read_bytes()
    assert DECISION in {r.id for r in alice_store.records(Scope.PROJECT)}  # ours untouched
    assert len(path.read_bytes()) < len(before) + 10  # the same lines, one scopeKey each
    again = alice_store.adopt(alice_store.file_for(Scope.PROJECT))
    assert again.adopted == {} and again.ids == []


def test_adopt_leaves_lines_it_cannot_take_and_says_why(alice_store: MemoryStore) -> None:
    old_root, third_root = "root:" + "cd" * 32, "root:" + "ef" * 32
    path = project_path(alice_store)
    clash = json.loads(path.read_bytes().splitlines()[0])  # our DECISION's first line
    clash["scopeKey"] = old_root
    broken = json.loads(_moved_lines(alice_store, old_root)[2])
    broken["contentHash"] = "sha256:" + "0" * 64
    elsewhere = json.loads(_moved_lines(alice_store, third_root)[0])
    with open(path, "ab") as f:
        for obj in (clash, broken, elsewhere):
            f.write(json.dumps(obj).encode() + b"\n")
    with pytest.raises(StoreError) as err:
        alice_store.adopt(alice_store.file_for(Scope.PROJECT), from_root="root:" + "00" * 32)
    assert err.value.code == "NOT_FOUND"
    result = alice_store.adopt(alice_store.file_for(Scope.PROJECT), from_root=third_root)
    assert result.adopted == {third_root: 1} and result.ids == ["memory:moved-1"]
    result = alice_store.adopt(alice_store.file_for(Scope.PROJECT))
    left = dict(result.left)
    assert result.adopted == {} and set(left) == {DECISION, "memory:moved-2"}
    assert left[DECISION] == "this workspace has a record with that id"
    assert left["memory:moved-2"].startswith("not a valid record here: Memory content hash")
    assert alice_store.adoptable(alice_store.file_for(Scope.PROJECT)) == {old_root: 2}


def test_adopt_in_shared_needs_confirmation(alice_store: MemoryStore) -> None:
    old_root = "root:" + "cd" * 32
    shared = alice_store.file_for(Scope.SHARED)
    with open(shared.path, "ab") as f:
        f.write(
            json.dumps(
                dict(json.loads(_moved_lines(alice_store, old_root)[0]), scope="shared-project")
            ).encode()
            + b"\n"
        )
    with pytest.raises(StoreError) as err:
        alice_store.adopt(shared)
    assert err.value.code == "SHARED_WRITE_UNCONFIRMED"
    assert alice_store.adopt(shared, confirm_shared=True).ids == ["memory:moved-1"]


def test_the_conflict_index_opens_and_closes_groups_and_says_which_rows_changed(
    alice_store: MemoryStore,
) -> None:
    from dsh_memory_tui.governance import ConflictIndex

    ref = [SourceRef(kind="session", id="s1")]
    copies = [
        alice_store.propose("project", "fact", "Same", f"Copy {i}.", source_refs=ref)
        for i in range(3)
    ]
    index = ConflictIndex()
    first = alice_store.get(copies[0].id)
    assert index.update(first) == {first.id} and index.group(first.id) is None
    second = alice_store.get(copies[1].id)
    assert index.update(second) == {first.id, second.id}  # the group opened: both rows
    group = index.group(first.id)
    assert group is not None and index.group(second.id) == second.governance.conflictGroup
    third = alice_store.get(copies[2].id)
    assert index.update(third) == {third.id}  # open already: only the new row changes
    assert index.update(third) == set()  # nothing changed
    rejected = alice_store.reject(third.id)
    assert index.update(rejected) == {third.id} and index.group(third.id) is None
    archived = alice_store.archive(second.id)
    assert index.update(archived) == {first.id, second.id}  # closed: one version left
    assert index.group(first.id) is None and index.members(first.id) == []


def test_quarantine_counts_counts_each_files_corrupt_entries_as_they_grow(
    alice_store: MemoryStore,
) -> None:
    project = alice_store.file_for("project")
    corrupt = project.path.with_name(project.path.name + ".corrupt")
    corrupt.unlink(missing_ok=True)
    assert project.path not in alice_store.quarantine_counts()
    corrupt.write_bytes(b'{"line":1,"capturedAt":0,"raw":"x"}\n\n{"line":2,"capturedAt":0,')
    assert alice_store.quarantine_counts(Scope.PROJECT) == {project.path: 2}
    with corrupt.open("ab") as f:
        f.write(b'"raw":"y"}\n{"line":3,"capturedAt":0,"raw":"z"}\n')
    assert alice_store.quarantine_counts()[project.path] == 3
    assert alice_store.view(project).quarantined_lines() == 3


def test_a_write_refused_as_too_large_keeps_the_history_in_the_file_and_its_backup(
    alice_store: MemoryStore,
) -> None:
    """Issue 17, 1: a write that would pass 8 MiB used to compact the file (and overwrite its
    .bak) before it failed, so two failing imports left a verified record with only its last
    revision. Now a refused write changes nothing, and .bak stays what it was."""
    store = alice_store
    other = store.create("project", "fact", "Another", "one")
    store.edit(other.id, 1, content="two")
    store.compact(store.file_for("project"))  # a .bak exists: the file before this compaction
    rec = store.create("project", "decision", "Keep this history", "r1")
    rec = store.edit(rec.id, 1, content="r2")
    rec = store.verify(rec.id)
    history = [r.governance.revision for r in store.history(rec.id)]
    assert history == [1, 2, 3]  # three lines a compaction would fold into one
    path = project_path(store)
    data = path.read_bytes()
    key, lines, size, i = store.paths.root_id, [], len(data), 0
    while size < MAX_STORE_BYTES - 40_000:  # near the cap, with records of one line each
        lines.append(_record(10_000 + i, f"{i:08d}" + "y" * 60_000, key).to_line())
        size, i = size + len(lines[-1]), i + 1
    with open(path, "ab") as f:
        f.write(b"".join(lines))
    data = path.read_bytes()
    view = store.view(store.file_for("project"))
    bak = view.safe.bak_path.read_bytes()
    for _ in range(2):
        with pytest.raises(StoreError) as err:
            store.create("project", "fact", "big", "x" * 60_000)
        assert err.value.code == "STORE_TOO_LARGE"
        assert path.read_bytes() == data
        assert view.safe.bak_path.read_bytes() == bak
    assert [r.governance.revision for r in store.history(rec.id)] == history
