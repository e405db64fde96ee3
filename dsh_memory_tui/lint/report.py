"""A report over records: the CLI's ``lint``, the app's evidence and ``verify``'s reason rule."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model import Record
from .near import NearDuplicates, Similar
from .risk import Flag, record_flags


@dataclass(frozen=True, slots=True)
class RecordLint:
    """One record's evidence: its flags and its near-duplicates among the records seen."""

    record: Record
    flags: tuple[Flag, ...]
    near: list[Similar]

    def as_json(self) -> dict[str, object]:
        r = self.record
        return {
            "id": r.id,
            "scope": r.scope.value,
            "title": r.title,
            "verification": r.governance.verification.value,
            "flags": [f.as_json() for f in self.flags],
            "nearDuplicates": [{"id": s.record_id, "score": s.score} for s in self.near],
        }


def visible_to_reviewer(record: Record) -> bool:
    """The records near-duplicates are looked for among: active, not rejected, and not the
    auto-writer's digests (origin ``derived``: each lists one session's files, and they are
    alike by design)."""
    g = record.governance
    return (
        record.status.value == "active"
        and g.verification.value != "rejected"
        and g.origin.value != "derived"
    )


def report(records: Iterable[Record], selected: Iterable[Record]) -> list[RecordLint]:
    """The flags and near-duplicates of each of ``selected``, against ``records`` (what the
    reviewer can see of them)."""
    index = NearDuplicates(r for r in records if visible_to_reviewer(r))
    return [RecordLint(r, record_flags(r), index.similar(r)) for r in selected]


def verified_secrets(records: Iterable[Record]) -> list[Record]:
    """Active, verified records that carry a ``secret`` flag: what an agent is served today."""
    return [
        r
        for r in records
        if r.status.value == "active"
        and r.governance.verification.value == "verified"
        and any(f.kind == "secret" for f in record_flags(r))
    ]
