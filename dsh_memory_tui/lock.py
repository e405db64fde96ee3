"""The host's lock protocol (SPEC 5), so both programs exclude each other.

The host takes ``<file>.lock`` by creating it with ``O_CREAT|O_EXCL`` (mode 0600) and writing
``<pid>\\n``; it unlinks the file when done. A lock file whose mtime is 60 s old or more is stale:
the host unlinks it and tries once more; a younger one makes the host fail at once ("busy").

We follow the same protocol. ``filelock.FileLock`` (flock) does not: its lock file is never
removed, so the host saw us "busy" for 60 s after every write, and the host's own lock did not
stop us. ``filelock.SoftFileLock`` (4.x) is close but not the same: its marker holds pid, host
and start time where the host writes ``<pid>\n`` (and it cannot judge the host's marker), its
staleness is pid liveness or a lifetime it warns against, not the host's 60 s mtime rule, and it
offers no way to check, before a write becomes visible, that the lock is still ours. Hence this
small module. Unlike the host we wait for a held lock, up to the timeout: on Linux a waiter
sleeps until the lock file's directory loses an entry (inotify, ``_Vanish``) and tries again at
once, so the lock passes from one writer to the next in microseconds; elsewhere, or when inotify
is not available, it polls.
Staleness is the host's rule exactly (its ``withLock``): a lock file whose mtime is 60 s or
more from now is broken, whoever it names: a pid that runs may be pid 1, a reused pid or another
machine's or container's process, and the host breaks it too (so a ``.lock`` committed to git
blocks nobody for long). One difference, for skewed clocks: the host counts a future mtime as
fresh until its clock passes it by 60 s; we count the distance either way, so a lock stamped
more than 60 s ahead of this clock is broken at once (it blocked the host too) and one less
ahead is waited for. A holder we break that was only stopped finds out before its write becomes
visible (``ensure_ours``: ``LOCK_LOST``). ``LOCK_TIMEOUT`` says when the file turns stale.

Bytes and the file system only: no records here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import select
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ErrorCode, StoreError

STALE_AFTER_S = 60.0
FILE_MODE = 0o600
# Waiting is polling (the host offers nothing to block on). A lock is held for about a
# millisecond, so waiters retry about every half millisecond, with jitter; the longer one has
# waited, the more often it retries, so newcomers cannot starve it (a waiter that polled less
# often than newcomers did starve: 9 s waits under steady contention). A try is an O_EXCL
# open and an lstat, so waiting costs a few percent of a core, more only for a long wait.
_POLL_S = 0.0005
_POLL_MIN_S = 0.00005
# With inotify a waiter still looks again this often: a lock file can turn stale (60 s) or a
# holder can die without any directory event, and an event could be missed by a full queue.
_WATCH_RECHECK_S = 0.05


class _Vanish:
    """Wakes a waiter when an entry leaves a watched directory (Linux inotify, through ctypes:
    the standard library has no binding). A lock is released by unlinking its file, so a
    waiter sleeps in ``wait`` instead of polling, and every release wakes it at once.

    One inotify instance per process, kept for its life, with a watch per directory a lock
    was waited for: closing an inotify descriptor waits for an RCU grace period (~0.5 ms
    measured, while the lock is already ours), and users have 128 instances at most. Any
    entry leaving any watched directory wakes every waiter: a spurious wake is one more try
    (~20 us). ``get`` returns None where inotify is missing or refused (another OS, no
    watches left): the caller polls.

    Threads share it through a count of wakes: a waiter notes the count (``mark``) before its
    try and sleeps only while the count is still that (``wait``), so a release that another
    thread read off the descriptor still wakes it. One thread at a time polls the descriptor
    (one ``select.poll`` may not be polled twice at once); the others wait on a condition it
    notifies. A forked child drops the parent's instance (``_after_fork``).
    """

    _IN_DELETE, _IN_MOVED_FROM = 0x200, 0x40
    _IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
    _instance: _Vanish | None = None
    _failed = False
    _guard = threading.Lock()

    def __init__(self, libc: Any, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self._changed = threading.Condition(threading.Lock())
        self._wakes = 0
        self._polling = False  # a thread is in poll(): the others wait for its notify

    @classmethod
    def get(cls, directory: Path) -> _Vanish | None:
        """The process's instance, watching ``directory`` (a watch is added again each time:
        the directory may have been removed and made anew; the kernel keeps one per inode).
        """
        if cls._failed or not sys.platform.startswith("linux"):
            return None
        with cls._guard:
            vanish = cls._instance
            if vanish is None:
                vanish = cls._instance = cls._open()
            if vanish is None:
                return None
            mask = cls._IN_DELETE | cls._IN_MOVED_FROM
            if vanish._libc.inotify_add_watch(vanish._fd, os.fsencode(directory), mask) < 0:
                return None
        return vanish

    @classmethod
    def _open(cls) -> _Vanish | None:
        try:
            import ctypes  # only once a lock is contended: 4 ms to import

            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(cls._IN_NONBLOCK | cls._IN_CLOEXEC)
        except (OSError, AttributeError):
            fd = -1
        if fd < 0:
            cls._failed = True
            return None
        return cls(libc, fd)

    @classmethod
    def _after_fork(cls) -> None:
        """In a forked child: the parent's queue and locks are not the child's to use."""
        vanish, cls._instance, cls._guard = cls._instance, None, threading.Lock()
        if vanish is not None:
            with contextlib.suppress(OSError):
                os.close(vanish._fd)

    def _take_events(self) -> None:
        """Count what the descriptor holds as one wake (condition held)."""
        got = False
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(self._fd, 65536):
                got = True
        if got:
            self._wakes += 1

    def mark(self) -> int:
        """The count of wakes so far: ``wait(mark)`` returns on a newer one."""
        with self._changed:
            self._take_events()
            return self._wakes

    def wait(self, mark: int, timeout_s: float) -> None:
        """Return once an entry left a watched directory after ``mark`` was taken, or after
        the timeout."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                self._take_events()
                left = deadline - time.monotonic()
                if self._wakes != mark or left <= 0:
                    return
                if self._polling:
                    self._changed.wait(left)
                    continue
                self._polling = True
                self._changed.release()
                try:
                    self._poll.poll(left * 1000.0)
                finally:
                    self._changed.acquire()
                    self._polling = False
                    self._take_events()
                    self._changed.notify_all()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_Vanish._after_fork)


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lock, as far as the lock file tells."""

    pid: int | None
    age_s: float  # now - the lock file's mtime: negative when its mtime is in the future
    alive: bool | None  # None: no pid to ask about
    mtime: float = 0.0

    def describe(self) -> str:
        who = f"pid {self.pid}" if self.pid is not None else "an unknown process"
        state = "" if self.alive is None else (" (running)" if self.alive else " (not running)")
        if self.age_s < 0:
            return f"{who}{state}, its mtime {-self.age_s:.1f} s ahead of this clock"
        return f"{who}{state} for {self.age_s:.1f} s"

    def stale_at(self) -> str:
        """When the lock turns stale (UTC), as this clock tells."""
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.mtime + STALE_AFTER_S))


def is_stale(mtime: float, now: float) -> bool:
    """The host's rule, counted both ways (see the module's docstring)."""
    return abs(now - mtime) >= STALE_AFTER_S


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return False
    return True


def read_holder(lock_path: Path) -> tuple[Holder, tuple[int, int, int]] | None:
    """The holder of ``lock_path`` and the lock file's identity (dev, ino, mtime_ns), or None
    when there is no lock file. ``UNSAFE_PATH`` if it is a symlink or not a regular file.
    """
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(
                ErrorCode.UNSAFE_PATH, f"{lock_path}: is a symlink; refusing to use it"
            ) from None
        raise StoreError(
            ErrorCode.LOCK_FAILED, f"{lock_path}: cannot read: {exc.strerror}"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(
                ErrorCode.UNSAFE_PATH, f"{lock_path}: is not a regular file; refusing it"
            )
        text = os.read(fd, 64)
    finally:
        os.close(fd)
    pid: int | None
    try:
        pid = int(text.split(b"\n", 1)[0].strip() or b"x")
    except ValueError:
        pid = None
    alive = None if pid is None else _pid_alive(pid)
    holder = Holder(pid, time.time() - st.st_mtime, alive, st.st_mtime)
    return holder, (st.st_dev, st.st_ino, st.st_mtime_ns)


def timeout_error(lock_path: Path, waited_s: float) -> StoreError:
    """``LOCK_TIMEOUT``: who holds ``lock_path``, since when, and when it may be deleted."""
    found = read_holder(lock_path)
    if found is None:  # released just now
        return StoreError(
            ErrorCode.LOCK_TIMEOUT,
            f"{lock_path} was held for all of {waited_s:g} s (DSH_LOCK_TIMEOUT sets the wait); "
            "try again",
        )
    holder = found[0]
    who = f"pid {holder.pid}" if holder.pid is not None else "its holder"
    return StoreError(
        ErrorCode.LOCK_TIMEOUT,
        f"{lock_path} is held by {holder.describe()} (waited {waited_s:g} s; DSH_LOCK_TIMEOUT "
        f"sets the wait); it turns stale at {holder.stale_at()}, 60 s from its mtime, and the "
        f"host and this program break it then; delete {lock_path} sooner only if {who} is not "
        "writing this store (pid 1, a reused pid, another machine's or container's process)",
    )


class HostLock:
    """``<file>.lock`` taken and released the host's way. Use ``held()``."""

    def __init__(self, lock_path: Path, timeout_s: float) -> None:
        self.path = lock_path
        self._fs_path = os.fspath(lock_path)  # for the os calls of every acquire and release
        self.timeout_s = timeout_s
        # The lock file we created, kept open while held: its inode cannot be reused by a
        # lock file someone else creates after deleting ours (see ``still_ours``).
        self._fd: int | None = None

    def _try_create(self) -> bool:
        try:
            fd = os.open(
                self._fs_path,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                FILE_MODE,
            )
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StoreError(
                    ErrorCode.UNSAFE_PATH, f"{self.path}: is a symlink; refusing it"
                ) from None
            if exc.errno == errno.ENOSPC:
                raise StoreError(ErrorCode.WRITE_FAILED, f"{self.path}: the disk is full") from None
            raise StoreError(
                ErrorCode.LOCK_FAILED, f"{self.path}: cannot create the lock: {exc.strerror}"
            ) from None
        try:
            os.fchmod(fd, FILE_MODE)
            data = memoryview(f"{os.getpid()}\n".encode())
            while data:  # a short write is finished, not an error
                written = os.write(fd, data)
                if written <= 0:
                    raise OSError(errno.EIO, "nothing written")
                data = data[written:]
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self._fs_path)
            if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                raise StoreError(ErrorCode.WRITE_FAILED, f"{self.path}: the disk is full") from None
            raise StoreError(
                ErrorCode.LOCK_FAILED, f"{self.path}: cannot write the lock: {exc}"
            ) from None
        self._fd = fd
        return True

    def _break_if_stale(self) -> bool:
        """Unlink a stale lock (the host's rule: its mtime 60 s or more from now, whatever pid
        it names). True: the lock is gone, try again now.
        """
        try:
            st = os.lstat(self._fs_path)
        except FileNotFoundError:
            return True
        if not stat.S_ISREG(st.st_mode):
            # A link or a FIFO never goes away by waiting: refuse it at once.
            why = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise StoreError(ErrorCode.UNSAFE_PATH, f"{self.path}: is {why}; refusing to use it")
        if not is_stale(st.st_mtime, time.time()):
            return False  # the usual case: one stat, no read
        # The same file we judged stale, still there: unlink it (as the host does).
        try:
            again = os.lstat(self._fs_path)
        except FileNotFoundError:
            return True
        if (again.st_dev, again.st_ino, again.st_mtime_ns) == (
            st.st_dev,
            st.st_ino,
            st.st_mtime_ns,
        ):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._fs_path)
        return True

    def acquire(self) -> None:
        """Take the lock, waiting up to the timeout. ``LOCK_TIMEOUT`` names the holder."""
        if self._try_create():
            return
        self._wait(self._try_create)

    def wait_until_free(self) -> None:
        """Return once no lock file is there (a stale one is broken), or after the timeout
        (then ``acquire`` reports the holder). A writer that is about to decide waits for a
        holder to finish first: the holder's lines are then in what it decides on.
        """
        if not os.path.lexists(self._fs_path):
            return
        with contextlib.suppress(StoreError):  # acquire says it, if it is still so
            self._wait(lambda: not os.path.lexists(self._fs_path))

    def _wait(self, done: Callable[[], bool]) -> None:
        """Wait until ``done()`` (tried again after every release), breaking a stale lock;
        ``LOCK_TIMEOUT`` after the timeout."""
        start = time.monotonic()
        deadline = start + self.timeout_s
        vanish = _Vanish.get(self.path.parent)
        while True:
            # Marked before the try: a release between the try and the wait still wakes us.
            mark = vanish.mark() if vanish is not None else 0
            if done():
                return
            if self._break_if_stale():
                continue
            now = time.monotonic()
            if now >= deadline:
                break
            if vanish is not None:
                vanish.wait(mark, min(_WATCH_RECHECK_S, deadline - now))
                continue
            delay = max(_POLL_MIN_S, _POLL_S / (1 + 10 * (now - start)))
            time.sleep(min(delay * (0.5 + random.random()), deadline - now))
        raise timeout_error(self.path, self.timeout_s)

    def still_ours(self) -> bool:
        """True while the lock file is the one we created (nobody broke it meanwhile).

        Compared by inode with the file we keep open: while it is open its inode number
        cannot be given to a new lock file, even if ours was deleted.
        """
        if self._fd is None:
            return False
        try:
            ours = os.fstat(self._fd)
            st = os.lstat(self._fs_path)
        except FileNotFoundError:
            return False
        return ours.st_nlink > 0 and (st.st_dev, st.st_ino) == (ours.st_dev, ours.st_ino)

    def ensure_ours(self) -> None:
        """``LOCK_LOST`` if another process broke our lock (we were stopped for a minute):
        called before a write becomes visible, so nothing is written over another writer.
        """
        if not self.still_ours():
            raise StoreError(
                ErrorCode.LOCK_LOST,
                f"{self.path} was taken over by another process while this one waited; "
                "nothing was written, try again",
            )

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            if self.still_ours():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._fs_path)
        finally:
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def held(self) -> Iterator[HostLock]:
        self.acquire()
        try:
            yield self
        finally:
            self.release()
