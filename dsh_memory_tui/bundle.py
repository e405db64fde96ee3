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
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import StoreError
from .jsonl import write_atomic
from .model import (
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
    new_id,
    record_from_json,
)
from .paths import StoreFile
from .store import FileView, MemoryStore, Session, _gc_paused

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
    records: list[Record] = []
    corrupt = future = 0
    for file in _export_files(store, scopes, session):
        view = store.view(file)
        view.refresh()
        corrupt += len(view.corrupt)
        future += len(view.future)
        records.extend(r for r in view.current.values() if r.status is not Status.FORGOTTEN)
    exported_at = store.clock()
    head = b'{"schemaVersion": 1, "exportedAt": %d, "records": [' % exported_at
    # One record per line; ``to_line`` writes the record exactly as a store line (every
    # governance field, the defaults of an older host's record included).
    body = b",\n".join(r.to_line()[:-1] for r in records)
    data = head + (b"\n" + body + b"\n" if records else b"") + b"]}\n"
    write_atomic(out_path, data)
    return ExportResult(out_path, len(records), exported_at, corrupt, future)


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


class _ObjectHook:
    """``object_pairs_hook`` that remembers every JSON object repeating a key.

    Python, pydantic and the host's ``JSON.parse`` all keep the last value of a repeated key,
    but a record that says two things is not one a reviewer can trust: it is flagged.
    """

    def __init__(self) -> None:
        self.repeated: dict[int, tuple[dict[str, Any], str]] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for key, _value in pairs:
                if key in seen:
                    # The object stays alive in the parsed bundle, so its id is stable.
                    self.repeated[id(obj)] = (obj, key)
                    break
                seen.add(key)
        return obj

    def repeated_key(self, value: Any) -> str | None:
        """The first repeated key in ``value`` or anything nested in it."""
        if not self.repeated:
            return None
        for container, _depth in _containers(value, 0):
            hit = self.repeated.get(id(container))
            if hit is not None and hit[0] is container:
                return hit[1]
        return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _containers(value: Any, depth: int) -> Iterator[tuple[Any, int]]:
    """Every dict and list in ``value`` (itself included) with its nesting level, no recursion."""
    stack = [(value, depth + 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        yield item, level
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))


def _check_depth(value: Any, depth: int, label: str, where: str) -> None:
    if any(level > MAX_DEPTH for _item, level in _containers(value, depth)):
        raise _invalid(f"{label}: {where} is nested deeper than {MAX_DEPTH} levels")


def _parse(data: bytes, label: str, hook: _ObjectHook) -> dict[str, Any]:
    """UTF-8 JSON object with schemaVersion 1 and a ``records`` list, or BUNDLE_INVALID."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise _invalid(
            f"{label}: not UTF-8: byte 0x{data[exc.start]:02x} at line {line} column {column}"
        ) from None
    try:
        obj = json.loads(text.removeprefix("\ufeff"), object_pairs_hook=hook,
                         parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _invalid(
            f"{label}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise _invalid(f"{label}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # NaN or Infinity, an integer too long to convert
        raise _invalid(f"{label}: not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise _invalid(f"{label}: the top level is a JSON {_json_type(obj)}, not an object")
    repeated = hook.repeated.get(id(obj))
    if repeated is not None and repeated[0] is obj:
        raise _invalid(f"{label}: the top-level object has the key {repeated[1]!r} twice")
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
    for key, value in obj.items():
        if key != "records":
            _check_depth(value, 1, label, repr(key))
    return obj


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


def _has_unknown_fields(record: Record) -> bool:
    g = record.governance
    return bool(
        record.model_extra
        or record.provenance.model_extra
        or g.model_extra
        or any(ref.model_extra for ref in g.sourceRefs)
    )


def _bundle_record(obj: Any, hook: _ObjectHook, label: str, where: str) -> Record:
    """Validate one entry of ``records``; RecordInvalid says why it cannot be imported.

    BUNDLE_INVALID if it nests deeper than ``MAX_DEPTH``. The entry's own scope is not
    checked against the target: a project record may be imported into user, say.
    """
    if not isinstance(obj, dict):
        raise RecordInvalid(f"a JSON {_json_type(obj)}, not an object")
    try:
        record = record_from_json(obj)
    except RecordInvalid:
        _check_depth(obj, 2, label, where)
        key = hook.repeated_key(obj)
        if key is not None:
            raise RecordInvalid(f"the key {key!r} appears twice") from None
        version = obj.get("schemaVersion")
        if type(version) is int and version > SCHEMA_VERSION:
            raise RecordInvalid(
                f"schemaVersion {version}: written by a newer host; only schemaVersion 1 "
                "records can be imported"
            ) from None
        raise
    # Known fields have a fixed shape; only unknown ones (kept on import) can nest deeply.
    if _has_unknown_fields(record):
        _check_depth(obj, 2, label, where)
    key = hook.repeated_key(obj)
    if key is not None:
        raise RecordInvalid(f"the key {key!r} appears twice")
    if record.status is Status.FORGOTTEN:
        raise RecordInvalid("a forgotten record: it has no content left to import")
    if not record.title.strip():
        raise RecordInvalid("title is empty")
    if not record.content.strip():
        raise RecordInvalid("content is empty")
    return record


def _refuse_repeated_ids(records: list[Any], label: str) -> None:
    first: dict[str, int] = {}
    for index, obj in enumerate(records):
        rid = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(rid, str):
            continue
        earlier = first.setdefault(rid, index)
        if earlier != index:
            raise _invalid(
                f"{label}: records[{earlier}] and records[{index}] have the same id {rid!r}"
            )


# ------------------------------------------------------------------------- import: plan


def _imported(
    source: Record, target: StoreFile, bundle_hash: str, note: str, now: int
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
        "id": new_id("import", source.type),
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
            "sourceRefs": [
                {"kind": "bundle", "id": bundle_hash},
                {"kind": "record", "id": source.id},
            ],
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
    levels, two records with one id); USAGE for a session target without ``session``.
    """
    target = store.file_for(scope, session)
    data, label = _read_source(source)
    bundle_hash = "sha256:" + hashlib.sha256(data).hexdigest()
    hook = _ObjectHook()
    # Parsing and validating builds many small objects: pause the cyclic GC as a load does.
    with _gc_paused(len(data) // 1024):
        bundle = _parse(data, label, hook)
        entries: list[Any] = bundle["records"]
        _refuse_repeated_ids(entries, label)
        exported_at = bundle.get("exportedAt")
        plan = ImportPlan(
            target, bundle_hash, label,
            exported_at if type(exported_at) is int else None, len(entries),
        )
        view = store.view(target)
        view.refresh()
        index_of: dict[DuplicateKey, str] = view.duplicate_index()
        note = f"imported from {Path(label).name if label != 'bundle' else 'a bundle'}"
        now = store.clock()
        for index, obj in enumerate(entries):
            where = f"records[{index}]"
            try:
                record = _bundle_record(obj, hook, label, where)
            except RecordInvalid as exc:
                rid = obj.get("id") if isinstance(obj, dict) else None
                plan.invalid.append(
                    InvalidEntry(index, rid if isinstance(rid, str) else None, exc.reason)
                )
                continue
            key = (record.type, record.contentHash)
            existing = index_of.get(key)
            if existing is not None:
                plan.duplicates.append(DuplicateEntry(index, record.id, existing))
                continue
            new = _imported(record, target, bundle_hash, note, now)
            index_of[key] = new.id
            plan.new.append(new)
            plan.new_indexes.append(index)
    return plan


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
