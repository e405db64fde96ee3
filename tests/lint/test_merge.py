"""Merging two records that say the same thing (``MemoryStore.merge``, ``dsh-memory merge``):
one new revision of the kept record, verified, keeping both records' source refs and naming
both parents (``governance.merge``, as the host's governance design lists them); the other
rejected when unverified, archived when verified; one locked write; every refusal writes
nothing. With ``DSH_HOST_SRC``, the host's own code opens the result clean."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli
from interop.host import HostHarness, default_build_dir, ensure_build

from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import Scope, SourceRef, Status, Verification
from dsh_memory_tui.store import MemoryStore

REFS = [SourceRef(kind="session", id="s1")]


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    (tmp_path / "ws").mkdir()
    return MemoryStore.open(tmp_path / "home", tmp_path / "ws", "alice")


def propose(store: MemoryStore, title: str, content: str, scope: Scope = Scope.PROJECT) -> str:
    return store.propose(scope, "convention", title, content, [], source_refs=REFS).id


def file_bytes(store: MemoryStore) -> bytes:
    return store.file_for(Scope.PROJECT).path.read_bytes()


def pair(store: MemoryStore) -> tuple[str, str]:
    a = propose(store, "Run ruff before every commit", "Run ruff check before each commit.")
    b = propose(store, "run RUFF before committing!", "Always run ruff before committing.")
    return a, b


def test_merge_writes_a_verified_revision_of_the_kept_record_naming_both_parents(store):
    a, b = pair(store)
    before = {r.id: r for r in store.records()}
    result = store.merge(a, b)
    kept = store.get(a)
    assert kept == result.kept and kept.governance.revision == 2
    assert kept.title == "Run ruff before every commit"
    assert (
        kept.content == "Run ruff check before each commit.\n\nAlways run ruff before committing."
    )
    assert kept.governance.verification is Verification.VERIFIED
    assert kept.governance.verifiedBy == "user" and kept.governance.reviewedBy == "alice"
    assert kept.governance.model_extra["merge"] == {
        "revision": 2,
        "parents": [
            {"id": a, "revision": 1, "contentHash": before[a].contentHash},
            {"id": b, "revision": 1, "contentHash": before[b].contentHash},
        ],
    }
    # The parents are not sources: no import ref names them.
    assert kept.governance.sourceRefs == REFS


def test_the_other_record_is_rejected_when_it_was_unverified(store):
    a, b = pair(store)
    store.merge(a, b)
    other = store.get(b)
    assert other.governance.verification is Verification.REJECTED
    assert other.governance.reviewNote == f"merged into {a}"


def test_the_other_record_is_archived_when_it_was_verified(store):
    a, b = pair(store)
    store.verify(b)
    store.merge(a, b)
    assert store.get(b).status is Status.ARCHIVED


def test_merge_takes_the_reviewers_title_and_content(store):
    a, b = pair(store)
    store.merge(a, b, title="Run ruff before committing", content="ruff check, then commit.")
    kept = store.get(a)
    assert (kept.title, kept.content) == ("Run ruff before committing", "ruff check, then commit.")


def test_merge_appends_both_lines_in_one_write(store):
    a, b = pair(store)
    size = len(file_bytes(store).splitlines())
    store.merge(a, b)
    lines = [json.loads(line) for line in file_bytes(store).splitlines()]
    assert len(lines) == size + 2
    assert [line["id"] for line in lines[-2:]] == [a, b]
    assert lines[-1]["updatedAt"] == lines[-2]["updatedAt"]


def test_records_of_two_files_are_not_merged_and_nothing_is_written(store):
    a = propose(store, "Run ruff before every commit", "Run ruff check before each commit.")
    u = propose(store, "Run ruff before every commit", "ruff before committing", Scope.USER)
    before = file_bytes(store)
    with pytest.raises(StoreError) as err:
        store.merge(a, u)
    assert err.value.code is ErrorCode.INVALID_TRANSITION and "different files" in err.value.message
    assert file_bytes(store) == before


def test_a_rejected_record_is_not_merged(store):
    a, b = pair(store)
    store.reject(b)
    before = file_bytes(store)
    with pytest.raises(StoreError) as err:
        store.merge(a, b)
    assert err.value.code is ErrorCode.INVALID_TRANSITION
    assert file_bytes(store) == before


def test_a_merge_from_a_stale_revision_is_a_revision_conflict(store):
    a, b = pair(store)
    store.edit(a, 1, content="Run ruff check and ruff format before each commit.")
    before = file_bytes(store)
    with pytest.raises(StoreError) as err:
        store.merge(a, b, base_revision=1)
    assert err.value.code is ErrorCode.REVISION_CONFLICT
    assert file_bytes(store) == before


def test_merged_text_with_risk_flags_needs_a_reason(store):
    a, b = pair(store)
    before = file_bytes(store)
    with pytest.raises(StoreError) as err:
        store.merge(a, b, content="ruff first; token ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d")
    assert err.value.code is ErrorCode.REASON_REQUIRED
    assert file_bytes(store) == before
    store.merge(a, b, content="ruff first; see https://docs.astral.sh/ruff", reason="their docs")
    assert store.get(a).governance.reviewNote == "their docs"


def test_the_merge_command_prints_the_kept_id_last(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(home, ws, "alice")
    a, b = pair(store)
    done = run_cli(home, ws, "merge", a, b, "--title", "Run ruff before committing")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"rejected: {b}", "merged: revision 2, verified", a]
    assert store.get(a).title == "Run ruff before committing"


def test_the_merge_command_refuses_a_record_merged_with_itself(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    a, _ = pair(MemoryStore.open(home, ws, "alice"))
    done = run_cli(home, ws, "merge", a, a)
    assert done.returncode == 1
    assert done.stderr.startswith("error[INVALID_TRANSITION]: a record cannot be merged with")


def test_the_host_opens_merged_records_clean_and_governs_them(tmp_path):
    if not os.environ.get("DSH_HOST_SRC"):
        pytest.skip("DSH_HOST_SRC is not set: no host plugin source to run the host's own code")
    ensure_build(os.environ["DSH_HOST_SRC"], default_build_dir())
    host = HostHarness(default_build_dir())
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(home, ws, "alice")
    a, b = pair(store)
    store.merge(a, b)
    opened = host.run("open-warnings", home=home, workspace=ws)
    assert opened["warnings"] == [] and opened["records"] == 2
    listed = host.run("list", "--full", home=home, workspace=ws)
    by_id = {r["id"]: r for r in listed["records"]}
    assert by_id[a]["governance"]["verification"] == "verified"
    assert [r["id"] for r in by_id[a]["governance"]["sourceRefs"]] == ["s1"]
    assert by_id[b]["governance"]["verification"] == "rejected"
    host.run("govern", a, "pin", home=home, workspace=ws)  # the host's own rules accept it
    assert store.get(a).governance.pinnedBy == "user"
