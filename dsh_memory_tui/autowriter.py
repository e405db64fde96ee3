"""The session digest writer (SPEC 6): tool results in, one derived ``fact`` per distinct digest.

The host (or ``dsh-memory auto-write``) hands every tool result to ``AutoWriter.on_tool_result``.
The writer keeps, per session, the net effect of every tool record so far on each path and,
``debounce_s`` after a session's last result, writes that session's digest once. Nothing here
raises into the host: every failure is skipped with a debug log line (SPEC 6.5).

An ``AutoWriter`` does no I/O in ``on_tool_result`` and starts no thread: the caller's loop waits
at most ``due()`` seconds for input, then calls ``flush_due()``. It is not thread-safe.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from watchfiles import watch

from .errors import StoreError
from .governance import PIN_FIELDS, VERIFIED_FIELDS, Action, transition
from .jsonl import TailReader
from .model import (
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Retention,
    Scope,
    SourceRef,
    Status,
    Verification,
    content_hash,
    make_record,
    next_revision,
    session_scope_key,
    sha256_hex,
)
from .store import FileView, MemoryStore

log = logging.getLogger("dsh_memory_tui.autowriter")

DEBOUNCE_S = 0.5
DIGEST_TITLE = "Session workspace digest (auto)"
PROVENANCE_NOTE = "workspace auto-writer"
MAX_ACTIVE_DIGESTS = 6
MAX_LISTED_PATHS = 20
_OPS = frozenset({"create", "modify", "delete"})
_READ_CHUNK = 1 << 16
# How much input a stopping reader still takes in (what the host sent before the signal).
_DRAIN_LIMIT = 64 << 20


class MalformedEvent(ValueError):
    """A tool result that is not the host's event format; ``reason`` says what is wrong."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _listing(paths: tuple[str, ...]) -> str:
    shown = ", ".join(paths[:MAX_LISTED_PATHS])
    if len(paths) > MAX_LISTED_PATHS:
        shown += f", … (+{len(paths) - MAX_LISTED_PATHS} more)"
    return shown


@dataclass(frozen=True, slots=True)
class Digest:
    """The net effect of a session's tool results, as shown paths in first-touched order."""

    created: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]
    artifacts: tuple[str, ...]

    @property
    def key(self) -> str:
        """``"<created>/<modified>/<deleted>/<artifacts>"``: what the stable id hashes."""
        counts = (self.created, self.modified, self.deleted, self.artifacts)
        return "/".join(str(len(paths)) for paths in counts)

    @property
    def content(self) -> str:
        """The record's content, exactly as SPEC 6 step 2 lays it out."""
        c, m, d = len(self.created), len(self.modified), len(self.deleted)
        lines = [f"Files touched: {c + m + d} ({c} created, {m} modified, {d} deleted)"]
        for label, paths in (
            ("Created", self.created), ("Modified", self.modified), ("Deleted", self.deleted),
        ):
            if paths:
                lines.append(f"{label}: {_listing(paths)}")
        if self.artifacts:
            lines.append(f"Artifacts: {len(self.artifacts)} — {_listing(self.artifacts)}")
        return "\n".join(lines)


def digest_id(scope_key: str, digest: Digest) -> str:
    """``memory:auto:fact:<16 hex of sha256(scopeKey)>:<24 hex of sha256(digest key)>``."""
    return f"{digest_id_prefix(scope_key)}{sha256_hex(digest.key)[:24]}"


def digest_id_prefix(scope_key: str) -> str:
    """The part of the stable id every digest of one session shares."""
    return f"memory:auto:fact:{sha256_hex(scope_key)[:16]}:"


class _PathEffect:
    """One path's net effect: did it exist before the session touched it, does it now."""

    __slots__ = ("existed", "exists", "artifact")

    def __init__(self, existed: bool) -> None:
        self.existed = existed
        self.exists = existed
        self.artifact = False


@dataclass(slots=True)
class _Session:
    session_id: str
    root_id: str
    cwd: str  # the cwd of the session's first result: shown paths are relative to it
    paths: dict[str, _PathEffect] = field(default_factory=dict)  # first-touched order
    last_seq: int = -1

    @property
    def scope_key(self) -> str:
        return session_scope_key(self.session_id, self.root_id)

    def digest(self) -> Digest | None:
        """The digest so far; None when the net effect touches no file."""
        prefix = self.cwd if self.cwd.endswith(os.sep) else self.cwd + os.sep
        created: list[str] = []
        modified: list[str] = []
        deleted: list[str] = []
        flagged: list[str] = []
        for path, effect in self.paths.items():
            if effect.existed:
                target = modified if effect.exists else deleted
            elif effect.exists:
                target = created
            else:
                continue  # created then deleted: gone
            shown = path[len(prefix):] if path.startswith(prefix) else path
            target.append(shown)
            if effect.artifact and effect.exists:
                flagged.append(shown)
        if not (created or modified or deleted):
            return None
        return Digest(tuple(created), tuple(modified), tuple(deleted), tuple(flagged or created))


def _as_object(event: dict[str, Any] | str | bytes) -> dict[str, Any]:
    if isinstance(event, str | bytes | bytearray):
        try:
            event = json.loads(event)
        except (ValueError, RecursionError):
            raise MalformedEvent("not valid JSON") from None
    if not isinstance(event, dict):
        raise MalformedEvent("not a JSON object")
    return event


def _text(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    if not isinstance(value, str) or not value:
        raise MalformedEvent(f"{key} is not a non-empty string")
    return value


def _file_changes(event: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """``(path, op, flagged as an artifact)`` for each entry of ``files``, all checked first."""
    files = event.get("files", [])
    if not isinstance(files, list):
        raise MalformedEvent("files is not a list")
    out = []
    for entry in files:
        if not isinstance(entry, dict):
            raise MalformedEvent("a files entry is not an object")
        path, op, artifact = entry.get("path"), entry.get("op"), entry.get("artifact", False)
        if not isinstance(path, str) or not path:
            raise MalformedEvent("a files entry has no path")
        if op not in _OPS:
            raise MalformedEvent(f"op {op!r} is not create, modify or delete")
        if not isinstance(artifact, bool):
            raise MalformedEvent("artifact is not true or false")
        out.append((path, op, artifact))
    return out


class AutoWriter:
    """Turns a host's tool results into one session-scope digest per distinct net effect.

    ``store`` None means the host has no memory store: results are still followed, and each
    digest that falls due is skipped with a debug line. ``clock`` (seconds, never going
    backwards) drives the debounce, so tests need no sleeps; record times come from the store.
    """

    def __init__(
        self,
        store: MemoryStore | None,
        *,
        debounce_s: float = DEBOUNCE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.debounce_s = debounce_s
        self.clock = clock
        self.written = 0  # digests written (new records and new revisions) so far
        self._sessions: dict[tuple[str, str], _Session] = {}
        # Sessions waiting for their digest, in due order: a result moves its session to the
        # end with due = now + debounce, and the clock never goes backwards.
        self._pending: dict[tuple[str, str], float] = {}

    # ----------------------------------------------------------------- taking results

    def on_tool_result(self, event: dict[str, Any] | str | bytes) -> None:
        """Take one tool result (an object, or its JSON text). Never raises: a malformed
        result, or one whose cwd does not exist, is skipped with a debug line; ``"ok": false``
        is ignored.
        """
        try:
            self._take(event)
        except MalformedEvent as exc:
            log.debug("auto-writer: skipped a malformed tool result: %s", exc.reason)
        except Exception as exc:  # SPEC 6.5: nothing reaches the host
            log.debug("auto-writer: skipped a tool result: %s: %s", type(exc).__name__, exc)

    def _take(self, event: dict[str, Any] | str | bytes) -> None:
        obj = _as_object(event)
        ok = obj.get("ok")
        if ok is False:
            return
        if ok is not True:
            raise MalformedEvent("ok is not true or false")
        key = (_text(obj, "sessionId"), _text(obj, "rootId"))
        seq = obj.get("seq")
        if type(seq) is not int or seq < 0:
            raise MalformedEvent("seq is not a non-negative integer")
        cwd = _text(obj, "cwd")
        if not os.path.isabs(cwd):
            raise MalformedEvent(f"cwd {cwd!r} is not an absolute path")
        changes = _file_changes(obj)
        if not os.path.isdir(cwd):
            log.debug("auto-writer: skipped seq %d of session %s: cwd %s does not exist",
                      seq, key[0], cwd)
            return
        cwd = os.path.normpath(cwd)
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session(key[0], key[1], cwd)
        paths = session.paths
        for path, op, artifact in changes:
            full = os.path.normpath(os.path.join(cwd, path))
            effect = paths.get(full)
            if effect is None:
                effect = paths[full] = _PathEffect(existed=op != "create")
            effect.exists = op != "delete"
            if artifact:
                effect.artifact = True
        if seq > session.last_seq:
            session.last_seq = seq
        self._pending.pop(key, None)
        self._pending[key] = self.clock() + self.debounce_s

    # ----------------------------------------------------------------- writing digests

    def due(self) -> float | None:
        """Seconds until the next pending digest is due (0 when overdue); None if none is."""
        if not self._pending:
            return None
        return max(0.0, next(iter(self._pending.values())) - self.clock())

    def flush_due(self) -> list[str]:
        """Write the digests whose debounce has run out; returns the ids written."""
        now = self.clock()
        keys = []
        for key, due_at in self._pending.items():
            if due_at > now:
                break
            keys.append(key)
        return self._flush(keys)

    def flush_all(self) -> list[str]:
        """Write every pending digest now (at exit); returns the ids written."""
        return self._flush(list(self._pending))

    def digest(self, session_id: str, root_id: str) -> Digest | None:
        """The digest a session's results so far make (None: unknown, or no file touched)."""
        session = self._sessions.get((session_id, root_id))
        return session.digest() if session is not None else None

    def _flush(self, keys: list[tuple[str, str]]) -> list[str]:
        written = []
        for key in keys:
            del self._pending[key]
            record_id = self._write_digest(self._sessions[key])
            if record_id is not None:
                written.append(record_id)
        self.written += len(written)
        return written

    def _write_digest(self, session: _Session) -> str | None:
        digest = session.digest()
        if digest is None:
            log.debug("auto-writer: session %s touched no file; nothing to write",
                      session.session_id)
            return None
        if self.store is None:
            log.debug("auto-writer: no store; digest of session %s skipped", session.session_id)
            return None
        try:
            store = self.store
            file = store.paths.session_file(session.session_id, session.root_id)
            return store.write(file, lambda view: self._build(store, view, session, digest))
        except StoreError as exc:
            log.debug("auto-writer: digest of session %s not written: %s",
                      session.session_id, exc)
        except Exception as exc:  # SPEC 6.5: nothing reaches the host
            log.debug("auto-writer: digest of session %s not written: %s: %s",
                      session.session_id, type(exc).__name__, exc)
        return None

    @staticmethod
    def _build(
        store: MemoryStore, view: FileView, session: _Session, digest: Digest
    ) -> tuple[list[Record], str | None]:
        """With the session file locked and its view fresh: the lines to append (the digest,
        and archive revisions of the oldest digests past six active), and the id written.
        """
        scope_key = session.scope_key
        record_id = digest_id(scope_key, digest)
        content = digest.content
        hash_ = content_hash(content)
        seq = session.last_seq
        provenance = Provenance(
            kind=ProvenanceKind.TOOL, sessionId=session.session_id, eventSeq=seq,
            note=PROVENANCE_NOTE,
        )
        refs = [SourceRef(kind="session", id=session.session_id),
                SourceRef(kind="event", id=str(seq))]
        now = store.clock()
        current = view.current.get(record_id)
        if current is None:
            if view.find_duplicate(RecordType.FACT, hash_) is not None:
                return [], None  # the same content under another id (SPEC 4 idempotent merge)
            new = make_record(
                scope=Scope.SESSION, scope_key=scope_key, record_type=RecordType.FACT,
                title=DIGEST_TITLE, content=content, tags=[], provenance=provenance,
                origin=Origin.DERIVED, source_refs=refs, record_id=record_id,
                retention=Retention.SESSION_END, now=now,
            )
        elif current.status is Status.FORGOTTEN:
            log.debug("auto-writer: %s was forgotten; not writing it again", record_id)
            return [], None
        elif current.contentHash == hash_:
            return [], None
        else:
            # The current digest of the session: active again, and (the host's rule for an
            # edit) a verification given to other content is stale, without its time, actor
            # or pin.
            governance: dict[str, Any] = {"sourceRefs": refs}
            if current.governance.verification is Verification.VERIFIED:
                governance["verification"] = Verification.STALE
            new = next_revision(
                current, now,
                {"title": DIGEST_TITLE, "content": content, "provenance": provenance,
                 "status": Status.ACTIVE},
                governance,
                VERIFIED_FIELDS + PIN_FIELDS,
            )
        prefix = digest_id_prefix(scope_key)
        others = [
            r for r in view.current.values()
            if r.id.startswith(prefix) and r.id != record_id and r.status is Status.ACTIVE
        ]
        excess = len(others) + 1 - MAX_ACTIVE_DIGESTS
        archived = []
        if excess > 0:
            others.sort(key=lambda r: (r.updatedAt, r.createdAt))  # stable: file order on ties
            archived = [transition(r, Action.ARCHIVE, now) for r in others[:excess]]  # unpins
        return [new, *archived], record_id


# --------------------------------------------------------------------- dsh-memory auto-write


class Stopped(BaseException):
    """SIGINT or SIGTERM arrived while the loop was waiting (see ``StopSignals``)."""


class StopSignals:
    """SIGINT and SIGTERM ask a loop to stop: ``requested`` turns true, and ``Stopped`` is
    raised only inside ``waiting()``, so a write in progress is never cut short. Installs its
    handlers only in the main thread (elsewhere it never fires); restores them on exit.
    """

    def __init__(self) -> None:
        self.requested = False
        self._waiting = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:
                signal.signal(signum, previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self._waiting:
            self._waiting = False
            raise Stopped

    @contextmanager
    def waiting(self) -> Iterator[None]:
        self._waiting = True
        try:
            if self.requested:  # arrived just before we started waiting
                raise Stopped
            yield
        finally:
            self._waiting = False


class _LineFeed:
    """Splits bytes into lines for the writer; a last line without a newline waits for more."""

    def __init__(self, writer: AutoWriter) -> None:
        self.writer = writer
        self.rest = b""

    def feed(self, data: bytes) -> None:
        data = self.rest + data
        end = data.rfind(b"\n") + 1
        self.rest = data[end:]
        self.lines(data[:end].split(b"\n"))

    def lines(self, lines: list[bytes]) -> None:
        take = self.writer.on_tool_result
        for line in lines:
            if line.strip():
                take(line)

    def finish(self) -> None:
        """At the end of the input its last line is complete, newline or not."""
        rest, self.rest = self.rest, b""
        self.lines([rest])


def run_events(store: MemoryStore, events: str | None, *, follow: bool) -> int:
    """``dsh-memory auto-write``: tool results as JSON lines from ``events`` (stdin when None),
    following the file as it grows with ``follow``. Pending digests are written before it
    returns: at the end of the input, or on SIGINT or SIGTERM (after taking in what was already
    there). Returns the number of digests written.

    Store failures and malformed lines are skipped silently (debug log). An events file or
    directory that does not exist is ``USAGE``; an unreadable one ``READ_FAILED``.
    """
    writer = AutoWriter(store)
    with StopSignals() as stop:
        try:
            if events is None:
                _read_stream(writer, 0, stop)
            elif follow:
                _follow_file(writer, Path(events), stop)
            else:
                _read_file(writer, Path(events), stop)
        finally:
            writer.flush_all()
    return writer.written


def _read_file(writer: AutoWriter, path: Path, stop: StopSignals) -> None:
    """A whole file: every result first, then the digests (the same file, the same digests)."""
    try:
        with open(path, "rb") as events:
            for line in events:
                if stop.requested:
                    return
                if line.strip():
                    writer.on_tool_result(line)
    except FileNotFoundError:
        raise StoreError("USAGE", f"{path}: no such events file") from None
    except OSError as exc:
        raise StoreError("READ_FAILED", f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_stream(writer: AutoWriter, fd: int, stop: StopSignals) -> None:
    """Standard input: a regular file is read whole like ``--events``; a pipe or terminal is
    live, each session's digest written ``debounce_s`` after its last result.
    """
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return  # no standard input at all
    feed = _LineFeed(writer)
    try:
        while not stop.requested:
            if regular:
                ready = True
            else:
                with stop.waiting():
                    ready = bool(select.select([fd], [], [], writer.due())[0])
            if not ready:
                writer.flush_due()
                continue
            data = os.read(fd, _READ_CHUNK)
            if not data:
                break
            feed.feed(data)
            if not regular:
                writer.flush_due()
    except Stopped:
        pass
    if stop.requested and not regular:
        _drain(fd, feed)
    feed.finish()


def _drain(fd: int, feed: _LineFeed) -> None:
    """Take in what is already readable (sent before the signal) without waiting for more."""
    taken = 0
    try:
        while taken < _DRAIN_LIMIT and select.select([fd], [], [], 0)[0]:
            data = os.read(fd, _READ_CHUNK)
            if not data:
                return
            taken += len(data)
            feed.feed(data)
    except OSError as exc:
        log.debug("auto-writer: reading the rest of the input failed: %s", exc)


class _DirectoryWatch(threading.Thread):
    """Sets ``changed`` whenever the named file in ``directory`` changes (watchfiles)."""

    def __init__(self, directory: Path, name: str, changed: threading.Event) -> None:
        super().__init__(name="dsh-auto-write-watch", daemon=True)
        self.directory = directory
        self.name_ = name
        self.changed = changed
        self.stop_event = threading.Event()

    def run(self) -> None:
        try:
            for _changes in watch(
                self.directory, watch_filter=self._is_events_file, stop_event=self.stop_event,
                debounce=100, step=10, rust_timeout=250, yield_on_timeout=True,
                recursive=False, raise_interrupt=False,
            ):
                # The first yield (a change or a timeout) also says the watch is in place:
                # the reader looks again for anything written before that.
                self.changed.set()
        except Exception as exc:  # the reader falls back to polling
            log.debug("auto-writer: watching %s failed: %s", self.directory, exc)

    def _is_events_file(self, _change: object, path: str) -> bool:
        return os.path.basename(path) == self.name_

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=2)


# With a live watch, a safety re-read now and then; without one, polling.
_WATCHED_RECHECK_S = 1.0
_POLL_S = 0.05


def _follow_file(writer: AutoWriter, path: Path, stop: StopSignals) -> None:
    """``--follow``: read the file from its start, then what is appended to it, waking on a
    watchfiles change or when the next digest falls due. A file replaced or cut shorter is
    read anew from its start.
    """
    path = path.expanduser().resolve()
    if not path.parent.is_dir():
        raise StoreError("USAGE", f"{path.parent}: no such directory for the events file")
    reader = TailReader(path)
    feed = _LineFeed(writer)
    changed = threading.Event()
    watcher = _DirectoryWatch(path.parent, path.name, changed)
    watcher.start()
    started = False
    try:
        while not stop.requested:
            changed.clear()
            chunk = reader.read_new()
            if chunk.reset and started:
                log.debug("auto-writer: %s was replaced or cut; reading it from its start", path)
            started = started or chunk.exists
            feed.lines(chunk.lines)
            writer.flush_due()
            recheck = _WATCHED_RECHECK_S if watcher.is_alive() else _POLL_S
            due = writer.due()
            with stop.waiting():
                changed.wait(recheck if due is None else min(due, recheck))
    except Stopped:
        pass
    finally:
        watcher.stop()
    feed.lines(reader.read_new().lines)


__all__ = [
    "DEBOUNCE_S",
    "DIGEST_TITLE",
    "MAX_ACTIVE_DIGESTS",
    "AutoWriter",
    "Digest",
    "MalformedEvent",
    "StopSignals",
    "Stopped",
    "digest_id",
    "digest_id_prefix",
    "run_events",
]
