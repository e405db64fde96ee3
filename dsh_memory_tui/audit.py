"""What was served or exported, to whom: the private append-only log (issue 25).

Every answer ``dsh-memory mcp`` sends with records (a tool result, a resource read) and every
export appends one JSON line to ``$DSH_HOME/audit/audit.jsonl``: when, which client (its name
and version from the MCP ``initialize``), which session, what was asked (the tool and its
arguments, or the resource), each record's id, revision and content hash, how many were cut
by the budget, and the bytes sent. Never a record's title or content: a forget must leave no
copy of the text here.

The file is the home's, private (0600 in a 0700 directory, links refused, like the store's
files), and shared by every server and export of the home: each entry is one ``write`` of one
whole line to a file opened ``O_APPEND``, so two servers at once both get theirs in without a
lock, and nothing is synced (a reply is not delayed by the disk). A line cut short by a crash
is skipped by the reader (``unreadable``), and the next entry starts on a line of its own. Past
``DSH_AUDIT_MAX_BYTES`` (default 8 MiB) the file is rotated (``audit.1.jsonl`` ... ``.3``, the
oldest dropped) by whichever writer first takes ``audit.jsonl.lock``; an entry written during a
rotation lands in one file or the other, never nowhere.

``trails`` sums the log per record (served how often, to which sessions and clients, last
when; exported when and where): the receipts of ``forget``/``archive``/``reject`` and the
app's serving history. Nothing here imports textual or the MCP SDK.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import ErrorCode, StoreError
from .jsonl import (
    TailReader,
    _io_error,
    _open_private,
    _write_all,
    check_dirs,
    check_path,
    ensure_dir,
)
from .lock import HostLock
from .model import Record, now_ms
from .present import relative, visible, when

# The log's settings live in ``settings`` (every command checks them first, without this
# module); they stay importable from here.
from .settings import AUDIT_ENV as AUDIT_ENV
from .settings import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from .settings import MAX_BYTES_ENV as MAX_BYTES_ENV
from .settings import audit_setting as audit_setting
from .settings import max_bytes_setting

log = logging.getLogger(__name__)

AUDIT_DIR = "audit"
AUDIT_FILE = "audit.jsonl"
KEEP = 3  # rotated files kept: audit.1.jsonl (newest) ... audit.3.jsonl
SERVED = "served"
EXPORTED = "exported"


def record_refs(records: Iterable[Record]) -> list[dict[str, Any]]:
    """What the log keeps of each record: its id, scope, revision and content hash."""
    return [
        {
            "id": r.id,
            "scope": r.scope.value,
            "revision": r.governance.revision,
            "contentHash": r.contentHash,
        }
        for r in records
    ]


def _entry_of(
    kind: str,
    records: Sequence[Record],
    size: int,
    workspace: Path | str | None,
    at: int | None,
    **fields: Any,
) -> dict[str, Any]:
    return {
        "at": now_ms() if at is None else at,
        "kind": kind,
        **fields,
        "workspace": None if workspace is None else os.fspath(workspace),
        "records": record_refs(records),
        "bytes": size,
        "pid": os.getpid(),
    }


def served_entry(
    *,
    client: tuple[str, str] | None,
    session: str | None,
    asked: dict[str, Any],
    records: Sequence[Record],
    cut: int,
    size: int,
    workspace: Path | str | None = None,
    at: int | None = None,
) -> dict[str, Any]:
    """One serving: ``asked`` is ``{"tool": name, ...its arguments}`` or ``{"resource": uri}``."""
    who = None if client is None else {"name": client[0], "version": client[1]}
    return _entry_of(
        SERVED, records, size, workspace, at, client=who, session=session, asked=asked, cut=cut
    )


def export_entry(
    *,
    path: Path | str,
    fmt: str,
    records: Sequence[Record],
    size: int,
    workspace: Path | str | None = None,
    at: int | None = None,
) -> dict[str, Any]:
    """One export: where the bundle went and which revisions it holds."""
    return _entry_of(EXPORTED, records, size, workspace, at, path=os.fspath(path), format=fmt)


class AuditLog:
    """The home's audit log: ``append`` an entry, read ``entries`` back (oldest first)."""

    def __init__(self, home: Path | str, max_bytes: int | None = None) -> None:
        self.home = Path(home)
        self.dir = self.home / AUDIT_DIR
        self.path = self.dir / AUDIT_FILE
        self.max_bytes = max_bytes_setting() if max_bytes is None else max_bytes
        self._path = os.fspath(self.path)

    def rotated(self, n: int) -> Path:
        return self.dir / f"audit.{n}.jsonl"

    def files(self) -> list[Path]:
        """The log's files, oldest first."""
        return [self.rotated(n) for n in range(KEEP, 0, -1)] + [self.path]

    # ------------------------------------------------------------------- writing

    def append(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` as one line (one ``write``). ``StoreError`` (UNSAFE_PATH,
        WRITE_FAILED, PERMISSION_DENIED) when it cannot be written.
        """
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        try:
            data = line.encode() + b"\n"
        except UnicodeEncodeError:  # a lone surrogate (a host-valid id, a path not UTF-8)
            data = json.dumps(entry, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        ensure_dir(self.dir, self.home)
        fd, _ = _open_private(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a line cut short by a crash stays apart, and skipped
            _write_all(fd, data)
            size = os.fstat(fd).st_size
        except OSError as exc:
            raise _io_error(self.path, "appending to the audit log", exc) from None
        finally:
            os.close(fd)
        if size > self.max_bytes:
            self._rotate()

    def _rotate(self) -> None:
        """Shift the files up by one (dropping the oldest) under ``audit.jsonl.lock``, taken
        the one way locks are (``lock.HostLock``: a lock 60 s old is broken), without waiting:
        another process holding it is rotating already, so this one leaves it.
        """
        try:
            with HostLock(self.dir / f"{AUDIT_FILE}.lock", timeout_s=0).held():
                if os.lstat(self.path).st_size <= self.max_bytes:
                    return  # another process rotated it between our append and our lock
                for n in range(KEEP, 0, -1):
                    older = self.path if n == 1 else self.rotated(n - 1)
                    check_path(older)
                    with contextlib.suppress(FileNotFoundError):
                        os.replace(older, self.rotated(n))
        except StoreError as exc:
            if exc.code != ErrorCode.LOCK_TIMEOUT:  # not another rotator: say why
                log.warning("audit log not rotated: %s", exc)
        except OSError as exc:
            log.warning("audit log not rotated: %s", _io_error(self.path, "rotating", exc))

    # ------------------------------------------------------------------- reading

    def read(self, files: Sequence[Path] | None = None) -> AuditRead:
        """Every entry of ``files`` (default: every file of the log), oldest first; lines that
        are not an entry are counted. ``UNSAFE_PATH`` for a link, READ_FAILED."""
        out = AuditRead()
        if not check_dirs_quietly(self.dir, self.home):
            return out
        for path in self.files() if files is None else files:
            try:
                if not check_path(path):
                    continue
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # rotated away meanwhile
            except OSError as exc:
                raise _io_error(path, "reading", exc) from None
            try:
                with os.fdopen(fd, "rb") as f:
                    data = f.read()
            except OSError as exc:
                raise StoreError(
                    ErrorCode.READ_FAILED, f"{path}: reading failed: {exc.strerror or exc}"
                ) from None
            for raw in data.split(b"\n"):
                if not raw.strip():
                    continue
                entry = _entry(raw)
                if entry is None:
                    out.unreadable += 1
                else:
                    out.entries.append(entry)
        return out


def check_dirs_quietly(path: Path, root: Path) -> bool:
    """False when the log's directory does not exist yet; ``UNSAFE_PATH`` when it is unsafe."""
    check_dirs(path, root)
    return os.path.isdir(path)


def _entry(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("at"), int)
        or entry.get("kind") not in (SERVED, EXPORTED)
        or not isinstance(entry.get("records"), list)
    ):
        return None
    return entry


@dataclass
class AuditRead:
    entries: list[dict[str, Any]] = field(default_factory=list)
    unreadable: int = 0


def client_text(entry: dict[str, Any]) -> str:
    """``name version`` of the entry's client, or ``unknown client``."""
    client = entry.get("client")
    if not isinstance(client, dict) or not client.get("name"):
        return "unknown client"
    return " ".join(str(client[k]) for k in ("name", "version") if client.get(k))


def asked_text(entry: dict[str, Any]) -> str:
    """What an entry's client asked, in one line: ``search "ruff" scope=project``,
    ``read memory://verified``, ``export markdown``."""
    if entry["kind"] == EXPORTED:
        return f"export {entry.get('format', '')}".strip()
    asked = entry.get("asked")
    if not isinstance(asked, dict):
        return "?"
    if "resource" in asked:
        return f"read {asked['resource']}"
    tool = str(asked.get("tool", "?")).removeprefix("workspace_memory_")
    args = []
    for key, value in asked.items():
        if key == "tool":
            continue
        shown = json.dumps(value, ensure_ascii=False) if key == "query" else str(value)
        args.append(shown if key == "query" else f"{key}={shown}")
    return " ".join([tool, *args])


ROW_HEADERS = ("time (UTC)", "kind", "session", "client / path", "asked", "records", "bytes")


def entry_row(entry: dict[str, Any]) -> list[str]:
    """One entry as a row under ``ROW_HEADERS``, every field passed through ``visible``."""
    where = client_text(entry) if entry["kind"] == SERVED else str(entry.get("path"))
    return [
        when(entry["at"], "%Y-%m-%d %H:%M:%S"),
        entry["kind"],
        visible(str(entry.get("session") or "-")),
        visible(where),
        visible(asked_text(entry)),
        str(len(entry.get("records", []))),
        str(entry.get("bytes", "")),
    ]


_SINCE_UNITS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


def since_ms(value: str, now: int) -> int:
    """``--since``: ``30m``, ``2h``, ``3d``, ``1w`` ago, or a UTC date or time
    (``2026-12-01``, ``2026-12-01T10:00``, ``2026-12-01 10:00:00``). ``StoreError(USAGE)``."""
    text = value.strip()
    unit = _SINCE_UNITS.get(text[-1:].lower())
    if unit is not None and text[:-1].isdigit():
        return now - int(text[:-1]) * unit
    try:
        moment = datetime.fromisoformat(text.replace(" ", "T", 1).removesuffix("Z"))
    except ValueError:
        raise StoreError(
            ErrorCode.USAGE,
            f"--since {value!r} is not a time: use 2h, 3d, 2026-12-01 or 2026-12-01T10:00 (UTC)",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def entry_ids(entry: dict[str, Any]) -> list[str]:
    return [str(r.get("id")) for r in entry.get("records", []) if isinstance(r, dict)]


def select(
    entries: Iterable[dict[str, Any]],
    *,
    record: str | None = None,
    session: str | None = None,
    since: int | None = None,
) -> list[dict[str, Any]]:
    """The entries naming ``record``, of ``session``, at or after ``since`` (all when None)."""
    out = []
    for entry in entries:
        if since is not None and entry["at"] < since:
            continue
        if session is not None and entry.get("session") != session:
            continue
        if record is not None and record not in entry_ids(entry):
            continue
        out.append(entry)
    return out


# ----------------------------------------------------------------------------- per record


@dataclass
class Trail:
    """Where one record went: its servings and its exports."""

    served: int = 0
    sessions: dict[str, int] = field(default_factory=dict)  # session -> last served
    clients: dict[str, int] = field(default_factory=dict)  # "name version" -> last served
    last_served: int | None = None
    exports: list[tuple[int, str]] = field(default_factory=list)  # (when, where), oldest first

    @property
    def went_out(self) -> bool:
        return bool(self.served or self.exports)


def add_entry(out: dict[str, Trail], entry: dict[str, Any]) -> None:
    """Count ``entry`` in the trail of each record it names."""
    at = entry["at"]
    for rid in entry_ids(entry):
        trail = out.setdefault(rid, Trail())
        if entry["kind"] == EXPORTED:
            trail.exports.append((at, str(entry.get("path"))))
            continue
        trail.served += 1
        trail.last_served = max(at, trail.last_served or at)
        session = entry.get("session")
        if isinstance(session, str):
            trail.sessions[session] = max(at, trail.sessions.get(session, at))
        name = client_text(entry)
        trail.clients[name] = max(at, trail.clients.get(name, at))


def trails(entries: Iterable[dict[str, Any]]) -> dict[str, Trail]:
    """Each record id's ``Trail`` over ``entries``."""
    out: dict[str, Trail] = {}
    for entry in entries:
        add_entry(out, entry)
    return out


@dataclass
class AuditNews:
    """What an ``AuditIndex`` read found: the entries appended since its last read, or, on its
    first read and after a rotation (``reset``), every entry of every file."""

    reset: bool
    entries: list[dict[str, Any]]


class AuditIndex:
    """Each record's trail, kept current by reading only what was appended to the log since
    the last read (``jsonl.TailReader``, which refuses links: one ``stat`` when nothing was);
    a rotation reads every file again. The read (``read_new``: the I/O, in the app's worker)
    and the trails' update (``take``: none) are apart, so the detail pane never waits for the
    disk. ``refresh`` does both.
    """

    def __init__(self, log: AuditLog) -> None:
        self.log = log
        self.trails: dict[str, Trail] = {}
        self._reader = TailReader(log.path)
        self._read_once = False

    def read_new(self) -> AuditNews:
        """``StoreError`` (UNSAFE_PATH, READ_FAILED) when the log cannot be read."""
        chunk = self._reader.read_new()
        entries = [e for raw in chunk.lines if raw.strip() and (e := _entry(raw)) is not None]
        if chunk.reset or not self._read_once:
            self._read_once = True
            older = self.log.read(self.log.files()[:-1]).entries
            return AuditNews(True, older + entries)
        return AuditNews(False, entries)

    def take(self, news: AuditNews) -> bool:
        """The trails with ``news`` taken in; True when it changed them."""
        if news.reset:
            self.trails = trails(news.entries)
            return True
        for entry in news.entries:
            add_entry(self.trails, entry)
        return bool(news.entries)

    def refresh(self) -> None:
        """``read_new`` and ``take`` in one call (the store's receipts read the log whole)."""
        self.take(self.read_new())

    def trail(self, record_id: str) -> Trail | None:
        return self.trails.get(record_id)


def _names(seen: dict[str, int], most: int = 3) -> str:
    names = [visible(n) for n, _ in sorted(seen.items(), key=lambda kv: -kv[1])]
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def served_summary(trail: Trail, now: int) -> str:
    """One line: "served 12 times to 3 sessions, last 2 hours ago, to claude-code 2.1"."""
    if not trail.served:
        return "never served to an agent"
    sessions = len(trail.sessions)
    last = relative(trail.last_served or now, now)
    return (
        f"served {_times(trail.served)} to {sessions} session{'s' if sessions != 1 else ''} "
        f"({_names(trail.sessions)}), last {last}, to {_names(trail.clients)}"
    )


def export_summary(trail: Trail) -> str:
    if not trail.exports:
        return "never exported"
    at, where = trail.exports[-1]
    return (
        f"exported {_times(len(trail.exports))}, last {when(at)} UTC to {visible(where)}"
        if len(trail.exports) > 1
        else f"exported {when(at)} UTC to {visible(where)}"
    )


def served_line(trail: Trail | None, now: int) -> str:
    """The detail pane's line: where a record went, or that it never did."""
    if trail is None or not trail.went_out:
        return "never served to an agent nor exported"
    if not trail.exports:
        return served_summary(trail, now)
    return f"{served_summary(trail, now)}; {export_summary(trail)}"


def receipt(trail: Trail | None, now: int) -> list[str]:
    """What a forget, archive or reject should say about where the record already went."""
    if trail is None or not trail.went_out:
        return ["never served to an agent nor exported (as far as this home's audit log shows)"]
    lines = [served_summary(trail, now), export_summary(trail)]
    lines.append(
        "copies already sent or exported cannot be recalled: this only changes what is "
        "served from now on"
    )
    return lines


def trail_of(home: Path | str, record_id: str) -> Trail | None:
    """``record_id``'s trail in the home's log (None when it never went out). A log that
    cannot be read is logged and taken as empty: a receipt never blocks a forget.
    """
    try:
        entries = AuditLog(home).read().entries
    except StoreError as exc:
        log.warning("audit log not read: %s", exc)
        return None
    return trails(select(entries, record=record_id)).get(record_id)


def record_receipt(home: Path | str, record_id: str, now: int | None = None) -> list[str]:
    return receipt(trail_of(home, record_id), now_ms() if now is None else now)


def safe_append(audit: AuditLog | None, entry: dict[str, Any]) -> None:
    """``audit.append``, with a failure logged instead of raised: the answer still goes out
    (a full disk must not take an agent's memory away), and stderr says the entry is missing.
    """
    if audit is None:
        return
    try:
        audit.append(entry)
    except StoreError as exc:
        log.warning("audit entry not written: %s", exc)
