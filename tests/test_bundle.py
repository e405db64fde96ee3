"""Export and import bundles (SPEC 7): the library and the ``export`` / ``import`` commands."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from conftest import FIXTURE_SESSION, FIXTURES, run_cli
from interop import corpus
from interop.corpus import bundle_dirs, corpus_json, install_tree, root_id_of_canonical

from dsh_memory_tui.bundle import (
    MAX_BUNDLE_BYTES,
    MAX_BUNDLE_RECORDS,
    apply_import,
    export_bundle,
    plan_import,
)
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.jsonl import MAX_STORE_BYTES
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    SourceRef,
    Status,
    Verification,
    content_hash,
    make_record,
    parse_line,
)
from dsh_memory_tui.store import MemoryStore

BUNDLES = FIXTURES / "bundles"
SESSION = FIXTURE_SESSION  # ("session-abc", None): its root is the workspace's rootId
# The workspace the fixture bundles were exported from (their records' ``__ROOT_ID__``).
EXPORTED_FROM = root_id_of_canonical("/home/dev/projects/acme-api")
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


@pytest.fixture
def empty_store(tmp_path: Path) -> MemoryStore:
    """A store with no files yet (another machine), acting as ``carol``."""
    return MemoryStore.open(tmp_path / "home2", tmp_path / "ws2", "carol")


def bundle_file(tmp_path: Path, name: str, root: str = EXPORTED_FROM) -> Path:
    """A copy of ``bundles/<name>`` in ``tmp_path``, its ``__ROOT_ID__`` the rootId ``root``."""
    dest = tmp_path / name
    dest.write_text((BUNDLES / name).read_text().replace("__ROOT_ID__", root))
    return dest


def record_json(title: str, content: str, **over: object) -> dict[str, object]:
    """A valid project record as a bundle holds it."""
    rec = make_record(
        scope=Scope.PROJECT,
        scope_key=EXPORTED_FROM,
        record_type=RecordType.FACT,
        title=title,
        content=content,
        tags=["t"],
        provenance=Provenance(kind=ProvenanceKind.USER),
        origin=Origin.USER_AUTHORED,
        source_refs=[],
    ).to_json()
    rec.update(over)
    return rec


def assert_host_valid(store: MemoryStore, scope: str, session: object = None) -> None:
    """Every line of the scope's file gets the host's verdict "valid, ours"."""
    file = store.file_for(scope, session)  # type: ignore[arg-type]
    for line in file.path.read_bytes().splitlines(keepends=True):
        parse_line(line, file.location)  # raises RecordInvalid for a line the host refuses


def bundle_bytes(*records: object, **top: object) -> bytes:
    return json.dumps(
        {"schemaVersion": 1, "exportedAt": 1, "records": list(records), **top}
    ).encode()


def store_bytes(store: MemoryStore) -> dict[str, bytes]:
    """Every file under the store's home and workspace, by path (to prove nothing changed)."""
    out = {}
    for root in (store.paths.home, store.paths.workspace):
        for path in sorted(root.rglob("*")) if root.exists() else []:
            if path.is_file():
                out[str(path)] = path.read_bytes()
    return out


def bundle_error(store: MemoryStore, source: object, scope: str = "project") -> str:
    with pytest.raises(StoreError) as info:
        plan_import(store, source, scope)  # type: ignore[arg-type]
    assert info.value.code == "BUNDLE_INVALID"
    return info.value.message


# ------------------------------------------------------------------------- export


def test_export_writes_the_acting_users_current_records(alice_store: MemoryStore, tmp_path: Path):
    out = tmp_path / "out.json"
    result = export_bundle(alice_store, out)
    bundle = json.loads(out.read_bytes())
    assert set(bundle) == {"schemaVersion", "exportedAt", "records"}
    assert bundle["schemaVersion"] == 1 and bundle["exportedAt"] == result.exported_at
    titles = {r["title"] for r in bundle["records"]}
    assert result.count == len(bundle["records"]) == 8
    assert "bob: private preference" not in titles  # another user's profile
    assert "A record from a newer host" not in titles  # schemaVersion 2 line
    assert "Session workspace digest (auto)" in titles  # every session of the home
    # The current revision only, once.
    pg = [r for r in bundle["records"] if r["id"].endswith("f768064f958507ad239eed24c2c063fe")]
    assert len(pg) == 1 and pg[0]["governance"]["revision"] == 2
    assert result.corrupt_skipped == 2 and result.newer_schema_skipped == 1


def test_export_writes_complete_governance_for_an_older_hosts_record(
    alice_store: MemoryStore, tmp_path: Path
):
    out = tmp_path / "out.json"
    export_bundle(alice_store, out, scopes=[Scope.PROJECT])
    records = json.loads(out.read_bytes())["records"]
    legacy = next(r for r in records if r["title"].endswith("(legacy record)"))
    # The host's memoryGovernance() defaults for an agent's record without governance.
    assert legacy["governance"] == {
        "origin": "derived",
        "sourceRefs": [{"kind": "session", "id": legacy["provenance"]["sessionId"]}],
        "verification": "unverified",
        "revision": 1,
        "retention": "project-delete",
    }
    # ... written into the bundle only: the store line stays as the older host wrote it.
    (line,) = [
        line
        for line in alice_store.paths.project_file().path.read_text().splitlines()
        if "(legacy record)" in line
    ]
    assert '"governance"' not in line
    hinted = next(r for r in records if "hostHints" in r)  # unknown fields go out unchanged
    assert hinted["title"] == "Prefer pathlib over os.path"


def test_forgotten_records_are_not_exported(alice_store: MemoryStore, tmp_path: Path):
    rid = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
    alice_store.forget(rid)
    out = tmp_path / "out.json"
    export_bundle(alice_store, out)
    assert rid not in out.read_text()


def test_archived_records_are_exported(alice_store: MemoryStore, tmp_path: Path):
    rid = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
    alice_store.archive(rid)
    out = tmp_path / "out.json"
    export_bundle(alice_store, out, scopes=["project"])
    (record,) = [r for r in json.loads(out.read_bytes())["records"] if r["id"] == rid]
    assert record["status"] == "archived"


def test_export_of_chosen_scopes_and_one_session(alice_store: MemoryStore, tmp_path: Path):
    alice_store.create("session", "fact", "Other session", "x", session=("s2", "r2"))
    out = tmp_path / "out.json"
    assert export_bundle(alice_store, out, scopes=[Scope.USER]).count == 2
    assert {r["scope"] for r in json.loads(out.read_bytes())["records"]} == {"user"}
    assert export_bundle(alice_store, out, scopes=[Scope.SESSION]).count == 2
    only = export_bundle(alice_store, out, session=SESSION)
    (record,) = json.loads(out.read_bytes())["records"]
    assert only.count == 1
    assert record["scopeKey"] == f"session-abc|{alice_store.paths.root_id}"


def test_export_file_is_private_and_replaced_atomically(alice_store: MemoryStore, tmp_path: Path):
    out = tmp_path / "out.json"
    out.write_text("old")
    os.chmod(out, 0o644)
    old = os.umask(0)
    try:
        export_bundle(alice_store, out)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_export_refuses_a_symlink(alice_store: MemoryStore, tmp_path: Path):
    target = tmp_path / "elsewhere.json"
    target.write_text("keep me")
    (tmp_path / "out.json").symlink_to(target)
    with pytest.raises(StoreError) as info:
        export_bundle(alice_store, tmp_path / "out.json")
    assert info.value.code == "UNSAFE_PATH"
    assert target.read_text() == "keep me"


def test_export_refuses_to_write_into_the_store(alice_store: MemoryStore):
    before = store_bytes(alice_store)
    with pytest.raises(StoreError) as info:
        export_bundle(alice_store, alice_store.paths.workspace_memory_dir / "records.jsonl")
    assert info.value.code == "UNSAFE_PATH"
    assert store_bytes(alice_store) == before


# ------------------------------------------------------------------------- import


def test_round_trip_into_an_empty_workspace(
    alice_store: MemoryStore, empty_store: MemoryStore, tmp_path: Path
):
    out = tmp_path / "out.json"
    export_bundle(alice_store, out, scopes=["project", "shared-project", "user"])
    exported = json.loads(out.read_bytes())["records"]
    by_id = {r["id"]: r for r in exported}

    plan = plan_import(empty_store, out, "project")
    assert (len(plan.new), plan.duplicates, plan.invalid) == (len(exported), [], [])
    result = apply_import(empty_store, plan)

    imported = empty_store.records("project")
    assert [r.id for r in imported] == result.written
    key = lambda r: (r["type"], r["title"], r["content"], r["tags"])  # noqa: E731
    assert sorted(map(key, (r.to_json() for r in imported))) == sorted(map(key, exported))
    for record in imported:
        g = record.governance
        assert re.fullmatch(f"memory:import:{UUID}", record.id)  # the host's import ids
        assert (record.scope, record.scopeKey) == (Scope.PROJECT, empty_store.paths.root_id)
        assert (g.origin, g.verification, g.revision) == (
            Origin.IMPORTED,
            Verification.UNVERIFIED,
            1,
        )
        assert g.retention.value == "project-delete" and record.status is Status.ACTIVE
        assert record.provenance.kind is ProvenanceKind.IMPORT
        # Theirs, then the original record (SPEC 7): kinds the host allows.
        *theirs, mine = [s.model_dump(exclude_unset=True) for s in g.sourceRefs]
        original = by_id[mine["id"]]
        assert mine == {
            "kind": "import",
            "id": original["id"],
            "contentHash": original["contentHash"],
        }
        assert theirs == original["governance"]["sourceRefs"]
    assert len(empty_store.review_queue()) == len(imported)
    assert any(r.model_extra.get("hostHints") for r in imported)  # unknown fields kept
    assert_host_valid(empty_store, "project")


def test_dry_run_plan_writes_nothing(alice_store: MemoryStore, tmp_path: Path):
    before = store_bytes(alice_store)
    plan = plan_import(alice_store, bundle_file(tmp_path, "valid.json"), "user")
    assert len(plan.new) == 3
    assert store_bytes(alice_store) == before


def test_reimporting_writes_nothing(empty_store: MemoryStore, tmp_path: Path):
    bundle = bundle_file(tmp_path, "valid.json")
    first = apply_import(empty_store, plan_import(empty_store, bundle, "project"))
    assert len(first.written) == 3
    before = store_bytes(empty_store)
    again = plan_import(empty_store, bundle, "project")
    assert again.new == [] and len(again.duplicates) == 3
    assert {d.existing_id for d in again.duplicates} == set(first.written)
    assert apply_import(empty_store, again).written == []
    assert store_bytes(empty_store) == before


def test_existing_records_of_the_target_are_duplicates(alice_store: MemoryStore, tmp_path: Path):
    # Exported from this very workspace, then imported back.
    bundle = bundle_file(tmp_path, "valid.json", alice_store.paths.root_id)
    plan = plan_import(alice_store, bundle, "project")
    # The fixture's project file holds the decision and the proposal already.
    assert [d.index for d in plan.duplicates] == [0, 1]
    assert plan.duplicates[0].existing_id == "memory:user:decision:f768064f958507ad239eed24c2c063fe"
    assert [r.title for r in plan.new] == ["Release branches are release/x.y"]


def test_the_same_content_twice_in_a_bundle_imports_once(empty_store: MemoryStore):
    a = record_json("A", "same")
    b = record_json("B", "same", id="memory:user:fact:" + "b" * 32)
    plan = plan_import(empty_store, bundle_bytes(a, b), "project")
    assert len(plan.new) == 1 and plan.duplicates[0].existing_id == plan.new[0].id
    assert len(apply_import(empty_store, plan).written) == 1


def test_apply_rechecks_duplicates_under_the_lock(empty_store: MemoryStore, tmp_path: Path):
    plan = plan_import(empty_store, bundle_file(tmp_path, "valid.json"), "project")
    # Another writer adds the same content between the plan and the apply.
    other = MemoryStore.open(empty_store.paths.home, empty_store.paths.workspace, "carol")
    made = other.create(
        "project",
        "decision",
        "Same",
        "We use PostgreSQL 16 with pgbouncer. SQLite only in unit tests.",
    )
    result = apply_import(empty_store, plan)
    assert len(result.written) == 2
    assert [(d.index, d.existing_id) for d in result.duplicates] == [(0, made.id)]
    assert len(empty_store.records("project")) == 3


def test_a_bundle_with_an_invalid_record_imports_the_others(
    empty_store: MemoryStore, tmp_path: Path
):
    plan = plan_import(empty_store, bundle_file(tmp_path, "one-invalid-record.json"), "project")
    (bad,) = plan.invalid
    assert (bad.index, bad.id) == (1, "memory:agent:fact:ace970fccddba416a3966023df2d5c05")
    assert bad.reason.startswith("Memory content hash is invalid")  # the host's message
    assert len(apply_import(empty_store, plan).written) == 1


def test_strict_import_with_an_invalid_record_writes_nothing(
    empty_store: MemoryStore, tmp_path: Path
):
    plan = plan_import(empty_store, bundle_file(tmp_path, "one-invalid-record.json"), "project")
    with pytest.raises(StoreError) as info:
        apply_import(empty_store, plan, strict=True)
    assert info.value.code == "BUNDLE_INVALID" and "records[1]" in info.value.message
    assert not empty_store.paths.project_file().path.exists()


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("just text", "a JSON string, not an object"),
        ({"schemaVersion": 2, "id": "x"}, "schemaVersion 2"),
        ({"schemaVersion": 1, "id": "x", "title": "no fields"}, "Memory record scope"),
        (
            record_json(
                "bad ref",
                "r",
                governance={
                    "origin": "model-suggested",
                    "sourceRefs": [{"kind": "record", "id": "x"}],
                    "verification": "unverified",
                    "revision": 1,
                    "retention": "project-delete",
                },
            ),
            "Memory source reference kind is invalid",
        ),
        (
            record_json(
                "no ref",
                "n",
                governance={
                    "origin": "model-suggested",
                    "sourceRefs": [],
                    "verification": "unverified",
                    "revision": 1,
                    "retention": "project-delete",
                },
            ),
            "Non-user Memory requires a source reference",
        ),
    ],
)
def test_invalid_records_are_listed_with_their_reason(
    empty_store: MemoryStore, entry: object, reason: str
):
    plan = plan_import(empty_store, bundle_bytes(record_json("ok", "fine"), entry), "project")
    (bad,) = plan.invalid
    assert bad.index == 1 and reason in bad.reason
    assert len(plan.new) == 1


def test_a_forgotten_or_empty_record_is_invalid(empty_store: MemoryStore):
    tombstone = "This memory was forgotten."
    forgotten = record_json(
        "Forgotten memory 0123456789ab",
        tombstone,
        status="forgotten",
        contentHash=content_hash(tombstone),
    )
    blank, empty = record_json("x", "something"), record_json("y", "something")
    blank["title"] = "   "
    empty.update(content="\n \n", contentHash=content_hash("\n \n"))
    plan = plan_import(empty_store, bundle_bytes(forgotten, blank, empty), "project")
    assert [b.reason for b in plan.invalid] == [
        "a forgotten record: it has no content left to import",
        "Memory title is invalid (blank)",
        "Memory content is invalid (blank)",
    ]


def _with_refs(n: int, title: str) -> dict[str, object]:
    refs = [{"kind": "event", "id": str(i)} for i in range(n)]
    return record_json(
        title,
        f"{title} content",
        governance={
            "origin": "model-suggested",
            "sourceRefs": refs,
            "verification": "unverified",
            "revision": 1,
            "retention": "project-delete",
        },
    )


def test_a_record_with_no_room_for_the_import_ref_is_invalid_not_trimmed(
    empty_store: MemoryStore,
):
    full, room = _with_refs(32, "full"), _with_refs(31, "room")
    plan = plan_import(empty_store, bundle_bytes(full, room), "project")
    (bad,) = plan.invalid
    assert (bad.index, bad.id) == (0, full["id"])
    assert bad.reason.startswith("Memory import has too many source references")
    assert "32" in bad.reason
    (new,) = plan.new
    refs = [r.model_dump(exclude_unset=True) for r in new.governance.sourceRefs]
    assert len(refs) == 32
    assert refs == [
        *room["governance"]["sourceRefs"],  # type: ignore[index]
        {"kind": "import", "id": room["id"], "contentHash": room["contentHash"]},
    ]
    apply_import(empty_store, plan)
    assert_host_valid(empty_store, "project")
    with pytest.raises(StoreError) as info:
        apply_import(
            empty_store, plan_import(empty_store, bundle_bytes(full), "project"), strict=True
        )
    assert info.value.code == "BUNDLE_INVALID" and "too many source references" in str(info.value)


def test_an_older_hosts_record_imports_with_the_hosts_default_refs(empty_store: MemoryStore):
    legacy = record_json(
        "Legacy", "From an older host.", provenance={"kind": "agent", "sessionId": "s-old"}
    )
    del legacy["governance"]
    (new,) = plan_import(empty_store, bundle_bytes(legacy), "project").new
    assert [r.model_dump(exclude_unset=True) for r in new.governance.sourceRefs] == [
        {"kind": "session", "id": "s-old"},
        {"kind": "import", "id": legacy["id"], "contentHash": legacy["contentHash"]},
    ]


def test_a_repeated_key_keeps_its_last_value(empty_store: MemoryStore):
    # As in the host's JSON.parse and every reader here: the plan shows what will be written.
    twice = json.dumps(record_json("T", "real"))[:-1] + ', "title": "Last"}'
    plan = plan_import(
        empty_store, b'{"schemaVersion": 1, "records": [%s]}' % twice.encode(), "project"
    )
    assert [r.title for r in plan.new] == ["Last"]


def test_import_into_user_uses_the_acting_users_key(empty_store: MemoryStore, tmp_path: Path):
    apply_import(empty_store, plan_import(empty_store, bundle_file(tmp_path, "valid.json"), "user"))
    records = empty_store.records("user")
    assert {(r.scope, r.scopeKey, r.governance.retention.value) for r in records} == {
        (Scope.USER, "carol", "user-managed")
    }
    assert_host_valid(empty_store, "user")


def test_import_into_a_session_needs_the_session(empty_store: MemoryStore, tmp_path: Path):
    bundle = bundle_file(tmp_path, "valid.json")
    with pytest.raises(StoreError) as info:
        plan_import(empty_store, bundle, "session")
    assert info.value.code == "USAGE"
    plan = plan_import(empty_store, bundle, "session", session=SESSION)
    apply_import(empty_store, plan)
    (record, *_) = empty_store.records(session=SESSION)
    assert record.scopeKey == f"session-abc|{empty_store.paths.root_id}"
    assert record.provenance.sessionId == "session-abc"
    assert record.governance.retention.value == "session-end"
    assert_host_valid(empty_store, "session", SESSION)


def test_import_into_shared_needs_confirmation(empty_store: MemoryStore, tmp_path: Path):
    plan = plan_import(empty_store, bundle_file(tmp_path, "valid.json"), "shared-project")
    with pytest.raises(StoreError) as info:
        apply_import(empty_store, plan)
    assert info.value.code == "SHARED_WRITE_UNCONFIRMED"
    assert not empty_store.paths.shared_file().path.exists()
    assert len(apply_import(empty_store, plan, confirm_shared=True).written) == 3


def test_a_batch_past_8_mib_writes_nothing(empty_store: MemoryStore):
    target = empty_store.paths.project_file()
    big = "x" * 60_000  # under the host's 64 KiB of content
    lines = b"".join(
        make_record(
            scope=Scope.PROJECT,
            scope_key=target.scope_key or "",
            record_type=RecordType.FACT,
            title=f"big {i}",
            content=f"{i}{big}",
            tags=[],
            origin=Origin.USER_AUTHORED,
            provenance=Provenance(kind=ProvenanceKind.USER),
            source_refs=[],
        ).to_line()
        for i in range(125)
    )
    assert MAX_STORE_BYTES - 1024 * 1024 < len(lines) < MAX_STORE_BYTES  # nothing to compact
    target.path.parent.mkdir(parents=True, mode=0o700)
    target.path.write_bytes(lines)
    data = bundle_bytes(*(record_json(f"r{i}", f"{i}" + "y" * 60_000) for i in range(20)))
    plan = plan_import(empty_store, data, "project")
    with pytest.raises(StoreError) as info:
        apply_import(empty_store, plan)
    assert info.value.code == "STORE_TOO_LARGE"
    assert target.path.read_bytes() == lines


def test_a_bundle_written_by_hand_in_the_seeds_format(empty_store: MemoryStore):
    digest = (
        "Files touched: 3 (2 created, 1 modified, 0 deleted)\\nCreated: out/report.md, "
        "out/data.json\\nModified: src/util.ts\\nArtifacts: 2 \u2014 out/report.md, "
        "out/data.json"
    )
    digest_hash = content_hash(json.loads(f'"{digest}"'))
    legacy_hash = content_hash("Port 8080.")
    text = f"""{{
  "schemaVersion": 1,
  "exportedAt": 1760000000500,
  "records": [
    {{
      "schemaVersion": 1,
      "id": "memory:auto:fact:1a2b3c4d5e6f7a8b:9e8d7c6b5a4f3e2d1c0b9a8f",
      "scope": "session",
      "scopeKey": "session-abc|{EXPORTED_FROM}",
      "type": "fact",
      "title": "Session workspace digest (auto)",
      "content": "{digest}",
      "tags": [],
      "provenance": {{ "kind": "tool", "sessionId": "session-abc", "eventSeq": 42,
                      "note": "workspace auto-writer" }},
      "createdAt": 1760000000000,
      "updatedAt": 1760000000000,
      "useCount": 0,
      "contentHash": "{digest_hash}",
      "status": "active",
      "governance": {{
        "origin": "derived",
        "sourceRefs": [
          {{ "kind": "session", "id": "session-abc" }},
          {{ "kind": "event", "id": "42" }}
        ],
        "verification": "unverified",
        "revision": 1,
        "retention": "session-end"
      }}
    }},
    {{
      "schemaVersion": 1, "id": "memory:agent:fact:0123456789abcdef0123456789abcdef",
      "scope": "project", "scopeKey": "/old/path", "type": "fact", "title": "Dev port",
      "content": "Port 8080.", "tags": ["ports"],
      "provenance": {{ "kind": "agent", "sessionId": "s1" }},
      "createdAt": 1760000000000, "updatedAt": 1760000000000, "useCount": 3,
      "contentHash": "{legacy_hash}", "status": "active"
    }}
  ]
}}
"""
    plan = plan_import(empty_store, text.encode(), "project")
    assert plan.invalid == [] and plan.exported_at == 1760000000500
    apply_import(empty_store, plan)
    by_title = {r.title: r for r in empty_store.records("project")}
    assert by_title["Session workspace digest (auto)"].content.startswith("Files touched: 3")
    assert by_title["Dev port"].tags == ["ports"]
    assert by_title["Dev port"].useCount == 0


def test_a_byte_order_mark_is_accepted(empty_store: MemoryStore):
    data = b"\xef\xbb\xbf" + bundle_bytes(record_json("A", "a"))
    assert len(plan_import(empty_store, data, "project").new) == 1


# ------------------------------------------------------------------------- the host's bundles
# tests/host-corpus/bundles: what the host's own export and import did.


def test_our_export_of_the_hosts_store_is_the_hosts_export(tmp_path: Path):
    dirs = bundle_dirs("source", tmp_path)
    install_tree(corpus.BUNDLES / "source" / "workspace", dirs.workspace, dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    out = tmp_path / "ours.json"
    export_bundle(store, out, scopes=["project"])
    ours = json.loads(out.read_bytes())["records"]
    theirs = json.loads(corpus_json("bundles/export-raw.json", dirs)["text"])["records"]
    # Record for record (governance filled in, computed conflict groups included).
    assert sorted(ours, key=lambda r: r["id"]) == sorted(theirs, key=lambda r: r["id"])


def test_the_hosts_export_imports_here_with_the_hosts_refs(tmp_path: Path):
    dirs = bundle_dirs("import-own-json-fresh-store", tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    text = corpus_json("bundles/export-raw.json", dirs)["text"]
    exported = {r["id"]: r for r in json.loads(text)["records"]}
    plan = plan_import(store, text.encode(), "project")
    assert (len(plan.new), plan.duplicates, plan.invalid) == (len(exported), [], [])
    apply_import(store, plan)
    assert_host_valid(store, "project")
    for record in store.records("project", include_inactive=True):
        *theirs, mine = [s.model_dump(exclude_unset=True) for s in record.governance.sourceRefs]
        original = exported[mine["id"]]
        assert theirs == original["governance"]["sourceRefs"]
        assert mine == {
            "kind": "import",
            "id": original["id"],
            "contentHash": original["contentHash"],
        }


@pytest.mark.parametrize(
    ("case", "invalid"),
    [
        ("record with 31 sourceRefs (32 after the import ref)", None),
        (
            "record with 32 sourceRefs (33 after the import ref)",
            "Memory import has too many source references",
        ),
        (
            "record id with '/' (becomes an import sourceRef id)",
            "Memory source reference id is invalid",
        ),
        ("record without governance (legacy)", None),
    ],
)
def test_the_hosts_import_decisions_on_source_refs(
    empty_store: MemoryStore, tmp_path: Path, case: str, invalid: str | None
):
    dirs = bundle_dirs("source", tmp_path)
    (host,) = [
        c
        for c in corpus_json("bundles/index.json", dirs)["importMemoryBundleRefusals"]
        if c["case"] == case
    ]
    plan = plan_import(empty_store, host["input"].encode(), "project")
    if invalid is None:
        (new,) = plan.new
        refs = [r.model_dump(exclude_unset=True) for r in new.governance.sourceRefs]
        assert refs == host["result"]["first"]["governance"]["sourceRefs"]
    else:
        assert host["result"]["error"]["message"] == invalid
        (bad,) = plan.invalid
        assert bad.reason.startswith(invalid) and plan.new == []


# ------------------------------------------------------------------------- bad bundles


def test_not_json_says_where(empty_store: MemoryStore):
    message = bundle_error(empty_store, BUNDLES / "truncated.json")
    assert "not valid JSON: line 1 column" in message and "truncated.json" in message


def test_wrong_schema_version_is_refused(empty_store: MemoryStore):
    assert "schemaVersion is 2" in bundle_error(empty_store, BUNDLES / "wrong-version.json")


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"[]", "the top level is a JSON list, not an object"),
        (b'{"records": []}', "schemaVersion is missing"),
        (b'{"schemaVersion": "1", "records": []}', 'schemaVersion is "1"'),
        (b'{"schemaVersion": 1, "records": {}}', "'records' is a JSON object, not a list"),
        (b'{"schemaVersion": 1}', "'records' is missing"),
        (b'{"schemaVersion": 1, "records": [NaN]}', "NaN is not a JSON number"),
        (b'{"schemaVersion": 1,\n "records": [\xff]}', "not UTF-8: byte 0xff at line 2"),
        (b"", "not valid JSON: line 1 column 1"),
    ],
)
def test_a_malformed_bundle_is_refused(empty_store: MemoryStore, data: bytes, what: str):
    assert what in bundle_error(empty_store, data)


@pytest.mark.parametrize("depth", [70, 100_000])
def test_a_deeply_nested_bundle_is_refused(empty_store: MemoryStore, depth: int):
    deep = b"[" * depth + b"]" * depth
    entry = json.dumps(record_json("a", "b")).encode()[:-1] + b', "extra": ' + deep + b"}"
    data = b'{"schemaVersion": 1, "records": [%s]}' % entry
    assert "nested deeper than 64 levels" in bundle_error(empty_store, data)
    top = b'{"schemaVersion": 1, "records": [], "meta": %s}' % deep
    assert "nested deeper than 64 levels" in bundle_error(empty_store, top)


@pytest.mark.parametrize("value", [b"NaN", b"-Infinity"])
def test_nan_or_infinity_in_a_record_is_refused(empty_store: MemoryStore, value: bytes):
    # Not JSON: the host's JSON.parse refuses the whole bundle too.
    entry = json.dumps(record_json("a", "b")).encode()[:-1] + b', "extra": [%s]}' % value
    message = bundle_error(empty_store, b'{"schemaVersion": 1, "records": [%s]}' % entry)
    assert f"not valid JSON: {value.decode()} is not a JSON number" in message


@pytest.mark.parametrize(
    "value", [b"1e999", b"-2.5E+400", b"7" * 5000, b"-" + b"3" * 5000, b"4" * 400 + b".25"]
)
def test_a_number_past_what_python_holds_imports_and_is_written_as_it_was(
    empty_store: MemoryStore, value: bytes
):
    # JSON.parse takes it (as Infinity or a large float): the host imports the record.
    entry = json.dumps(record_json("a", "b")).encode()[:-1] + b', "extra": [%s]}' % value
    plan = plan_import(empty_store, b'{"schemaVersion": 1, "records": [%s]}' % entry, "project")
    assert len(plan.new) == 1 and not plan.invalid
    apply_import(empty_store, plan)
    assert b'"extra":[%s]' % value in plan.target.path.read_bytes()


def test_records_repeating_an_id_are_each_imported_as_the_host_does(empty_store: MemoryStore):
    # The host's import gives every record a new id and names the original in its import ref.
    a = record_json("A", "a", id="memory:user:fact:" + "1" * 32)
    b = record_json("B", "b", id="memory:user:fact:" + "1" * 32)
    plan = plan_import(empty_store, bundle_bytes(record_json("C", "c"), a, b), "project")
    assert [r.title for r in plan.new] == ["C", "A", "B"]
    assert plan.new[1].governance.sourceRefs[-1].id == plan.new[2].governance.sourceRefs[-1].id


def test_a_bundle_over_8_mib_is_refused_before_reading(empty_store: MemoryStore, tmp_path: Path):
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(MAX_BUNDLE_BYTES + 1)  # sparse: no disk used
    assert "larger than the 8 MiB a bundle may have" in bundle_error(empty_store, huge)


def test_a_special_file_is_refused(empty_store: MemoryStore, tmp_path: Path):
    assert "not a regular file" in bundle_error(empty_store, tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "not a regular file" in bundle_error(empty_store, fifo)


def test_a_missing_bundle_is_a_usage_error_as_a_missing_events_file_is(
    empty_store: MemoryStore, tmp_path: Path
):
    with pytest.raises(StoreError) as info:
        plan_import(empty_store, tmp_path / "nope.json", "project")
    assert info.value.code == "USAGE"
    assert info.value.message == f"{tmp_path / 'nope.json'}: no such bundle file"


# ------------------------------------------------------------------------- command line


def test_a_missing_file_exits_2_for_import_and_auto_write_alike(
    fixture_home: tuple[Path, Path], tmp_path: Path
):
    home, workspace = fixture_home
    missing = str(tmp_path / "nope.json")
    for command in (("import", missing, "--scope", "project"), ("auto-write", "--events", missing)):
        done = run_cli(home, workspace, *command)
        assert done.returncode == 2, command
        assert done.stderr.startswith(f"error[USAGE]: {missing}: no such "), done.stderr


def test_cli_export_then_import(fixture_home: tuple[Path, Path], tmp_path: Path):
    home, workspace = fixture_home
    out = tmp_path / "b.json"
    done = run_cli(home, workspace, "export", "--out", str(out), "--scope", "project")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote 4 records to {out}: project 4"
    assert out.stat().st_mode & 0o777 == 0o600

    home2, ws2 = tmp_path / "h2", tmp_path / "w2"
    dry = run_cli(home2, ws2, "import", str(out), "--scope", "project", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "4 new, 0 duplicate, 0 invalid" in dry.stdout
    assert not (ws2 / ".dsh").exists()

    done = run_cli(home2, ws2, "import", str(out), "--scope", "project")
    assert done.returncode == 0, done.stderr
    ids = done.stdout.strip().splitlines()[-4:]
    assert all(i.startswith("memory:import:") for i in ids)
    again = run_cli(home2, ws2, "import", str(out), "--scope", "project")
    assert "0 new, 4 duplicate" in again.stdout and "imported 0 record(s)" in again.stdout


def test_cli_export_names_each_scope_asked_for_with_its_count_zero_included(tmp_path: Path):
    home, ws = tmp_path / "h", tmp_path / "w"
    store = MemoryStore.open(home, ws, "alice")
    store.create("project", "fact", "One", "The first project fact.")
    store.create("project", "fact", "Two", "The second project fact.")
    store.create("shared-project", "fact", "Team", "A fact for the team.", confirm_shared=True)
    out = tmp_path / "x.json"
    done = run_cli(
        home, ws, "export", "--out", str(out), "--scope", "user", "--scope", "project",
        "--scope", "shared-project",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"wrote 3 records to {out}: project 2, shared-project 1, user 0\n"
    every = run_cli(home, ws, "export", "--out", str(out))
    assert every.stdout.endswith(": project 2, shared-project 1, user 0, session 0\n")


def test_cli_lists_invalid_records_and_imports_the_rest(tmp_path: Path):
    home, ws = tmp_path / "h", tmp_path / "w"
    source = str(bundle_file(tmp_path, "one-invalid-record.json"))
    done = run_cli(home, ws, "import", source, "--scope", "project")
    assert done.returncode == 0
    assert (
        "invalid: records[1] (memory:agent:fact:ace970fccddba416a3966023df2d5c05): "
        "Memory content hash is invalid"
    ) in done.stderr
    assert "imported 1 record(s)" in done.stdout
    strict = run_cli(home, ws, "import", source, "--scope", "user", "--strict")
    assert strict.returncode == 1
    assert strict.stderr.strip().splitlines()[-1].startswith("error[BUNDLE_INVALID]: ")
    assert not (home / "workspace-memory" / "user.jsonl").exists()


def test_cli_bad_bundle_exits_1_and_writes_nothing(tmp_path: Path):
    home, ws = tmp_path / "h", tmp_path / "w"
    done = run_cli(home, ws, "import", str(BUNDLES / "wrong-version.json"), "--scope", "project")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error[BUNDLE_INVALID]: ") and "Traceback" not in done.stderr
    assert not ws.exists() and not home.exists()


def test_cli_shared_import_needs_yes_shared(tmp_path: Path):
    home, ws = tmp_path / "h", tmp_path / "w"
    source = str(bundle_file(tmp_path, "valid.json"))
    refused = run_cli(home, ws, "import", source, "--scope", "shared")
    assert refused.returncode == 1 and "SHARED_WRITE_UNCONFIRMED" in refused.stderr
    done = run_cli(home, ws, "import", source, "--scope", "shared", "--yes-shared")
    assert done.returncode == 0 and "imported 3 record(s)" in done.stdout


# ------------------------------------------------------------------------- Markdown


def varied_store(tmp_path: Path) -> MemoryStore:
    """A store with every type, multi-line Markdown content, tags, non-ASCII text and records
    in several scopes."""
    store = MemoryStore.open(tmp_path / "vh", tmp_path / "vw", "dana")
    store.create(
        "project",
        "decision",
        "Use JSONL",
        "Keep memory inspectable.\n\n- one record per line\n- `jq` works",
        ["storage", "format"],
    )
    store.propose(
        "project",
        "convention",
        "Run ruff",
        "CI runs ruff.\n\n## Why\nSpeed.",
        source_refs=[SourceRef(kind="url", id="https:ci")],
    )
    store.create(
        "user",
        "preference",
        "Édition",
        "Préférer les tabulations — toujours.",
        ["éditeur", "style"],
    )
    store.create("user", "fact", "Tabs in code", "Indented:\n    def f():\n        pass")
    store.propose("session", "fact", "Session note", "Seen once.", session=("s1", None))
    return store


def test_markdown_export_then_import_keeps_type_title_content_and_tags(tmp_path: Path):
    source = varied_store(tmp_path)
    out = tmp_path / "memory.md"
    result = export_bundle(source, out, fmt="markdown")
    assert (result.format, result.count) == ("markdown", 5)
    assert out.stat().st_mode & 0o777 == 0o600
    text = out.read_text()
    assert text.startswith("# ") and "\n\n---\n\n" in text and text.endswith("\n")
    assert "verification: unverified\norigin: user-authored\n" in text
    target = MemoryStore.open(tmp_path / "th", tmp_path / "tw", "erin")
    plan = plan_import(target, out, "user")
    assert (plan.format, len(plan.new), plan.invalid) == ("markdown", 5, [])
    apply_import(target, plan)
    key = lambda r: (r.type, r.title, r.content, r.tags)  # noqa: E731
    assert sorted(map(key, target.records("user"))) == sorted(
        map(key, source.records(include_inactive=True))
    )
    assert_host_valid(target, "user")


def test_markdown_records_are_imported_with_a_ref_naming_the_files_hash(tmp_path: Path):
    text = (
        "# Kept\n\norigin: user-authored\nverification: verified\nretention: session-end\n"
        "scope: user\n\nBody.\n\n---\n\n# Second\n\ntype: convention\ntags: a, b , ,c\n\n"
        "More body.\n"
    )
    path = tmp_path / "notes.md"
    path.write_text(text)
    store = MemoryStore.open(tmp_path / "h", tmp_path / "w", "dana")
    plan = plan_import(store, path, "project")
    written = apply_import(store, plan).written
    file_hash = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    records = [store.get(rid) for rid in written]
    assert [(r.title, r.type.value, r.tags) for r in records] == [
        ("Kept", "fact", []),
        ("Second", "convention", ["a", "b", "c"]),
    ]
    for record in records:
        g = record.governance
        # Claims in the file are not trusted: every record waits for review as an import.
        assert (g.origin, g.verification, g.retention.value) == (
            Origin.IMPORTED,
            Verification.UNVERIFIED,
            "project-delete",
        )
        assert [r.model_dump(exclude_unset=True) for r in g.sourceRefs] == [
            {"kind": "import", "id": file_hash, "contentHash": record.contentHash}
        ]
        assert record.provenance.note == "imported from notes.md"
        assert re.fullmatch(f"memory:import:{UUID}", record.id)
    assert_host_valid(store, "project")
    assert len(store.review_queue()) == 2


def test_markdown_import_is_a_plan_then_one_batch_and_a_rerun_writes_nothing(tmp_path: Path):
    path = tmp_path / "notes.md"
    path.write_text("# A\n\na\n\n---\n\n# B\n\nb\n\n---\n\n# A again\n\na\n")
    store = MemoryStore.open(tmp_path / "h", tmp_path / "w", "dana")
    plan = plan_import(store, path, "project")
    assert plan.counts == "2 new, 1 duplicate, 0 invalid"
    assert [plan.where(i) for i in plan.new_indexes] == ["section 1", "section 2"]
    assert not store.file_for("project").path.exists()  # nothing before the apply
    store.create("project", "fact", "Meanwhile", "b")  # written by someone since the plan
    result = apply_import(store, plan)
    assert len(result.written) == 1 and len(result.duplicates) == 2
    lines = store.file_for("project").path.read_bytes().splitlines()
    assert len(lines) == 2
    again = plan_import(store, path, "project")
    assert again.new == [] and apply_import(store, again).written == []


def test_a_markdown_section_the_host_cannot_read_is_listed_invalid(tmp_path: Path):
    store = MemoryStore.open(tmp_path / "h", tmp_path / "w", "dana")
    data = (
        b"# Good\n\nfine\n---\n# Empty\n\ntype: fact\n---\n# Bad type\ntype: note\n\nx\n---\n"
        b"# " + b"t" * 300 + b"\n\ntoo long a title\n"
    )
    plan = plan_import(store, data, "project")
    assert plan.format == "markdown"
    assert [(plan.where(b.index), b.reason.split(":")[0]) for b in plan.invalid] == [
        ("section 2", "Memory markdown record has no content"),
        ("section 3", "Memory markdown type is invalid"),
        ("section 4", "Memory title is invalid (over 256 UTF-8 bytes)"),
    ]
    assert [r.title for r in plan.new] == ["Good"]
    with pytest.raises(StoreError) as info:
        apply_import(store, plan, strict=True)
    assert info.value.code == "BUNDLE_INVALID" and "first: section 2 (no id)" in info.value.message


def test_the_format_follows_the_suffix_or_the_first_text(tmp_path: Path):
    store = MemoryStore.open(tmp_path / "h", tmp_path / "w", "dana")
    (tmp_path / "a.markdown").write_text("# T\n\nbody\n")
    assert plan_import(store, tmp_path / "a.markdown", "user").format == "markdown"
    assert plan_import(store, b"\xef\xbb\xbf  # T\n\nbody", "user").format == "markdown"
    assert plan_import(store, bundle_bytes(), "user").format == "json"
    (tmp_path / "b.md").write_bytes(bundle_bytes())
    with pytest.raises(StoreError) as info:  # a .md file is Markdown, whatever it holds
        plan_import(store, tmp_path / "b.md", "user")
    assert "no '# title' section" in info.value.message
    assert plan_import(store, tmp_path / "b.md", "user", fmt="json").format == "json"


# ------------------------------------------------------------------------- limits


def write_records(store: MemoryStore, n: int) -> None:
    """``n`` valid project records, written straight into the file (a big store, fast)."""
    file = store.file_for("project")
    file.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(file.path, "wb") as f:
        for i in range(n):
            f.write(
                make_record(
                    scope=Scope.PROJECT,
                    scope_key=store.paths.root_id,
                    record_type=RecordType.FACT,
                    title=f"Fact {i}",
                    content=f"Fact number {i}.",
                    tags=[],
                    provenance=Provenance(kind=ProvenanceKind.USER),
                    origin=Origin.USER_AUTHORED,
                    source_refs=[],
                ).to_line()
            )


def test_a_10000_record_bundle_imports_in_one_batch(tmp_path: Path, empty_store: MemoryStore):
    source = MemoryStore.open(tmp_path / "sh", tmp_path / "sw", "dana")
    write_records(source, 10_000)
    out = tmp_path / "big.json"
    result = export_bundle(source, out)
    assert result.count == 10_000 and result.over_host_limits is None
    plan = plan_import(empty_store, out, "project")
    assert (len(plan.new), plan.invalid) == (10_000, [])
    done = apply_import(empty_store, plan)
    assert len(done.written) == 10_000
    assert len(empty_store.records("project")) == 10_000
    assert apply_import(empty_store, plan_import(empty_store, out, "project")).written == []


def test_past_the_hosts_limit_our_export_says_so_and_is_written_all_the_same(
    tmp_path: Path, empty_store: MemoryStore
):
    source = MemoryStore.open(tmp_path / "sh", tmp_path / "sw", "dana")
    write_records(source, 10_001)
    out = tmp_path / "big.json"
    done = run_cli(tmp_path / "sh", tmp_path / "sw", "export", "--out", str(out), user="dana")
    assert done.returncode == 0, done.stderr
    assert (
        "note: the host cannot import this bundle: 10001 records: the host imports at "
        "most 10000, and so does dsh-memory import" in done.stderr
    )
    assert len(json.loads(out.read_bytes())["records"]) == 10_001
    assert "more than 10000 records" in bundle_error(empty_store, out)  # the host's limit


def test_a_bundle_over_the_record_limit_is_refused_and_nothing_written(tmp_path: Path):
    record = record_json("One", "one")
    data = bundle_bytes(*([record] * (MAX_BUNDLE_RECORDS + 1)))
    path = tmp_path / "huge.json"
    path.write_bytes(data)
    home, ws = tmp_path / "h", tmp_path / "w"
    done = run_cli(home, ws, "import", str(path), "--scope", "project")
    assert done.returncode == 1
    assert done.stderr.startswith("error[BUNDLE_INVALID]: ")
    assert f"more than {MAX_BUNDLE_RECORDS} records; a bundle may hold at most" in done.stderr
    assert not ws.exists() and not home.exists()


# ------------------------------------------------------------------------- export and the host


def test_export_leaves_out_what_the_hosts_import_would_refuse(tmp_path: Path):
    store = MemoryStore.open(tmp_path / "h", tmp_path / "w", "dana")
    full = store.propose(
        "project",
        "fact",
        "Full",
        "Thirty-two refs.",
        source_refs=[SourceRef(kind="url", id=f"https:r{i}") for i in range(32)],
    ).id
    ok = store.propose(
        "project",
        "fact",
        "Fits",
        "Thirty-one refs.",
        source_refs=[SourceRef(kind="url", id=f"https:s{i}") for i in range(31)],
    ).id
    file = store.file_for("project")
    with open(file.path, "ab") as f:
        f.write(
            make_record(
                scope=Scope.PROJECT,
                scope_key=store.paths.root_id,
                record_type=RecordType.FACT,
                title="Slashed",
                content="x",
                tags=[],
                provenance=Provenance(kind=ProvenanceKind.USER),
                origin=Origin.USER_AUTHORED,
                source_refs=[],
                record_id="memory/a/b",
            ).to_line()
        )
    out = tmp_path / "b.json"
    result = export_bundle(store, out)
    assert [rid for rid, _ in result.left_out] == [full, "memory/a/b"]
    assert [r["id"] for r in json.loads(out.read_bytes())["records"]] == [ok]
    done = run_cli(tmp_path / "h", tmp_path / "w", "export", "--out", str(out), user="dana")
    assert f"left out {full}: 32 source refs: no room for the host's import ref" in done.stderr
    assert f"wrote 1 record to {out}: project 1, " in done.stdout


def test_records_the_host_would_merge_past_32_refs_are_left_out(tmp_path: Path):
    store = MemoryStore.open(tmp_path / "h", tmp_path / "w", "dana")
    store.propose(
        "project",
        "fact",
        "Same",
        "Same content.",
        source_refs=[SourceRef(kind="url", id=f"https:a{i}") for i in range(20)],
    )
    store.propose(
        "user",
        "fact",
        "Same",
        "Same content.",
        source_refs=[SourceRef(kind="url", id=f"https:b{i}") for i in range(20)],
    )
    result = export_bundle(store, tmp_path / "b.json")
    assert result.count == 1
    (why,) = [why for _rid, why in result.left_out]
    assert why.startswith("the host merges it into an earlier record of the bundle")


def test_cli_markdown_export_and_import(fixture_home: tuple[Path, Path], tmp_path: Path):
    home, workspace = fixture_home
    out = tmp_path / "memory.md"  # the suffix picks Markdown; --format says it outright
    done = run_cli(home, workspace, "export", "--out", str(out), "--scope", "project")
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("# ")
    other = tmp_path / "memory.txt"
    run_cli(home, workspace, "export", "--out", str(other), "--format", "markdown")
    assert other.read_text().startswith("# ")
    home2, ws2 = tmp_path / "h2", tmp_path / "w2"
    dry = run_cli(home2, ws2, "import", str(out), "--scope", "project", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "4 new, 0 duplicate, 0 invalid" in dry.stdout
    assert "  new        section 1  " in dry.stdout
    done = run_cli(home2, ws2, "import", str(other), "--scope", "user")
    assert done.returncode == 0 and "imported 8 record(s)" in done.stdout


@pytest.mark.parametrize(
    ("version", "accepted"),
    [(b"1", True), (b"1.0", True), (b"10e-1", True), (b"true", False), (b'"1"', False)],
)
def test_schema_version_is_judged_as_the_hosts_json_parse_and_triple_equals(
    tmp_path: Path, version: bytes, accepted: bool
):
    # JSON.parse("1.0") is the number 1, so the host's `=== 1` takes it; `true` it refuses.
    data = bundle_bytes(record_json("A", "a")).replace(
        b'"schemaVersion": 1, "exportedAt"', b'"schemaVersion": %s, "exportedAt"' % version, 1
    )
    assert data.startswith(b'{"schemaVersion": %s, ' % version)
    store = MemoryStore.open(tmp_path / "h", tmp_path / "w", "dana")
    if accepted:
        assert len(plan_import(store, data, "project").new) == 1
    else:
        assert "schemaVersion is " in bundle_error(store, data)
    host_src = os.environ.get("DSH_HOST_SRC")
    if not host_src:
        return
    from interop.corpus import make_case_dirs
    from interop.host import HostHarness, default_build_dir, ensure_build

    ensure_build(host_src, default_build_dir())
    dirs = make_case_dirs(tmp_path / "host")
    bundle = tmp_path / "b.json"
    bundle.write_bytes(data)
    done = HostHarness(default_build_dir()).run(
        "import", str(bundle), home=dirs.home, workspace=dirs.workspace, check=False
    )
    assert (done["rc"] == 0) is accepted, done
