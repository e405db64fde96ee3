"""The host gives up at once when it finds the lock held ("Memory store is busy"), so every write
of ours decides without the lock and holds it only to see that the file is as it read it and to
append (or rename a staged replacement in). A file that changed meanwhile: the lock is let go and
the write decided again; a file that never stops changing is decided under the lock at last.
Real files, real locks; a second store stands in for the other writer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.governance import Action, transition
from dsh_memory_tui.jsonl import SafeFile, Staged
from dsh_memory_tui.model import Record, Scope, SourceRef
from dsh_memory_tui.store import FileView, MemoryStore
from dsh_memory_tui.store import transitions as transitions_module


def _stores(tmp_path: Path) -> tuple[MemoryStore, MemoryStore]:
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    return MemoryStore.open(home, ws, "alice"), MemoryStore.open(home, ws, "bob")


def _proposal(store: MemoryStore, n: int) -> str:
    refs = [SourceRef(kind="url", id="https://example.com")]
    return store.propose(Scope.PROJECT, "fact", f"title {n}", f"content {n}", source_refs=refs).id


def _lock_path(store: MemoryStore) -> Path:
    return store.view(store.file_for(Scope.PROJECT)).safe.lock_path


def test_a_write_decides_before_it_takes_the_lock(tmp_path: Path) -> None:
    ours, _ = _stores(tmp_path)
    rid = _proposal(ours, 1)
    lock = _lock_path(ours)
    held_while_deciding: list[bool] = []

    def build(view: FileView) -> tuple[list[Record], None]:
        held_while_deciding.append(lock.exists())
        return [transition(view.current[rid], Action.VERIFY, ours.clock())], None

    ours.write(ours.file_for(Scope.PROJECT), build)
    assert held_while_deciding == [False]
    assert ours.get(rid).governance.verification.value == "verified"
    assert not lock.exists()


def test_a_batch_decides_every_record_before_it_takes_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, _ = _stores(tmp_path)
    ids = [_proposal(ours, n) for n in range(150)]
    lock = _lock_path(ours)
    held: list[bool] = []
    real = transitions_module.transition

    def watched(*args: object, **kwargs: object) -> Record:
        held.append(lock.exists())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(transitions_module, "transition", watched)
    written = ours.apply_many(Action.VERIFY, ids)
    assert len(written) == 150 and len(held) == 150
    assert not any(held), "a record of the batch was decided with the lock held"


def test_a_file_changed_after_the_decision_is_decided_again(tmp_path: Path) -> None:
    # Between our decision and our lock, another writer verified the record: our verify is
    # decided again on the file as it is now, and refused; nothing of ours is written.
    ours, theirs = _stores(tmp_path)
    rid = _proposal(ours, 1)
    decisions: list[int] = []

    def build(view: FileView) -> tuple[list[Record], None]:
        decisions.append(view.current[rid].governance.revision)
        if len(decisions) == 1:
            theirs.verify(rid)  # the other writer gets in first
        return [transition(view.current[rid], Action.VERIFY, ours.clock())], None

    with pytest.raises(StoreError) as err:
        ours.write(ours.file_for(Scope.PROJECT), build)
    assert err.value.code == "INVALID_TRANSITION"
    assert decisions == [1, 2]
    assert [r.governance.revision for r in ours.history(rid)] == [1, 2]


def test_lines_of_other_records_appended_after_the_decision_leave_it_standing(
    tmp_path: Path,
) -> None:
    # A governance action reads only its own records: another writer's lines about other
    # records do not make it decide again (a batch of 150 takes longer to decide than the
    # host waits between two appends); both writes are in the file.
    ours, theirs = _stores(tmp_path)
    rid = _proposal(ours, 1)
    decisions: list[int] = []

    def build(view: FileView) -> tuple[list[Record], None]:
        decisions.append(len(view.current))
        if len(decisions) == 1:
            _proposal(theirs, 2)  # another record, after our decision
        return [transition(view.current[rid], Action.VERIFY, ours.clock())], None

    ours.write(ours.file_for(Scope.PROJECT), build, about=[rid])
    assert decisions == [1]
    assert ours.get(rid).governance.verification.value == "verified"
    assert len(ours.records(Scope.PROJECT)) == 2


def test_a_file_that_never_stops_changing_is_decided_under_the_lock_at_last(
    tmp_path: Path,
) -> None:
    ours, theirs = _stores(tmp_path)
    _proposal(ours, 0)
    lock = _lock_path(ours)
    locked: list[bool] = []

    def build(view: FileView) -> tuple[list[Record], str]:
        locked.append(lock.exists())
        if not lock.exists():
            _proposal(theirs, 100 + len(locked))  # someone appends after every decision
        record = next(iter(view.current.values()))
        return [transition(record, Action.VERIFY, ours.clock())], record.id

    rid = ours.write(ours.file_for(Scope.PROJECT), build)
    assert locked[-1] is True and not any(locked[:-1])
    assert len(locked) == 9  # eight rounds without the lock, then one with it
    assert ours.get(rid).governance.verification.value == "verified"
    assert len(ours.records(Scope.PROJECT)) == 9


def test_a_rewrite_stages_its_replacement_before_it_takes_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, _ = _stores(tmp_path)
    rid = _proposal(ours, 1)
    ours.verify(rid)
    lock = _lock_path(ours)
    staged_with_lock: list[bool] = []
    installed_with_lock: list[bool] = []
    stage, install = SafeFile.stage, Staged.install

    def watched_stage(self: SafeFile, data: bytes, backup: bytes | None) -> Staged:
        staged_with_lock.append(lock.exists())
        return stage(self, data, backup)

    def watched_install(self: Staged) -> bool:
        installed_with_lock.append(lock.exists())
        return install(self)

    monkeypatch.setattr(SafeFile, "stage", watched_stage)
    monkeypatch.setattr(Staged, "install", watched_install)
    result = ours.compact(ours.file_for(Scope.PROJECT))
    ours.forget(rid)
    assert result.lines_removed == 1
    assert staged_with_lock == [False, False] and installed_with_lock == [True, True]
    assert not lock.exists()
    assert [p.name for p in lock.parent.iterdir() if p.name.endswith(".tmp")] == []
