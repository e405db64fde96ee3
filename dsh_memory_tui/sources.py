"""Citations: a record's ``file`` sourceRefs, what the cited text is now, and what changed.

A citation is ``PATH[:START-END]`` (PATH relative to the workspace and inside it; lines
1-based and inclusive; no range: the whole file). It is stored as the host's ``file``
sourceRef: ``{"kind": "file", "id": "PATH:START-END", "contentHash": "sha256:<64 hex>"}``,
the hash of the cited text. The cited text is the lines' bytes joined by ``\\n`` with each
line's ``\\r`` cut, so a file converted between CRLF and LF, or given a final newline, still
holds; bytes are hashed as they are, so a file need not be UTF-8.

Each citation's state is computed at read (``Sources.check``): ``ok``; ``moved`` (the same text
now at other lines); ``changed``; ``missing`` (the file is gone, or is no longer a regular file
inside the workspace). A file is read and hashed again only when its size, mtime, inode or
device changed; otherwise a check is one ``stat``.

When a citation is made, the cited text is kept as a private snapshot named by its hash
(``$DSH_HOME/workspace-memory/snapshots/<workspace>/``, 0600 files in 0700 directories; at most
``MAX_SNAPSHOT_BYTES`` each and ``MAX_SNAPSHOTS_BYTES`` per workspace; ``prune`` removes those
no record cites). ``diff`` shows the cited text then against the file now, from the snapshot,
else from git history (a commit whose text at the cited lines has the hash), else a line saying
why it cannot be shown.

This module reads the workspace and its own snapshots, never the store. Errors are
``StoreError(INVALID_CITATION)`` (or ``UNSAFE_PATH`` / ``WRITE_FAILED`` for the snapshots).
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Literal, NamedTuple

from . import git, jsonl
from .errors import ErrorCode, StoreError
from .model import MAX_ID_BYTES, MAX_SOURCE_REFS, Record, SourceRef, Status, Verification

FILE_KIND: Literal["file"] = "file"
# A cited file larger than this is not read: it cannot be cited, and a cited file that grew
# past it reads as changed (its text is not checked).
MAX_CITED_FILE_BYTES = 16 * 1024 * 1024
# A snapshot holds at most this much cited text; a larger citation is diffed from git only.
MAX_SNAPSHOT_BYTES = 256 * 1024
# All snapshots of one workspace; past it, new citations get no snapshot (git history only).
MAX_SNAPSHOTS_BYTES = 64 * 1024 * 1024
# How far back git history is searched for the cited text.
GIT_COMMITS = 200
MAX_DIFF_LINES = 2000
# A file whose first 8 KiB hold a NUL byte is binary: it can be cited whole, not by lines.
_BINARY_PROBE = 8192
_RANGE = re.compile(r"^(?P<path>.+):(?P<start>[0-9]+)-(?P<end>[0-9]+)$")
_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A relative path with single "/" between parts and nothing to clean (but "." and ".." parts).
_PLAIN = re.compile(r"[^/\\\x00-\x1f\x7f](?:[^/\\\x00-\x1f\x7f]|/(?!/))*(?<!/)\Z")
_DOTS = {".", ".."}
_UNPARSED = object()
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


class State(StrEnum):
    OK = "ok"
    MOVED = "moved"
    CHANGED = "changed"
    MISSING = "missing"


BROKEN = (State.CHANGED, State.MISSING)


def _bad(message: str) -> StoreError:
    return StoreError(ErrorCode.INVALID_CITATION, message)


class _Unreadable(Exception):
    """A cited path that cannot be read now: ``gone`` (missing, not a regular file, outside
    the workspace) or not (too large, no permission): the citation is missing or changed.
    """

    def __init__(self, rel: str, reason: str, gone: bool) -> None:
        super().__init__(reason)
        self.rel, self.reason, self.gone = rel, reason, gone

    def error(self) -> StoreError:
        return _bad(f"{self.rel}: {self.reason}")


@dataclass(frozen=True, slots=True)
class Citation:
    """A cited file (``path``, relative, with ``/``) and lines (None, None: the whole file)."""

    path: str
    start: int | None = None
    end: int | None = None

    @property
    def ref_id(self) -> str:
        """The sourceRef's id: ``PATH:START-END``, or ``PATH`` for the whole file."""
        return self.path if self.start is None else f"{self.path}:{self.start}-{self.end}"

    @property
    def lines(self) -> str:
        return "the whole file" if self.start is None else f"lines {self.start}-{self.end}"

    def __str__(self) -> str:
        return self.ref_id

    @classmethod
    def parse(cls, spec: str) -> Citation:
        """``PATH[:START-END]`` as typed (``--cite``, the form). INVALID_CITATION when it is
        not one: an absolute path, ``..`` out of the workspace, a bad range.
        """
        spec = spec.strip()
        if not spec:
            raise _bad("a citation needs a path: PATH or PATH:START-END")
        m = _RANGE.match(spec)
        if m is None:
            return cls(_relative(spec))
        start, end = int(m["start"]), int(m["end"])
        if start < 1 or end < start:
            raise _bad(f"{spec}: lines are 1-based and START <= END (e.g. {m['path']}:3-9)")
        return cls(_relative(m["path"]), start, end)

    @classmethod
    def from_ref(cls, ref: SourceRef) -> Citation | None:
        """The citation a ``file`` sourceRef names, or None when it names none we can read
        (another program's ref: an absolute path, a URL-like id...).
        """
        if ref.kind != FILE_KIND or not isinstance(ref.id, str):
            return None
        try:
            return cls.parse(ref.id)
        except StoreError:
            return None


def _relative(path: str) -> str:
    if _PLAIN.match(path) and not (_DOTS & set(path.split("/"))):
        return path  # the usual form, already as we store it
    if _CONTROL.search(path):
        raise _bad(f"{path!r}: a path with control characters cannot be cited")
    p = PurePosixPath(path.replace("\\", "/"))
    if p.is_absolute():
        raise _bad(f"{path}: cite a path relative to the workspace, not an absolute one")
    parts = [part for part in p.parts if part != "."]
    if not parts or ".." in parts:
        raise _bad(f"{path}: the path must name a file inside the workspace")
    rel = "/".join(parts)
    if _RANGE.match(rel):
        raise _bad(f"{path}: a path ending in :N-M cannot be cited whole; cite its lines")
    return rel


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


@dataclass(slots=True)
class _Text:
    """One read of a file: its stat key and lines, and the hashes asked of it so far."""

    key: tuple[int, int, int, int]
    data: bytes
    binary: bool
    _lines: list[bytes] | None = None
    _hashes: dict[tuple[int, int], str] = field(default_factory=dict)

    @property
    def lines(self) -> list[bytes]:
        if self._lines is None:
            self._lines = split_lines(self.data)
        return self._lines

    def region(self, start: int | None, end: int | None) -> bytes:
        lines = self.lines
        if start is None or end is None:
            return b"\n".join(lines)
        return b"\n".join(lines[start - 1 : end])

    def hash(self, start: int | None, end: int | None) -> str:
        key = (start or 0, end or 0)
        got = self._hashes.get(key)
        if got is None:
            got = self._hashes[key] = cited_hash(self.region(start, end))
        return got


class Check(NamedTuple):
    """One citation's state now and why, in words; ``now_at``: where moved text is now."""

    ref: SourceRef
    citation: Citation | None
    state: State
    why: str
    now_at: tuple[int, int] | None = None

    @property
    def broken(self) -> bool:
        return self.state in BROKEN

    @property
    def label(self) -> str:
        return self.citation.ref_id if self.citation is not None else str(self.ref.id)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.ref.id,
            "path": self.citation.path if self.citation else None,
            "startLine": self.citation.start if self.citation else None,
            "endLine": self.citation.end if self.citation else None,
            "contentHash": self.ref.contentHash,
            "state": self.state.value,
            "why": self.why,
        }
        if self.now_at is not None:
            out["nowAt"] = {"startLine": self.now_at[0], "endLine": self.now_at[1]}
        return out


def file_refs(record: Record) -> list[SourceRef]:
    return [r for r in record.governance.sourceRefs if r.kind == FILE_KIND]


def needs_checking(record: Record) -> bool:
    """Whether a broken citation changes what ``record`` is: verified and active."""
    return (
        record.status is Status.ACTIVE
        and record.governance.verification is Verification.VERIFIED
        and any(r.kind == FILE_KIND for r in record.governance.sourceRefs)
    )


def with_citations(refs: Sequence[SourceRef], cited: Sequence[SourceRef]) -> list[SourceRef]:
    """``refs`` with their file refs replaced by ``cited``; INVALID_CITATION past 32."""
    out = [r for r in refs if r.kind != FILE_KIND]
    seen = set()
    for ref in cited:
        if (ref.id, ref.contentHash) not in seen:
            seen.add((ref.id, ref.contentHash))
            out.append(ref)
    if len(out) > MAX_SOURCE_REFS:
        raise _bad(f"{len(out)} source refs: the host allows at most {MAX_SOURCE_REFS}")
    return out


class Sources:
    """Citations in one workspace, with a cache of what each cited file held when last read
    (kept while its size, mtime, inode and device stay). Not thread-safe: one per thread, or
    calls under the caller's lock.
    """

    def __init__(self, workspace: Path, snapshots: Path | None = None) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self._inside = os.path.join(self.workspace, "")
        self.snapshots = snapshots
        self._texts: dict[str, _Text] = {}
        self._checks: dict[tuple[str, object], tuple[tuple[int, int, int, int], Check]] = {}
        self._citations: dict[str, Citation | None] = {}
        # Within a ``batch``: each path's stat and each directory's real path, taken once.
        self._stats: dict[str, os.stat_result | None] | None = None
        self._real_dirs: dict[str, str] | None = None

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Check many citations as of one moment: each file is stat'ed once (``report``)."""
        if self._stats is not None:
            yield
            return
        self._stats, self._real_dirs = {}, {}
        try:
            yield
        finally:
            self._stats = self._real_dirs = None

    def citation(self, ref: SourceRef) -> Citation | None:
        """``Citation.from_ref``, parsed once per id."""
        got = self._citations.get(ref.id, _UNPARSED)
        if got is _UNPARSED:
            got = self._citations[ref.id] = Citation.from_ref(ref)
        return got  # type: ignore[return-value]

    # ----------------------------------------------------------------- reading files

    def _stat(self, rel: str) -> os.stat_result | None:
        stats = self._stats
        if stats is not None and rel in stats:
            return stats[rel]
        try:
            st: os.stat_result | None = os.stat(os.path.join(self.workspace, rel))
        except OSError:  # gone, or a directory on the way can no longer be searched
            st = None
        if stats is not None:
            stats[rel] = st
        return st

    def _real(self, full: str) -> str:
        """``full``'s real path; its directory's is taken once per batch."""
        dirs = self._real_dirs
        if dirs is None:
            return os.path.realpath(full)
        head, tail = os.path.split(full)
        real_dir = dirs.get(head)
        if real_dir is None:
            real_dir = dirs[head] = os.path.realpath(head)
        return os.path.join(real_dir, tail)

    def _read(self, rel: str) -> _Text:
        """The file's text now; ``_Unreadable`` when it is missing, outside the workspace
        (through a symlink too), not a regular file or too large.
        """
        full = os.path.join(self.workspace, rel)
        real = self._real(full)
        if not real.startswith(self._inside):
            raise _Unreadable(rel, "is a link to a file outside the workspace", True)
        try:
            try:
                fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                # The file itself is a link: where it leads must be inside too.
                real = os.path.realpath(full)
                if not real.startswith(self._inside):
                    why = "is a link to a file outside the workspace"
                    raise _Unreadable(rel, why, True) from None
                fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            raise _Unreadable(rel, "no such file in the workspace", True) from None
        except IsADirectoryError:
            raise _Unreadable(rel, "is a directory; cite a file", True) from None
        except OSError as exc:
            raise _Unreadable(rel, f"cannot be read: {exc.strerror}", False) from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise _Unreadable(rel, "is a directory; cite a file", True)
            if not stat.S_ISREG(st.st_mode):
                raise _Unreadable(rel, "is not a regular file (a FIFO, socket or device)", True)
            if st.st_size > MAX_CITED_FILE_BYTES:
                mib = MAX_CITED_FILE_BYTES // (1024 * 1024)
                raise _Unreadable(rel, f"is larger than {mib} MiB, too large to check", False)
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError as exc:
            raise _Unreadable(rel, f"cannot be read: {exc.strerror}", False) from None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
        text = _Text(key, data, data.find(b"\x00", 0, _BINARY_PROBE) != -1)
        self._texts[rel] = text
        return text

    def _text(self, rel: str, key: tuple[int, int, int, int]) -> _Text:
        text = self._texts.get(rel)
        return text if text is not None and text.key == key else self._read(rel)

    # ----------------------------------------------------------------- citing

    def cite(self, citation: Citation) -> SourceRef:
        """The ``file`` sourceRef of ``citation`` with today's hash, its text kept as a
        snapshot. INVALID_CITATION: missing, outside, not a regular file, a range past the
        file's end, lines of a binary file, an id over the host's 256 bytes.
        """
        if len(citation.ref_id.encode()) > MAX_ID_BYTES:
            raise _bad(f"{citation.path}: the path is too long for a source ref (256 bytes)")
        try:
            text = self._read(citation.path)
        except _Unreadable as exc:
            raise exc.error() from None
        if citation.start is not None and citation.end is not None:
            if text.binary:
                raise _bad(f"{citation.path}: is a binary file; cite it whole, not by lines")
            count = len(text.lines)
            if citation.end > count:
                raise _bad(
                    f"{citation}: the file has {count} line{'s' if count != 1 else ''}; "
                    f"lines {citation.start}-{citation.end} are past its end"
                )
        digest = text.hash(citation.start, citation.end)
        self._snapshot(digest, text.region(citation.start, citation.end))
        return SourceRef(kind=FILE_KIND, id=citation.ref_id, contentHash=digest)

    def cite_all(self, specs: Iterable[str | Citation]) -> list[SourceRef]:
        """``cite`` for each (``PATH[:START-END]`` strings or citations), in order, once each."""
        refs: list[SourceRef] = []
        for spec in specs:
            citation = spec if isinstance(spec, Citation) else Citation.parse(spec)
            ref = self.cite(citation)
            if all(r.id != ref.id for r in refs):
                refs.append(ref)
        if len(refs) > MAX_SOURCE_REFS:
            raise _bad(f"{len(refs)} citations: the host allows at most {MAX_SOURCE_REFS}")
        return refs

    # ----------------------------------------------------------------- checking

    def check(self, ref: SourceRef) -> Check:
        """``ref``'s state now (a ``file`` ref; any other kind is ``ok``)."""
        if ref.kind != FILE_KIND:
            return Check(ref, None, State.OK, f"a {ref.kind} ref: nothing to check")
        citation = self.citation(ref)
        if citation is None:
            return Check(ref, None, State.MISSING, "not a path inside the workspace")
        st = self._stat(citation.path)
        if st is None:
            self._texts.pop(citation.path, None)
            return Check(ref, citation, State.MISSING, "the file is gone")
        key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
        memo = self._checks.get((ref.id, ref.contentHash))
        if memo is not None and memo[0] == key:
            return memo[1]
        result = self._check(ref, citation, key)
        self._checks[(ref.id, ref.contentHash)] = (key, result)
        return result

    def _check(self, ref: SourceRef, citation: Citation, key: tuple[int, int, int, int]) -> Check:
        try:
            text = self._text(citation.path, key)
        except _Unreadable as exc:
            return Check(ref, citation, State.MISSING if exc.gone else State.CHANGED, exc.reason)
        want = ref.contentHash
        if not isinstance(want, str) or not _HASH.match(want):
            return Check(ref, citation, State.OK, "the file is there (the ref has no hash)")
        start, end = citation.start, citation.end
        if start is None or end is None:
            if text.hash(None, None) == want:
                return Check(ref, citation, State.OK, "the file is unchanged")
            return Check(ref, citation, State.CHANGED, "the file changed")
        if end <= len(text.lines) and text.hash(start, end) == want:
            return Check(ref, citation, State.OK, f"lines {start}-{end} are unchanged")
        at = self._find(text, want, start, end)
        if at is not None:
            return Check(
                ref, citation, State.MOVED, f"the same text is now at lines {at[0]}-{at[1]}", at
            )
        if end > len(text.lines):
            return Check(
                ref, citation, State.CHANGED, f"the file now ends at line {len(text.lines)}"
            )
        return Check(ref, citation, State.CHANGED, f"lines {start}-{end} changed")

    def _find(self, text: _Text, want: str, start: int, end: int) -> tuple[int, int] | None:
        """Where the cited text is now (the place nearest the old one), or None."""
        size = end - start + 1
        lines = text.lines
        old = self.snapshot(want)
        first = split_lines(old)[0] if old else None
        places = range(len(lines) - size + 1)
        for i in sorted(places, key=lambda i: abs(i + 1 - start)):
            if first is not None and lines[i] != first:
                continue
            if cited_hash(b"\n".join(lines[i : i + size])) == want:
                return i + 1, i + size
        return None

    def checks(self, record: Record) -> list[Check]:
        """Each ``file`` ref of ``record``, checked."""
        return [self.check(r) for r in record.governance.sourceRefs if r.kind == FILE_KIND]

    def broken(self, record: Record) -> list[Check]:
        """``record``'s changed or missing citations."""
        return [c for c in self.checks(record) if c.broken]

    def holds(self, record: Record) -> bool:
        """False when ``record`` is verified and active and a citation changed or is missing:
        it is then not served, not pinned, and waits for re-review.
        """
        return not needs_checking(record) or not self.broken(record)

    def refreshed(self, record: Record) -> list[SourceRef]:
        """``record``'s refs with each citation taking today's text and hash (a moved one its
        new lines). INVALID_CITATION when a cited file is gone or a range is past its end.
        """
        cited = []
        for check in self.checks(record):
            citation = check.citation
            if citation is None:
                raise _bad(f"{check.ref.id}: not a path inside the workspace; edit the citation")
            if check.now_at is not None:
                citation = Citation(citation.path, *check.now_at)
            cited.append(self.cite(citation))
        return with_citations(record.governance.sourceRefs, cited)

    # ----------------------------------------------------------------- snapshots

    def _snapshot_path(self, digest: str) -> Path | None:
        if self.snapshots is None or not _HASH.match(digest):
            return None
        return self.snapshots / digest.removeprefix("sha256:")

    def _snapshot(self, digest: str, data: bytes) -> None:
        path = self._snapshot_path(digest)
        if path is None or self.snapshots is None or len(data) > MAX_SNAPSHOT_BYTES:
            return
        if os.path.lexists(path):
            return
        jsonl.ensure_dir(self.snapshots)
        if snapshots_size(self.snapshots) + len(data) > MAX_SNAPSHOTS_BYTES:
            return
        jsonl.write_atomic(path, data)

    def snapshot(self, digest: object) -> bytes | None:
        """The cited text kept when ``digest`` was cited, if it is kept (and still hashes so)."""
        path = self._snapshot_path(digest) if isinstance(digest, str) else None
        if path is None:
            return None
        try:
            got = jsonl.read_file(path)
        except StoreError:
            return None
        if got is None or cited_hash(got[1]) != digest:
            return None
        return got[1]

    def prune(self, cited: Iterable[str]) -> int:
        """Remove every snapshot whose hash is not in ``cited``; the number removed."""
        if self.snapshots is None or not os.path.isdir(self.snapshots):
            return 0
        keep = {h.removeprefix("sha256:") for h in cited if isinstance(h, str)}
        removed = 0
        for entry in os.scandir(self.snapshots):
            if entry.name not in keep and entry.is_file(follow_symlinks=False):
                try:
                    os.unlink(entry.path)
                    removed += 1
                except FileNotFoundError:
                    continue
        return removed

    # ----------------------------------------------------------------- the diff

    def old_text(self, check: Check) -> tuple[bytes | None, str]:
        """The cited text as it was and where it came from, or None and why it cannot be had."""
        kept = self.snapshot(check.ref.contentHash)
        if kept is not None:
            return kept, "the snapshot taken when it was cited"
        if check.citation is None:
            return None, "it names no file inside the workspace"
        return git_text(self.workspace, check.citation, check.ref.contentHash)

    def diff(self, check: Check) -> list[str]:
        """The cited text then against the file now, as unified-diff lines (``---``, ``+++``,
        ``@@``, `` ``/``-``/``+``), after one line saying what is compared. Text that is not
        UTF-8 is shown with replacement characters; pass each line through
        ``present.visible`` before it reaches a terminal.
        """
        citation = check.citation
        if check.state is State.OK:
            return [f"{check.label}: unchanged since it was cited"]
        if check.state is State.MOVED and check.now_at is not None:
            a, b = check.now_at
            return [f"{check.label}: the cited text is unchanged, now at lines {a}-{b}"]
        old, origin = self.old_text(check)
        if old is None or citation is None:
            return [f"{check.label}: the diff cannot be shown: {origin}"]
        if b"\x00" in old[:_BINARY_PROBE]:
            return [f"{check.label}: a binary file changed; the diff is not shown"]
        now = self._now(citation, old)
        if now is None:
            where = "the file is gone"
            new_lines: list[str] = []
            first = citation.start or 1
        else:
            first, new = now
            where = "the file now" + (
                f" (lines {first}-{first + len(split_lines(new)) - 1})"
                if citation.start is not None and first != citation.start
                else ""
            )
            new_lines = _decoded(new)
        head = f"{check.label}: {check.why}; the cited text ({origin}) against {where}"
        lines = difflib.unified_diff(
            _decoded(old),
            new_lines,
            f"{citation.path} (cited)",
            f"{citation.path} (now)",
            lineterm="",
            n=3,
        )
        old_shift, new_shift = (citation.start or 1) - 1, first - 1
        out = [head, *(_at_file_lines(line, old_shift, new_shift) for line in lines)]
        return out[:MAX_DIFF_LINES]

    def _now(self, citation: Citation, old: bytes) -> tuple[int, bytes] | None:
        """Where the cited text is now and that text: the cited lines shifted by the offset
        at which most of the old lines are found (lines added above it move it), or None
        when the file is gone.
        """
        st = self._stat(citation.path)
        if st is None:
            return None
        try:
            text = self._text(citation.path, (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev))
        except _Unreadable:
            return None
        start, end = citation.start, citation.end
        if start is None or end is None:
            return 1, text.region(None, None)
        lines = text.lines
        start += _likely_shift(split_lines(old), lines, start)
        end = min(start + (end - citation.start), len(lines)) if citation.start else end
        start = max(1, min(start, len(lines)))
        return start, b"\n".join(lines[start - 1 : end])


def _at_file_lines(line: str, old_shift: int, new_shift: int) -> str:
    """A hunk header numbered by the file's lines (the diff is of the cited region)."""
    m = _HUNK.match(line) if old_shift or new_shift else None
    if m is None:
        return line
    a, b = int(m[1]) + old_shift, int(m[3]) + new_shift
    return f"@@ -{a}{m[2] or ''} +{b}{m[4] or ''} @@{line[m.end() :]}"


def _likely_shift(old: list[bytes], lines: list[bytes], start: int) -> int:
    """The offset at which most non-blank ``old`` lines (cited at ``start``) are in
    ``lines``; the nearest of equals; 0 when none is found.
    """
    wanted = {line for line in old if line.strip()}
    votes: dict[int, int] = {}
    where: dict[bytes, list[int]] = {}
    for j, line in enumerate(lines):
        if line in wanted:
            where.setdefault(line, []).append(j)
    for i, line in enumerate(old):
        for j in where.get(line, ()):
            shift = j - (start - 1 + i)
            votes[shift] = votes.get(shift, 0) + 1
    if not votes:
        return 0
    return min(votes, key=lambda k: (-votes[k], abs(k)))


def _decoded(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").split("\n") if data else []


def snapshots_size(directory: Path) -> int:
    total = 0
    try:
        for entry in os.scandir(directory):
            if entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    except FileNotFoundError:
        return 0
    return total


def git_text(workspace: Path, citation: Citation, digest: object) -> tuple[bytes | None, str]:
    """The cited text from git history: the newest of the last ``GIT_COMMITS`` commits that
    touched the file whose text at the cited lines has ``digest``; else None and why. The
    file's versions are read through one ``git cat-file`` process, newest first, until one
    holds the text.
    """
    root = git.toplevel(workspace)
    if root is None:
        return None, "no snapshot was kept and the workspace is not a git repository"
    try:
        in_repo = Path(os.path.realpath(workspace / citation.path)).relative_to(
            os.path.realpath(root)
        )
    except ValueError:
        return None, "no snapshot was kept and the file is outside the git repository"
    log = git.text(root, "log", f"-n{GIT_COMMITS}", "--format=%H", "--", in_repo.as_posix())
    try:
        with git.Blobs(root) as blobs:
            for commit in (log or "").split():
                shown = blobs.read(f"{commit}:{in_repo.as_posix()}", MAX_CITED_FILE_BYTES)
                if shown is None:
                    continue
                lines = split_lines(shown)
                if citation.start is None or citation.end is None:
                    region = b"\n".join(lines)
                else:
                    region = b"\n".join(lines[citation.start - 1 : citation.end])
                if cited_hash(region) == digest:
                    return region, f"git commit {commit[:12]}"
    except StoreError as exc:
        return None, f"no snapshot was kept and git's history cannot be read ({exc.message})"
    if git.text(root, "rev-parse", "--is-shallow-repository") == "true":
        return None, (
            "no snapshot was kept and this shallow clone's history does not hold the cited text"
        )
    return None, (
        f"no snapshot was kept and the last {GIT_COMMITS} commits of the file do not hold "
        "the cited text"
    )


def snapshots_dir(home_memory_dir: Path, root_id: str) -> Path:
    """Where one workspace's snapshots live under the home."""
    return home_memory_dir / "snapshots" / hashlib.sha256(root_id.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class RecordSources:
    """A record and its citations checked now."""

    record: Record
    checks: list[Check]

    @property
    def needs_review(self) -> bool:
        """Verified and active, and a citation changed or is missing."""
        return needs_checking(self.record) and any(c.broken for c in self.checks)


def report(sources: Sources, records: Iterable[Record]) -> list[RecordSources]:
    """Each of ``records`` that cites a file, with its citations checked now."""
    with sources.batch():
        return [
            RecordSources(r, sources.checks(r))
            for r in records
            if any(ref.kind == FILE_KIND for ref in r.governance.sourceRefs)
        ]


def cited_hashes(records: Iterable[Record]) -> set[str]:
    """Every hash a ``file`` ref of ``records`` holds (what ``Sources.prune`` keeps)."""
    return {
        ref.contentHash
        for r in records
        for ref in r.governance.sourceRefs
        if ref.kind == FILE_KIND and isinstance(ref.contentHash, str)
    }
