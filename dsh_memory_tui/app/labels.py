"""Scope keys in words. A rootId (``root:`` + 64 hex) says nothing to a reviewer: the workspace's
own is "this workspace"; another workspace's is shortened where room is short.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..model import Record, Scope, is_root_id
from ..paths import shown_path
from ..team import short_root

THIS_WORKSPACE = "this workspace"
# Said wherever a shared-project record is acted on: its file is committed with the project.
SHARED_WARNING = "⚠ seen by the whole team (committed with the project)"
_SHORT_ROOT = len("root:") + 12


def home_path(path: Path | str) -> str:
    """``path`` as the app shows it: under the home directory as ``~/...`` (shorter at 80
    columns), bytes that are not UTF-8 as ``\\xNN`` (``paths.shown_path``)."""
    text, home = shown_path(path), shown_path(Path.home())
    return "~" + text[len(home) :] if home != "/" and text.startswith(home + "/") else text


def split_session_key(scope_key: str) -> tuple[str, str | None]:
    """``<sessionId>|<rootId>`` -> (sessionId, rootId); a key without ``|``: (key, None).
    A rootId never holds ``|``; a session id may.
    """
    session_id, sep, root = scope_key.rpartition("|")
    return (session_id, root) if sep else (scope_key, None)


def root_label(root: str, root_id: str, *, short: bool = False) -> str:
    if root == root_id:
        return THIS_WORKSPACE
    if short and root.startswith("root:") and len(root) > _SHORT_ROOT:
        return root[:_SHORT_ROOT] + "…"
    return root


def session_label(scope_key: str, root_id: str, *, short: bool = False) -> str:
    """A session file's group label: ``session-abc · this workspace``."""
    session_id, root = split_session_key(scope_key)
    if root is None:
        return scope_key
    return f"{session_id} · {root_label(root, root_id, short=short)}"


def scope_text(record: Record, root_id: str) -> str:
    """The detail pane's scope line: the scope and whose it is."""
    key = record.scopeKey
    if record.scope is Scope.SESSION:
        where = session_label(key, root_id)
    elif record.scope is Scope.SHARED and root_id and key != root_id and is_root_id(key):
        where = f"written by another clone of this project ({short_root(key)}: {key})"
    elif record.scope in (Scope.PROJECT, Scope.SHARED):
        where = root_label(key, root_id)
    else:
        where = key
    text = f"{record.scope.value} · {where}"
    if record.scope is Scope.SHARED:
        text += f" · {SHARED_WARNING}"
    return text


BATCH_LISTED = 12  # a batch's confirmation names this many records


def batch_list(
    records: Sequence[Record],
    why_not: Callable[[Record], str | None],
    risk: Callable[[Record], str] = lambda r: "",
) -> str:
    """What a batch will touch, for its confirmation: each record's title and scope (its risk
    flags, and why the rules will skip it), then how many are shared-project (the whole team
    sees those)."""
    lines = []
    for record in records[:BATCH_LISTED]:
        scope = "SHARED" if record.scope is Scope.SHARED else record.scope.value
        line = f"• “{record.title or '(forgotten)'}” · {scope}"
        flags = risk(record)
        if flags:
            line += f" · risk: {flags}"
        why = why_not(record)
        if why:
            line += f" · skipped: {why}"
        lines.append(line)
    if len(records) > BATCH_LISTED:
        lines.append(f"… and {len(records) - BATCH_LISTED} more")
    shared = sum(1 for r in records if r.scope is Scope.SHARED)
    if shared:
        lines.append(f"{shared} of them shared-project: {SHARED_WARNING}")
    return "\n".join(lines)
