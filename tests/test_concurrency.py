"""Several real processes on one store: appends and edits at once, compaction under load, a
writer killed with SIGKILL. Waits are on conditions with deadlines, never fixed sleeps.
"""

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

DEADLINE_S = 60.0
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
    deadline = time.monotonic() + DEADLINE_S
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
    deadline = time.monotonic() + DEADLINE_S
    assert proc.stdout is not None
    while len(acked) < 12:
        assert time.monotonic() < deadline, "the writer made no progress"
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            acked.append(line.strip())
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=DEADLINE_S)
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
    proc.communicate(timeout=DEADLINE_S)
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
