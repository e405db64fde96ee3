"""Our records in the shape the host returns them: its known fields only (the host drops
unknown ones from what it returns), no governance on an older host's record, and the conflict
group its domain shows."""

from __future__ import annotations

import json
from typing import Any

from dsh_memory_tui.model import Record

RECORD_FIELDS = (
    "schemaVersion",
    "id",
    "scope",
    "scopeKey",
    "type",
    "title",
    "content",
    "tags",
    "provenance",
    "createdAt",
    "updatedAt",
    "lastUsedAt",
    "useCount",
    "contentHash",
    "status",
    "governance",
)
PROVENANCE_FIELDS = ("kind", "sessionId", "eventSeq", "note")
GOVERNANCE_FIELDS = (
    "origin",
    "sourceRefs",
    "verification",
    "verifiedAt",
    "verifiedBy",
    "confidence",
    "revision",
    "conflictGroup",
    "pinnedAt",
    "pinnedBy",
    "expiresAt",
    "retention",
)
SOURCE_REF_FIELDS = ("kind", "id", "contentHash")


def _pick(data: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {k: data[k] for k in fields if k in data}


def governance_form(record: Record) -> dict[str, Any]:
    g = _pick(
        json.loads(json.dumps(record.governance.model_dump(mode="json", exclude_unset=True))),
        GOVERNANCE_FIELDS,
    )
    g["sourceRefs"] = [_pick(r, SOURCE_REF_FIELDS) for r in g["sourceRefs"]]
    return g


def host_form(record: Record, conflict_group: str | None = None) -> dict[str, Any]:
    data = record.model_dump(mode="json", exclude_unset=True)
    out = _pick(data, RECORD_FIELDS)
    out["provenance"] = _pick(out["provenance"], PROVENANCE_FIELDS)
    if record.is_legacy:
        out.pop("governance", None)
        if conflict_group is not None:
            out["governance"] = governance_form(record) | {"conflictGroup": conflict_group}
    else:
        out["governance"] = governance_form(record)
        if conflict_group is not None and "conflictGroup" not in out["governance"]:
            out["governance"] = _pick(
                out["governance"] | {"conflictGroup": conflict_group}, GOVERNANCE_FIELDS
            )
    return json.loads(json.dumps(out))
