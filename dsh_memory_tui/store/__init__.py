"""The store: the log semantics of SPEC 5 over the safe file (``jsonl``) and the record
(``model``), in five parts: the view of a file (``view``), the one write path (``writer``),
maintenance (``maintenance``: compaction, check, repair, migration), the API over every scope
(``memory.MemoryStore``) and its review side (``transitions``: verify ... keep, merge).
"""

from ..errors import StoreError
from ..governance import Action
from ..model import content_hash
from .maintenance import AdoptResult, CheckReport, Problem, other_roots
from .memory import MemoryStore, Session, WriteResult
from .preview import PREVIEW_FROM_BYTES, check_readable, newest_records, total_bytes
from .transitions import KeepResult, MergeResult, merged_content
from .view import CorruptLine, FileChange, FileView
from .writer import CompactResult

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
