"""Citations: a record's ``file`` sourceRefs, what the cited text is now, and what changed.

A citation is ``PATH[:START-END]`` (PATH relative to the workspace and inside it; lines
1-based and inclusive; no range: the whole file). It is stored as the host's ``file``
sourceRef: ``{"kind": "file", "id": "PATH:START-END", "contentHash": "sha256:<64 hex>"}``,
the hash of the cited text. The cited text is the lines' bytes joined by ``\\n`` with each
line's ``\\r`` cut, so a file converted between CRLF and LF, or given a final newline, still
holds; bytes are hashed as they are, so a file need not be UTF-8. A user-scope record is
every workspace's: its citations are stored as ``root:<16 hex>//PATH...``, naming the
workspace they were made in, and are judged only there (``elsewhere``: not checked).
``PATH#SYMBOL`` cites a definition by its dotted name (``symbol``: its hash is of its syntax
tree, it is found wherever it sits, in its file or another; ``unparsed`` while its file does
not parse; docs/symbols.md).

Each citation's state is computed at read (``Sources.check``): ``ok``; ``moved`` (the same
text now at other lines, or in the file git says it was renamed to); ``changed``; ``missing``
(the file is gone, or is no longer a regular file inside the workspace); ``elsewhere``. The
work is per file, not per citation: one ``stat`` per file per check, and a file whose size,
mtime, inode or device changed is read once for all its citations (``engine``).

When a citation is made, the cited text is kept as a private snapshot named by its hash
(``snapshots``: never text a secret detector flags). ``diff`` shows the cited text then against
where it is now, from the snapshot, else from git history, else a sentence saying why not and
what the reviewer can do. Re-verify re-anchors each citation where its text is now
(``Sources.reanchored``: moved, renamed, moved and changed), or says which it cannot find.

The package: ``citation`` (ids and parsing), ``text`` (one read of a file), ``kinds`` (what a
citation kind judges: line ranges, whole files), ``symbol`` (the symbol kind), ``verdict``
(states), ``locate`` (where text went), ``snapshots``,
``history`` (git), ``engine`` (``Sources``), ``diff``. It reads the workspace and its own
snapshots, never the store. Errors are ``StoreError(INVALID_CITATION)`` (or ``UNSAFE_PATH`` /
``WRITE_FAILED`` for the snapshots).
"""

from __future__ import annotations

from .citation import FILE_KIND, Citation, judged_here, tag_for, workspace_tag
from .diff import MAX_DIFF_LINES
from .engine import (
    Check,
    RecordSources,
    Sources,
    Unlocated,
    cited_hashes,
    file_refs,
    needs_checking,
    placed,
    report,
    with_citations,
)
from .history import GIT_COMMITS
from .kinds import BROKEN, KINDS, Kind, State
from .snapshots import MAX_SNAPSHOT_BYTES, MAX_SNAPSHOTS_BYTES, snapshots_dir, snapshots_size
from .text import MAX_CITED_FILE_BYTES, cited_hash, split_lines
from .verdicts import verdicts_path

__all__ = [
    "BROKEN",
    "FILE_KIND",
    "GIT_COMMITS",
    "KINDS",
    "MAX_CITED_FILE_BYTES",
    "MAX_DIFF_LINES",
    "MAX_SNAPSHOTS_BYTES",
    "MAX_SNAPSHOT_BYTES",
    "Check",
    "Citation",
    "Kind",
    "RecordSources",
    "Sources",
    "State",
    "Unlocated",
    "cited_hash",
    "cited_hashes",
    "file_refs",
    "judged_here",
    "needs_checking",
    "placed",
    "report",
    "snapshots_dir",
    "verdicts_path",
    "snapshots_size",
    "split_lines",
    "tag_for",
    "with_citations",
    "workspace_tag",
]
