"""``dsh-memory lint [ID] [--all] [--scope S] [--json]``: the flags and near-duplicates of
unverified records (of one, or of every active one), a secret named but never printed, and
exit 1 when a verified, active record carries a secret (the CI check of a shared file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from dsh_memory_tui.model import Scope, SourceRef
from dsh_memory_tui.store import MemoryStore

REFS = [SourceRef(kind="session", id="s1")]
KEY = "AKIA81U33XTPLPFT75V2"


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "ws").mkdir()
    return tmp_path / "home", tmp_path / "ws"


@pytest.fixture
def store(dirs) -> MemoryStore:
    return MemoryStore.open(*dirs, "alice")


def propose(store: MemoryStore, title: str, content: str, scope: Scope = Scope.PROJECT) -> str:
    return store.propose(
        scope, "fact", title, content, [], source_refs=REFS, confirm_shared=True
    ).id


def test_lint_lists_flags_and_near_duplicates_of_unverified_records(dirs, store):
    key = propose(store, "Export key", f"Exports use {KEY}.")
    a = propose(store, "Run ruff before every commit", "Run ruff check before each commit.")
    b = propose(store, "run RUFF before committing!", "Always run ruff before committing.")
    done = run_cli(*dirs, "lint")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"{key}  project  unverified" in out
    assert "  secret       content:1  AWS Access Key" in out
    assert KEY not in out
    assert f"near-dup     {b} (" in out and f"near-dup     {a} (" in out
    assert out.splitlines()[-1] == "3 record(s) checked: 1 flagged, 2 with near-duplicates"


def test_lint_of_one_record_reports_only_it(dirs, store):
    propose(store, "Export key", f"Exports use {KEY}.")
    clean = propose(store, "Run ruff", "CI fails on ruff errors.")
    done = run_cli(*dirs, "lint", clean)
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["1 record(s) checked: 0 flagged, 0 with near-duplicates"]


def test_lint_json_gives_each_records_flags_with_spans(dirs, store):
    rid = propose(store, "Export key", f"Exports use {KEY}.")
    done = run_cli(*dirs, "lint", "--json")
    [item] = json.loads(done.stdout)
    assert item["id"] == rid and item["verification"] == "unverified"
    [flag] = item["flags"]
    assert flag == {
        "kind": "secret",
        "field": "content",
        "start": 12,
        "end": 32,
        "what": "AWS Access Key",
    }
    assert item["nearDuplicates"] == []


def test_lint_exits_1_when_a_verified_active_record_carries_a_secret(dirs, store):
    rid = propose(store, "Deploy key", f"Shared deploy key {KEY}", Scope.SHARED)
    assert run_cli(*dirs, "lint", "--all", "--scope", "shared-project").returncode == 0
    store.verify(rid, reason="we thought it was revoked", confirm_shared=True)
    done = run_cli(*dirs, "lint", "--all", "--scope", "shared-project")
    assert done.returncode == 1
    assert "1 verified, active record(s) carry a secret" in done.stderr and rid in done.stderr
    assert KEY not in done.stderr + done.stdout


def test_lint_passes_once_the_verified_secret_is_archived(dirs, store):
    rid = propose(store, "Deploy key", f"Shared deploy key {KEY}")
    store.verify(rid, reason="oops")
    assert run_cli(*dirs, "lint", "--all").returncode == 1
    store.archive(rid)
    assert run_cli(*dirs, "lint", "--all").returncode == 0
