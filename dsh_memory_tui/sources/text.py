"""One read of a cited file: its bytes, its line index, the hashes asked of it, and whatever a
citation kind derived from it (``FileText.derived``), all kept while the file's size, mtime,
inode and device stay. Reading refuses what a citation may not follow: a link out of the
workspace, a directory, a FIFO or device (opened without blocking), a file over the bound.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .citation import bad

# A cited file larger than this is not read: it cannot be cited, and a cited file that grew
# past it reads as changed (its text is not checked).
MAX_CITED_FILE_BYTES = 16 * 1024 * 1024
# A file whose first 8 KiB hold a NUL byte is binary: it can be cited whole, not by lines.
BINARY_PROBE = 8192
# A file modified this close to its read may change again within its mtime's granularity with
# the same size (git's "racily clean" entries): its stat is not trusted, it is read again.
RACY_NS = 2_000_000_000

StatKey = tuple[int, int, int, int]
T = TypeVar("T")


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def cited_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def split_lines(data: bytes) -> list[bytes]:
    """The file's lines without their ends (``\\n``, ``\\r\\n``); no empty last line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if b"\r" in data:
        lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    return lines


class Unreadable(Exception):
    """A cited path that cannot be read now: ``gone`` (missing, not a regular file, outside
    the workspace) or not (too large, no permission): the citation is missing or changed.
    """

    def __init__(self, rel: str, reason: str, gone: bool) -> None:
        super().__init__(reason)
        self.rel, self.reason, self.gone = rel, reason, gone

    def error(self) -> Exception:
        return bad(f"{self.rel}: {self.reason}")


@dataclass(slots=True)
class FileText:
    """One read of a file: its stat key and bytes, its lines (split once, on first need), the
    hash of each region asked so far, and what citation kinds derived from it (a parse)."""

    key: StatKey
    data: bytes
    binary: bool
    racy: bool = False  # modified within ``RACY_NS`` of the read: its stat is not trusted
    _lines: list[bytes] | None = None
    _sha: str | None = None
    _digests: dict[tuple[int, int], str] = field(default_factory=dict)
    _derived: dict[str, Any] = field(default_factory=dict)

    @property
    def lines(self) -> list[bytes]:
        if self._lines is None:
            self._lines = split_lines(self.data)
        return self._lines

    @property
    def sha(self) -> str:
        """The sha256 (hex) of the whole file as read, computed once."""
        if self._sha is None:
            self._sha = hashlib.sha256(self.data).hexdigest()
        return self._sha

    def region(self, start: int | None, end: int | None) -> bytes:
        """The cited text of lines ``start``-``end`` (1-based, inclusive; None: every line)."""
        lines = self.lines
        if start is None or end is None:
            return b"\n".join(lines)
        return b"\n".join(lines[start - 1 : end])

    def digest(self, start: int | None, end: int | None) -> str:
        """``cited_hash`` of ``region(start, end)``, computed once per region."""
        key = (start or 0, end or 0)
        got = self._digests.get(key)
        if got is None:
            lines = self._lines if self._lines is not None else self.lines
            cited = b"\n".join(lines if start is None or end is None else lines[start - 1 : end])
            # ``cited_hash(self.region(start, end))``, inline: thousands a check.
            got = self._digests[key] = "sha256:" + hashlib.sha256(cited).hexdigest()
        return got

    def derived(self, name: str, build: Callable[[FileText], T]) -> T:
        """What ``build`` makes of this text (a kind's parse), made once per read."""
        got = self._derived.get(name, _MISSING)
        if got is _MISSING:
            got = self._derived[name] = build(self)
        return got  # type: ignore[no-any-return]


_MISSING = object()


def read_text(workspace: str, rel: str, real_dir: Callable[[str], str]) -> FileText:
    """The file ``rel`` of ``workspace`` (a real path) now; ``Unreadable`` when it is missing,
    outside the workspace (through a symlink too), not a regular file or too large.
    ``real_dir`` gives a directory's real path (cached by the caller).
    """
    inside = os.path.join(workspace, "")
    full = os.path.join(workspace, rel)
    head, tail = os.path.split(full)
    real = os.path.join(real_dir(head), tail)
    outside = "is a link to a file outside the workspace"
    if not real.startswith(inside):
        raise Unreadable(rel, outside, True)
    try:
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            # The file itself is a link: where it leads must be inside too.
            real = os.path.realpath(full)
            if not real.startswith(inside):
                raise Unreadable(rel, outside, True) from None
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise Unreadable(rel, "no such file in the workspace", True) from None
    except IsADirectoryError:
        raise Unreadable(rel, "is a directory; cite a file", True) from None
    except OSError as exc:
        raise Unreadable(rel, f"cannot be read: {exc.strerror}", False) from None
    try:
        st = os.fstat(fd)
        check_regular(rel, st)
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        raise Unreadable(rel, f"cannot be read: {exc.strerror}", False) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    racy = st.st_mtime_ns >= time.time_ns() - RACY_NS
    return FileText(stat_key(st), data, data.find(b"\x00", 0, BINARY_PROBE) != -1, racy)


def check_regular(rel: str, st: os.stat_result) -> None:
    """``Unreadable`` unless ``st`` is a regular file within the bound (what a citation may
    read): checked before a byte is read."""
    if stat.S_ISDIR(st.st_mode):
        raise Unreadable(rel, "is a directory; cite a file", True)
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable(rel, "is not a regular file (a FIFO, socket or device)", True)
    if st.st_size > MAX_CITED_FILE_BYTES:
        mib = MAX_CITED_FILE_BYTES // (1024 * 1024)
        raise Unreadable(rel, f"is larger than {mib} MiB, too large to check", False)
