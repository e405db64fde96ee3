"""Export and import bundles (SPEC 7): moving memory between machines and teammates.

Two formats. A JSON bundle is one object, ``{"schemaVersion": 1, "exportedAt": <ms>,
"records": [...]}`` (the host's ``exportMemoryBundle``), written one record per line so it diffs
and greps well. A Markdown bundle is the host's v0.7 text (``exportMemoryMarkdown``): one
``# title`` section per record with ``key: value`` metadata and the content, ``---`` between
sections. Import is two steps for both: ``plan_import`` reads and classifies every record (new,
duplicate, invalid) and writes nothing; ``apply_import`` writes the plan's new records in one
locked batch, re-checking duplicates under the lock so two importers (or an importer and the
agent) never write the same record twice.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import compress
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .audit import AuditLog, export_entry, safe_append
from .errors import ErrorCode, StoreError
from .governance import display_conflict_groups, host_list_order
from .js_json import RawJSON, dumps_js, js_float, js_int, json_space_end, loads_js, scan_js
from .jsonl import write_atomic
from .model import (
    JS_WHITESPACE,
    MAX_SOURCE_REFS,
    MAX_TAGS,
    RETENTION_BY_SCOPE,
    SCHEMA_VERSION,
    Origin,
    ProvenanceKind,
    Record,
    RecordInvalid,
    RecordType,
    Scope,
    Status,
    Verification,
    content_hash,
    import_id,
    js_trim,
    record_from_json,
    utf8,
    validate_record,
)
from .paths import StoreFile
from .store import FileView, MemoryStore, Session
from .store.view import gc_paused as _gc_paused

# The host's import limits (``MEMORY_MAX_FILE_BYTES``, ``MEMORY_MAX_IMPORT_RECORDS``), and ours:
# they bound what a hostile bundle can make an import plan (or the app) do. Past either, a
# bundle is refused before a single record is built; an export past them says so.
HOST_MAX_BUNDLE_BYTES = 8 * 1024 * 1024
HOST_MAX_RECORDS = 10_000
MAX_BUNDLE_BYTES = HOST_MAX_BUNDLE_BYTES
MAX_BUNDLE_RECORDS = HOST_MAX_RECORDS
FORMATS = ("json", "markdown")
MARKDOWN_SUFFIXES = (".md", ".markdown")
# Deeper than any record needs (a sourceRef sits at level 6); unknown fields are kept and
# written back, so this bounds what a bundle can make every later reader parse.
MAX_DEPTH = 64
_READ_CHUNK = 1 << 20

DuplicateKey = tuple[RecordType, str]


# ------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ExportResult:
    """Where the bundle went, how many records it holds, and what the export left out."""

    path: Path
    count: int
    exported_at: int
    corrupt_skipped: int = 0  # corrupt lines in the store files (``dsh-memory check`` lists them)
    newer_schema_skipped: int = 0  # lines from a newer host: kept in the store, not exported
    format: str = "json"
    size: int = 0  # the bundle's bytes
    # (id, why) of each record the host's import would refuse (so it would refuse the bundle):
    # kept in the store, left out of a JSON bundle so that the host imports it whole.
    left_out: tuple[tuple[str, str], ...] = ()
    # (scope, records exported from it) for every scope asked for (0 too), in the bundle's order.
    by_scope: tuple[tuple[str, int], ...] = ()

    @property
    def summary(self) -> str:
        """What was written, per scope: ``wrote 12 records to x.json: project 7,
        shared-project 3, user 2, session 0`` (the CLI's line; the app's receipt)."""
        noun = "record" if self.count == 1 else "records"
        scopes = ", ".join(f"{scope} {n}" for scope, n in self.by_scope)
        return f"wrote {self.count} {noun} to {self.path}" + (f": {scopes}" if scopes else "")

    @property
    def over_host_limits(self) -> str | None:
        """Why the host would refuse this bundle as a whole (its size and count limits)."""
        if self.size > HOST_MAX_BUNDLE_BYTES:
            return (
                f"{self.size} bytes: the host imports bundles of at most "
                f"{HOST_MAX_BUNDLE_BYTES} bytes (8 MiB), and so does dsh-memory import"
            )
        if self.count > HOST_MAX_RECORDS:
            return (
                f"{self.count} records: the host imports at most {HOST_MAX_RECORDS}, "
                "and so does dsh-memory import"
            )
        return None


@dataclass(frozen=True, slots=True)
class InvalidEntry:
    """``records[index]`` of the bundle cannot be imported, and why."""

    index: int
    id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class DuplicateEntry:
    """``records[index]`` has the type and content of ``existing_id`` in the target (or of an
    earlier record of the same bundle, whose new id ``existing_id`` then is)."""

    index: int
    id: str | None
    existing_id: str


@dataclass(slots=True)
class ImportPlan:
    """What an import would do; nothing has been written yet.

    ``new[i]`` is the record that would be written for ``records[new_indexes[i]]``.
    """

    target: StoreFile
    bundle_hash: str  # "sha256:<hex of the bundle's bytes>"
    source: str  # the file, or "bundle" for bytes
    exported_at: int | None
    total: int
    new: list[Record] = field(default_factory=list)
    new_indexes: list[int] = field(default_factory=list)
    duplicates: list[DuplicateEntry] = field(default_factory=list)
    invalid: list[InvalidEntry] = field(default_factory=list)
    format: str = "json"  # "markdown": indexes count the ``---``-separated sections from 0

    def where(self, index: int) -> str:
        """How a message names entry ``index``: ``records[3]``, or ``section 4`` of Markdown."""
        return f"section {index + 1}" if self.format == "markdown" else f"records[{index}]"

    @property
    def counts(self) -> str:
        return f"{len(self.new)} new, {len(self.duplicates)} duplicate, {len(self.invalid)} invalid"


@dataclass(slots=True)
class ImportResult:
    """What ``apply_import`` wrote (``written`` ids, in bundle order) and what it did not."""

    target: StoreFile
    written: list[str] = field(default_factory=list)
    duplicates: list[DuplicateEntry] = field(default_factory=list)
    invalid: list[InvalidEntry] = field(default_factory=list)


# ------------------------------------------------------------------------- export


def _export_scopes(scopes: Iterable[Scope | str] | None, session: Session | None) -> list[Scope]:
    """The scopes to export, in the bundle's order: every scope by default; ``session``
    narrows sessions to that one (and, without ``scopes``, exports only it)."""
    if scopes is None:
        chosen = [Scope.SESSION] if session is not None else list(Scope)
    else:
        chosen = list(dict.fromkeys(Scope(s) for s in scopes))
        if session is not None and Scope.SESSION not in chosen:
            chosen.append(Scope.SESSION)
    return [s for s in (Scope.PROJECT, Scope.SHARED, Scope.USER, Scope.SESSION) if s in chosen]


def _export_files(
    store: MemoryStore, chosen: list[Scope], session: Session | None
) -> list[StoreFile]:
    """The files of the scopes ``_export_scopes`` chose (only ``session``'s, if given)."""
    files: list[StoreFile] = []
    for scope in chosen:
        if scope is Scope.SESSION and session is not None:
            files.append(store.file_for(Scope.SESSION, session))
        else:
            files.extend(store.files(scope))
    return files


def _refuse_store_dir(store: MemoryStore, out: Path) -> None:
    where = Path(os.path.realpath(out.parent))
    for directory in store.paths.watch_dirs():
        if where == Path(os.path.realpath(directory)):
            raise StoreError(
                ErrorCode.UNSAFE_PATH,
                f"{out} is inside the memory store ({directory}); a bundle there would be "
                "mistaken for store data; write it elsewhere",
            )


def export_bundle(
    store: MemoryStore,
    out: str | os.PathLike[str],
    scopes: Iterable[Scope | str] | None = None,
    session: Session | None = None,
    *,
    fmt: str = "json",
) -> ExportResult:
    """Write the chosen scopes' current records (archived too; not forgotten, not newer-schema
    lines; only the acting user's profile) to ``out``, atomically and 0600, as a JSON bundle
    or (``fmt="markdown"``) as the host's Markdown.

    A JSON bundle leaves out the records the host's import would refuse, so that the host takes
    the bundle whole (``ExportResult.left_out``): an id with ``/`` or ``\\`` (its import ref
    would be invalid), no room for the import ref among 32 source refs, or a second record of
    the same type and content whose refs would not fit into the first's (the host merges them).

    ``scopes`` None means every scope; ``session`` picks one session instead of all of them.
    Raises UNSAFE_PATH (``out`` is a symlink, not a regular file, or inside a store
    directory), WRITE_FAILED, USAGE.
    """
    if fmt not in FORMATS:
        raise StoreError(ErrorCode.USAGE, f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    out_path = Path(out)
    _refuse_store_dir(store, out_path)
    if not out_path.parent.is_dir():  # else the error would name our temporary file
        raise StoreError(ErrorCode.USAGE, f"no such directory: {out_path.parent}")
    corrupt = future = 0
    per_file: list[tuple[list[Record], dict[str, str]]] = []
    asked = _export_scopes(scopes, session)
    for file in _export_files(store, asked, session):
        view = store.view(file)
        view.refresh()
        corrupt += len(view.corrupt)
        future += len(view.future)
        records = [r for r in view.current.values() if r.status is not Status.FORGOTTEN]
        # The host exports each store with the conflict groups its domain computes.
        per_file.append((records, display_conflict_groups(records)))
    exported_at = store.clock()
    left_out: list[tuple[str, str]] = []
    if fmt == "markdown":
        records = [r for chosen, _ in per_file for r in host_list_order(chosen)]
        data = utf8(markdown_text(records))
        count = len(records)
        exported = records
    else:
        lines: list[bytes] = []
        exported = []
        fits = _HostImportCheck()
        for chosen, groups in per_file:
            for record in chosen:
                why = fits.refusal(record)
                if why is not None:
                    left_out.append((record.id, why))
                    continue
                lines.append(_export_line(record, groups.get(record.id)))
                exported.append(record)
        head = b'{"schemaVersion": 1, "exportedAt": %d, "records": [' % exported_at
        body = b",\n".join(lines)
        data = head + (b"\n" + body + b"\n" if lines else b"") + b"]}\n"
        count = len(lines)
    write_atomic(out_path, data)
    entry = export_entry(
        path=out_path.resolve(),
        fmt=fmt,
        records=exported,
        size=len(data),
        workspace=store.paths.workspace,
        at=exported_at,
    )
    safe_append(AuditLog(store.paths.home), entry)
    counted = Counter(r.scope for r in exported)
    by_scope = tuple((scope.value, counted[scope]) for scope in asked)
    return ExportResult(
        out_path, count, exported_at, corrupt, future, fmt, len(data), tuple(left_out), by_scope
    )


def format_for_path(path: str | os.PathLike[str], default: str = "json") -> str:
    """The bundle format a path's suffix names (``.md``/``.markdown``: markdown, ``.json``:
    json), else ``default``: what the CLI's export and the app's both write."""
    suffix = Path(path).suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    return "json" if suffix == ".json" else default


class _HostImportCheck:
    """What the host's ``importMemoryBundle`` + ``persistImported`` would refuse, record by
    record in bundle order (one refused record makes it refuse or stop part way)."""

    def __init__(self) -> None:
        # (type, contentHash) -> the refs the host's import has merged into that record so far.
        self._merged: dict[tuple[RecordType, str], set[tuple[str, str, Any]]] = {}

    def refusal(self, record: Record) -> str | None:
        if not js_trim(record.id) or _BAD_REF_ID.search(record.id):
            return "its id holds / or \\, which the host's import refuses as a source ref id"
        refs = [(r.kind, r.id, r.contentHash) for r in record.governance.sourceRefs]
        refs.append(("import", record.id, record.contentHash))
        if len(refs) > MAX_SOURCE_REFS:
            return (
                f"{len(refs) - 1} source refs: no room for the host's import ref "
                f"(it allows {MAX_SOURCE_REFS})"
            )
        key = (record.type, record.contentHash)
        merged = self._merged.get(key)
        if merged is None:
            self._merged[key] = set(refs)
            return None
        union = merged | set(refs)
        if len(union) > MAX_SOURCE_REFS:
            return (
                "the host merges it into an earlier record of the bundle with the same "
                f"type and content, and their source refs would pass {MAX_SOURCE_REFS}"
            )
        self._merged[key] = union
        return None


_BAD_REF_ID = re.compile("[\\\\/\x00-\x1f\x7f]")


def _export_line(record: Record, group: str | None) -> bytes:
    """One record of a bundle, as the host's ``exportMemoryBundle`` writes it: every field of
    its store line, with ``governance`` always there (an older host's record gets the host's
    defaults) and the conflict group the host computes for it.
    """
    if not record.is_legacy and (group is None or record.governance.conflictGroup is not None):
        return record.to_line()[:-1]  # the store line as it is: nothing to add
    data = record.to_json()  # governance filled in
    if group is not None:
        data["governance"].setdefault("conflictGroup", group)
    try:
        return dumps_js(data).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate the host accepted: escaped, as JSON.stringify
        return dumps_js(data, ensure_ascii=True).encode()


# ------------------------------------------------------------------------- Markdown


MARKDOWN_EMPTY = "# Workspace Memory\n\n(empty)\n"  # the host's export of no record
MARKDOWN_NOTE = "markdown import"


def iso_time(ms: int) -> str:
    """``new Date(ms).toISOString()``: UTC with milliseconds (``2026-12-01T08:16:22.284Z``)."""
    try:
        t = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    except OverflowError:  # past year 9999: the host's toISOString has its own form or throws
        return str(ms)
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:"
        f"{t.second:02d}.{t.microsecond // 1000:03d}Z"
    )


def markdown_text(records: Iterable[Record]) -> str:
    """The host's ``exportMemoryMarkdown`` of ``records`` (in the order given; forgotten ones
    left out): a ``# title`` section each, its metadata, then the content verbatim."""
    sections = []
    for record in records:
        if record.status is Status.FORGOTTEN:
            continue
        g = record.governance
        meta = [
            f"type: {record.type.value}",
            f"scope: {record.scope.value}",
            f"verification: {g.verification.value}",
            f"origin: {g.origin.value}",
            f"retention: {g.retention.value}",
        ]
        if record.tags:
            meta.append(f"tags: {', '.join(record.tags)}")
        meta.append(f"updated: {iso_time(record.updatedAt)}")
        sections.append(f"# {record.title}\n\n" + "\n".join(meta) + f"\n\n{record.content}")
    if not sections:
        return MARKDOWN_EMPTY
    return "\n\n---\n\n".join(sections) + "\n"


_SECTION_BREAK = re.compile(r"\r?\n---[ \t]*\r?\n")
_JS_SPACE = f"[{re.escape(JS_WHITESPACE)}]"
# JS /^([A-Za-z-]+):\s*(.*)$/u: ``.`` stops at line terminators, ``$`` is the end of input.
# Exactly the sections ``_parse_section`` finds a title in: the first line that is not blank,
# trimmed, is ``# `` and more than white space. Tested in C, so a file of a million untitled
# sections costs no Python per section.
_TITLED = re.compile(
    f"{_JS_SPACE}*# [{re.escape(JS_WHITESPACE.replace(chr(10), ''))}]*[^{re.escape(JS_WHITESPACE)}]"
)
_META = re.compile(f"([A-Za-z-]+):{_JS_SPACE}*([^\n\r\u2028\u2029]*)")
_TYPES = tuple(t.value for t in RecordType)


@dataclass(frozen=True, slots=True)
class MarkdownSection:
    """One ``# title`` section of a Markdown bundle, as the host's parser reads it."""

    index: int  # among the ``---``-separated sections, from 0
    title: str
    content: str
    type: str
    tags: list[str]
    meta: dict[str, str]


def parse_markdown(
    text: str, *, limit: int | None = None
) -> tuple[int, list[MarkdownSection | InvalidEntry]]:
    """The host's ``importMemoryMarkdown`` parse of ``text``: the number of ``---``-separated
    sections, and each section with a ``# title`` (others are skipped, as the host skips
    them) as a ``MarkdownSection`` or, where the host's parser throws, an ``InvalidEntry``
    with its message (no content, an unknown type). The host's own export of nothing (``#
    Workspace Memory`` / ``(empty)``) is no section at all (the host would import it as one).
    With ``limit``, it stops at the section after the ``limit``-th (the host refuses such a
    file as a whole), so a huge file costs no more than ``limit`` sections.
    """
    if js_trim(text).replace("\r\n", "\n") == js_trim(MARKDOWN_EMPTY):
        return 0, []
    out: list[MarkdownSection | InvalidEntry] = []
    parts = _SECTION_BREAK.split(text)
    for index in compress(range(len(parts)), map(_TITLED.match, parts)):
        section = _parse_section(index, parts[index])
        if section is not None:
            out.append(section)
            if limit is not None and len(out) > limit:
                break
    return len(parts), out


class _Lines:
    """The lines of a section as JS ``split(/\\r?\\n/)`` makes them, taken one at a time; the
    rest of the section (the content) is then cut out in one piece."""

    __slots__ = ("text", "pos", "done")

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.done = text, 0, False

    def peek(self) -> str | None:
        if self.done:
            return None
        end = self.text.find("\n", self.pos)
        if end < 0:
            return self.text[self.pos :]
        return self.text[
            self.pos : end - 1 if end > self.pos and self.text[end - 1] == "\r" else end
        ]

    def take(self) -> None:
        end = self.text.find("\n", self.pos)
        if end < 0:
            self.done = True
        else:
            self.pos = end + 1

    def skip_blank(self) -> None:
        while (line := self.peek()) is not None and not js_trim(line):
            self.take()

    def rest(self) -> str:
        """The lines not taken, joined with LF (each CRLF becomes LF, as the host's join)."""
        return "" if self.done else self.text[self.pos :].replace("\r\n", "\n")


def _parse_section(index: int, part: str) -> MarkdownSection | InvalidEntry | None:
    lines = _Lines(part)
    lines.skip_blank()
    head = js_trim(lines.peek() or "")
    if not head.startswith("# "):
        return None
    title = js_trim(head[2:])
    if not title:
        return None
    lines.take()
    lines.skip_blank()
    meta: dict[str, str] = {}
    while (raw := lines.peek()) is not None:
        line = js_trim(raw)
        match = _META.fullmatch(line) if line else None
        if match is None:
            break
        meta[match.group(1).lower()] = js_trim(match.group(2))
        lines.take()
    lines.skip_blank()
    content = js_trim(lines.rest())
    if not content:
        return InvalidEntry(
            index,
            None,
            "Memory markdown record has no content: the section "
            f"'# {title}' has nothing under its metadata",
        )
    kind = meta.get("type", "fact")
    if kind not in _TYPES:
        return InvalidEntry(
            index,
            None,
            f"Memory markdown type is invalid: {kind!r} is not one of {', '.join(_TYPES)}",
        )
    tags = [t for t in (js_trim(t) for t in meta.get("tags", "").split(",")) if t][:MAX_TAGS]
    return MarkdownSection(index, title, content, kind, tags, meta)


# ------------------------------------------------------------------------- import: reading


def _invalid(message: str) -> StoreError:
    return StoreError(ErrorCode.BUNDLE_INVALID, message)


def _read_source(source: str | os.PathLike[str] | bytes) -> tuple[bytes, str]:
    """The bundle's bytes and a label for messages; at most ``MAX_BUNDLE_BYTES`` are read."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        label = "bundle"
    else:
        label = str(source)
        data = _read_file(Path(source))
    if len(data) > MAX_BUNDLE_BYTES:
        raise _too_big(label, len(data))
    return data, label


def _too_big(label: str, size: int) -> StoreError:
    return _invalid(
        f"{label}: {size} bytes is larger than the 8 MiB a bundle may have (the host's limit)"
    )


def _read_file(path: Path) -> bytes:
    # A bundle is input the user names, so a symlink to it is followed; a FIFO or device is not
    # read (O_NONBLOCK, then the regular-file check), and a huge file is refused before reading.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        # As every file a command names (auto-write's events, export's directory): exit 2.
        raise StoreError(ErrorCode.USAGE, f"{path}: no such bundle file") from None
    except OSError as exc:
        raise _invalid(f"{path}: cannot read it: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _invalid(f"{path}: not a regular file")
        if st.st_size > MAX_BUNDLE_BYTES:
            raise _too_big(str(path), st.st_size)
        chunks: list[bytes] = []
        left = MAX_BUNDLE_BYTES + 1  # the file may grow after the stat
        while left > 0:
            chunk = os.read(fd, min(_READ_CHUNK, left))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _invalid(f"{path}: cannot read it: {exc.strerror}") from None
    finally:
        os.close(fd)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _check_value(value: Any, level: int, label: str, where: str) -> None:
    """BUNDLE_INVALID if ``value``, one level below ``level``, nests deeper than ``MAX_DEPTH``
    or holds NaN or Infinity (pydantic's reader accepts them and would write them back as
    null). Iterative: no depth can blow the stack.
    """
    stack = [(value, level + 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        elif type(item) is RawJSON and item.text[:1] in "[{":  # only past MAX_NESTING
            raise _invalid(f"{label}: {where} is nested deeper than {MAX_DEPTH} levels")
        else:
            if isinstance(item, float) and not math.isfinite(item):
                raise _invalid(f"{label}: {where}: NaN or Infinity is not a JSON number")
            continue
        if depth > MAX_DEPTH:
            raise _invalid(f"{label}: {where} is nested deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def _decode(data: bytes, label: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise _invalid(
            f"{label}: not UTF-8: byte 0x{data[exc.start]:02x} at line {line} column {column}"
        ) from None
    return text.removeprefix("\ufeff")  # a byte-order mark some editors add


class _Bundle(BaseModel):
    """The fast path: the whole bundle read in one pass, each record validated as
    ``parse_line`` validates a store line. Any failure falls back to ``_parse_json``, which
    reads each entry on its own to say which is wrong and why.
    """

    model_config = ConfigDict(extra="allow")
    # Not Literal[1]: pydantic takes ``true`` for it. A strict int refuses ``1.0``, which the
    # slow path then accepts (``JSON.parse`` makes it 1, and the host takes it).
    schemaVersion: int
    # fail_fast: a bundle of many bad records fails at the first one, without collecting the
    # errors of every other one (that took seconds); the slow path then says which and why.
    records: Annotated[list[Record], Field(fail_fast=True)]


_TOP_LEVEL_TYPES = {
    "[": "list",
    '"': "string",
    "t": "boolean",
    "f": "boolean",
    "n": "null",
    "-": "number",
    **dict.fromkeys("0123456789", "number"),
}
# A valid record holds a few dozen objects and lists. A bundle with more of them than this per
# record allowed is left to the bounded reader: pydantic's reader would first build a tree of
# every one of them (a million ``{}``: hundreds of MB) before seeing how many records there are.
_FAST_PATH_CONTAINERS = 64 * MAX_BUNDLE_RECORDS


# What pydantic's reader takes for a float that is not finite: NaN and Infinity (not JSON),
# and numbers past the largest double (JSON.parse's Infinity, which ``scan_js`` keeps as text).
# Words in strings match too; they only cost the slow path.
_NOT_FINITE = re.compile(r"NaN|Infinity|[eE]\+?0*[1-9][0-9]{2}|[0-9]{300}")


class _NotPlain(Exception):
    """The bounded reader met something it leaves to ``json.loads`` (an error, most likely)."""


def _loads_bounded(text: str, label: str) -> Any:
    """``json.loads`` of a bundle, reading the top-level object's ``records`` list one entry
    at a time: past ``MAX_BUNDLE_RECORDS`` entries it stops (BUNDLE_INVALID) before building
    the rest. Anything else (not an object, bad JSON) is read by ``json.loads`` itself, for
    its messages.
    """
    space = json_space_end
    pos = space(text, 0)
    top = _TOP_LEVEL_TYPES.get(text[pos : pos + 1])
    if top is not None:  # said without reading it: a list of a million values costs nothing
        raise _invalid(f"{label}: the top level is a JSON {top}, not an object")
    try:
        if not text.startswith("{", pos):
            raise _NotPlain
        obj: dict[str, Any] = {}
        pos = space(text, pos + 1)
        if text.startswith("}", pos):
            pos += 1
        else:
            while True:
                key, pos = scan_js(text, pos)
                if not isinstance(key, str):
                    raise _NotPlain
                pos = space(text, pos)
                if not text.startswith(":", pos):
                    raise _NotPlain
                pos = space(text, pos + 1)
                if key == "records" and text.startswith("[", pos):
                    obj[key], pos = _records_bounded(text, pos, label)
                else:
                    obj[key], pos = scan_js(text, pos)  # the last of a repeated key wins
                pos = space(text, pos)
                if text.startswith("}", pos):
                    pos += 1
                    break
                if not text.startswith(",", pos):
                    raise _NotPlain
                pos = space(text, pos + 1)
        if space(text, pos) != len(text):
            raise _NotPlain
        return obj
    except (_NotPlain, StopIteration, ValueError, RecursionError):
        # Its messages; a number Python cannot hold is not an error (JSON.parse takes it).
        return json.loads(
            text, parse_constant=_reject_constant, parse_float=js_float, parse_int=js_int
        )


def _records_bounded(text: str, pos: int, label: str) -> tuple[list[Any], int]:
    """The JSON list at ``text[pos]`` and the position after it; BUNDLE_INVALID at its
    ``MAX_BUNDLE_RECORDS + 1``-th entry."""
    space = json_space_end
    entries: list[Any] = []
    pos = space(text, pos + 1)
    if text.startswith("]", pos):
        return entries, pos + 1
    while True:
        entry, pos = scan_js(text, pos)
        entries.append(entry)
        if len(entries) > MAX_BUNDLE_RECORDS:
            raise _too_many(label)
        pos = space(text, pos)
        if text.startswith("]", pos):
            return entries, pos + 1
        if not text.startswith(",", pos):
            raise _NotPlain
        pos = space(text, pos + 1)


def _is_version_1(value: Any) -> bool:
    """The host's ``schemaVersion === 1`` after ``JSON.parse``: ``1``, ``1.0`` and ``10e-1``
    are the number 1 there; ``true`` and ``"1"`` are not."""
    return type(value) in (int, float) and value == SCHEMA_VERSION


def _parse_json(text: str, label: str) -> dict[str, Any]:
    """The bundle as plain JSON: an object with schemaVersion 1 and a ``records`` list,
    or BUNDLE_INVALID saying what is wrong and where."""
    try:
        obj = _loads_bounded(text, label)
    except json.JSONDecodeError as exc:
        raise _invalid(
            f"{label}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise _invalid(f"{label}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # NaN or Infinity, a number too long or too large
        raise _invalid(f"{label}: not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise _invalid(f"{label}: the top level is a JSON {_json_type(obj)}, not an object")
    version = obj.get("schemaVersion")
    if not _is_version_1(version):
        shown = "missing" if "schemaVersion" not in obj else dumps_js(version)
        raise _invalid(
            f"{label}: schemaVersion is {shown}; this tool reads bundles of schemaVersion 1"
        )
    records = obj.get("records")
    if not isinstance(records, list):
        shown = "missing" if "records" not in obj else f"a JSON {_json_type(records)}"
        raise _invalid(f"{label}: 'records' is {shown}, not a list")
    return obj


def _read_bundle(data: bytes, label: str) -> tuple[list[Any], dict[str, Any]]:
    """The bundle's entries (validated ``Record``s on the fast path, plain JSON values
    otherwise) and its other top-level fields. BUNDLE_INVALID for a bad bundle."""
    text = _decode(data, label)
    try:
        if text.count("{") + text.count("[") > _FAST_PATH_CONTAINERS:
            raise ValueError("too many values for the fast path")
        if _NOT_FINITE.search(text):  # pydantic's reader would make a float of it
            raise ValueError("NaN, Infinity or a number past a float: the slow path reads it")
        fast = _Bundle.model_validate_json(text, strict=True)
        if fast.schemaVersion != SCHEMA_VERSION:
            raise ValueError("not schemaVersion 1: the slow path says so")
    except (ValidationError, ValueError):
        obj = _parse_json(text, label)
        entries: list[Any] = obj.pop("records")
        del obj["schemaVersion"]
        others = obj
    else:
        entries, others = fast.records, fast.model_extra or {}
    if len(entries) > MAX_BUNDLE_RECORDS:
        raise _too_many(label)
    for key, value in others.items():
        _check_value(value, 1, label, repr(key))
    return entries, others


def _too_many(label: str) -> StoreError:
    return _invalid(
        f"{label}: more than {MAX_BUNDLE_RECORDS} records; a bundle may hold at most "
        f"{MAX_BUNDLE_RECORDS} (the host's limit)"
    )


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _unknown_fields(record: Record) -> Iterator[tuple[Any, int]]:
    """The values of a record's unknown fields, each with its parent's nesting level in the
    bundle (the record itself is at level 3)."""
    g = record.governance
    for model, level in ((record, 3), (record.provenance, 4), (g, 4)):
        for value in (model.model_extra or {}).values():
            yield value, level
    for ref in g.sourceRefs:
        for value in (ref.model_extra or {}).values():
            yield value, 6


def _bundle_record(entry: Any, label: str, where: str) -> Record:
    """Validate one entry of ``records`` (a ``Record`` from the fast path still needs the
    SPEC 3 rules); RecordInvalid says why it cannot be imported.

    BUNDLE_INVALID if it nests deeper than ``MAX_DEPTH`` or holds NaN. The entry's own scope
    is not checked against the target: a project record may be imported into user, say.
    """
    if isinstance(entry, Record):
        record = validate_record(entry)
    elif not isinstance(entry, dict):
        raise RecordInvalid(f"a JSON {_json_type(entry)}, not an object")
    else:
        try:
            record = record_from_json(entry)
        except RecordInvalid:
            _check_value(entry, 2, label, where)
            version = entry.get("schemaVersion")
            if type(version) is int and version > SCHEMA_VERSION:
                raise RecordInvalid(
                    f"schemaVersion {version}: written by a newer host; only schemaVersion 1 "
                    "records can be imported"
                ) from None
            raise
    # Known fields have a fixed shape; unknown ones are kept on import, so they are checked.
    for value, level in _unknown_fields(record):
        _check_value(value, level, label, where)
    if record.status is Status.FORGOTTEN:
        raise RecordInvalid("a forgotten record: it has no content left to import")
    return record


def _entry_id(entry: Any) -> str | None:
    rid = (
        entry.id
        if isinstance(entry, Record)
        else (entry.get("id") if isinstance(entry, dict) else None)
    )
    return rid if isinstance(rid, str) else None


# ------------------------------------------------------------------------- import: plan


def _import_refs(source: Record) -> list[dict[str, Any]]:
    """The sourceRefs of the record an import writes (the host's ``importMemoryBundle``):
    the bundle record's own (an older host's record: the host's defaults), then
    ``{kind: import, id: <original id>, contentHash}``, always last. RecordInvalid, as the
    host's import refuses them, when that is more than 32 refs (listed invalid, never trimmed:
    a trimmed list would lose where the memory came from) or the id holds ``/`` or ``\\``.
    """
    if "/" in source.id or "\\" in source.id:
        # The host's sourceRef() refuses such an id, so its import refuses the record.
        raise RecordInvalid(
            "Memory source reference id is invalid",
            "the record's id, which its import ref names, holds / or \\",
        )
    mine = {"kind": "import", "id": source.id, "contentHash": source.contentHash}
    refs = [r.model_dump(exclude_unset=True) for r in source.governance.sourceRefs]
    refs = [r for r in refs if r != mine]
    if len(refs) + 1 > MAX_SOURCE_REFS:
        raise RecordInvalid(
            "Memory import has too many source references",
            f"{len(refs)} of its own and the import's own: the host allows {MAX_SOURCE_REFS}",
        )
    return [*refs, mine]


def _imported(
    source: Record, refs: list[dict[str, Any]], target: StoreFile, note: str, now: int
) -> Record:
    """The record an import writes for ``source``: its type, title, content, tags and unknown
    top-level fields, with a new id, the target's scope and fresh governance.
    """
    provenance: dict[str, Any] = {"kind": ProvenanceKind.IMPORT, "note": note}
    if target.scope is Scope.SESSION:
        provenance["sessionId"] = target.scope_key.split("|", 1)[0]  # type: ignore[union-attr]
    # Built as data and validated once: make_record would re-validate and re-hash the content
    # that record_from_json has just checked (this is most of an import plan's time).
    return Record.model_validate(
        {
            "schemaVersion": SCHEMA_VERSION,
            "id": import_id(),
            "scope": target.scope,
            "scopeKey": target.scope_key,
            "type": source.type,
            "title": source.title,
            "content": source.content,
            "tags": source.tags,
            "provenance": provenance,
            "createdAt": now,
            "updatedAt": now,
            "useCount": 0,
            "contentHash": source.contentHash,
            "status": Status.ACTIVE,
            "governance": {
                "origin": Origin.IMPORTED,
                # Theirs, and the original record (SPEC 7): kinds the host allows.
                "sourceRefs": refs,
                "verification": Verification.UNVERIFIED,
                "revision": 1,
                "retention": RETENTION_BY_SCOPE[target.scope],
            },
            **(source.model_extra or {}),
        }
    )


def bundle_format(source: str | os.PathLike[str] | bytes, data: bytes) -> str:
    """``markdown`` for a ``.md``/``.markdown`` file, or for other bytes whose first text
    (after white space and a byte-order mark) is a ``#`` heading; ``json`` otherwise."""
    if (
        not isinstance(source, bytes | bytearray | memoryview)
        and Path(source).suffix.lower() in MARKDOWN_SUFFIXES
    ):
        return "markdown"
    head = data[:4096].removeprefix(b"\xef\xbb\xbf").lstrip()
    return "markdown" if head.startswith(b"#") else "json"


def plan_import(
    store: MemoryStore,
    source: str | os.PathLike[str] | bytes,
    scope: Scope | str,
    session: Session | None = None,
    *,
    fmt: str | None = None,
) -> ImportPlan:
    """Read a bundle (JSON, or the host's Markdown: ``fmt``, else ``bundle_format``) and
    classify each record as new, duplicate (same type and contentHash as a current, not
    forgotten record of the target, or as an earlier record of the bundle) or invalid (with
    its reason). Writes nothing.

    Raises BUNDLE_INVALID when the bundle itself is bad (unreadable; over the host's 8 MiB or
    10,000 records, found before the records are built; not UTF-8; JSON: not a JSON object,
    schemaVersion not the number 1, ``records`` not a list, nested deeper than 64 levels;
    Markdown: no ``# title`` section);
    USAGE for a session target without ``session``, an unknown ``fmt`` or a bundle file that
    does not exist; UNSAFE_PATH or
    READ_FAILED when the target file cannot be read.
    """
    if fmt is not None and fmt not in FORMATS:
        raise StoreError(ErrorCode.USAGE, f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    target = store.file_for(scope, session)
    data, label = _read_source(source)
    fmt = fmt or bundle_format(source, data)
    plan = ImportPlan(
        target, "sha256:" + hashlib.sha256(data).hexdigest(), label, None, 0, format=fmt
    )
    view = store.view(target)
    view.refresh()
    # Parsing builds many small objects: pause the cyclic GC as a load does. The parsed bundle
    # is dropped inside, so only the new records are left for the GC to walk afterwards.
    classify = _classify_markdown if fmt == "markdown" else _classify
    with _gc_paused(len(data) // 1024):
        classify(data, plan, view.duplicate_index(), store.clock())
    return plan


def _note(label: str) -> str:
    return f"imported from {Path(label).name if label != 'bundle' else 'a bundle'}"


def _classify(data: bytes, plan: ImportPlan, index_of: dict[DuplicateKey, str], now: int) -> None:
    label = plan.source
    entries, others = _read_bundle(data, label)
    exported_at = others.get("exportedAt")
    plan.exported_at = exported_at if type(exported_at) is int else None
    plan.total = len(entries)
    note = _note(label)
    for index, entry in enumerate(entries):
        try:
            record = _bundle_record(entry, label, f"records[{index}]")
            refs = _import_refs(record)
        except RecordInvalid as exc:
            plan.invalid.append(InvalidEntry(index, _entry_id(entry), exc.reason))
            continue
        key = (record.type, record.contentHash)
        existing = index_of.get(key)
        if existing is not None:
            plan.duplicates.append(DuplicateEntry(index, record.id, existing))
            continue
        new = _imported(record, refs, plan.target, note, now)
        index_of[key] = new.id
        plan.new.append(new)
        plan.new_indexes.append(index)


def _classify_markdown(
    data: bytes, plan: ImportPlan, index_of: dict[DuplicateKey, str], now: int
) -> None:
    """Markdown sections as records: type, title, content and tags from the section; the
    rest as any import (imported, unverified, the target's retention), with one source ref
    ``{kind: import, id: <the file's sha256>, contentHash}`` that makes every one host-valid
    (the host's own Markdown import writes no ref, so it cannot store what it did not author).
    """
    label = plan.source
    total, sections = parse_markdown(_decode(data, label), limit=MAX_BUNDLE_RECORDS)
    if total and not sections:
        raise _invalid(f"{label}: Memory import contains no records: no '# title' section")
    if len(sections) > MAX_BUNDLE_RECORDS:
        raise _too_many(label)
    plan.total = len(sections)
    note = _note(label)
    for section in sections:
        if isinstance(section, InvalidEntry):
            plan.invalid.append(section)
            continue
        try:
            record = _markdown_record(section, plan, note, now)
        except RecordInvalid as exc:
            plan.invalid.append(InvalidEntry(section.index, None, exc.reason))
            continue
        key = (record.type, record.contentHash)
        existing = index_of.get(key)
        if existing is not None:
            plan.duplicates.append(DuplicateEntry(section.index, None, existing))
            continue
        index_of[key] = record.id
        plan.new.append(record)
        plan.new_indexes.append(section.index)


def _markdown_record(section: MarkdownSection, plan: ImportPlan, note: str, now: int) -> Record:
    """The record an import writes for a section, checked by the host's rules (``RecordInvalid``
    with the host's message when one fails: a title over 256 bytes, say)."""
    target = plan.target
    provenance: dict[str, Any] = {"kind": ProvenanceKind.IMPORT, "note": note}
    if target.scope is Scope.SESSION:
        provenance["sessionId"] = target.scope_key.split("|", 1)[0]  # type: ignore[union-attr]
    hash_ = content_hash(section.content)
    data = {
        "schemaVersion": SCHEMA_VERSION,
        "id": import_id(),
        "scope": target.scope,
        "scopeKey": target.scope_key,
        "type": section.type,
        "title": section.title,
        "content": section.content,
        "tags": section.tags,
        "provenance": provenance,
        "createdAt": now,
        "updatedAt": now,
        "useCount": 0,
        "contentHash": hash_,
        "status": Status.ACTIVE,
        "governance": {
            "origin": Origin.IMPORTED,
            "sourceRefs": [{"kind": "import", "id": plan.bundle_hash, "contentHash": hash_}],
            "verification": Verification.UNVERIFIED,
            "revision": 1,
            "retention": RETENTION_BY_SCOPE[target.scope],
        },
    }
    try:
        record = Record.model_validate(data)
    except ValidationError:  # the host's rule and message instead of pydantic's
        return record_from_json(loads_js(dumps_js(data)))
    return validate_record(record)


# ------------------------------------------------------------------------- import: apply


def check_strict(plan: ImportPlan) -> None:
    """BUNDLE_INVALID if the plan lists an invalid record: what ``--strict`` refuses, so a
    dry run can check a bundle (``dsh-memory import --dry-run --strict`` in CI)."""
    if plan.invalid:
        bad = plan.invalid[0]
        raise _invalid(
            f"{plan.source}: {len(plan.invalid)} invalid record(s) and --strict, so nothing was "
            f"imported; first: {plan.where(bad.index)} ({bad.id or 'no id'}): {bad.reason}"
        )


def apply_import(
    store: MemoryStore,
    plan: ImportPlan,
    *,
    strict: bool = False,
    confirm_shared: bool = False,
) -> ImportResult:
    """Write the plan's new records into its target in one locked, all-or-nothing batch.

    Duplicates are checked again under the lock (a record that appeared since the plan is not
    written twice). ``strict``: any invalid record aborts the whole import (BUNDLE_INVALID).
    Also raises SHARED_WRITE_UNCONFIRMED (only when something would be written),
    STORE_TOO_LARGE (the batch would pass 8 MiB), LOCK_TIMEOUT, UNSAFE_PATH, WRITE_FAILED;
    after any error nothing was written.
    """
    if strict:
        check_strict(plan)
    if not plan.new:
        return ImportResult(plan.target, [], list(plan.duplicates), list(plan.invalid))

    def build(view: FileView) -> tuple[list[Record], ImportResult]:
        # Made anew each time: the store may decide again if another writer got in first.
        result = ImportResult(plan.target, [], list(plan.duplicates), list(plan.invalid))
        index_of = view.duplicate_index()
        now = store.clock()
        batch: list[Record] = []
        for index, record in zip(plan.new_indexes, plan.new, strict=True):
            key = (record.type, record.contentHash)
            existing = index_of.get(key)
            if existing is not None:
                original = (
                    None if plan.format == "markdown" else (record.governance.sourceRefs[-1].id)
                )
                result.duplicates.append(DuplicateEntry(index, original, existing))
                continue
            index_of[key] = record.id
            # Stamped at the write, not at the plan: a dialog may wait between the two.
            batch.append(record.model_copy(update={"createdAt": now, "updatedAt": now}))
        result.written = [r.id for r in batch]
        return batch, result

    return store.write(plan.target, build, confirm_shared=confirm_shared)


__all__ = [
    "FORMATS",
    "HOST_MAX_BUNDLE_BYTES",
    "HOST_MAX_RECORDS",
    "MAX_BUNDLE_BYTES",
    "MAX_BUNDLE_RECORDS",
    "MAX_DEPTH",
    "DuplicateEntry",
    "ExportResult",
    "ImportPlan",
    "ImportResult",
    "InvalidEntry",
    "MarkdownSection",
    "apply_import",
    "bundle_format",
    "check_strict",
    "export_bundle",
    "markdown_text",
    "parse_markdown",
    "plan_import",
]
