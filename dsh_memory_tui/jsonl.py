"""The safe file: appends under the host's lock, an offset tail reader, quarantine, atomic replace.

This layer knows bytes and lines, not records. Every path it touches is checked first: a
symlink or anything but a regular file is ``UNSAFE_PATH`` and is never followed. Files are
created 0600 and directories 0700 whatever the umask.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ErrorCode, StoreError
from .lock import HostLock

MAX_STORE_BYTES = 8 * 1024 * 1024
# The most a store file may hold for us to read it: four times the host's cap, so a file the
# host refuses can still be reviewed and compacted here (~180 MB of memory at this size); past
# it nothing of it is read, shown or written (``TooLargeToRead``; docs/reliability.md).
MAX_READ_BYTES = 32 * 1024 * 1024
FILE_MODE = 0o600
DIR_MODE = 0o700
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


def _unsafe(path: Path | str, why: str) -> StoreError:
    return StoreError(ErrorCode.UNSAFE_PATH, f"{path}: {why}; refusing to use it")


def _io_error(path: Path | str, action: str, exc: OSError) -> StoreError:
    if exc.errno == errno.ELOOP:
        return _unsafe(path, "is a symlink")
    if exc.errno == errno.ENOSPC:
        return StoreError(ErrorCode.WRITE_FAILED, f"{path}: {action} failed: the disk is full")
    if exc.errno == errno.ENOTDIR:
        return _unsafe(path, "has a file where a directory belongs on its way")
    if exc.errno == errno.ENAMETOOLONG:
        return StoreError(ErrorCode.USAGE, f"{str(path)[:80]}...: the path is too long")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StoreError(
            ErrorCode.PERMISSION_DENIED, f"{path}: {action} failed: permission denied"
        )
    return StoreError(ErrorCode.WRITE_FAILED, f"{path}: {action} failed: {exc.strerror or exc}")


def check_path(path: Path | str) -> bool:
    """True if ``path`` is a regular file, False if absent; ``UNSAFE_PATH`` for anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _io_error(path, "stat", exc) from None
    if stat.S_ISLNK(st.st_mode):
        raise _unsafe(path, "is a symlink")
    if not stat.S_ISREG(st.st_mode):
        raise _unsafe(path, "is not a regular file")
    return True


def check_dir(path: Path | str) -> bool:
    """True if ``path`` is a safe directory, False if absent; ``UNSAFE_PATH`` otherwise.

    Safe: a real directory (not a symlink) that is not world-writable (unless sticky). A
    group-writable directory is accepted: a project checked out under umask 002 has them.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _io_error(path, "stat", exc) from None
    if stat.S_ISLNK(st.st_mode):
        raise _unsafe(path, "is a symlink to a directory")
    if not stat.S_ISDIR(st.st_mode):
        raise _unsafe(path, "is not a directory")
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise _unsafe(path, "is writable by every user")
    return True


def ensure_dir(path: Path, root: Path | None = None, dirs: list[str] | None = None) -> None:
    """Create ``path`` and missing parents 0700 (whatever the umask), then check it, and with
    a ``root``, every directory between ``root`` and ``path`` too: a symlink there (a cloned
    project's ``.dsh -> elsewhere``) would send our writes outside the tree. ``UNSAFE_PATH``.
    ``dirs``: ``dirs_to_check(path, root)``, when the caller keeps it.
    """
    dirs = dirs_to_check(path, root) if dirs is None else dirs
    if check_dir(dirs[0]):  # the usual case: one lstat per directory
        for directory in dirs[1:]:
            check_dir(directory)
        return
    missing: list[Path] = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            continue
        except OSError as exc:
            raise _io_error(d, "creating the directory", exc) from None
        os.chmod(d, DIR_MODE)
    for directory in dirs:
        check_dir(directory)


def check_dirs(path: Path, root: Path | None = None) -> None:
    """``UNSAFE_PATH`` if ``path``, or with a ``root`` any directory between ``root`` and it, is
    a symlink, not a directory or writable by everyone. Missing ones are fine (nothing to read).
    Readers call this too: a ``.dsh`` linked to another project's would show its records.
    """
    for directory in dirs_to_check(path, root):
        check_dir(directory)


def dirs_to_check(path: Path, root: Path | None = None) -> list[str]:
    """``path`` and every directory between ``root`` and it (what ``check_dirs`` checks), as
    strings: each write checks them again, and a ``Path`` is converted at every ``lstat``.
    """
    out = [path]
    if root is not None and path.is_relative_to(root):
        out += [root / parent for parent in path.relative_to(root).parents if parent != Path(".")]
    return [os.fspath(p) for p in out]


def sync_data(fd: int) -> None:
    """What makes appended lines durable: their bytes and the size that reaches them, not the
    file's times. ``fdatasync`` where there is one, else ``fsync``. Measured on ext4, four
    processes appending: 1,900 -> 3,900 synced appends/s alone; no clear gain once each append
    also creates and unlinks the host's lock file, whose entries share the journal commit.
    """
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:
        os.fsync(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_private(path: Path, flags: int) -> tuple[int, bool]:
    """Open for writing with O_NOFOLLOW; a non-regular file is ``UNSAFE_PATH``. Returns the
    descriptor and whether this call created the file.

    A file this call creates is 0600 whatever the umask; an existing file keeps its mode.
    """
    check_path(path)
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        if flags & os.O_CREAT and not flags & os.O_EXCL:
            # Open the usual existing file first; create with O_EXCL to know it is ours to chmod.
            try:
                fd, created = os.open(path, flags & ~os.O_CREAT), False
            except FileNotFoundError:
                try:
                    fd, created = os.open(path, flags | os.O_EXCL, FILE_MODE), True
                except FileExistsError:
                    fd, created = os.open(path, flags & ~os.O_CREAT), False
        else:
            fd, created = os.open(path, flags, FILE_MODE), bool(flags & os.O_CREAT)
    except OSError as exc:
        raise _io_error(path, "opening", exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _unsafe(path, "is not a regular file")
        if created and stat.S_IMODE(st.st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[n:]


@dataclass(slots=True)
class Appended:
    """Lines appended to a file whose fsync is still to come (its descriptor open).

    A writer appends with the lock held and syncs after releasing it (``sync``): the next
    writer's append need not wait for this one's disk, and several writers' fsyncs share one
    journal commit. Nothing is acknowledged before ``sync`` returns.
    """

    path: Path
    fd: int
    start: int
    stat: os.stat_result  # the file's, just after the append
    created: bool
    action: str
    synced: bool = False  # then the descriptor is closed and ``sync`` does nothing

    def sync(self, relock: Callable[[], contextlib.AbstractContextManager[object]] | None) -> None:
        """fsync (and the directory's, for a new file), then close. On a failure the
        appended lines are cut off again (``relock``: how to take the lock back for that,
        None when it is still held) unless another writer has appended since or the file is
        no longer at its path (the host's compaction renames it to ``.bak``): then the error
        says the lines may still be there. ``WRITE_FAILED`` either way.
        """
        if self.synced:
            return
        self.synced = True
        try:
            sync_data(self.fd)
        except OSError as exc:
            cut = self._undo(relock)
            error = _io_error(self.path, self.action, exc)
            if not cut:
                error = StoreError(
                    error.code,
                    f"{error.message}; the lines written may still be in the file (another "
                    "writer had appended after them): look before writing them again",
                )
            raise error from None
        finally:
            os.close(self.fd)
        if self.created:
            try:
                fsync_dir(self.path.parent)
            except OSError as exc:
                raise _io_error(self.path.parent, "syncing the directory", exc) from None

    def _undo(self, relock: Callable[[], contextlib.AbstractContextManager[object]] | None) -> bool:
        """Cut the appended lines off again, if nothing came after them; True if cut."""
        cut = False
        held = relock() if relock is not None else contextlib.nullcontext()
        with contextlib.suppress(OSError, StoreError), held:
            st = os.fstat(self.fd)
            at_path = os.lstat(self.path)
            if (
                st.st_nlink
                and (at_path.st_dev, at_path.st_ino) == (st.st_dev, st.st_ino)
                and st.st_size == self.stat.st_size  # nobody appended since
            ):
                os.ftruncate(self.fd, self.start)
                cut = True
                sync_data(self.fd)  # best effort: the disk just failed one
        return cut


def _append(path: Path, data: bytes, action: str) -> Appended:
    """Append ``data`` to ``path`` (created 0600), not synced yet; on a failure cut the file
    back to its old size and raise ``WRITE_FAILED``.
    """
    fd, created = _open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        start = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            after = os.fstat(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
                sync_data(fd)
            raise _io_error(path, action, exc) from None
    except BaseException:
        os.close(fd)
        raise
    return Appended(path, fd, start, after, created, action)


def _append_synced(path: Path, data: bytes, action: str) -> tuple[int, os.stat_result]:
    """Append ``data`` to ``path`` (created 0600) and fsync, lock held; on any failure cut the
    file back to its old size and raise ``WRITE_FAILED``. Returns the start offset and stat.
    """
    appended = _append(path, data, action)
    appended.sync(None)
    return appended.start, appended.stat


def temp_suffix() -> str:
    """The random part of a temporary's name: ``secrets.token_hex(4)``, without loading
    secrets (and hmac) into every command."""
    return os.urandom(4).hex()


def _stage(path: Path, data: bytes) -> Path:
    """Write ``data`` to a new 0600 temporary beside ``path`` and fsync it; returns its path.
    ``UNSAFE_PATH`` or ``WRITE_FAILED`` (then no temporary is left).
    """
    check_path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{temp_suffix()}.tmp")
    fd, _ = _open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _io_error(path, "writing", exc) from None
    return tmp


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a 0600 temporary in the same directory, fsync, rename,
    fsync the directory. Raises ``UNSAFE_PATH`` or ``WRITE_FAILED``; ``path`` is then unchanged.
    """
    tmp = _stage(path, data)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _io_error(path, "writing", exc) from None
    try:
        fsync_dir(path.parent)
    except OSError as exc:
        raise _io_error(path.parent, "syncing the directory", exc) from None


@dataclass(slots=True)
class Staged:
    """A file's replacement and its backup's, written and fsynced to temporaries beside them
    before the lock is taken: ``install`` (lock held) is only the renames and the directory's
    fsync. ``discard`` removes what was not installed.
    """

    moves: list[tuple[Path, Path]]  # (temporary, destination), the backup first

    @property
    def temporaries(self) -> set[str]:
        return {tmp.name for tmp, _ in self.moves}

    def install(self) -> bool:
        """Rename each temporary over its destination, then fsync the directory. False when a
        temporary is gone (another writer's rewrite removed it as a dead writer's): nothing
        of the file was replaced then (the backup may have been); stage again.
        ``UNSAFE_PATH``, ``WRITE_FAILED``.
        """
        directory = self.moves[-1][1].parent
        while self.moves:
            tmp, dest = self.moves[0]
            check_path(dest)
            try:
                os.replace(tmp, dest)
            except FileNotFoundError:
                if os.path.lexists(tmp):
                    raise
                self.discard()
                return False
            except OSError as exc:
                self.discard()
                raise _io_error(dest, "writing", exc) from None
            self.moves.pop(0)
        try:
            fsync_dir(directory)
        except OSError as exc:
            raise _io_error(directory, "syncing the directory", exc) from None
        return True

    def present(self) -> bool:
        """True while every temporary not yet installed is still there."""
        return all(os.path.lexists(tmp) for tmp, _ in self.moves)

    def discard(self) -> None:
        for tmp, _ in self.moves:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self.moves = []


class TooLargeToRead(StoreError):
    """A file larger than a reader takes (``STORE_TOO_LARGE``): nothing of it was read.
    ``st``: its stat, so a reader can remember it unread."""

    def __init__(self, path: Path | str, st: os.stat_result, limit: int) -> None:
        super().__init__(ErrorCode.STORE_TOO_LARGE, too_large_to_read(path, st.st_size, limit))
        self.st = st


def too_large_to_read(path: Path | str, size: int, limit: int = MAX_READ_BYTES) -> str:
    """Why ``path`` is not read: its size against ``limit`` (for a store file, the host's)."""
    store = (
        " (the host reads at most 8 MiB): none of its records are shown or changed; move it "
        f"away, or cut it below {_size_text(limit)} (its newest lines are at its end)"
        if limit == MAX_READ_BYTES
        else ""
    )
    return f"{path} is {_size_text(size)}, over the {_size_text(limit)} this program reads{store}"


def _size_text(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


def read_file(
    path: Path, offset: int = 0, limit: int = MAX_READ_BYTES
) -> tuple[os.stat_result, bytes] | None:
    """Read ``path`` from ``offset`` to its end without following links or blocking.

    None if the file does not exist; ``UNSAFE_PATH`` if it is a link, FIFO, directory...;
    ``TooLargeToRead`` (``STORE_TOO_LARGE``) before reading a byte when the file is larger
    than ``limit`` (a store file's ``MAX_READ_BYTES`` by default), wherever ``offset`` is.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _unsafe(path, "is a symlink") from None
        raise StoreError(ErrorCode.READ_FAILED, f"{path}: cannot open: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _unsafe(path, "is not a regular file")
        if st.st_size > limit:
            raise TooLargeToRead(path, st, limit)
        if offset >= st.st_size:
            return st, b""
        chunks = []
        pos = offset
        while True:
            chunk = os.pread(fd, max(_CHUNK, st.st_size - pos), pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
            if pos > limit:  # it grew past the limit while being read
                raise TooLargeToRead(path, os.fstat(fd), limit)
        return st, b"".join(chunks)
    except OSError as exc:
        raise StoreError(ErrorCode.READ_FAILED, f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class LineCount:
    """The non-blank lines of a file as far as it was read (``count_lines``)."""

    identity: tuple[int, int]
    size: int
    mtime_ns: int
    lines: int
    open_line: bool  # the last line read has no newline yet (a partial or final entry)

    @property
    def total(self) -> int:
        """Lines, the last one without a newline included."""
        return self.lines + self.open_line


def count_lines(path: Path, since: LineCount | None = None) -> LineCount | None:
    """Count the non-blank lines of ``path`` (a quarantine file: one entry per line), reading
    it in 1 MiB chunks so its size costs no memory. ``since``: an earlier count of the same
    file; an unchanged file is one ``fstat``, a grown one is read from where that count ended.
    None when the file is absent, unreadable or not a regular file (nothing is followed).
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        identity = (st.st_dev, st.st_ino)
        lines, open_line, pos = 0, False, 0
        if since is not None and since.identity == identity and since.size <= st.st_size:
            if since.size == st.st_size and since.mtime_ns == st.st_mtime_ns:
                return since
            if since.size < st.st_size:  # appended to (a .corrupt only grows)
                lines, open_line, pos = since.lines, since.open_line, since.size
        while True:
            chunk = os.pread(fd, _CHUNK, pos)
            if not chunk:
                break
            pos += len(chunk)
            *complete, rest = chunk.split(b"\n")
            for line in complete:
                if open_line or line.strip():
                    lines += 1
                open_line = False
            open_line = open_line or bool(rest.strip())
        return LineCount(identity, pos, st.st_mtime_ns, lines, open_line)
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass(slots=True)
class TailChunk:
    """What a ``TailReader.read`` found: complete new lines, and whether to start over."""

    reset: bool
    lines: list[bytes]
    first_line_no: int  # 1-based number of lines[0] in the file
    exists: bool
    size: int
    tail: bytes  # what follows the last newline: a write in progress, or a line without LF
    unread: bool = False  # over MAX_READ_BYTES: nothing of it was read

    @property
    def torn(self) -> bool:
        return bool(self.tail)


_ANCHOR_BYTES = 64


@dataclass(slots=True)
class TailReader:
    """Reads only the complete lines appended since the last call. Takes no lock.

    It remembers the file's identity (device, inode) and the last bytes before its offset
    (the anchor); when the file is replaced, shrinks below the offset, or no longer holds the
    anchor where it was (an inode reused by a new file), it starts over from the beginning.
    """

    path: Path
    offset: int = 0
    line_count: int = 0
    identity: tuple[int, int] | None = None
    _size: int = field(default=0, repr=False)
    _mtime_ns: int = field(default=0, repr=False)
    _anchor: bytes = field(default=b"", repr=False)
    _tail: bytes = field(default=b"", repr=False)
    _unread: bool = field(default=False, repr=False)

    def read(self) -> TailChunk:
        """The whole file, from the start."""
        return self._start_over()

    def read_new(self) -> TailChunk:
        """Only what was appended since the last read (the whole file the first time).

        ``UNSAFE_PATH`` if the path is a symlink or not a regular file.
        """
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            if self._renamed_to_backup():
                # The host's compaction renames the file to .bak, then its temporary in:
                # a moment with no file is not a deletion. The next read sees the new file.
                return TailChunk(False, [], self.line_count + 1, True, self._size, b"")
            return self._start_over()
        if stat.S_ISREG(st.st_mode) and st.st_size > MAX_READ_BYTES:
            return self._not_read(st)
        if (
            not stat.S_ISREG(st.st_mode)
            or self.identity != (st.st_dev, st.st_ino)
            or st.st_size < self.offset
        ):
            return self._start_over()
        if st.st_size == self._size and st.st_mtime_ns == self._mtime_ns:
            return TailChunk(False, [], self.line_count + 1, True, self._size, self._tail)
        back = len(self._anchor)
        try:
            got = read_file(self.path, self.offset - back)
        except TooLargeToRead as exc:  # it grew past the limit since the stat
            return self._not_read(exc.st)
        if (
            got is None
            or (got[0].st_dev, got[0].st_ino) != self.identity
            or not got[1].startswith(self._anchor)
        ):
            return self._start_over()
        return self._take(got[0], got[1], back, reset=False)

    def took_append(self, data: bytes, start: int, st: os.stat_result) -> bool:
        """Step over complete lines this process just appended at ``start`` (lock held), so
        they need not be read back. False (nothing changed) unless the reader was exactly at
        the end of the file before the append and the file is exactly that much longer.
        """
        if (
            self.identity != (st.st_dev, st.st_ino)
            or self.offset != start
            or self._size != start
            or st.st_size != start + len(data)
            or not data.endswith(b"\n")
        ):
            return False
        self.offset = self._size = st.st_size
        self._mtime_ns = st.st_mtime_ns
        self._tail = b""
        self.line_count += data.count(b"\n")
        self._anchor = (self._anchor + data)[-_ANCHOR_BYTES:]
        return True

    def unchanged(self, st: os.stat_result | None = None) -> bool:
        """True if the file is exactly as the last read left it: the same inode, size and
        mtime (absent if it was absent). One ``lstat``, or none given ``st`` (the file's). A
        writer that decided on what it read checks this under the lock before writing.
        """
        if st is None:
            try:
                st = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                return self.identity is None
        return (
            self.identity == (st.st_dev, st.st_ino)
            and st.st_size == self._size
            and st.st_mtime_ns == self._mtime_ns
        )

    def _renamed_to_backup(self) -> bool:
        """True if the file we were reading is now ``<file>.bak`` (a compaction under way)."""
        if self.identity is None:
            return False
        try:
            st = os.stat(self.path.with_name(self.path.name + ".bak"), follow_symlinks=False)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.identity

    def _not_read(self, st: os.stat_result) -> TailChunk:
        """A file over ``MAX_READ_BYTES``: nothing of it is read. It is remembered (identity,
        size, mtime) unread, so while it stays so a read costs one ``stat`` and changes
        nothing; a reset when it was read before or changed since."""
        same = (
            self._unread
            and self.identity == (st.st_dev, st.st_ino)
            and (self._size, self._mtime_ns) == (st.st_size, st.st_mtime_ns)
        )
        self.identity = (st.st_dev, st.st_ino)
        self._size, self._mtime_ns = st.st_size, st.st_mtime_ns
        self.offset = self.line_count = 0
        self._anchor = self._tail = b""
        self._unread = True
        return TailChunk(not same, [], 1, True, st.st_size, b"", unread=True)

    def _start_over(self) -> TailChunk:
        try:
            got = read_file(self.path, 0)
        except TooLargeToRead as exc:
            return self._not_read(exc.st)
        self._unread = False
        self.offset = 0
        self.line_count = 0
        self._anchor = b""
        if got is None:
            # A file that was absent and still is: no change, so no reset to act on.
            changed = self.identity is not None
            self.identity = None
            self._size = 0
            self._mtime_ns = 0
            self._tail = b""
            return TailChunk(changed, [], 1, False, 0, b"")
        return self._take(got[0], got[1], 0, reset=True)

    def _take(self, st: os.stat_result, data: bytes, skip: int, reset: bool) -> TailChunk:
        """Take the complete lines of ``data[skip:]`` (``data`` starts at offset - skip)."""
        self._unread = False
        self.identity = (st.st_dev, st.st_ino)
        self._mtime_ns = st.st_mtime_ns
        end = data.rfind(b"\n", skip) + 1
        if end:
            lines = data[skip:end].split(b"\n")
            lines.pop()
            self._anchor = data[max(0, end - _ANCHOR_BYTES) : end]
        else:
            lines, end = [], skip
        first = self.line_count + 1
        self.offset += end - skip
        self.line_count += len(lines)
        self._size = self.offset + len(data) - end
        self._tail = data[end:]
        return TailChunk(reset, lines, first, True, self._size, self._tail)


class SafeFile:
    """One data file with its ``.lock``, ``.bak`` and ``.corrupt`` neighbours."""

    def __init__(self, path: Path, lock_timeout: float, root: Path | None = None) -> None:
        self.path = path
        self.root = root  # directories below it are checked too (see ensure_dir)
        self.lock_path = path.with_name(path.name + ".lock")
        self.bak_path = path.with_name(path.name + ".bak")
        self.corrupt_path = path.with_name(path.name + ".corrupt")
        self.lock_timeout = lock_timeout
        self.lock = HostLock(self.lock_path, lock_timeout)
        self._dirs = dirs_to_check(path.parent, root)  # pathlib once, not per write
        self._path_strs = [os.fspath(p) for p in self.paths]

    @property
    def paths(self) -> tuple[Path, Path, Path, Path]:
        """The data file, its lock, backup and quarantine paths."""
        return (self.path, self.lock_path, self.bak_path, self.corrupt_path)

    def check_paths(self) -> None:
        """``UNSAFE_PATH`` if the data, lock, backup or quarantine path is a symlink or not a
        regular file: a writer refuses before touching any of them.
        """
        for path in self._path_strs:
            check_path(path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[HostLock]:
        """Hold ``<file>.lock`` the host's way (``lock.py``); ``LOCK_TIMEOUT`` after the
        timeout, never a hang.

        Creates the directory (0700) if needed; ``UNSAFE_PATH`` if any of the file's paths is
        unsafe: the directories before the lock, the lock path while taking it, the others
        once it is held (nothing is written before that).
        """
        ensure_dir(self.path.parent, self.root, self._dirs)
        with self.lock.held():
            # A path might have been swapped for a link while we waited.
            self.check_paths()
            yield self.lock

    def size(self) -> int:
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return 0
        return st.st_size

    def append(self, data: bytes) -> tuple[int, os.stat_result]:
        """Append complete lines and fsync (call with the lock held). On any failure the file
        is truncated back to its old size and ``WRITE_FAILED`` is raised.

        Returns the offset the data was written at and the file's stat after the write.
        """
        return _append_synced(self.path, data, "appending")

    def append_unsynced(self, data: bytes) -> Appended:
        """Append complete lines (lock held); the caller calls ``sync(self.locked)`` on the
        result once it has released the lock, and acknowledges nothing before that. The first
        append to a new file is synced here, under the lock: its directory entry must be
        durable before another writer can append to it and acknowledge a line in it."""
        appended = _append(self.path, data, "appending")
        if appended.created:
            appended.sync(None)
        return appended

    def quarantine(self, entries: list[tuple[int, str]], captured_at: int) -> None:
        """Append ``(line number, raw text)`` entries to ``<file>.corrupt`` in the host's format
        (``{"line", "capturedAt", "raw"}`` per line; never overwritten) and fsync; on a failure
        ``.corrupt`` is cut back to where it was and ``WRITE_FAILED`` is raised.
        """
        if not entries:
            return
        data = b"".join(
            json.dumps(
                {"line": line_no, "capturedAt": captured_at, "raw": raw},
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode()
            + b"\n"
            for line_no, raw in entries
        )
        _append_synced(self.corrupt_path, data, "quarantining")

    def remove_stale_temporaries(self, keep: Collection[str] = ()) -> None:
        """Delete temporaries of this file and its backup (lock held) but ``keep``'s: a writer
        that died in the middle of a replace left them, or a live one staged them and will
        stage again (``Staged.install``). They may hold text that a forget has since erased.
        """
        for name in os.listdir(self.path.parent):
            if (
                name.endswith(".tmp")
                and name.startswith((f".{self.path.name}.", f".{self.bak_path.name}."))
                and name not in keep
            ):
                stale = self.path.parent / name
                with contextlib.suppress(FileNotFoundError):
                    if stat.S_ISREG(os.lstat(stale).st_mode):
                        os.unlink(stale)

    def append_corrupt_bytes(self, data: bytes) -> None:
        """Append another ``.corrupt`` file's entries to ours (a file being merged into ours)."""
        _append_synced(self.corrupt_path, data, "quarantining")

    def stage(self, data: bytes, backup: bytes | None) -> Staged:
        """The replacement of the file by ``data`` (and of ``.bak`` by ``backup``), staged in
        fsynced temporaries; no lock needed. ``Staged.install`` puts it in place.
        """
        moves: list[tuple[Path, Path]] = []
        staged = Staged(moves)
        try:
            if backup is not None:
                moves.append((_stage(self.bak_path, backup), self.bak_path))
            moves.append((_stage(self.path, data), self.path))
        except BaseException:
            staged.discard()
            raise
        return staged
