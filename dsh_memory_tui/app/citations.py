"""The app's view of citations, Textual-free: the last check of every record's citations,
made in a worker (``check``) so that no frame waits for the disk, and what it means for the
table (a marker), the filter (``rereview``), the Review tab and the detail pane.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..model import Record, Status, Verification
from ..sources import Check, RecordSources, Sources, report

# The filter word for records whose cited code changed (verified, active).
REREVIEW_FLAG = "rereview"


@dataclass(slots=True)
class CitationStates:
    """Each record's citations as last checked; ``rereview``: the ids of active records,
    verified or made stale since, that a changed or missing citation sends back to review.
    """

    checks: dict[str, list[Check]] = field(default_factory=dict)
    rereview: frozenset[str] = frozenset()
    checked: bool = False  # False until the first check landed

    def update(self, found: Iterable[RecordSources]) -> set[str]:
        """Take a check's results; the ids whose citations' state changed."""
        found = list(found)
        before, seen = self.rereview, self.checks
        self.checks = {rs.record.id: rs.checks for rs in found}
        self.rereview = frozenset(rs.record.id for rs in found if _review_work(rs))
        self.checked = True
        moved = {rid for rid, checks in self.checks.items() if seen.get(rid) != checks}
        return moved | set(seen.keys() - self.checks.keys()) | set(before ^ self.rereview)

    def needs_review(self, record_id: str) -> bool:
        return record_id in self.rereview

    def of(self, record_id: str) -> list[Check]:
        return self.checks.get(record_id, [])


def _review_work(rs: RecordSources) -> bool:
    """Verified (or made stale since) and active, and a citation changed or is missing: the
    reviewer re-verifies, edits, archives or forgets it. Marking it stale (the diff view does)
    keeps it here until then.
    """
    r = rs.record
    return (
        r.status is Status.ACTIVE
        and r.governance.verification in (Verification.VERIFIED, Verification.STALE)
        and any(c.broken for c in rs.checks)
    )


def check(sources: Sources, records: Iterable[Record]) -> list[RecordSources]:
    """Every record's citations now (run in a worker thread: it reads cited files)."""
    return report(sources, records)
