"""The store: the log semantics of SPEC 5 over the safe file (``jsonl``) and the record
(``model``), in five parts: the view of a file (``view``), the one write path (``writer``),
maintenance (``maintenance``: compaction, check, repair, migration), the API over every scope
(``memory.MemoryStore``) and its review side (``transitions``: verify ... keep, merge).
"""

from ..errors import StoreError
from ..governance import Action
from ..model import content_hash
from .maintenance import CheckReport, Problem
from .memory import MemoryStore, Session, WriteResult
from .view import CorruptLine, FileChange, FileView
from .writer import CompactResult

__all__ = [
    "Action",
    "CheckReport",
    "CompactResult",
    "CorruptLine",
    "FileChange",
    "FileView",
    "MemoryStore",
    "Problem",
    "Session",
    "StoreError",
    "WriteResult",
    "content_hash",
]
