"""1. Concurrency: real processes writing one file at once, and a reader polling throughout."""

from __future__ import annotations

import json
import time
from pathlib import Path

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures
from .harness import (
    Emit,
    Gate,
    Site,
    Worker,
    complete_lines,
    expire_killed_lock,
    neighbours,
    pump_all,
    run_in_child,
    scaled,
)

WRITERS = 8
APPENDS = scaled(500, 1500)  # 12,000 lines of ~570 bytes stay under the 8 MiB cap
EDITORS = 8
EDITS = scaled(100, 400)
DEADLINE_S = 600


def _content(writer: int, seq: int) -> str:
    return f"writer {writer} seq {seq}"


def _appender(site: Site, writer: int, gate: Gate) -> Worker:
    def run(emit: Emit) -> None:
        store = site.store()
        gate.wait()
        for seq in range(APPENDS):
            result = store.create("project", "fact", f"w{writer}", _content(writer, seq))
            assert result.written
            emit(ack=seq, id=result.id)

    return Worker(run)


def _poller(site: Site, gate: Gate) -> Worker:
    """Polls the file without a lock until it has seen every append; checks on every poll
    that each writer's records arrive in order, none twice, none missing, no line corrupt."""

    def run(emit: Emit) -> None:
        store = site.store()
        view = store.view(store.file_for("project"))
        expected = [0] * WRITERS
        polls = torn_polls = 0
        gate.wait()
        deadline = time.monotonic() + DEADLINE_S
        while sum(expected) < WRITERS * APPENDS:
            assert time.monotonic() < deadline, f"the reader saw only {sum(expected)} records"
            change = view.refresh()
            polls += 1
            torn_polls += view.torn
            assert not change.reset or sum(expected) == 0, "the file was replaced"
            assert not view.corrupt, f"reader saw corrupt lines: {view.corrupt}"
            for rid in change.ids:
                _, writer, _, seq = view.current[rid].content.split()
                assert int(seq) == expected[int(writer)], (writer, seq, expected)
                expected[int(writer)] += 1
            time.sleep(0.0005)  # poll hard, but leave the writers a core
        fresh = MemoryStore.open(site.home, site.workspace, "alice")
        assert set(fresh.view(fresh.file_for("project")).current) <= set(view.current)
        emit(polls=polls, torn_polls=torn_polls, seen=sum(expected))

    return Worker(run)


def test_eight_writers_lose_nothing_duplicate_nothing_and_keep_order(
    tmp_path: Path, figures: Figures
) -> None:
    """8 processes x 500 appends (1,500 in soak mode) with a reader polling throughout: 0 lost,
    0 duplicated, each
    writer's order kept in the file; the lock-free reader never fails, never parses a partial
    line, and sees each writer's records in order.
    """
    site = Site.create(tmp_path)
    gate = Gate()
    writers = [_appender(site, w, gate) for w in range(WRITERS)]
    reader = _poller(site, gate)
    gate.open()
    everyone = [*writers, reader]
    # The writers first: if one fails, say how, instead of waiting out the reader, which
    # polls until it has seen every append that was asked for.
    pump_all(everyone, lambda: all(w.eof for w in writers), DEADLINE_S)
    for worker in writers:
        worker.join()
        assert not worker.errors(), worker.errors()
        assert worker.status == 0
    reader.join(deadline_s=60)
    assert not reader.errors(), reader.errors()
    assert reader.status == 0

    lines = complete_lines(site.project.read_bytes())
    records = [json.loads(line) for line in lines]
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)) == WRITERS * APPENDS, "lost or duplicated appends"
    acked = {m["id"] for w in writers for m in w.acks()}
    assert acked == set(ids), "the file and the acknowledgements disagree"
    for writer in range(WRITERS):
        seqs = [int(r["content"].split()[3]) for r in records if r["title"] == f"w{writer}"]
        assert seqs == list(range(APPENDS)), f"writer {writer}'s order was not kept"
    view = site.store().view(site.store().file_for("project"))
    view.refresh()
    assert not view.corrupt and not view.torn
    assert not site.project.with_name("records.jsonl.corrupt").exists()

    polled = reader.messages[-1]
    assert polled["seen"] == WRITERS * APPENDS
    figures.add("processes", WRITERS)
    figures.add("appends", len(ids))
    figures.add("lost", WRITERS * APPENDS - len(set(ids)))
    figures.add("duplicated", len(ids) - len(set(ids)))
    figures.add("reader polls", polled["polls"])
    figures.add("polls during a partial write", polled["torn_polls"])
    figures.add("reader failures", 0)


def _editor(site: Site, rid: str, editor: int, gate: Gate) -> Worker:
    def run(emit: Emit) -> None:
        store = site.store()
        done = refused = 0
        gate.wait()
        while done < EDITS:
            base = store.get(rid).revision
            try:
                record = store.edit(rid, base, content=f"editor {editor} edit {done}")
            except StoreError as exc:
                assert exc.code == "REVISION_CONFLICT", f"refused with {exc.code}: {exc}"
                refused += 1
                continue
            assert record.revision == base + 1
            emit(ack=record.revision, content=record.content)
            done += 1
        emit(refused=refused)

    return Worker(run)


def test_eight_editors_of_one_record_make_revisions_without_gap_or_repeat(
    tmp_path: Path, figures: Figures
) -> None:
    """8 processes x 100 edits (400 in soak mode) of one record, each retried until it lands:
    revisions are exactly 1..801 in the file with no gap or repeat, each one acknowledged
    once with its own content, and every refused edit is a REVISION_CONFLICT that wrote
    nothing.
    """
    site = Site.create(tmp_path)
    rid = site.store().create("project", "decision", "contended", "the original").id
    gate = Gate()
    editors = [_editor(site, rid, e, gate) for e in range(EDITORS)]
    gate.open()
    pump_all(editors, lambda: all(w.eof for w in editors), DEADLINE_S)
    for worker in editors:
        worker.join()
        assert not worker.errors(), worker.errors()
        assert worker.status == 0

    total = EDITORS * EDITS
    records = [json.loads(line) for line in complete_lines(site.project.read_bytes())]
    assert all(r["id"] == rid for r in records)
    revisions = [r["governance"]["revision"] for r in records]
    assert revisions == list(range(1, total + 2)), "a gap, a repeat or a refused edit written"
    by_revision = {r["governance"]["revision"]: r["content"] for r in records}
    acks = [m for w in editors for m in w.acks()]
    assert sorted(m["ack"] for m in acks) == list(range(2, total + 2))
    assert all(by_revision[m["ack"]] == m["content"] for m in acks)
    assert site.store().get(rid).revision == total + 1

    refused = sum(w.messages[-1]["refused"] for w in editors)
    figures.add("processes", EDITORS)
    figures.add("edits landed", total)
    figures.add("edits refused (all REVISION_CONFLICT)", refused)
    figures.add("revision gaps or repeats", 0)


def _edit_appender(site: Site, writer: int, count: int, gate: Gate) -> Worker:
    def run(emit: Emit) -> None:
        store = site.store()
        gate.wait()
        for seq in range(count):
            rid = store.create("project", "fact", f"w{writer}", _content(writer, seq)).id
            store.edit(rid, 1, content=_content(writer, seq) + " edited")
            emit(ack=seq, id=rid)

    return Worker(run)


def _compactor(site: Site, stop: Path, gate: Gate) -> Worker:
    def run(emit: Emit) -> None:
        store = site.store()
        gate.wait()
        done = 0
        while not stop.exists():
            store.compact(store.file_for("project"))
            done += 1
        emit(compactions=done)

    return Worker(run)


def _steady_reader(site: Site, stop: Path, gate: Gate) -> Worker:
    """Polls without a lock while the file is appended to and replaced by compactions: a
    record once seen never disappears and its revision never goes back."""

    def run(emit: Emit) -> None:
        store = site.store()
        view = store.view(store.file_for("project"))
        seen: dict[str, int] = {}
        polls = resets = 0
        gate.wait()
        while not stop.exists():
            change = view.refresh()
            polls += 1
            resets += change.reset
            assert not view.corrupt, f"reader saw corrupt lines: {view.corrupt}"
            for rid, revision in seen.items():
                record = view.current.get(rid)
                assert record is not None, f"{rid} disappeared from the reader's view"
                assert record.revision >= revision, f"{rid} went back to {record.revision}"
            seen = {rid: r.revision for rid, r in view.current.items()}
            time.sleep(0.001)
        emit(polls=polls, resets=resets, seen=len(seen))

    return Worker(run)


def test_a_reader_never_loses_a_record_while_writers_append_and_a_compactor_replaces(
    tmp_path: Path, figures: Figures
) -> None:
    """4 processes append and edit while a 5th compacts the file over and over and a reader
    polls without a lock: the reader never sees a corrupt line, never loses a record it has
    seen (across every replace of the file) and never sees a revision go back; at the end
    every record is there at revision 2.
    """
    count = scaled(150, 600)
    site = Site.create(tmp_path)
    site.store().create("project", "fact", "seed", "seed")  # the file exists for the reader
    stop = tmp_path / "stop"
    gate = Gate()
    writers = [_edit_appender(site, w, count, gate) for w in range(4)]
    others = [_compactor(site, stop, gate), _steady_reader(site, stop, gate)]
    gate.open()
    pump_all(writers, lambda: all(w.eof for w in writers), DEADLINE_S)
    stop.touch()
    for worker in [*writers, *others]:
        worker.join()
        assert not worker.errors(), worker.errors()
        assert worker.status == 0

    records = site.store().records("project")
    assert len(records) == 4 * count + 1
    assert all(r.revision == 2 for r in records if r.title != "seed")
    reader = others[1].messages[-1]
    figures.add("appends and edits", 8 * count)
    figures.add("compactions during the run", others[0].messages[-1]["compactions"])
    figures.add("reader polls", reader["polls"])
    figures.add("file replacements the reader followed", reader["resets"])
    figures.add("records lost by the reader", 0)


def test_a_held_lock_is_lock_timeout_and_a_killed_holders_lock_is_broken_once_stale(
    tmp_path: Path, figures: Figures
) -> None:
    """A process holds the file's lock and stops: a write from another process fails with
    LOCK_TIMEOUT after its timeout instead of hanging, naming the holder's pid (running).
    Once the holder is SIGKILLed (a crash while holding the lock) its lock file stays, as in
    the host's protocol: a write still fails with LOCK_TIMEOUT, now naming the pid as not
    running and the lock file to delete. Once the lock is 60 s old (its mtime aged, as if
    the minute had passed) the next write breaks it and succeeds, leaving no lock.
    """
    site = Site.create(tmp_path)
    site.store().create("project", "fact", "first", "first")
    lock = neighbours(site.project)["lock"]

    def hold(emit: Emit) -> None:
        store = site.store()
        with store.view(store.file_for("project")).safe.locked():
            emit(held=True)
            time.sleep(3600)

    holder = Worker(hold)
    holder.wait_for(lambda w: bool(w.messages))

    def write() -> dict[str, str | None]:
        store = MemoryStore.open(site.home, site.workspace, "alice", lock_timeout_s=0.5)
        try:
            store.create("project", "fact", "blocked", f"blocked {time.time_ns()}")
        except StoreError as exc:
            return {"code": exc.code, "message": exc.message}
        return {"code": None}

    refused = run_in_child(write, deadline_s=30).messages[-1]
    assert refused["code"] == "LOCK_TIMEOUT", refused
    assert f"pid {holder.pid} (running)" in refused["message"], refused
    holder.kill()
    assert lock.read_text() == f"{holder.pid}\n", "the killed holder's lock went away"
    refused = run_in_child(write, deadline_s=30).messages[-1]
    assert refused["code"] == "LOCK_TIMEOUT", refused
    assert f"pid {holder.pid} (not running)" in refused["message"], refused
    assert f"delete {lock}" in refused["message"], refused
    assert expire_killed_lock(site.project, holder.pid)
    assert run_in_child(write, deadline_s=30).messages[-1]["code"] is None
    assert not lock.exists(), "the write left a lock behind"
    figures.add("writes that timed out instead of hanging", 2)
    figures.add("kills survived")
