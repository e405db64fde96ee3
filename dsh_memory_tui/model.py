"""The memory record (schemaVersion 1): models, enumerations, validation, hashing and ids.

No I/O here. ``parse_line`` and ``validate_record`` are the one place every rule of SPEC 3 lives;
the store calls them on every read and before every write.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .errors import StoreError

SCHEMA_VERSION = 1


class Scope(StrEnum):
    SESSION = "session"
    PROJECT = "project"
    SHARED = "shared-project"
    USER = "user"


class RecordType(StrEnum):
    DECISION = "decision"
    PREFERENCE = "preference"
    CONVENTION = "convention"
    FACT = "fact"


class Status(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    FORGOTTEN = "forgotten"


class Origin(StrEnum):
    USER_AUTHORED = "user-authored"
    IMPORTED = "imported"
    DERIVED = "derived"
    MODEL_SUGGESTED = "model-suggested"


class Verification(StrEnum):
    UNVERIFIED = "unverified"
    VERIFIED = "verified"
    REJECTED = "rejected"
    STALE = "stale"


class Retention(StrEnum):
    SESSION_END = "session-end"
    PROJECT_DELETE = "project-delete"
    USER_MANAGED = "user-managed"


class ProvenanceKind(StrEnum):
    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    IMPORT = "import"


RETENTION_BY_SCOPE = {
    Scope.SESSION: Retention.SESSION_END,
    Scope.PROJECT: Retention.PROJECT_DELETE,
    Scope.SHARED: Retention.PROJECT_DELETE,
    Scope.USER: Retention.USER_MANAGED,
}

ORIGIN_BY_PROVENANCE = {
    ProvenanceKind.USER: Origin.USER_AUTHORED,
    ProvenanceKind.AGENT: Origin.MODEL_SUGGESTED,
    ProvenanceKind.TOOL: Origin.DERIVED,
    ProvenanceKind.IMPORT: Origin.IMPORTED,
}

# The id's <source> part for a record of each origin.
ID_SOURCE_BY_ORIGIN = {
    Origin.USER_AUTHORED: "user",
    Origin.MODEL_SUGGESTED: "agent",
    Origin.DERIVED: "auto",
    Origin.IMPORTED: "import",
}

# Who sees a record kept in each scope (the copy dialog and the docs say this).
AUDIENCE_BY_SCOPE = {
    Scope.SESSION: "this session only",
    Scope.PROJECT: "every session in this project, on this machine",
    Scope.SHARED: "everyone sharing this project (the file is committed with it)",
    Scope.USER: "every project of this user",
}


class _Open(BaseModel):
    # A newer host may add fields anywhere; they are kept and written back unchanged.
    model_config = ConfigDict(extra="allow")

    # Loaded records share one "fields set" per shape (``_share_shapes``): a set per object
    # would be most of a loaded record's memory. Assignment and copies thaw it first.
    def __setattr__(self, name: str, value: Any) -> None:
        _thaw(self)
        super().__setattr__(name, value)

    def __copy__(self) -> Self:
        copied = super().__copy__()
        _thaw(copied)
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        _thaw(copied)
        return copied


class _SharedFields(set[str]):
    """A fields set shared by loaded models of one shape; never mutated in place."""

    __slots__ = ()


_SHAPES: dict[frozenset[str], _SharedFields] = {}
_MAX_SHAPES = 4096  # unknown fields make new shapes; past this, objects keep their own set
_LAST_SHAPE: dict[type, _SharedFields] = {}  # most records of a file have the same shape


def _thaw(model: BaseModel) -> None:
    fields = model.__pydantic_fields_set__
    if type(fields) is _SharedFields:
        object.__setattr__(model, "__pydantic_fields_set__", set(fields))


def _share(model: BaseModel) -> None:
    fields = model.__pydantic_fields_set__
    shared = _LAST_SHAPE.get(type(model))
    if shared is None or fields != shared:
        key = frozenset(fields)
        shared = _SHAPES.get(key)
        if shared is None:
            if len(_SHAPES) >= _MAX_SHAPES:
                return
            shared = _SHAPES[key] = _SharedFields(key)
        _LAST_SHAPE[type(model)] = shared
    object.__setattr__(model, "__pydantic_fields_set__", shared)


def _share_shapes(record: Record) -> Record:
    """Let a loaded record's two largest models share their fields sets (memory: see
    ``_Open``). Provenance and source refs have a few fields: their small sets are left alone.
    """
    _share(record)
    _share(record.governance)
    return record


class SourceRef(_Open):
    kind: str
    id: str


class Provenance(_Open):
    kind: ProvenanceKind
    sessionId: str | None = None
    eventSeq: int | None = None
    note: str | None = None


class Governance(_Open):
    origin: Origin
    sourceRefs: list[SourceRef]
    verification: Verification
    revision: int
    retention: Retention
    verifiedAt: int | None = None
    reviewedBy: str | None = None
    reviewedAt: int | None = None
    reviewNote: str | None = None


class Record(_Open):
    """One line of a store file. Field names and order are the host's (camelCase, epoch ms)."""

    schemaVersion: Literal[1]
    id: str
    scope: Scope
    scopeKey: str
    type: RecordType
    title: str
    content: str
    tags: list[str]
    provenance: Provenance
    createdAt: int
    updatedAt: int
    useCount: int
    contentHash: str
    status: Status
    # Optional only on read: records from older hosts have none and get the SPEC 3 defaults.
    governance: Governance = None  # type: ignore[assignment]

    @field_validator("schemaVersion", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: Any) -> Any:
        # Literal[1] would accept JSON `true` (True == 1).
        if isinstance(value, bool):
            raise ValueError("schemaVersion is a boolean, not the number 1")
        return value

    @property
    def gov(self) -> Governance:
        return self.governance

    @property
    def revision(self) -> int:
        return self.governance.revision

    def in_review_queue(self, include_derived: bool = False) -> bool:
        """Active, unverified, and written by the agent or an import (or the auto-writer)."""
        origins = (Origin.MODEL_SUGGESTED, Origin.IMPORTED)
        if include_derived:
            origins += (Origin.DERIVED,)
        g = self.governance
        return (
            self.status is Status.ACTIVE
            and g.verification is Verification.UNVERIFIED
            and g.origin in origins
        )

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object of SPEC 3 (what ``--json`` and export print)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_line(self) -> bytes:
        """The record as one JSONL line, newline included."""
        return self.model_dump_json(exclude_unset=True).encode() + b"\n"


def content_hash(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


def now_ms() -> int:
    import time

    return time.time_ns() // 1_000_000


def new_id(source: str, record_type: RecordType | str) -> str:
    return f"memory:{source}:{RecordType(record_type).value}:{secrets.token_hex(16)}"


def session_scope_key(session_id: str, root_id: str) -> str:
    return f"{session_id}|{root_id}"


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Location:
    """Where a line lives: its scope and, for a session file, the file's hash name."""

    scope: Scope
    session_file_hash: str | None = None


class RecordInvalid(ValueError):
    """A line or record that breaks a rule; ``reason`` is one readable sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class FutureLine:
    """A line with ``schemaVersion > 1``: shown read-only, kept verbatim, never listed."""

    schema_version: int
    id: str | None
    title: str | None
    scope_key: str | None


_HEX = frozenset("0123456789abcdef")
_sha256 = hashlib.sha256
_USER_AUTHORED = Origin.USER_AUTHORED
_VERIFIED = Verification.VERIFIED


def _legacy_governance(record: Record) -> Governance:
    prov = record.provenance
    refs: list[SourceRef] = []
    if prov.sessionId is not None:
        refs.append(SourceRef(kind="session", id=prov.sessionId))
    if prov.eventSeq is not None:
        refs.append(SourceRef(kind="event", id=str(prov.eventSeq)))
    return Governance(
        origin=ORIGIN_BY_PROVENANCE[prov.kind],
        sourceRefs=refs,
        verification=Verification.UNVERIFIED,
        revision=1,
        retention=RETENTION_BY_SCOPE[record.scope],
    )


def validate_record(record: Record, location: Location | None = None) -> Record:
    """Check every rule of SPEC 3; raise ``RecordInvalid`` with the first broken rule.

    Fills the defaults of an older host's record that has no ``governance``. With a
    ``location``, also checks that the record belongs in that file.
    """
    if record.governance is None:
        record.governance = _legacy_governance(record)
    # Every load runs this on every line: one expression over the fields' dicts first; the
    # readable reason is looked for only when it fails (``_broken_rule`` lists the same rules).
    d = record.__dict__
    g = d["governance"].__dict__
    if (
        d["contentHash"] == "sha256:" + _sha256(d["content"].encode()).hexdigest()
        and (g["sourceRefs"] or g["origin"] is _USER_AUTHORED)
        and (g["verifiedAt"] is not None or g["verification"] is not _VERIFIED)
        and g["revision"] >= 1
        and d["updatedAt"] >= d["createdAt"]
        and d["useCount"] >= 0
        and (
            location is None
            or (
                d["scope"] is location.scope
                and (
                    location.session_file_hash is None
                    or sha256_hex(d["scopeKey"]) == location.session_file_hash
                )
            )
        )
    ):
        return record
    raise RecordInvalid(_broken_rule(record, location))


def _broken_rule(record: Record, location: Location | None) -> str:
    """The first rule of SPEC 3 that ``record`` breaks, as a sentence."""
    h = record.contentHash
    if h != content_hash(record.content):
        if len(h) != 71 or not h.startswith("sha256:") or not _HEX.issuperset(h[7:]):
            return "contentHash is not 'sha256:' followed by 64 lowercase hex digits"
        return "contentHash does not match the sha256 of the content"
    g = record.governance
    if g.origin is not Origin.USER_AUTHORED and not g.sourceRefs:
        return f"origin {g.origin.value} needs at least one sourceRefs entry"
    if g.verification is Verification.VERIFIED and g.verifiedAt is None:
        return "verification 'verified' needs governance.verifiedAt"
    if g.revision < 1:
        return f"revision {g.revision} is below 1"
    if record.updatedAt < record.createdAt:
        return "updatedAt is earlier than createdAt"
    if record.useCount < 0:
        return f"useCount {record.useCount} is negative"
    if location is not None and record.scope is not location.scope:
        return (
            f"scope {record.scope.value!r} does not match the file's scope "
            f"{location.scope.value!r}"
        )
    return "the session scopeKey does not hash to this file's name"


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "line"
    return f"{where}: {err['msg']}"


def parse_line(line: bytes, location: Location | None = None) -> Record | FutureLine:
    """Parse one JSONL line (without or with its newline).

    Returns a validated ``Record`` or a ``FutureLine``; raises ``RecordInvalid`` with the reason.
    """
    try:
        # Strict: a string where a number belongs is corrupt, not silently converted.
        record = Record.model_validate_json(line, strict=True)
    except ValidationError as exc:
        reason = _first_error(exc)
    else:
        return _share_shapes(validate_record(record, location))
    # Slow path: tell a newer host's line and plain garbage apart, with a readable reason.
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        raise RecordInvalid("not valid JSON") from None
    if not isinstance(obj, dict):
        raise RecordInvalid("not a JSON object")
    version = obj.get("schemaVersion")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:

        def text(key: str) -> str | None:
            value = obj.get(key)
            return value if isinstance(value, str) else None

        return FutureLine(version, text("id"), text("title"), text("scopeKey"))
    raise RecordInvalid(reason)


def record_from_json(obj: Any, location: Location | None = None) -> Record:
    """Validate an already-parsed JSON object (a bundle entry) as a schemaVersion 1 record,
    with exactly the rules of ``parse_line``. Raises ``RecordInvalid``.
    """
    if not isinstance(obj, dict):
        raise RecordInvalid("not a JSON object")
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        raise RecordInvalid("not a JSON object") from None
    try:
        record = Record.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise RecordInvalid(_first_error(exc)) from None
    return validate_record(record, location)


def make_record(
    *,
    scope: Scope,
    scope_key: str,
    record_type: RecordType,
    title: str,
    content: str,
    tags: list[str],
    provenance: Provenance,
    origin: Origin,
    source_refs: list[SourceRef],
    record_id: str | None = None,
    verification: Verification = Verification.UNVERIFIED,
    verified_at: int | None = None,
    retention: Retention | None = None,
    now: int | None = None,
) -> Record:
    """Build a complete, validated revision-1 record. Raises ``StoreError(INVALID_RECORD)``."""
    ts = now_ms() if now is None else now
    gov: dict[str, Any] = {
        "origin": origin,
        "sourceRefs": source_refs,
        "verification": verification,
        "revision": 1,
        "retention": retention or RETENTION_BY_SCOPE[scope],
    }
    if verified_at is not None:
        gov["verifiedAt"] = verified_at
    record = Record(
        schemaVersion=1,
        id=record_id or new_id(ID_SOURCE_BY_ORIGIN[origin], record_type),
        scope=scope,
        scopeKey=scope_key,
        type=record_type,
        title=title,
        content=content,
        tags=tags,
        provenance=provenance,
        createdAt=ts,
        updatedAt=ts,
        useCount=0,
        contentHash=content_hash(content),
        status=Status.ACTIVE,
        governance=Governance(**gov),
    )
    return checked(record)


def checked(record: Record, location: Location | None = None) -> Record:
    """``validate_record`` for a record about to be written: a failure is a StoreError."""
    try:
        return validate_record(record, location)
    except RecordInvalid as exc:
        raise StoreError("INVALID_RECORD", exc.reason) from None


def next_revision(
    record: Record,
    now: int,
    changes: dict[str, Any] | None = None,
    governance: dict[str, Any] | None = None,
) -> Record:
    """The record's next revision: ``changes`` to top-level fields, ``governance`` to its own.

    The id and createdAt stay; revision is one higher; updatedAt never goes backwards.
    Unknown fields are carried over unchanged.
    """
    # Rebuilt through the model so a bad value (a wrong enum, say) is caught before writing.
    data = record.model_dump(exclude_unset=True)
    data.update(changes or {})
    data["updatedAt"] = max(now, record.updatedAt)
    if changes and "content" in changes:
        data["contentHash"] = content_hash(changes["content"])
    data["governance"] = record.governance.model_dump(exclude_unset=True) | {
        "revision": record.governance.revision + 1,
        **(governance or {}),
    }
    try:
        return checked(Record.model_validate(data))
    except ValidationError as exc:
        raise StoreError("INVALID_RECORD", _first_error(exc)) from None
