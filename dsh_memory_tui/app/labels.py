"""Scope keys in words. A rootId (``root:`` + 64 hex) says nothing to a reviewer: the workspace's
own is "this workspace"; another workspace's is shortened where room is short.
"""

from __future__ import annotations

from ..model import Record, Scope

THIS_WORKSPACE = "this workspace"
_SHORT_ROOT = len("root:") + 12


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
    elif record.scope in (Scope.PROJECT, Scope.SHARED):
        where = root_label(key, root_id)
    else:
        where = key
    return f"{record.scope.value} · {where}"
