"""Export and import bundles (SPEC 7): moving memory between machines and teammates.

A bundle is one JSON object, ``{"schemaVersion": 1, "exportedAt": <ms>, "records": [...]}``,
written one record per line so it diffs and greps well. Import is two steps: ``plan_import``
reads and classifies every record (new, duplicate, invalid) and writes nothing;
``apply_import`` writes the plan's new records in one locked batch, re-checking duplicates
under the lock so two importers (or an importer and the agent) never write the same record twice.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import StoreError
from .governance import display_conflict_groups
from .jsonl import write_atomic
from .model import (
    MAX_SOURCE_REFS,
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
    import_id,
    record_from_json,
    validate_record,
)
from .paths import StoreFile
from .store import FileView, MemoryStore, Session
from .store.view import gc_paused as _gc_paused

MAX_BUNDLE_BYTES = 64 * 1024 * 1024
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


@dataclass(slots=True)
class ImportResult:
    """What ``apply_import`` wrote (``written`` ids, in bundle order) and what it did not."""

    target: StoreFile
    written: list[str] = field(default_factory=list)
    duplicates: list[DuplicateEntry] = field(default_factory=list)
    invalid: list[InvalidEntry] = field(default_factory=list)


# ------------------------------------------------------------------------- export


def _export_files(
    store: MemoryStore, scopes: Iterable[Scope | str] | None, session: Session | None
) -> list[StoreFile]:
    """The files to export: every scope by default; ``session`` narrows sessions to that one
    (and, without ``scopes``, exports only it)."""
    if scopes is None:
        chosen = [Scope.SESSION] if session is not None else list(Scope)
    else:
        chosen = list(dict.fromkeys(Scope(s) for s in scopes))
        if session is not None and Scope.SESSION not in chosen:
            chosen.append(Scope.SESSION)
    files: list[StoreFile] = []
    for scope in (Scope.PROJECT, Scope.SHARED, Scope.USER, Scope.SESSION):
        if scope not in chosen:
            continue
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
                "UNSAFE_PATH",
                f"{out} is inside the memory store ({directory}); a bundle there would be "
                "mistaken for store data; write it elsewhere",
            )


def export_bundle(
    store: MemoryStore,
    out: str | os.PathLike[str],
    scopes: Iterable[Scope | str] | None = None,
    session: Session | None = None,
) -> ExportResult:
    """Write the chosen scopes' current records (archived too; not forgotten, not newer-schema
    lines; only the acting user's profile) to ``out``, atomically and 0600.

    ``scopes`` None means every scope; ``session`` picks one session instead of all of them.
    Raises UNSAFE_PATH (``out`` is a symlink, not a regular file, or inside a store
    directory), WRITE_FAILED, USAGE.
    """
    out_path = Path(out)
    _refuse_store_dir(store, out_path)
    lines: list[bytes] = []
    corrupt = future = 0
    for file in _export_files(store, scopes, session):
        view = store.view(file)
        view.refresh()
        corrupt += len(view.corrupt)
        future += len(view.future)
        records = [r for r in view.current.values() if r.status is not Status.FORGOTTEN]
        # The host exports each store with the conflict groups its domain computes.
        groups = display_conflict_groups(records)
        lines.extend(_export_line(r, groups.get(r.id)) for r in records)
    exported_at = store.clock()
    head = b'{"schemaVersion": 1, "exportedAt": %d, "records": [' % exported_at
    body = b",\n".join(lines)
    data = head + (b"\n" + body + b"\n" if lines else b"") + b"]}\n"
    write_atomic(out_path, data)
    return ExportResult(out_path, len(lines), exported_at, corrupt, future)


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
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate the host accepted: escaped, as JSON.stringify
        return json.dumps(data, separators=(",", ":"), allow_nan=False).encode()


# ------------------------------------------------------------------------- import: reading


def _invalid(message: str) -> StoreError:
    return StoreError("BUNDLE_INVALID", message)


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
    return _invalid(f"{label}: {size} bytes is larger than the 64 MiB a bundle may have")


def _read_file(path: Path) -> bytes:
    # A bundle is input the user names, so a symlink to it is followed; a FIFO or device is not
    # read (O_NONBLOCK, then the regular-file check), and a huge file is refused before reading.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
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


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is too large for a number")
    return value


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
    schemaVersion: Literal[1]
    records: list[Record]


def _parse_json(text: str, label: str) -> dict[str, Any]:
    """The bundle as plain JSON: an object with schemaVersion 1 and a ``records`` list,
    or BUNDLE_INVALID saying what is wrong and where."""
    try:
        obj = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
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
    if type(version) is not int or version != SCHEMA_VERSION:
        shown = "missing" if "schemaVersion" not in obj else json.dumps(version)
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
        fast = _Bundle.model_validate_json(text, strict=True)
    except ValidationError:
        obj = _parse_json(text, label)
        entries: list[Any] = obj.pop("records")
        del obj["schemaVersion"]
        others = obj
    else:
        entries, others = fast.records, fast.model_extra or {}
    for key, value in others.items():
        _check_value(value, 1, label, repr(key))
    return entries, others


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
        for value in (model.__pydantic_extra__ or {}).values():
            yield value, level
    for ref in g.sourceRefs:
        for value in (ref.__pydantic_extra__ or {}).values():
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
    rid = entry.id if isinstance(entry, Record) else (
        entry.get("id") if isinstance(entry, dict) else None
    )
    return rid if isinstance(rid, str) else None


def _refuse_repeated_ids(entries: list[Any], label: str) -> None:
    first: dict[str, int] = {}
    for index, entry in enumerate(entries):
        rid = _entry_id(entry)
        if rid is None:
            continue
        earlier = first.setdefault(rid, index)
        if earlier != index:
            raise _invalid(
                f"{label}: records[{earlier}] and records[{index}] have the same id {rid!r}"
            )


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
    return Record.model_validate({
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
    })


def plan_import(
    store: MemoryStore,
    source: str | os.PathLike[str] | bytes,
    scope: Scope | str,
    session: Session | None = None,
) -> ImportPlan:
    """Read a bundle and classify each record as new, duplicate (same type and contentHash as
    a current, not forgotten record of the target, or as an earlier record of the bundle) or
    invalid (with its reason). Writes nothing.

    Raises BUNDLE_INVALID when the bundle itself is bad (unreadable, over 64 MiB, not UTF-8,
    not a JSON object, schemaVersion not 1, ``records`` not a list, nested deeper than 64
    levels, two records with one id); USAGE for a session target without ``session``;
    UNSAFE_PATH or READ_FAILED when the target file cannot be read.
    """
    target = store.file_for(scope, session)
    data, label = _read_source(source)
    plan = ImportPlan(target, "sha256:" + hashlib.sha256(data).hexdigest(), label, None, 0)
    view = store.view(target)
    view.refresh()
    # Parsing builds many small objects: pause the cyclic GC as a load does. The parsed bundle
    # is dropped inside, so only the new records are left for the GC to walk afterwards.
    with _gc_paused(len(data) // 1024):
        _classify(data, plan, view.duplicate_index(), store.clock())
    return plan


def _classify(
    data: bytes, plan: ImportPlan, index_of: dict[DuplicateKey, str], now: int
) -> None:
    label = plan.source
    entries, others = _read_bundle(data, label)
    _refuse_repeated_ids(entries, label)
    exported_at = others.get("exportedAt")
    plan.exported_at = exported_at if type(exported_at) is int else None
    plan.total = len(entries)
    note = f"imported from {Path(label).name if label != 'bundle' else 'a bundle'}"
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


# ------------------------------------------------------------------------- import: apply


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
    if strict and plan.invalid:
        bad = plan.invalid[0]
        raise _invalid(
            f"{plan.source}: {len(plan.invalid)} invalid record(s) and --strict, so nothing was "
            f"imported; first: records[{bad.index}] ({bad.id or 'no id'}): {bad.reason}"
        )
    result = ImportResult(plan.target, [], list(plan.duplicates), list(plan.invalid))
    if not plan.new:
        return result

    def build(view: FileView) -> tuple[list[Record], ImportResult]:
        index_of = view.duplicate_index()
        now = store.clock()
        batch: list[Record] = []
        for index, record in zip(plan.new_indexes, plan.new, strict=True):
            key = (record.type, record.contentHash)
            existing = index_of.get(key)
            if existing is not None:
                original = record.governance.sourceRefs[-1].id
                result.duplicates.append(DuplicateEntry(index, original, existing))
                continue
            index_of[key] = record.id
            # Stamped at the write, not at the plan: a dialog may wait between the two.
            batch.append(record.model_copy(update={"createdAt": now, "updatedAt": now}))
        result.written = [r.id for r in batch]
        return batch, result

    return store.write(plan.target, build, confirm_shared=confirm_shared)


__all__ = [
    "MAX_BUNDLE_BYTES",
    "MAX_DEPTH",
    "DuplicateEntry",
    "ExportResult",
    "ImportPlan",
    "ImportResult",
    "InvalidEntry",
    "apply_import",
    "export_bundle",
    "plan_import",
]
