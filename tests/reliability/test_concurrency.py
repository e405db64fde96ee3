"""1. Concurrency: real processes writing one file at once, and a reader polling throughout;
appends and edits at once, compaction under load, a tailing reader, a writer killed with SIGKILL
or dead mid-line. Waits are on conditions with deadlines, never fixed sleeps."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.model import Record, Scope, parse_line
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

pytestmark = pytest.mark.processes

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

    refused = run_in_child(write, deadline_s=120).messages[-1]
    assert refused["code"] == "LOCK_TIMEOUT", refused
    assert f"pid {holder.pid} (running)" in refused["message"], refused
    holder.kill()
    assert lock.read_text() == f"{holder.pid}\n", "the killed holder's lock went away"
    refused = run_in_child(write, deadline_s=120).messages[-1]
    assert refused["code"] == "LOCK_TIMEOUT", refused
    assert f"pid {holder.pid} (not running)" in refused["message"], refused
    assert f"delete {lock}" in refused["message"], refused
    assert expire_killed_lock(site.project, holder.pid)
    assert run_in_child(write, deadline_s=120).messages[-1]["code"] is None
    assert not lock.exists(), "the write left a lock behind"
    figures.add("writes that timed out instead of hanging", 2)
    figures.add("kills survived")


# --------------------------------------------------------- smaller runs: scripts in child processes

SCRIPT_DEADLINE_S = 180.0  # generous: the suite must pass at a load of 10
Home = tuple[Path, Path]


def spawn(code: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "DSH_LOCK_TIMEOUT": "30"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(procs: list[subprocess.Popen[str]]) -> list[str]:
    """Wait for every process (with a deadline); all must succeed. Their stdout lines."""
    lines: list[str] = []
    deadline = time.monotonic() + SCRIPT_DEADLINE_S
    for proc in procs:
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert proc.returncode == 0, err
        lines += out.split()
    return lines


def project_lines(home: Home) -> list[bytes]:
    return (home[1] / ".dsh/workspace-memory/records.jsonl").read_bytes().splitlines()


def lock_left_by(path: Path, pid: int) -> bool:
    """True if ``path``'s lock file is one the (dead) process ``pid`` left; it is then made
    61 s old, as after a minute: stale, so the next writer breaks it (the host's rule).
    """
    lock = path.with_name(path.name + ".lock")
    if not lock.exists():
        return False
    assert lock.read_bytes() == f"{pid}\n".encode()
    then = time.time() - 61
    os.utime(lock, (then, then))
    return True


APPENDER = """
    import sys
    from dsh_memory_tui.model import SourceRef
    from dsh_memory_tui.store import MemoryStore
    home, workspace, worker, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = MemoryStore.open(home, workspace, "alice")
    for i in range(count):
        r = store.propose("project", "fact", f"w{worker} #{i}", f"worker {worker} record {i}",
                          source_refs=[SourceRef(kind="session", id=worker)])
        print(r.id, flush=True)
"""


def test_concurrent_appends_lose_and_duplicate_nothing(fixture_home: Home) -> None:
    home, workspace = fixture_home
    workers, count = 4, 150
    procs = [spawn(APPENDER, home, workspace, w, count) for w in range(workers)]
    acked = finish(procs)
    assert len(acked) == len(set(acked)) == workers * count
    ids = [
        json.loads(line)["id"]
        for line in project_lines(fixture_home)
        if line.startswith(b'{"schemaVersion":1')
    ]
    written = [i for i in ids if i in set(acked)]
    assert sorted(written) == sorted(acked)  # each exactly once
    store = MemoryStore.open(home, workspace, "alice")
    assert set(acked) <= {r.id for r in store.records("project")}
    view = store.view(store.file_for("project"))
    assert view.corrupt == [] and not view.torn
    # Each worker's records are in the order it wrote them.
    for w in range(workers):
        titles = [
            store.get(i).title
            for i in ids
            if i in set(acked) and store.get(i).title.startswith(f"w{w} ")
        ]
        assert titles == [f"w{w} #{i}" for i in range(count)]


INCREMENTER = """
    import sys
    from dsh_memory_tui.errors import StoreError
    from dsh_memory_tui.store import MemoryStore
    home, workspace, record_id, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = MemoryStore.open(home, workspace, "alice")
    conflicts = 0
    done = 0
    while done < count:
        current = store.get(record_id)  # a reviewer reads...
        value = int(current.content)
        try:  # ...and saves an edit based on what it read
            store.edit(record_id, current.governance.revision, content=str(value + 1))
            done += 1
        except StoreError as exc:
            assert exc.code == "REVISION_CONFLICT", exc
            conflicts += 1
    print(conflicts, flush=True)
"""


def test_concurrent_edits_lose_no_update(fixture_home: Home) -> None:
    home, workspace = fixture_home
    store = MemoryStore.open(home, workspace, "alice")
    counter = store.create("project", "fact", "counter", "0").id
    workers, count = 4, 40
    procs = [spawn(INCREMENTER, home, workspace, counter, count) for _ in range(workers)]
    finish(procs)
    final = MemoryStore.open(home, workspace, "alice").get(counter)
    assert int(final.content) == workers * count
    assert final.governance.revision == 1 + workers * count
    revisions = [
        json.loads(line)["governance"]["revision"]
        for line in project_lines(fixture_home)
        if counter.encode() in line
    ]
    assert revisions == list(range(1, 2 + workers * count))


COMPACTOR = """
    import sys
    from dsh_memory_tui.store import MemoryStore
    home, workspace, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = MemoryStore.open(home, workspace, "alice")
    for _ in range(count):
        store.compact(store.file_for("project"))
        print("compacted", flush=True)
"""


def test_compaction_while_others_append_loses_nothing(fixture_home: Home) -> None:
    home, workspace = fixture_home
    appenders = [spawn(APPENDER, home, workspace, w, 80) for w in range(2)]
    compactor = spawn(COMPACTOR, home, workspace, 30)
    acked = finish(appenders)
    finish([compactor])
    store = MemoryStore.open(home, workspace, "alice")
    assert set(acked) <= {r.id for r in store.records("project")}
    assert store.view(store.file_for("project")).corrupt == []


TAILER = """
    import sys, time
    from dsh_memory_tui.store import MemoryStore
    home, workspace, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = MemoryStore.open(home, workspace, "alice")
    deadline = time.monotonic() + 60
    seen = set()
    while time.monotonic() < deadline:
        store.refresh()
        seen = {r.id for r in store.records("project")}
        if len(seen) >= expected:
            break
        time.sleep(0.01)  # polling interval of the reader, not a wait for the writer
    print(len(seen), flush=True)
"""


def test_a_tailing_reader_in_another_process_sees_every_append(fixture_home: Home) -> None:
    home, workspace = fixture_home
    store = MemoryStore.open(home, workspace, "alice")
    store.check(repair=True)
    base = len(store.records("project"))
    reader = spawn(TAILER, home, workspace, base + 200)
    writers = [spawn(APPENDER, home, workspace, w, 100) for w in range(2)]
    finish(writers)
    (seen,) = finish([reader])
    assert int(seen) == base + 200


KILLED_WRITER = """
    import sys
    from dsh_memory_tui.model import SourceRef
    from dsh_memory_tui.store import MemoryStore
    home, workspace = sys.argv[1], sys.argv[2]
    store = MemoryStore.open(home, workspace, "alice")
    body = "z" * 48_000  # long lines: a kill can land inside the write
    for i in range(150):
        r = store.propose("project", "fact", f"#{i}", f"{i} {body}",
                          source_refs=[SourceRef(kind="session", id="k")])
        print(r.id, flush=True)
"""


def test_a_writer_killed_mid_write_loses_no_acknowledged_record(fixture_home: Home) -> None:
    home, workspace = fixture_home
    MemoryStore.open(home, workspace, "alice").check(repair=True)  # the fixture's bad lines
    path = workspace / ".dsh/workspace-memory/records.jsonl"
    corrupt = path.with_name("records.jsonl.corrupt")
    quarantined_before = corrupt.read_bytes().splitlines()
    proc = spawn(KILLED_WRITER, home, workspace)
    acked: list[str] = []
    deadline = time.monotonic() + SCRIPT_DEADLINE_S
    assert proc.stdout is not None
    while len(acked) < 12:
        assert time.monotonic() < deadline, "the writer made no progress"
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            acked.append(line.strip())
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=SCRIPT_DEADLINE_S)
    assert proc.returncode == -signal.SIGKILL
    acked += out.split()
    lock_left_by(path, proc.pid)  # killed while holding it, or not

    store = MemoryStore.open(home, workspace, "alice")
    ids = {r.id for r in store.records("project")}
    assert set(acked) <= ids
    view = store.view(store.file_for("project"))
    assert view.corrupt == []  # complete lines are all valid; at most the tail is torn
    torn = view.torn
    store.create("project", "fact", "after the crash", "next writer")
    quarantined = corrupt.read_bytes().splitlines()
    assert quarantined[: len(quarantined_before)] == quarantined_before
    assert len(quarantined) - len(quarantined_before) == (1 if torn else 0)
    assert set(acked) <= {r.id for r in store.records("project")}


CRASH_MID_LINE = """
    import os, signal, sys
    from pathlib import Path
    from dsh_memory_tui.jsonl import SafeFile
    path = Path(sys.argv[1])
    line = Path(sys.argv[2]).read_bytes()
    safe = SafeFile(path, 5)
    with safe.locked():
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, line[: len(line) // 2])
        os.fsync(fd)
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_writer_that_died_mid_line_leaves_only_its_tail_to_quarantine(
    fixture_home: Home, tmp_path: Path
) -> None:
    home, workspace = fixture_home
    store = MemoryStore.open(home, workspace, "alice")
    store.check(repair=True)
    path = store.file_for("project").path
    before = path.read_bytes()
    template = store.create("user", "fact", "template", "a whole line").record
    line_file = tmp_path / "line"
    line_file.write_bytes(
        template.model_copy(
            update={"scope": Scope.PROJECT, "scopeKey": store.paths.root_id}
        ).to_line()
    )
    proc = spawn(CRASH_MID_LINE, path, line_file)
    proc.communicate(timeout=SCRIPT_DEADLINE_S)
    assert proc.returncode == -signal.SIGKILL
    half = line_file.read_bytes()[: len(line_file.read_bytes()) // 2]
    assert path.read_bytes() == before + half

    reader = MemoryStore.open(home, workspace, "alice", lock_timeout_s=0.2)
    view = reader.view(reader.file_for("project"))
    assert view.refresh() is not None  # a reader skips the partial line
    assert view.torn
    assert view.corrupt == []

    # The dead writer's lock stays until it is 60 s old (the host's rule): until then the
    # next writer times out, naming it; then it breaks the lock and writes.
    with pytest.raises(StoreError) as err:
        reader.create("project", "fact", "next", "the next writer")
    assert err.value.code == "LOCK_TIMEOUT"
    assert f"pid {proc.pid} (not running)" in err.value.message
    assert path.read_bytes() == before + half
    assert lock_left_by(path, proc.pid)
    created = reader.create("project", "fact", "next", "the next writer")
    assert not path.with_name("records.jsonl.lock").exists()
    assert path.read_bytes().startswith(before)
    entries = path.with_name("records.jsonl.corrupt").read_bytes().splitlines()
    assert json.loads(entries[-1])["raw"] == half.decode() + "\n"
    last = parse_line(path.read_bytes().splitlines()[-1], view.location)
    assert isinstance(last, Record) and last.id == created.id
