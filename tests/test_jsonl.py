"""The safe file (SPEC 5): tail reader, locked appends, quarantine, atomic replace, modes,
refusal of unsafe paths, the lock timeout and truncate-back, on real files and processes.
"""

from __future__ import annotations

import json
import os
import re
import select
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.jsonl import (
    Appended,
    SafeFile,
    TailReader,
    check_path,
    count_lines,
    read_file,
    write_atomic,
)
from dsh_memory_tui.lock import HostLock
from dsh_memory_tui.model import Record, SourceRef, next_revision
from dsh_memory_tui.store import FileView, MemoryStore

REPO = Path(__file__).parent.parent
DEADLINE_S = 120.0  # waits for other processes: generous, for a busy machine


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# ---------------------------------------------------------------- helpers: real processes


def python(code: str, *args: str, **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,  # type: ignore[arg-type]
    )


def read_line(proc: subprocess.Popen[str], deadline_s: float = DEADLINE_S) -> str:
    """The child's next stdout line, waiting at most ``deadline_s``."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], deadline_s)
    assert ready, "the child process did not answer in time"
    return proc.stdout.readline().strip()


HOLD_LOCK = """
    import os, sys
    from pathlib import Path
    from dsh_memory_tui.lock import HostLock
    with HostLock(Path(sys.argv[1]), 5).held():
        print(os.getpid(), flush=True)
        sys.stdin.readline()
"""


@contextmanager
def lock_held_elsewhere(lock_path: Path) -> Iterator[int]:
    """Another process holds ``lock_path`` (the host's protocol) until the block ends; its pid."""
    proc = python(HOLD_LOCK, str(lock_path))
    try:
        pid = int(read_line(proc))
        assert lock_path.read_bytes() == f"{pid}\n".encode()
        yield pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(DEADLINE_S)
    assert not lock_path.exists()  # the holder unlinked it


def age(path: Path, seconds: float) -> None:
    """Make ``path`` look ``seconds`` old (its mtime is what makes a lock stale)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def pid_of_a_finished_process() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(DEADLINE_S)
    return proc.pid


# ---------------------------------------------------------------- the tail reader


def test_the_first_read_takes_complete_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"one\ntwo\nthr")
    reader = TailReader(path)
    chunk = reader.read_new()
    assert chunk.lines == [b"one", b"two"]
    assert chunk.first_line_no == 1
    assert chunk.torn and chunk.reset and chunk.exists
    assert reader.offset == 8


def test_a_line_is_taken_once_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"one\nhal")
    reader = TailReader(path)
    reader.read_new()
    assert reader.read_new().lines == []
    with path.open("ab") as f:
        f.write(b"f\n")
    chunk = reader.read_new()
    assert (chunk.lines, chunk.first_line_no, chunk.reset, chunk.torn) == (
        [b"half"],
        2,
        False,
        False,
    )


def test_only_bytes_past_the_offset_are_read(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    first = b"".join(
        b"line %03d ................................................\n" % i for i in range(20)
    )
    path.write_bytes(first)
    reader = TailReader(path)
    assert len(reader.read_new().lines) == 20
    # Change a byte well before the offset (same inode, same size): a reader that re-read
    # the file would see it; this one must not.
    with path.open("r+b") as f:
        f.seek(5)
        f.write(b"X")
        f.seek(0, os.SEEK_END)
        f.write(b"new\n")
    chunk = reader.read_new()
    assert (chunk.lines, chunk.first_line_no, chunk.reset) == ([b"new"], 21, False)


def test_a_shrunk_file_is_read_anew(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\nc\n")
    reader = TailReader(path)
    reader.read_new()
    path.write_bytes(b"z\n")  # truncated in place
    chunk = reader.read_new()
    assert (chunk.reset, chunk.lines, chunk.first_line_no) == (True, [b"z"], 1)


def test_a_replaced_file_is_read_anew(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    reader = TailReader(path)
    reader.read_new()
    write_atomic(path, b"a\nb\nc\nd\n")  # a new inode, bigger
    chunk = reader.read_new()
    assert (chunk.reset, chunk.lines) == (True, [b"a", b"b", b"c", b"d"])


def test_a_file_rewritten_in_place_to_a_larger_size_is_read_anew(tmp_path: Path) -> None:
    # Same inode, larger than the offset: only the anchor (the bytes before the offset) shows
    # that these are not the lines already read (as when a freed inode number is reused).
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"first\nsecond\n")
    reader = TailReader(path)
    reader.read_new()
    with path.open("r+b") as f:
        f.write(b"other\nlines!\nthird\n")
    chunk = reader.read_new()
    assert (chunk.reset, chunk.lines) == (True, [b"other", b"lines!", b"third"])


def test_a_missing_file_reads_as_empty_until_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    reader = TailReader(path)
    chunk = reader.read_new()
    assert (chunk.exists, chunk.lines) == (False, [])
    path.write_bytes(b"x\n")
    assert reader.read_new().lines == [b"x"]
    path.unlink()
    assert reader.read_new().exists is False


def test_the_reader_refuses_a_symlink_and_a_fifo(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"secret\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(StoreError) as err:
        TailReader(link).read_new()
    assert err.value.code == "UNSAFE_PATH"
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(StoreError) as err:  # and it does not block on the FIFO
        TailReader(fifo).read_new()
    assert err.value.code == "UNSAFE_PATH"


# ---------------------------------------------------------------- appends, quarantine, replace


def test_appends_add_whole_lines_under_the_lock(tmp_path: Path) -> None:
    safe = SafeFile(tmp_path / "d" / "f.jsonl", 5)
    with safe.locked() as lock:
        assert lock.path == safe.lock_path
        assert mode(safe.lock_path) == 0o600
        safe.append(b'{"a":1}\n')
        safe.append(b'{"b":2}\n')
    assert safe.path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    assert mode(safe.path) == 0o600
    assert mode(safe.path.parent) == 0o700
    assert not safe.lock_path.exists()


def test_quarantine_appends_host_format_entries_and_never_overwrites(tmp_path: Path) -> None:
    safe = SafeFile(tmp_path / "f.jsonl", 5)
    safe.quarantine([(3, "bad one\n"), (7, '{"broken\n')], 1764000000000)
    safe.quarantine([], 1)  # nothing to quarantine: nothing written
    safe.quarantine([(1, "\ufffd not utf-8, é\n")], 1764000000001)
    lines = safe.corrupt_path.read_bytes().splitlines()
    assert [json.loads(x) for x in lines] == [
        {"line": 3, "capturedAt": 1764000000000, "raw": "bad one\n"},
        {"line": 7, "capturedAt": 1764000000000, "raw": '{"broken\n'},
        {"line": 1, "capturedAt": 1764000000001, "raw": "\ufffd not utf-8, é\n"},
    ]
    # Field order and separators as the host writes them (JSON.stringify).
    assert lines[0] == b'{"line":3,"capturedAt":1764000000000,"raw":"bad one\\n"}'
    assert "é".encode() in lines[2]  # UTF-8, not \\u escapes
    assert mode(safe.corrupt_path) == 0o600


def test_a_staged_replace_is_written_before_the_lock_and_renamed_under_it(tmp_path: Path) -> None:
    safe = SafeFile(tmp_path / "f.jsonl", 5)
    safe.path.write_bytes(b"old\n")
    inode = os.stat(safe.path).st_ino
    staged = safe.stage(b"new\n", backup=b"old\n")
    assert safe.path.read_bytes() == b"old\n" and not safe.bak_path.exists()
    assert len(staged.temporaries) == 2 and not safe.lock_path.exists()
    with safe.locked():
        assert staged.install()
    assert safe.path.read_bytes() == b"new\n"
    assert safe.bak_path.read_bytes() == b"old\n"
    assert os.stat(safe.path).st_ino != inode
    assert mode(safe.path) == 0o600 and mode(safe.bak_path) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.jsonl", "f.jsonl.bak"]


def test_a_staged_replace_whose_temporary_was_removed_replaces_nothing(tmp_path: Path) -> None:
    # Another writer's rewrite removes temporaries it takes for a dead writer's: the staged
    # replace says so (stage again) and leaves the file as it was.
    safe = SafeFile(tmp_path / "f.jsonl", 5)
    safe.path.write_bytes(b"old\n")
    staged = safe.stage(b"new\n", backup=None)
    with safe.locked():
        safe.remove_stale_temporaries()
        assert not staged.present()
        assert not staged.install()
    assert safe.path.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.jsonl"]


def test_read_file_reads_from_an_offset(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    got = read_file(path, 4)
    assert got is not None and got[1] == b"456789"
    assert read_file(tmp_path / "missing") is None


# ---------------------------------------------------------------- unsafe paths


@pytest.mark.parametrize("which", ["data", "lock", "bak", "corrupt"])
def test_a_writer_refuses_a_symlink_at_any_of_the_files_paths(tmp_path: Path, which: str) -> None:
    safe = SafeFile(tmp_path / "f.jsonl", 5)
    target = tmp_path / "precious"
    target.write_bytes(b"precious\n")
    link = {
        "data": safe.path,
        "lock": safe.lock_path,
        "bak": safe.bak_path,
        "corrupt": safe.corrupt_path,
    }[which]
    link.symlink_to(target)
    with pytest.raises(StoreError) as err, safe.locked():
        safe.append(b"x\n")
    assert err.value.code == "UNSAFE_PATH"
    assert "symlink" in err.value.message
    assert target.read_bytes() == b"precious\n"
    assert link.is_symlink()


@pytest.mark.parametrize("which", ["data", "lock", "bak", "corrupt"])
def test_a_writer_refuses_a_non_regular_file_at_any_path(tmp_path: Path, which: str) -> None:
    safe = SafeFile(tmp_path / "f.jsonl", 5)
    path = {
        "data": safe.path,
        "lock": safe.lock_path,
        "bak": safe.bak_path,
        "corrupt": safe.corrupt_path,
    }[which]
    os.mkfifo(path)
    with pytest.raises(StoreError) as err, safe.locked():
        safe.append(b"x\n")
    assert err.value.code == "UNSAFE_PATH"
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_write_atomic_refuses_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_bytes(b"keep")
    link = tmp_path / "f.bak"
    link.symlink_to(target)
    with pytest.raises(StoreError) as err:
        write_atomic(link, b"overwrite")
    assert err.value.code == "UNSAFE_PATH"
    assert target.read_bytes() == b"keep"


def test_a_symlinked_store_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    (tmp_path / "store").symlink_to(real)
    safe = SafeFile(tmp_path / "store" / "f.jsonl", 5)
    with pytest.raises(StoreError) as err, safe.locked():
        safe.append(b"x\n")
    assert err.value.code == "UNSAFE_PATH"
    assert list(real.iterdir()) == []


def test_check_path_tells_absent_regular_and_unsafe(tmp_path: Path) -> None:
    assert check_path(tmp_path / "none") is False
    (tmp_path / "f").write_bytes(b"")
    assert check_path(tmp_path / "f") is True
    with pytest.raises(StoreError):
        check_path(tmp_path)


# ---------------------------------------------------------------- modes whatever the umask

UMASK_000_WRITES = """
    import os, sys
    os.umask(0)
    from dsh_memory_tui.store import MemoryStore
    store = MemoryStore.open(sys.argv[1], sys.argv[2], "alice")
    for scope in ("project", "shared-project", "user"):
        r = store.create(scope, "fact", "t " + scope, "c " + scope, confirm_shared=True)
        store.edit(r.id, 1, content="changed", confirm_shared=True)
    s = store.create("session", "fact", "t", "c", session=("s1", None))
    store.forget(s.id)
    for f in store.files():
        store.compact(f, confirm_shared=True)
    with open(store.file_for("project").path, "ab") as f:
        f.write(b"not json\\n")
    store.create("project", "fact", "another", "another")
    safe = store.view(store.file_for("user")).safe
    with safe.locked() as lock:
        print(oct(os.stat(lock.path).st_mode & 0o777), flush=True)
"""


def test_umask_000_still_gives_0700_directories_and_0600_files(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    proc = python(UMASK_000_WRITES, str(home), str(workspace))
    out, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, err
    assert out.split() == ["0o600"]  # the lock file, while it was held
    created = [*home.rglob("*"), *(workspace / ".dsh").rglob("*"), home, workspace / ".dsh"]
    kinds = {p.name.rsplit(".", 1)[-1] for p in created if p.is_file()}
    assert {"jsonl", "bak", "corrupt"} <= kinds
    assert "lock" not in kinds  # every lock was unlinked after use
    for path in created:
        expected = 0o700 if path.is_dir() else 0o600
        assert mode(path) == expected, f"{path} is {oct(mode(path))}"


# ---------------------------------------------------------------- the host's lock


def test_the_lock_file_holds_our_pid_while_held_and_is_removed_after(tmp_path: Path) -> None:
    lock = HostLock(tmp_path / "f.jsonl.lock", 1)
    with lock.held() as held:
        assert held is lock
        assert lock.path.read_bytes() == f"{os.getpid()}\n".encode()
        assert mode(lock.path) == 0o600
        assert lock.still_ours()
        lock.ensure_ours()
    assert not lock.path.exists()
    assert not lock.still_ours()
    with lock.held():  # and it can be taken again
        assert lock.path.exists()
    assert not lock.path.exists()


def test_a_lock_released_after_an_error_is_removed(tmp_path: Path) -> None:
    safe = SafeFile(tmp_path / "f.jsonl", 1)
    with pytest.raises(RuntimeError), safe.locked():
        raise RuntimeError("the work failed")
    assert not safe.lock_path.exists()


def test_a_held_lock_is_lock_timeout_naming_the_holder_not_a_hang(tmp_path: Path) -> None:
    safe = SafeFile(tmp_path / "f.jsonl", 0.2)
    safe.path.write_bytes(b"")
    with lock_held_elsewhere(safe.lock_path) as pid:
        started = time.monotonic()
        with pytest.raises(StoreError) as err, safe.locked():
            pass
        waited = time.monotonic() - started
        assert 0.2 <= waited < DEADLINE_S
        assert safe.lock_path.read_bytes() == f"{pid}\n".encode()  # not broken
        mtime = safe.lock_path.stat().st_mtime
    assert err.value.code == "LOCK_TIMEOUT"
    message = err.value.message
    assert f"pid {pid} (running)" in message
    assert re.search(r"for \d+\.\d s", message), message
    assert "DSH_LOCK_TIMEOUT" in message
    # When it may go: at its mtime + 60 s (the host's rule), sooner only if no writer holds it.
    stale_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(mtime + 60))
    assert f"it turns stale at {stale_at}" in message, message
    assert f"delete {safe.lock_path} sooner only if pid {pid} is not writing" in message
    with safe.locked():  # released: available again
        pass


def test_a_fresh_lock_of_a_dead_process_is_waited_for_not_broken(tmp_path: Path) -> None:
    # Younger than 60 s: the host would not break it either (it may be a slow write).
    lock_path = tmp_path / "f.jsonl.lock"
    pid = pid_of_a_finished_process()
    lock_path.write_bytes(f"{pid}\n".encode())
    age(lock_path, 30)
    with pytest.raises(StoreError) as err, HostLock(lock_path, 0.1).held():
        pass
    assert err.value.code == "LOCK_TIMEOUT"
    assert f"pid {pid} (not running) for 30." in err.value.message
    assert f"delete {lock_path}" in err.value.message
    assert lock_path.read_bytes() == f"{pid}\n".encode()


def test_a_stale_lock_whose_pid_is_not_running_is_broken(tmp_path: Path) -> None:
    lock_path = tmp_path / "f.jsonl.lock"
    lock_path.write_bytes(f"{pid_of_a_finished_process()}\n".encode())
    age(lock_path, 61)
    lock = HostLock(lock_path, 0.5)
    with lock.held():
        assert lock_path.read_bytes() == f"{os.getpid()}\n".encode()
        assert lock.still_ours()
    assert not lock_path.exists()


def test_a_stale_lock_without_a_pid_is_broken(tmp_path: Path) -> None:
    lock_path = tmp_path / "f.jsonl.lock"
    lock_path.write_bytes(b"")
    age(lock_path, 61)
    with HostLock(lock_path, 0.5).held():
        assert lock_path.read_bytes() == f"{os.getpid()}\n".encode()


def test_a_fresh_lock_without_a_pid_names_an_unknown_holder(tmp_path: Path) -> None:
    lock_path = tmp_path / "f.jsonl.lock"
    lock_path.write_bytes(b"")
    with pytest.raises(StoreError) as err, HostLock(lock_path, 0.1).held():
        pass
    assert err.value.code == "LOCK_TIMEOUT"
    assert "an unknown process" in err.value.message
    assert lock_path.exists()


@pytest.mark.parametrize("who", ["a running process", "pid 1"])
def test_a_stale_lock_is_broken_whatever_pid_it_names(who: str, tmp_path: Path) -> None:
    # The host's rule is the mtime alone: a running pid may be pid 1, a reused pid or another
    # container's. Its holder, if only stopped, finds its lock lost before writing (LOCK_LOST).
    # A timeout of 0: taken only if the stale lock is broken without any waiting.
    safe = SafeFile(tmp_path / "f.jsonl", 0)
    if who == "pid 1":
        safe.lock_path.write_bytes(b"1\n")
        age(safe.lock_path, 61)
        with safe.locked():
            assert safe.lock_path.read_bytes() == f"{os.getpid()}\n".encode()
        return
    with lock_held_elsewhere(safe.lock_path) as pid:
        age(safe.lock_path, 61)
        with safe.locked() as lock:
            assert safe.lock_path.read_bytes() == f"{os.getpid()}\n".encode()
            lock.ensure_ours()
        assert pid != os.getpid()


def test_a_lock_stamped_over_60_s_ahead_of_the_clock_is_broken(tmp_path: Path) -> None:
    # A future mtime blocks the host until its clock passes it by 60 s; such a lock cannot be
    # a write under way on a clock within a minute of ours, so it is broken at once.
    lock_path = tmp_path / "f.jsonl.lock"
    lock_path.write_bytes(b"4242\n")
    age(lock_path, -3600)
    with HostLock(lock_path, 5).held():
        assert lock_path.read_bytes() == f"{os.getpid()}\n".encode()
    assert not lock_path.exists()


def test_a_lock_stamped_less_than_60_s_ahead_is_waited_for_and_says_when_it_turns_stale(
    tmp_path: Path,
) -> None:
    # A clock up to a minute ahead of ours may be a live writer's: wait, as the host would.
    lock_path = tmp_path / "f.jsonl.lock"
    lock_path.write_bytes(b"4242\n")
    age(lock_path, -30)
    with pytest.raises(StoreError) as err, HostLock(lock_path, 0.1).held():
        pass
    assert err.value.code == "LOCK_TIMEOUT"
    message = err.value.message
    assert re.search(
        r"pid 4242 \((not )?running\), its mtime \d+\.\d s ahead of this clock", message
    )
    stale_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(lock_path.stat().st_mtime + 60))
    assert f"it turns stale at {stale_at}" in message, message
    assert lock_path.read_bytes() == b"4242\n"


def test_a_lock_deleted_and_taken_by_another_is_lost(tmp_path: Path) -> None:
    lock_path = tmp_path / "f.jsonl.lock"
    lock = HostLock(lock_path, 1)
    lock.acquire()
    try:
        assert lock.still_ours()
        # Someone judged it stale: deleted it and took it (a new file, another inode).
        lock_path.unlink()
        assert not lock.still_ours()
        with pytest.raises(StoreError) as err:
            lock.ensure_ours()
        assert err.value.code == "LOCK_LOST"
        other = HostLock(lock_path, 1)
        other.acquire()
        assert other.still_ours() and not lock.still_ours()
        with pytest.raises(StoreError) as err:
            lock.ensure_ours()
        assert err.value.code == "LOCK_LOST"
    finally:
        lock.release()
    # Releasing a lost lock leaves the new holder's lock alone.
    assert lock_path.read_bytes() == f"{os.getpid()}\n".encode()
    assert other.still_ours()
    other.release()
    assert not lock_path.exists()


def test_a_write_whose_lock_was_lost_writes_nothing(
    fixture_home: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore.open(*fixture_home, "alice", lock_timeout_s=1)
    file = store.file_for("user")
    before = file.path.read_bytes()
    safe = store.view(file).safe
    lock_path = safe.lock_path
    thief = HostLock(lock_path, 1)
    checked = safe.check_paths

    def stolen_once_taken() -> None:
        # Right after we took the lock: broken by another process while we were stopped...
        lock_path.unlink()
        thief.acquire()  # ...and taken by it
        checked()

    monkeypatch.setattr(safe, "check_paths", stolen_once_taken)

    def build(view: FileView) -> tuple[list[Record], None]:
        current = view.current["memory:user:preference:e66c0e9819428e8a34c6049fa9998118"]
        return [next_revision(current, current.updatedAt + 1, {"title": "late"})], None

    with pytest.raises(StoreError) as err:
        store.write(file, build)
    assert err.value.code == "LOCK_LOST"
    assert file.path.read_bytes() == before
    assert thief.still_ours()  # the other holder's lock is left alone
    thief.release()
    assert not lock_path.exists()


def test_dsh_lock_timeout_sets_the_wait(
    fixture_home: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_LOCK_TIMEOUT", "0.1")
    store = MemoryStore.open(*fixture_home, "alice")
    assert store.lock_timeout == 0.1
    path = store.file_for("project").path
    with (
        lock_held_elsewhere(path.with_name(path.name + ".lock")) as pid,
        pytest.raises(StoreError) as err,
    ):
        store.create("project", "fact", "t", "c")
    assert err.value.code == "LOCK_TIMEOUT"
    assert f"pid {pid}" in err.value.message


# ---------------------------------------------------------------- a write that fails part way

PARTIAL_WRITE = """
    import os, resource, signal, sys
    from dsh_memory_tui.errors import StoreError
    from dsh_memory_tui.store import MemoryStore
    store = MemoryStore.open(sys.argv[1], sys.argv[2], "alice")
    path = store.file_for("project").path
    store.records()  # load first: reading needs no room
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = os.path.getsize(path) + 40  # room for part of the line only
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        store.create("project", "fact", "a title", "x" * 500)
    except StoreError as exc:
        print(exc.code, os.path.getsize(path), flush=True)
"""


def test_a_partial_write_is_truncated_back_and_reported(fixture_home: tuple[Path, Path]) -> None:
    home, workspace = fixture_home
    store = MemoryStore.open(home, workspace, "alice")
    store.create("project", "fact", "first", "first")  # quarantines the fixture's bad lines
    path = store.file_for("project").path
    before = path.read_bytes()
    proc = python(PARTIAL_WRITE, str(home), str(workspace))
    out, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, err
    code, size = out.split()
    assert code == "WRITE_FAILED"
    assert int(size) == len(before)
    assert path.read_bytes() == before


# ---------------------------------------------------------------- counting quarantine entries


def test_count_lines_counts_non_blank_lines_across_chunk_edges(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl.corrupt"
    # Lines that straddle the 1 MiB chunk boundary, blank lines, and a last line without LF.
    entry = b'{"line":1,"capturedAt":0,"raw":"' + b"x" * 1000 + b'"}\n'
    data = entry * 1100 + b"\n  \n" + entry * 3 + b'{"line":9'
    path.write_bytes(data)
    got = count_lines(path)
    assert got is not None and got.total == 1104 and got.lines == 1103 and got.open_line
    assert got.total == sum(1 for line in data.split(b"\n") if line.strip())


def test_count_lines_reads_only_what_was_appended_and_starts_over_when_replaced(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.jsonl.corrupt"
    path.write_bytes(b"a\nb")
    first = count_lines(path)
    assert first is not None and first.total == 2
    assert count_lines(path, first) is first  # unchanged: nothing read
    with path.open("ab") as f:
        f.write(b"c\nd\n")  # "b" gets the rest of its line: still one line
    grown = count_lines(path, first)
    assert grown is not None and grown.total == 3 and grown.size == 7
    path.unlink()
    path.write_bytes(b"z\n")
    assert count_lines(path, grown).total == 1  # type: ignore[union-attr]
    assert count_lines(tmp_path / "missing") is None
    link = tmp_path / "link.corrupt"
    link.symlink_to(path)
    assert count_lines(link) is None  # never followed


def _failing_fsync(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """fsync and fdatasync fail with EIO for ``path``'s file (by inode), as a disk error
    reports it."""
    import errno

    from dsh_memory_tui import jsonl

    inode = os.stat(path).st_ino

    def failing(real: Callable[[int], None]) -> Callable[[int], None]:
        def sync(fd: int) -> None:
            if os.fstat(fd).st_ino == inode:
                raise OSError(errno.EIO, "Input/output error")
            real(fd)

        return sync

    monkeypatch.setattr(jsonl.os, "fsync", failing(os.fsync))
    if hasattr(os, "fdatasync"):  # what an append's sync calls where there is one
        monkeypatch.setattr(jsonl.os, "fdatasync", failing(os.fdatasync))


def _appended_unsynced(tmp_path: Path) -> tuple[SafeFile, Appended]:
    """A file of one line, and our line appended under the lock, its fsync still to come."""
    safe = SafeFile(tmp_path / "records.jsonl", 5.0)
    safe.path.write_bytes(b'{"before":1}\n')
    with safe.locked():
        return safe, safe.append_unsynced(b'{"ours":1}\n')


def test_a_failed_fsync_after_the_release_cuts_the_lines_off_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    safe, appended = _appended_unsynced(tmp_path)
    _failing_fsync(monkeypatch, safe.path)
    with pytest.raises(StoreError) as failed:
        appended.sync(safe.locked)
    assert failed.value.code == "WRITE_FAILED" and "may still be" not in failed.value.message
    assert safe.path.read_bytes() == b'{"before":1}\n'
    assert not safe.lock_path.exists()


def test_a_failed_sync_is_the_error_a_write_reports_even_when_the_reread_fails_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing disk: the sync of our append fails, and so does the read that brings the
    view back to the file. The caller is told the write failed (not that a read did), and
    the lines are cut off again."""
    import errno

    from dsh_memory_tui import jsonl

    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = MemoryStore.open(tmp_path / "home", workspace, "alice")
    store.propose(
        "project", "fact", "first", "a first fact", source_refs=[SourceRef(kind="session", id="s1")]
    )
    path = store.file_for("project").path
    before = path.read_bytes()
    _failing_fsync(monkeypatch, path)
    inode, real_pread = os.stat(path).st_ino, os.pread

    def pread(fd: int, n: int, at: int) -> bytes:
        if os.fstat(fd).st_ino == inode:
            raise OSError(errno.EIO, "Input/output error")
        return real_pread(fd, n, at)

    monkeypatch.setattr(jsonl.os, "pread", pread)
    with pytest.raises(StoreError) as failed:
        store.propose(
            "project",
            "fact",
            "second",
            "a second fact",
            source_refs=[SourceRef(kind="session", id="s1")],
        )
    assert failed.value.code == "WRITE_FAILED", failed.value
    assert "sync" in failed.value.message or "fsync" in failed.value.message, failed.value
    monkeypatch.undo()
    assert path.read_bytes() == before


def test_a_failed_fsync_leaves_lines_another_writer_appended_after_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    safe, appended = _appended_unsynced(tmp_path)
    with safe.locked():  # the next writer, between our release and our fsync
        safe.append(b'{"theirs":1}\n')
    _failing_fsync(monkeypatch, safe.path)
    with pytest.raises(StoreError) as failed:
        appended.sync(safe.locked)
    assert failed.value.code == "WRITE_FAILED" and "may still be" in failed.value.message
    assert safe.path.read_bytes() == b'{"before":1}\n{"ours":1}\n{"theirs":1}\n'


def test_a_failed_fsync_does_not_cut_the_file_a_compaction_renamed_to_bak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host compacts between our release and our fsync: file -> .bak, a new file in its
    place (with our line, read from the page cache). The .bak is not cut."""
    safe, appended = _appended_unsynced(tmp_path)
    _failing_fsync(monkeypatch, safe.path)
    with safe.locked():
        compacted = safe.path.read_bytes()
        os.rename(safe.path, safe.bak_path)
        safe.path.write_bytes(compacted)
    with pytest.raises(StoreError) as failed:
        appended.sync(safe.locked)
    assert "may still be" in failed.value.message
    assert safe.bak_path.read_bytes() == b'{"before":1}\n{"ours":1}\n'
    assert safe.path.read_bytes() == b'{"before":1}\n{"ours":1}\n'
