"""What a line of a store file is: the record's models (``Record`` and its parts, validated by
pydantic-core: ``model_base``), the other verdicts on a line (``FutureLine``, ``ForeignLine``,
``RecordInvalid``), the file a line was read from (``Location``), the host's defaults for an
older host's record and its view of an expired one. The host's checks, in its order, are
``model``'s; the fast path's, ``model_fast``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from .host_rules import (
    MAX_SAFE_INTEGER,
    RETENTION_BY_SCOPE,
    SCHEMA_VERSION,
    Origin,
    ProvenanceKind,
    RecordType,
    Retention,
    Scope,
    SourceRefKind,
    Status,
    Verification,
    is_root_id,
    session_file_stem,
)
from .js_json import dumps_js, loads_js
from .model_base import Bounds, OpenModel, mark_set

# Safe integers (JavaScript's Number.isSafeInteger, >= 0), checked in pydantic-core (Rust).
SafeInt = Annotated[int, Bounds(0, MAX_SAFE_INTEGER)]
Revision = Annotated[int, Bounds(1, MAX_SAFE_INTEGER)]
SchemaVersion = Annotated[int, Bounds(SCHEMA_VERSION, SCHEMA_VERSION, strict=True)]


class SourceRef(OpenModel):
    kind: SourceRefKind
    id: str
    # Not validated as a type by the host: String(value) must look like a hash.
    contentHash: Any = None


class Provenance(OpenModel):
    kind: ProvenanceKind
    # Absent, never null: a null is refused by the host (``None`` here means absent).
    sessionId: str = None  # type: ignore[assignment]
    eventSeq: SafeInt = None  # type: ignore[assignment]
    note: str = None  # type: ignore[assignment]


class Governance(OpenModel):
    origin: Origin
    sourceRefs: list[SourceRef]
    verification: Verification
    verifiedAt: SafeInt = None  # type: ignore[assignment]
    verifiedBy: Literal["user", "trusted-tool"] = None  # type: ignore[assignment]
    confidence: Literal["low", "medium", "high"] = None  # type: ignore[assignment]
    revision: Revision
    conflictGroup: Any = None  # not validated by the host: any JSON value is kept
    pinnedAt: SafeInt = None  # type: ignore[assignment]
    pinnedBy: Literal["user"] = None  # type: ignore[assignment]
    expiresAt: SafeInt = None  # type: ignore[assignment]
    retention: Retention
    # Our review extras (SPEC 4); the host ignores them, so any value a line has is kept.
    reviewedBy: Any = None
    reviewedAt: Any = None
    reviewNote: Any = None

    @property
    def pinned(self) -> bool:
        return self.pinnedAt is not None


class Record(OpenModel):
    """One line of a store file. Field names and order are the host's (camelCase, epoch ms)."""

    # 1, strictly: Literal[1] would take JSON `true` (True == 1), and a Python validator here
    # would cost every loaded line a call back from Rust. ``1.0`` goes the slow path (valid).
    schemaVersion: SchemaVersion
    id: str
    scope: Scope
    scopeKey: str
    type: RecordType
    title: str
    content: str
    tags: list[str]
    provenance: Provenance
    createdAt: SafeInt
    updatedAt: SafeInt
    lastUsedAt: SafeInt = None  # type: ignore[assignment]
    useCount: SafeInt
    contentHash: str
    status: Status
    # Absent on an older host's record: ``governance`` then holds the host's defaults
    # (``legacy_governance``) without being "set", so the line is written back as it was.
    governance: Governance = None  # type: ignore[assignment]

    @property
    def gov(self) -> Governance:
        return self.governance

    @property
    def revision(self) -> int:
        return self.governance.revision

    @property
    def is_legacy(self) -> bool:
        """True for an older host's record without ``governance`` in its line."""
        return "governance" not in self.model_fields_set

    def in_review_queue(self, include_derived: bool = False) -> bool:
        """Active, unverified, and written by the agent or an import (or the auto-writer)."""
        origins: tuple[Origin, ...] = (Origin.MODEL_SUGGESTED, Origin.IMPORTED)
        if include_derived:
            origins += (Origin.DERIVED,)
        g = self.governance
        return (
            self.status is Status.ACTIVE
            and g.verification is Verification.UNVERIFIED
            and g.origin in origins
        )

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object of SPEC 4 (what ``--json`` and export print), with
        the governance filled in for an older host's record (as the host's export does).
        """
        try:
            data = self.model_dump(mode="json", exclude_unset=True)
        except (ValueError, TypeError):  # a lone surrogate the host accepted, or RawJSON
            data = loads_js(dumps_js(self.model_dump(exclude_unset=True), ensure_ascii=True))
        if "governance" not in data:
            data["governance"] = self.governance.model_dump(mode="json", exclude_unset=True)
        return data

    def to_line(self) -> bytes:
        """The record as one JSONL line, newline included (UTF-8, like the host's)."""
        try:
            return self.model_dump_json(exclude_unset=True).encode() + b"\n"
        except (ValueError, TypeError):  # RawJSON, or a lone surrogate
            data = self.model_dump(exclude_unset=True)
            try:
                return dumps_js(data).encode() + b"\n"
            except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON.stringify does
                return dumps_js(data, ensure_ascii=True).encode() + b"\n"


@dataclass(frozen=True, slots=True)
class Location:
    """Which file a line was read from: its scope and scopeKey. ``scope_key`` is None for a
    session file found on disk; its own lines are those whose scopeKey hashes to ``stem``.
    """

    scope: Scope
    scope_key: str | None
    stem: str | None = None

    def owns(self, scope_key: str) -> bool:
        if self.scope_key is not None and scope_key == self.scope_key:
            return True
        if self.scope is Scope.SHARED:
            return is_root_id(scope_key)  # a team's file: every clone's records (SPEC 3)
        if self.scope_key is not None:
            return False
        return self.stem is not None and session_file_stem(scope_key) == self.stem

    def teammate(self, scope_key: str) -> bool:
        """A record of this shared file written by another clone (another rootId)."""
        return self.scope is Scope.SHARED and scope_key != self.scope_key and is_root_id(scope_key)


class RecordInvalid(ValueError):
    """A line or record that breaks a rule. ``host_message`` is the host's own message for
    the rule (its warning text); ``reason`` adds what we know in words.
    """

    def __init__(self, host_message: str, detail: str = "", *, not_json: bool = False) -> None:
        self.host_message = host_message
        self.not_json = not_json  # JSON.parse failed: the host then tries to recover it
        self.reason = f"{host_message} ({detail})" if detail else host_message
        super().__init__(self.reason)

    @property
    def warning_code(self) -> str:
        """The host's warning code for this line: BAD_HASH when the rule is about a hash."""
        return "BAD_HASH" if "hash" in self.host_message else "CORRUPT_RECORD"


@dataclass(frozen=True, slots=True)
class FutureLine:
    """A line with another schemaVersion (a safe integer other than 1): the host makes the
    whole file read-only; we keep it verbatim, show it read-only and never list it.
    """

    schema_version: int
    id: str | None
    title: str | None
    scope_key: str | None


@dataclass(frozen=True, slots=True)
class ForeignLine:
    """A line of the file's scope with another scopeKey (another user's profile, a project
    copied or moved from elsewhere): kept byte for byte, never validated, never ours.
    """

    scope_key: str
    id: str | None
    title: str | None


def legacy_governance(record: Record) -> Governance:
    """The host's ``memoryGovernance()`` defaults for a record without governance: agent and
    tool records are ``derived``, user records ``verified`` at updatedAt by ``user``.
    """
    prov = record.provenance
    kind = prov.kind
    refs: list[SourceRef] = []
    if kind is not ProvenanceKind.USER:
        ref_kind: SourceRefKind = "import" if kind is ProvenanceKind.IMPORT else "session"
        refs.append(SourceRef(kind=ref_kind, id=prov.sessionId or record.id))
    gov: dict[str, Any] = {
        "origin": Origin.USER_AUTHORED
        if kind is ProvenanceKind.USER
        else Origin.IMPORTED
        if kind is ProvenanceKind.IMPORT
        else Origin.DERIVED,
        "sourceRefs": refs,
        "verification": Verification.VERIFIED
        if kind is ProvenanceKind.USER
        else Verification.UNVERIFIED,
    }
    if kind is ProvenanceKind.USER:
        gov["verifiedAt"] = record.updatedAt
        gov["verifiedBy"] = "user"
    gov["revision"] = 1
    gov["retention"] = RETENTION_BY_SCOPE[record.scope]
    return Governance(**gov)


def is_expired(record: Record, now: int) -> bool:
    g = record.governance
    return (
        g.verification is Verification.VERIFIED and g.expiresAt is not None and g.expiresAt <= now
    )


def expired_view(record: Record) -> Record:
    """How the host shows a verified record past ``expiresAt``: stale, revision + 1, unpinned.
    A view: nothing is written.
    """
    g = record.governance.model_dump(exclude_unset=True)
    g.pop("pinnedAt", None)
    g.pop("pinnedBy", None)
    g["verification"] = Verification.STALE
    g["revision"] = record.governance.revision + 1
    view = record.model_copy(update={"governance": Governance(**g)})
    mark_set(view, "governance")
    return view


def effective(record: Record, now: int) -> Record:
    """The record as the host reads it at ``now`` (``expired_view`` when it has expired)."""
    return expired_view(record) if is_expired(record, now) else record
