"""The session digest writer (SPEC 6): the host's ``writeAutoFact``, from our tool-result lines.

The host (or ``dsh-memory auto-write``) hands every tool result to ``AutoWriter.on_tool_result``.
The writer keeps, per session, every file observation the host's own pipeline would make of those
results (``sessionToolRecords`` -> ``SessionActivityObserver`` -> ``recordActivity``) and,
``debounce_s`` after a session's last result, writes that session's digest exactly as the host's
``writeAutoFact`` does: the same id, content, tags, source refs, merge on a repeat and six-digest
cap. Nothing here raises into the host: every failure is skipped with a debug log line.

How one of our lines maps to the host's tool events (``docs/autowriter.md``): each ``files[]``
entry is one tool call at the line's ``seq`` (``create`` -> ``write_file`` "Created file",
``modify`` -> ``edit_file``, ``delete`` -> ``delete_file``; ``"ok": false`` -> an error result);
the session's workspace root is the canonical ``cwd`` of its first line (the host's session
header ``cwd``).

An ``AutoWriter`` does no I/O in ``on_tool_result`` and starts no thread: the caller's loop waits
at most ``due()`` seconds for input, then calls ``flush_due()``. It is not thread-safe.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
import select
import signal
import stat
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from watchfiles import watch

from .errors import ErrorCode, StoreError
from .governance import locale_key, merge_refs
from .jsonl import TailReader
from .model import (
    MAX_SAFE_INTEGER,
    MAX_SOURCE_REFS,
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Retention,
    Scope,
    SourceRef,
    Status,
    conflict_group_for,
    content_hash,
    js_trim,
    make_record,
    new_id,
    next_revision,
    session_scope_key,
    sha256_hex,
)
from .store import FileView, MemoryStore

log = logging.getLogger("dsh_memory_tui.autowriter")

DEBOUNCE_S = 0.5
DIGEST_TITLE = "Session workspace digest (auto)"
DIGEST_TAGS = ("auto", "workspace")
PROVENANCE_NOTE = "workspace auto-writer"
MAX_ACTIVE_DIGESTS = 6
_OPS = frozenset({"create", "modify", "delete"})
_KIND = {"create": "CREATED", "modify": "MODIFIED", "delete": "DELETED"}
_READ_CHUNK = 1 << 16
# A tool result longer than this is skipped, unread: the host's digest content is at most
# 64 KiB, and a line without end (``/dev/zero`` on stdin) must not grow the process.
MAX_EVENT_BYTES = 1 << 20
# How much input a stopping reader still takes in (what the host sent before the signal).
_DRAIN_LIMIT = 64 << 20

# The host's workspaceRelativePath(): what it drops before a path becomes an observation.
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SCHEME = re.compile("[A-Za-z][A-Za-z0-9+.-]*:")
_DRIVE = re.compile("[A-Za-z]:")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class MalformedEvent(ValueError):
    """A tool result that is not the host's event format; ``reason`` says what is wrong."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ------------------------------------------------------------------ the host's path rules


def workspace_path(value: str, root: str, cwd: str) -> str | None:
    """A tool's path as the host's ``sessionToolRecords`` keeps it (its ``workspaceRelativePath``),
    or None when the host drops it: blank, control characters, a URL or ``C:`` form, any ``..``
    segment, a Windows absolute path, or an absolute path outside ``root`` (or ``root`` itself).

    ``\\`` becomes ``/``; a relative path is kept as written (relative to the workspace). Ours
    adds one case the host never meets (its tools run in the workspace): a relative path of a
    result whose ``cwd`` is not the session's root is taken relative to that ``cwd``.
    """
    text = js_trim(value)
    if not text or _CONTROL.search(text) or _SCHEME.match(text):
        return None
    slashed = text.replace("\\", "/")
    if ".." in slashed.split("/"):
        return None
    if not text.startswith("/"):
        if text.startswith("\\"):
            return None  # a Windows absolute path (\\server\share, \dir): foreign here
        if cwd == root:
            return slashed
        text = posixpath.join(cwd, slashed)
    rel = posixpath.relpath(posixpath.normpath("/" + text.lstrip("/")), root)
    if rel == "." or rel == ".." or rel.startswith("../"):
        return None
    return rel


def normalize_path(kept: str) -> str | None:
    """The host's ``normalizeWorkspacePath`` of a kept path: ``\\`` as ``/``, empty and ``.``
    segments dropped. None where the host's throws (a path that now starts with ``/`` or a
    drive letter), which would lose the session's whole digest there: only the path is dropped.
    """
    logical = kept.replace("\\", "/")
    if logical.startswith("/") or _DRIVE.match(logical):
        return None
    return "/".join(s for s in logical.split("/") if s and s != ".")


def _collation_key(text: str) -> tuple[Any, ...]:
    """A sort key close to node's ``localeCompare`` (ICU root collation): ASCII exactly, accented
    letters next to their base letter (accents, then case, break ties)."""
    if text.isascii():
        primary, case = locale_key(text)
        return primary, (), case
    prim: list[int] = []
    accents: list[tuple[int, ...]] = []
    case_: list[int] = []
    for ch in text:
        decomposed = unicodedata.normalize("NFD", ch)
        base = decomposed[0]
        prim.extend(locale_key(base)[0])
        accents.append(tuple(ord(m) for m in decomposed[1:]))
        case_.append(1 if base != base.lower() else 0)
    return tuple(prim), tuple(accents), tuple(case_)


def _js_json(value: Any) -> str:
    """``JSON.stringify(value)`` for lists and dicts of strings (a lone surrogate escaped)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# ------------------------------------------------------------------ the digest


@dataclass(frozen=True, slots=True)
class Digest:
    """The host's fact payload: paths by their latest operation, in first-touched order, and the
    files created in the session (artifacts) in ``localeCompare`` order."""

    created: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]
    artifacts: tuple[str, ...]

    @property
    def key(self) -> str:
        """The host's digestKey: 24 hex of sha256(JSON.stringify({created, modified, deleted,
        artifacts}))."""
        payload = {
            "created": list(self.created),
            "modified": list(self.modified),
            "deleted": list(self.deleted),
            "artifacts": list(self.artifacts),
        }
        return sha256_hex(_js_json(payload))[:24]

    @property
    def content(self) -> str:
        """The record's content, exactly as the host's ``buildAutoFactContent`` lays it out."""
        c, m, d = len(self.created), len(self.modified), len(self.deleted)
        lines = [f"Files touched: {c + m + d} ({c} created, {m} modified, {d} deleted)."]
        for label, paths in (
            ("Created", self.created),
            ("Modified", self.modified),
            ("Deleted", self.deleted),
        ):
            if paths:
                lines.append(f"{label}: {', '.join(paths)}")
        shown = f" — {', '.join(self.artifacts)}" if self.artifacts else ""
        lines.append(f"Artifacts: {len(self.artifacts)}{shown}.")
        return "\n".join(lines)


def digest_id(scope_key: str, digest: Digest) -> str:
    """``memory:auto:fact:<16 hex of sha256(scopeKey)>:<digestKey>``."""
    return f"{digest_id_prefix(scope_key)}{digest.key}"


def digest_id_prefix(scope_key: str) -> str:
    """The part of the stable id every digest of one session shares."""
    return f"memory:auto:fact:{sha256_hex(scope_key)[:16]}:"


class _File:
    """One path of the host's activity projection (``SessionFileProjection``)."""

    __slots__ = ("last_kind", "created")

    def __init__(self, kind: str) -> None:
        self.last_kind = kind
        self.created = kind == "CREATED"


@dataclass(slots=True)
class _Session:
    """One session's tool records as the host's observer replays them."""

    session_id: str
    root_id: str
    root: str  # the canonical cwd of the session's first result: the host's workspace root
    # Every observation (seq, path as kept, normalized path, kind), in arrival order; ids the
    # host's recordActivity dedupes on are (seq, path as kept).
    observations: list[tuple[int, str, str, str]] = field(default_factory=list)
    seen: set[tuple[int, str]] = field(default_factory=set)
    files: dict[str, _File] = field(default_factory=dict)  # first-touched order
    sorted_upto: int = -1  # the highest seq applied to ``files``; lower ones need a replay
    replay: bool = False
    last_seq: int = 0  # the highest seq of any tool record (failed ones too): latestEventSeq

    @property
    def scope_key(self) -> str:
        return session_scope_key(self.session_id, self.root_id)

    def observe(self, seq: int, kept: str, path: str, kind: str) -> None:
        if (seq, kept) in self.seen:
            return  # the same observation id: the host's recordActivity drops it
        self.seen.add((seq, kept))
        self.observations.append((seq, kept, path, kind))
        if seq < self.sorted_upto:
            self.replay = True  # an older seq: the host sorts by seq before replaying
        elif not self.replay:
            self.sorted_upto = seq
            self._apply(path, kind)

    def _apply(self, path: str, kind: str) -> None:
        file = self.files.get(path)
        if file is None:
            self.files[path] = _File(kind)
        else:
            file.last_kind = kind  # the latest (or equal) seq wins
            file.created = file.created or kind == "CREATED"

    def digest(self) -> Digest | None:
        """The digest so far; None when nothing was touched (the host writes nothing)."""
        if self.replay:
            self.files = {}
            for _seq, _kept, path, kind in sorted(self.observations, key=lambda o: o[0]):
                self._apply(path, kind)
            self.sorted_upto = max((o[0] for o in self.observations), default=-1)
            self.replay = False
        if not self.files:
            return None
        by_kind: dict[str, list[str]] = {"CREATED": [], "MODIFIED": [], "DELETED": []}
        for path, file in self.files.items():
            by_kind[file.last_kind].append(path)
        artifacts = sorted((p for p, f in self.files.items() if f.created), key=_collation_key)
        return Digest(
            tuple(by_kind["CREATED"]),
            tuple(by_kind["MODIFIED"]),
            tuple(by_kind["DELETED"]),
            tuple(artifacts),
        )


def _as_object(event: dict[str, Any] | str | bytes) -> dict[str, Any]:
    if isinstance(event, str | bytes | bytearray):
        if len(event) > MAX_EVENT_BYTES:
            raise MalformedEvent(f"longer than {MAX_EVENT_BYTES} bytes")
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


def _file_changes(event: dict[str, Any]) -> list[tuple[str, str]]:
    """``(path, op)`` for each entry of ``files``, all checked first. ``artifact`` is checked
    for its type and otherwise ignored, as the host ignores it (artifacts are created files)."""
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
        out.append((path, op))
    return out


class AutoWriter:
    """Turns a host's tool results into the host's session digests (``writeAutoFact``).

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
        self.written = 0  # digest lines written (new records and merges) so far
        self._sessions: dict[tuple[str, str], _Session] = {}
        # Sessions waiting for their digest, in due order: a result moves its session to the
        # end with due = now + debounce, and the clock never goes backwards.
        self._pending: dict[tuple[str, str], float] = {}
        self._canonical: dict[str, str] = {}  # cwd -> its realpath

    # ----------------------------------------------------------------- taking results

    def on_tool_result(self, event: dict[str, Any] | str | bytes) -> str | None:
        """Take one tool result (an object, or its JSON text). Never raises: a malformed
        result, or one whose cwd does not exist, is skipped with a debug line. Returns why a
        result was skipped as malformed (None when it was taken, or skipped for its cwd).
        """
        try:
            self._take(event)
        except MalformedEvent as exc:
            log.debug("auto-writer: skipped a malformed tool result: %s", exc.reason)
            return exc.reason
        except Exception as exc:  # nothing reaches the host
            log.debug("auto-writer: skipped a tool result: %s: %s", type(exc).__name__, exc)
            return f"{type(exc).__name__}: {exc}"
        return None

    def _take(self, event: dict[str, Any] | str | bytes) -> None:
        obj = _as_object(event)
        ok = obj.get("ok")
        if not isinstance(ok, bool):
            raise MalformedEvent("ok is not true or false")
        key = (_text(obj, "sessionId"), _text(obj, "rootId"))
        seq = obj.get("seq")
        if type(seq) is not int or not 0 <= seq <= MAX_SAFE_INTEGER:
            raise MalformedEvent("seq is not a non-negative safe integer")
        cwd = _text(obj, "cwd")
        if not os.path.isabs(cwd):
            raise MalformedEvent(f"cwd {cwd!r} is not an absolute path")
        changes = _file_changes(obj)
        if not os.path.isdir(cwd):
            log.debug(
                "auto-writer: skipped seq %d of session %s: cwd %s does not exist", seq, key[0], cwd
            )
            return
        if not changes:
            return  # no tool call: the host sees no event at all
        cwd = self._canonical.get(cwd) or self._canonical.setdefault(cwd, os.path.realpath(cwd))
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session(key[0], key[1], cwd)
        if seq > session.last_seq:
            session.last_seq = seq
        if ok:
            for path, op in changes:
                kept = workspace_path(path, session.root, cwd)
                logical = None if kept is None else normalize_path(kept)
                if kept is None or logical is None:
                    log.debug("auto-writer: %r is not a workspace path; dropped", path)
                else:
                    session.observe(seq, kept, logical, _KIND[op])
        self._pending.pop(key, None)
        self._pending[key] = self.clock() + self.debounce_s

    # ----------------------------------------------------------------- writing digests

    def due(self) -> float | None:
        """Seconds until the next pending digest is due (0 when overdue); None if none is."""
        if not self._pending:
            return None
        return max(0.0, next(iter(self._pending.values())) - self.clock())

    def flush_due(self) -> list[str]:
        """Write the digests whose debounce has run out; returns the ids of the digests whose
        line was written."""
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
        """The digest a session's results so far make (None: unknown, or nothing touched)."""
        session = self._sessions.get((session_id, root_id))
        return session.digest() if session is not None else None

    def _flush(self, keys: list[tuple[str, str]]) -> list[str]:
        written = []
        for key in keys:
            del self._pending[key]
            record_id = self._write_digest(self._sessions[key]) if key in self._sessions else None
            if record_id is not None:
                written.append(record_id)
        self.written += len(written)
        return written

    def _write_digest(self, session: _Session) -> str | None:
        digest = session.digest()
        if digest is None:
            log.debug(
                "auto-writer: session %s touched no file; nothing to write", session.session_id
            )
            return None
        if self.store is None:
            log.debug("auto-writer: no store; digest of session %s skipped", session.session_id)
            return None
        try:
            store = self.store
            file = store.paths.session_file(session.session_id, session.root_id)
            return store.write(file, lambda view: _build(store, view, session, digest))
        except StoreError as exc:
            log.debug("auto-writer: digest of session %s not written: %s", session.session_id, exc)
        except Exception as exc:  # nothing reaches the host
            log.debug(
                "auto-writer: digest of session %s not written: %s: %s",
                session.session_id,
                type(exc).__name__,
                exc,
            )
        return None


def _build(
    store: MemoryStore, view: FileView, session: _Session, digest: Digest
) -> tuple[list[Record], str | None]:
    """With the session file locked and its view fresh, what the host's ``writeAutoFact`` writes:
    the digest (new, or its source refs merged into the record with its content), then archive
    lines for the oldest active digests past six. Returns the lines and the id of the digest
    whose line was written (None: nothing new).
    """
    scope_key = session.scope_key
    stable_id = digest_id(scope_key, digest)
    content = digest.content
    hash_ = content_hash(content)
    seq = session.last_seq
    provenance = Provenance(kind=ProvenanceKind.TOOL, sessionId=session.session_id)
    refs = [SourceRef(kind="session", id=session.session_id)]
    if seq > 0:  # the host's latestEventSeq: undefined for 0
        provenance.eventSeq = seq
        refs.append(SourceRef(kind="event", id=str(seq)))
    provenance.note = PROVENANCE_NOTE
    now = store.clock()
    before = list(view.current.values())  # the host prunes from what it opened
    new: Record | None = None
    current = view.current.get(stable_id)
    if current is None:
        # A brand-new digest: the host hands the stable id over, so it never merges here.
        new = _digest_record(stable_id, scope_key, content, provenance, refs, None, now)
        written_id = stable_id
    else:
        exact = view.find_duplicate(RecordType.FACT, hash_)
        if exact is not None:
            # The host upserts without an id: the new refs are merged into the record with this
            # content (a new revision; status, verification and provenance stay), or nothing.
            written_id = exact.id
            merged = merge_refs(exact.governance.sourceRefs, refs)
            if len(merged) > len(exact.governance.sourceRefs):
                if len(merged) > MAX_SOURCE_REFS:
                    raise StoreError(
                        ErrorCode.INVALID_RECORD,
                        f"{exact.id} has {MAX_SOURCE_REFS} source "
                        "refs already: the host's write fails the same way",
                    )
                new = next_revision(exact, now, None, {"sourceRefs": merged})
        elif current.status is Status.FORGOTTEN:
            # The host would write the digest again under a random id; a reviewer forgot it.
            log.debug("auto-writer: %s was forgotten; not writing it again", stable_id)
            return [], None
        else:
            # The record of this id has other content (edited elsewhere): the host's upsert
            # without an id makes a new record, in the title's conflict group.
            rivals = [
                r for r in view.same_title(RecordType.FACT, DIGEST_TITLE) if r.contentHash != hash_
            ]
            group = conflict_group_for(DIGEST_TITLE) if rivals else None
            new = _digest_record(new_id(), scope_key, content, provenance, refs, group, now)
            written_id = new.id
    lines = [] if new is None else [new]
    # Keep the session tidy, as the host does: the five most recently updated other active
    # digests stay; older ones are archived like its domain.archive (same revision and pins).
    prefix = digest_id_prefix(scope_key)
    others = [
        r
        for r in before
        if r.id.startswith(prefix) and r.status is Status.ACTIVE and r.id != written_id
    ]
    others.sort(key=lambda r: -r.updatedAt)
    for record in others[MAX_ACTIVE_DIGESTS - 1 :]:
        lines.append(_archived(record, now))
    return lines, (written_id if new is not None else None)


def _digest_record(
    record_id: str,
    scope_key: str,
    content: str,
    provenance: Provenance,
    refs: list[SourceRef],
    group: str | None,
    now: int,
) -> Record:
    return make_record(
        scope=Scope.SESSION,
        scope_key=scope_key,
        record_type=RecordType.FACT,
        title=DIGEST_TITLE,
        content=content,
        tags=list(DIGEST_TAGS),
        provenance=provenance,
        origin=Origin.DERIVED,
        source_refs=refs,
        record_id=record_id,
        retention=Retention.SESSION_END,
        conflict_group=group,
        now=now,
    )


def _archived(record: Record, now: int) -> Record:
    """The host's store tombstone (``MemoryStore.archive``): status archived at ``now``, every
    other field as it is, the revision too."""
    data = record.model_dump(exclude_unset=True)
    data["status"] = Status.ARCHIVED
    data["updatedAt"] = max(now, record.updatedAt)
    return Record.model_validate(data)


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


# Called with (line number, why) for each input line skipped as malformed.
SkipReport = Callable[[int, str], None]


class _LineFeed:
    """Splits bytes into lines for the writer; a last line without a newline waits for more,
    up to ``MAX_EVENT_BYTES``: past that the line is skipped up to its newline, unbuffered.
    Counts the lines, so that each one skipped as malformed is reported by its number.
    """

    def __init__(self, writer: AutoWriter, on_skip: SkipReport | None = None) -> None:
        self.writer = writer
        self.on_skip = on_skip
        self.rest = b""
        self.skipping = False  # inside a line too long to take
        self.line_no = 0  # lines taken in so far (the next one is line_no + 1)

    def feed(self, data: bytes) -> None:
        if self.skipping:
            start = data.find(b"\n") + 1
            if not start:
                return
            self.skipping = False
            data = data[start:]
        data = self.rest + data
        end = data.rfind(b"\n") + 1
        self.rest = data[end:]
        self.lines(data[:end].split(b"\n")[:-1])
        if len(self.rest) > MAX_EVENT_BYTES:
            log.debug("auto-writer: skipped a tool result longer than %d bytes", MAX_EVENT_BYTES)
            self.rest = b""
            self.skipping = True
            self.line_no += 1
            self._skipped(f"longer than {MAX_EVENT_BYTES} bytes")

    def lines(self, lines: list[bytes]) -> None:
        take = self.writer.on_tool_result
        for line in lines:
            self.line_no += 1
            if line.strip():
                why = take(line)
                if why is not None:
                    self._skipped(why)

    def _skipped(self, why: str) -> None:
        if self.on_skip is not None:
            self.on_skip(self.line_no, why)

    def finish(self) -> None:
        """At the end of the input its last line is complete, newline or not."""
        rest, self.rest = self.rest, b""
        if not self.skipping and rest:
            self.lines([rest])
        self.skipping = False


def run_events(
    store: MemoryStore,
    events: str | None,
    *,
    follow: bool,
    on_skip: SkipReport | None = None,
) -> int:
    """``dsh-memory auto-write``: tool results as JSON lines from ``events`` (stdin when None),
    following the file as it grows with ``follow``. Pending digests are written before it
    returns: at the end of the input, or on SIGINT or SIGTERM (after taking in what was already
    there). Returns the number of digests written.

    Each line skipped as malformed is reported to ``on_skip`` (its number, why) as it is read;
    store failures are skipped silently (debug log). An events file or directory that does not
    exist is ``USAGE``; an unreadable one ``READ_FAILED``.
    """
    writer = AutoWriter(store)
    with StopSignals() as stop:
        try:
            if events is None:
                _read_stream(writer, 0, stop, on_skip)
            elif follow:
                _follow_file(writer, Path(events), stop, on_skip)
            else:
                _read_file(writer, Path(events), stop, on_skip)
        finally:
            writer.flush_all()
    return writer.written


def _read_file(
    writer: AutoWriter, path: Path, stop: StopSignals, on_skip: SkipReport | None = None
) -> None:
    """A whole file: every result first, then the digests (the same file, the same digests).

    Only a regular file: opened without blocking (a FIFO with no writer would hang ``open``
    past SIGTERM) and refused if it is anything else (``/dev/zero`` never ends). Each chunk
    read is checked for a stop, so SIGTERM ends even a huge file at once.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise StoreError(ErrorCode.USAGE, f"{path}: no such events file") from None
    except OSError as exc:
        raise StoreError(ErrorCode.READ_FAILED, f"{path}: cannot read: {exc.strerror}") from None
    feed = _LineFeed(writer, on_skip)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreError(
                ErrorCode.UNSAFE_PATH,
                f"{path}: is not a regular file; refusing to use it (a stream goes to "
                "standard input)",
            )
        while not stop.requested:
            data = os.read(fd, _READ_CHUNK)
            if not data:
                feed.finish()
                break
            feed.feed(data)
    except OSError as exc:
        raise StoreError(ErrorCode.READ_FAILED, f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def _read_stream(
    writer: AutoWriter, fd: int, stop: StopSignals, on_skip: SkipReport | None = None
) -> None:
    """Standard input: a regular file is read whole like ``--events``; a pipe or terminal is
    live, each session's digest written ``debounce_s`` after its last result.
    """
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return  # no standard input at all
    feed = _LineFeed(writer, on_skip)
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
                self.directory,
                watch_filter=self._is_events_file,
                stop_event=self.stop_event,
                debounce=100,
                step=10,
                rust_timeout=250,
                yield_on_timeout=True,
                recursive=False,
                raise_interrupt=False,
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


def _follow_file(
    writer: AutoWriter, path: Path, stop: StopSignals, on_skip: SkipReport | None = None
) -> None:
    """``--follow``: read the file from its start, then what is appended to it, waking on a
    watchfiles change or when the next digest falls due. A file replaced or cut shorter is
    read anew from its start.
    """
    path = path.expanduser().resolve()
    if not path.parent.is_dir():
        raise StoreError(ErrorCode.USAGE, f"{path.parent}: no such directory for the events file")
    reader = TailReader(path)
    feed = _LineFeed(writer, on_skip)
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
                feed.line_no = 0
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
