"""The store: the log semantics of SPEC 5 over the safe file (``jsonl``) and the record
(``model``), in five parts: the view of a file (``view``), the one write path (``writer``),
maintenance (``maintenance``: compaction, check, repair, migration), the API over every scope
(``memory.MemoryStore``) and its review side (``transitions``: verify ... keep, merge).
"""

from typing import TYPE_CHECKING

from ..errors import StoreError
from ..governance import Action
from ..lazy import from_submodules
from ..model import content_hash
from .memory import MemoryStore, Session, WriteResult
from .view import CorruptLine, FileChange, FileView

if TYPE_CHECKING:
    from .maintenance import AdoptResult, CheckReport, Problem, other_roots
    from .preview import PREVIEW_FROM_BYTES, check_readable, newest_records, total_bytes
    from .transitions import KeepResult, MergeResult, merged_content
    from .writer import CompactResult

# The parts a command that only reads needs none of, loaded with the first name used.
_LATER = {
    **dict.fromkeys(("AdoptResult", "CheckReport", "Problem", "other_roots"), "maintenance"),
    **dict.fromkeys(
        ("PREVIEW_FROM_BYTES", "check_readable", "newest_records", "total_bytes"), "preview"
    ),
    **dict.fromkeys(("KeepResult", "MergeResult", "merged_content"), "transitions"),
    "CompactResult": "writer",
}


__getattr__ = from_submodules(__name__, _LATER)


__all__ = [
    "PREVIEW_FROM_BYTES",
    "Action",
    "AdoptResult",
    "CheckReport",
    "CompactResult",
    "CorruptLine",
    "FileChange",
    "FileView",
    "KeepResult",
    "MemoryStore",
    "MergeResult",
    "Problem",
    "Session",
    "StoreError",
    "WriteResult",
    "check_readable",
    "content_hash",
    "merged_content",
    "newest_records",
    "other_roots",
    "total_bytes",
]
