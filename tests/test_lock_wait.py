"""How a writer waits for a held lock: asleep until the lock file goes (inotify on Linux),
polling where it cannot watch. The lock protocol itself (host and us racing, stale locks,
kills) is in ``tests/reliability/test_host_lock.py``.

The watch's safety re-check (50 s here) is set far above the tests' time limits, so an
acquire that returns at all was woken by the lock file's removal, not by a timer.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import WAIT_S, wait_for

from dsh_memory_tui import lock
from dsh_memory_tui.lock import HostLock

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")


class CountingLock(HostLock):
    """A HostLock that counts its tries to create the lock file."""

    tries = 0

    def _try_create(self) -> bool:
        self.tries += 1
        return super()._try_create()


def _plant(path: Path) -> None:
    """A lock file as another process leaves it while it holds the lock."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"1\n")
    os.close(fd)


def _acquire_in_thread(waiter: HostLock) -> tuple[threading.Thread, threading.Event, list]:
    done, errors = threading.Event(), []

    def run() -> None:
        try:
            waiter.acquire()
        except BaseException as exc:  # reported to the test
            errors.append(exc)
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done, errors


@pytest.fixture
def no_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock, "_WATCH_RECHECK_S", 50.0)


def test_a_waiter_sleeps_until_the_lock_file_is_removed(tmp_path: Path, no_timer: None) -> None:
    path = tmp_path / "records.jsonl.lock"
    _plant(path)
    waiter = CountingLock(path, timeout_s=30.0)
    thread, done, errors = _acquire_in_thread(waiter)
    wait_for(lambda: waiter.tries >= 2, "the waiter to find the lock taken")
    held_from = waiter.tries
    # Other entries coming and going in the directory wake it for one more try at most each.
    for i in range(3):
        (tmp_path / f"other{i}").write_bytes(b"x")
        os.unlink(tmp_path / f"other{i}")
    time.sleep(0.3)  # what matters is what it did meanwhile: nearly nothing
    assert not done.is_set() and not errors
    assert waiter.tries - held_from <= 3, f"{waiter.tries - held_from} tries while held: polling"
    os.unlink(path)  # the holder's release
    assert done.wait(WAIT_S), "the release did not wake the waiter"
    thread.join()
    assert not errors
    assert path.read_bytes() == f"{os.getpid()}\n".encode()
    waiter.release()
    assert not path.exists()


def test_without_a_watch_a_waiter_polls_and_still_gets_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock._Vanish, "_failed", True)
    path = tmp_path / "records.jsonl.lock"
    _plant(path)
    waiter = CountingLock(path, timeout_s=30.0)
    thread, done, errors = _acquire_in_thread(waiter)
    wait_for(lambda: waiter.tries >= 20, "the waiter to poll")
    assert not done.is_set()
    os.unlink(path)
    assert done.wait(WAIT_S) and not errors
    thread.join()
    waiter.release()


def test_a_directory_removed_and_made_again_is_watched_anew(tmp_path: Path, no_timer: None) -> None:
    """The kernel drops a watch with its directory: the next wait watches the new one."""
    directory = tmp_path / "project"
    directory.mkdir()

    def wait_then_release(what: str) -> None:
        waiter = CountingLock(directory / "records.jsonl.lock", timeout_s=30.0)
        _plant(waiter.path)
        thread, done, errors = _acquire_in_thread(waiter)
        wait_for(lambda: waiter.tries >= 2, what)
        os.unlink(waiter.path)
        assert done.wait(WAIT_S), f"{what}: not woken"
        thread.join()
        assert not errors
        waiter.release()

    wait_then_release("a wait in the first directory")
    shutil.rmtree(directory)
    directory.mkdir()
    wait_then_release("a wait in the new directory")


def _child_waits(path: str, out: mp.Queue) -> None:
    try:
        HostLock(Path(path), timeout_s=30.0).acquire()
        out.put("took it")
    except BaseException as exc:
        out.put(repr(exc))


def test_a_forked_child_watches_with_its_own_instance(tmp_path: Path, no_timer: None) -> None:
    """A child forked after the parent waited must not share the parent's inotify queue: the
    parent could read the child's events away (the parent reads its queue meanwhile)."""
    path = tmp_path / "records.jsonl.lock"
    _plant(path)
    warm = HostLock(path, timeout_s=0.05)
    with pytest.raises(lock.StoreError):  # the parent has waited once: it has an instance
        warm.acquire()
    assert lock._Vanish._instance is not None
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()
    child = ctx.Process(target=_child_waits, args=(str(path), out))
    child.start()
    try:
        wait_for(lambda: child.pid is not None, "the child")
        # Give the child's wait a moment to begin, then keep reading the parent's queue.
        time.sleep(0.2)
        assert lock._Vanish._instance is not None
        lock._Vanish._instance.mark()
        os.unlink(path)
        lock._Vanish._instance.mark()
        assert out.get(timeout=WAIT_S) == "took it"
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()


def test_threads_of_one_process_wait_at_once_and_each_gets_the_lock(
    tmp_path: Path, no_timer: None
) -> None:
    """Several threads waiting at once (the app's workers, a library's users) share the
    process's one watch: none fails (one poll object polled twice at once raised
    RuntimeError) and none misses the release it waits for (another thread may read it off
    the queue; with the 50 s re-check set here, a missed one would hang the test)."""
    path = tmp_path / "records.jsonl.lock"
    _plant(path)
    took: list[int] = []
    errors: list[BaseException] = []
    waiting = threading.Barrier(7)

    def worker(n: int) -> None:
        waiter = HostLock(path, timeout_s=30.0)
        try:
            waiting.wait(WAIT_S)
            for _ in range(20):
                with waiter.held():
                    took.append(n)
        except BaseException as exc:  # reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(6)]
    for thread in threads:
        thread.start()
    waiting.wait(WAIT_S)
    wait_for(lambda: lock._Vanish._instance is not None, "a thread to watch")
    os.unlink(path)  # the planted holder's release
    for thread in threads:
        thread.join(20)
    assert not any(t.is_alive() for t in threads), "a waiter never woke"
    assert not errors, errors
    assert sorted(took) == sorted(n for n in range(6) for _ in range(20))
    assert not path.exists()
