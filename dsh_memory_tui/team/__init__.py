"""Team memory: ``shared.jsonl`` travels in git, so every clone's records live in one file.

- ``clones``: whose clone wrote a record (``CloneNames``).
- ``merge``: the three-way merge by record id that git runs as a merge driver, and what a merge
  made without it leaves (conflict markers, one revision decided two ways).
- ``setup``: the drivers set up in the workspace's repository (``install``, ``uninstall``,
  ``status``): nothing git tracks is written.
- ``history``: the shared file's versions in git, and which commit brought each line.
- ``chain``: a history that must hold (``broken_chains``, ``chain_reason``: record id -> why it
  is withheld); acceptances by a person here (``accept``).
- ``readable``: memory as a reviewer reads it (git's textconv, per-record changes).
- ``gate``: what a range of commits brings (``memory_changes``, ``gate``: ``check --since``).

No I/O on store files but through ``jsonl``; git is run through ``git``, never parsed from disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import from_submodules

if TYPE_CHECKING:
    from .chain import broken_chains, chain_reason
    from .clones import CloneNames, short_root
    from .merge import (
        Conflict,
        Divergence,
        Merged,
        conflict_marker_lines,
        divergences,
        in_revision_order,
        merge_file,
        out_of_order,
        resolve_divergence,
        rival_id,
        split_conflicts,
    )
    from .setup import DRIVER, SHARED_PATH, GitStatus, driver_command, install, status, uninstall

# Each name from the module that holds it, loaded on first use: git's merge driver loads the
# merge, never git, the history or the set-up (each command of the package loads its own).
# ``team.merge`` is the module (the merge by record id is ``team.merge.merge``).
_HOME = {
    "broken_chains": "chain",
    "chain_reason": "chain",
    "CloneNames": "clones",
    "short_root": "clones",
    **dict.fromkeys(
        (
            "Conflict",
            "Divergence",
            "Merged",
            "conflict_marker_lines",
            "divergences",
            "in_revision_order",
            "merge_file",
            "out_of_order",
            "resolve_divergence",
            "rival_id",
            "split_conflicts",
        ),
        "merge",
    ),
    **dict.fromkeys(
        ("DRIVER", "SHARED_PATH", "GitStatus", "driver_command", "install", "status", "uninstall"),
        "setup",
    ),
}


__getattr__ = from_submodules(__name__, _HOME)


__all__ = [
    "DRIVER",
    "SHARED_PATH",
    "CloneNames",
    "Conflict",
    "Divergence",
    "GitStatus",
    "broken_chains",
    "chain_reason",
    "Merged",
    "conflict_marker_lines",
    "divergences",
    "in_revision_order",
    "driver_command",
    "install",
    "merge_file",
    "out_of_order",
    "resolve_divergence",
    "rival_id",
    "short_root",
    "split_conflicts",
    "status",
    "uninstall",
]
