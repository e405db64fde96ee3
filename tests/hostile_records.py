"""Agent proposals written straight into a project file, with whatever text the host lets through
(C1 controls, bidi and zero-width characters, CR in content, markup, Markdown) in any field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from interop.transitions import content_hash

from dsh_memory_tui.model import Scope
from dsh_memory_tui.store import MemoryStore

NOW = 1_700_000_000_000


def hostile_record(
    store: MemoryStore,
    rid: str,
    title: str,
    content: str,
    *,
    tags: list[str] | None = None,
    session: str = "s1",
    note: str = "memory proposal",
    updated: int = NOW,
) -> dict[str, Any]:
    """A host-shaped, unverified agent proposal for the store's project file."""
    return {
        "schemaVersion": 1,
        "id": rid,
        "scope": "project",
        "scopeKey": store.paths.root_id,
        "type": "convention",
        "title": title,
        "content": content,
        "tags": tags if tags is not None else ["ci"],
        "provenance": {"kind": "agent", "sessionId": session, "note": note},
        "createdAt": updated,
        "updatedAt": updated,
        "useCount": 0,
        "contentHash": content_hash(content),
        "status": "active",
        "governance": {
            "origin": "model-suggested",
            "sourceRefs": [{"kind": "session", "id": session}],
            "verification": "unverified",
            "revision": 1,
            "retention": "project-delete",
        },
    }


def write_records(store: MemoryStore, records: list[dict[str, Any]]) -> Path:
    """Append ``records`` to the store's project file (made 0600 in a 0700 directory)."""
    data = store.file_for(Scope.PROJECT).path
    data.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(data, "ab") as f:
        for record in records:
            f.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
    data.chmod(0o600)
    return data
