"""Verifying a record that carries risk flags needs a reason, in every face: the store refuses
with REASON_REQUIRED and writes nothing, ``dsh-memory verify`` without ``--reason`` exits 1,
a batch skips such records and says why, "keep this version" asks for one too."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import Scope, SourceRef, Verification
from dsh_memory_tui.store import Action, MemoryStore

REFS = [SourceRef(kind="session", id="s1")]
SECRET = "Exports use AKIA81U33XTPLPFT75V2 for the bucket."


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "ws").mkdir()
    return tmp_path / "home", tmp_path / "ws"


@pytest.fixture
def store(dirs) -> MemoryStore:
    return MemoryStore.open(*dirs, "alice")


def propose(store: MemoryStore, title: str, content: str) -> str:
    return store.propose(Scope.PROJECT, "fact", title, content, [], source_refs=REFS).id


def file_bytes(store: MemoryStore) -> bytes:
    return store.file_for(Scope.PROJECT).path.read_bytes()


def test_verifying_a_flagged_record_without_a_reason_is_refused_and_writes_nothing(store):
    rid = propose(store, "Export key", SECRET)
    before = file_bytes(store)
    for reason in (None, "", "   "):
        with pytest.raises(StoreError) as err:
            store.verify(rid, reason=reason)
        assert err.value.code is ErrorCode.REASON_REQUIRED
        assert "secret (AWS Access Key)" in err.value.message and "AKIA" not in err.value.message
    assert file_bytes(store) == before


def test_a_reason_lets_the_reviewer_verify_a_flagged_record(store):
    rid = propose(store, "Export key", SECRET)
    store.verify(rid, reason="a revoked example key, kept for the runbook")
    record = store.get(rid)
    assert record.governance.verification is Verification.VERIFIED
    assert record.governance.reviewNote == "a revoked example key, kept for the runbook"


def test_a_record_without_flags_is_verified_without_a_reason(store):
    rid = propose(store, "Run ruff", "CI fails on ruff errors.")
    assert store.verify(rid).governance.verification is Verification.VERIFIED


def test_a_batch_verify_skips_flagged_records_and_says_why(store):
    clean = propose(store, "Run ruff", "CI fails on ruff errors.")
    flagged = propose(store, "Docs", "See https://docs.example.com/v3.")
    written, skipped = store.apply_many_report(Action.VERIFY, [clean, flagged])
    assert [r.id for r in written] == [clean]
    [(rid, why)] = skipped
    assert rid == flagged and "url (docs.example.com)" in why


def test_keeping_a_flagged_version_of_a_conflict_group_needs_a_reason(store):
    a = propose(store, "Staging host", "Staging is https://staging.example.dev")
    propose(store, "Staging host", "Staging is the eu-west cluster.")
    before = file_bytes(store)
    with pytest.raises(StoreError) as err:
        store.keep(a)
    assert err.value.code is ErrorCode.REASON_REQUIRED
    assert file_bytes(store) == before
    assert store.keep(a, reason="our host").kept.governance.verification is Verification.VERIFIED


def test_the_verify_command_without_reason_exits_1_with_a_clear_error(dirs, store):
    rid = propose(store, "Export key", SECRET)
    before = file_bytes(store)
    done = run_cli(*dirs, "verify", rid)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"error[REASON_REQUIRED]: {rid} carries risk flags: secret")
    assert file_bytes(store) == before
    done = run_cli(*dirs, "verify", rid, "--reason", "revoked example")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == rid
