"""Symbol verdicts kept across processes, so a check of files as they were verified parses none.

A symbol citation's verdict (``SymbolKind.judge``) is a pure function of the cited file's
bytes, its path, the symbol's name, the cited hash and this version of the parser. Each verdict
made is kept under the home (``verdicts_path``, one JSON file per workspace, 0600 in a 0700
directory) by the sha256 of all four and the version (``VERSION``): a file that is not
byte-for-byte the one judged has another key, so a kept verdict can never stand for a changed
file, whatever its stat says. A new process reads and hashes each cited file (what the
citation's floor does anyway) and parses only those with a verdict not kept: after a verify,
none. What is kept: hashes, a state, a symbol's name and lines and why in words (the same words
``sources`` prints); never the file's text. At most ``MAX_VERDICTS``, the ones made last kept.
The file is a cache: unreadable, malformed or lost, it is rebuilt, never trusted past its key.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .. import __version__, jsonl
from ..errors import StoreError
from .verdict import State, Verdict

# Bump when what a symbol's verdict is made of changes (the normalization, the outline's rules,
# the grammars, its words): every kept verdict is then judged again. The package's version is
# in it too.
VERSION = f"2/{__version__}"
MAX_VERDICTS = 20_000
_STATES = {state.value: state for state in State}
_FILE_BYTES = 8 * 1024 * 1024  # a kept file past this is not read (it is rebuilt)


def verdicts_path(home_memory_dir: Path, root_id: str) -> Path:
    """Where one workspace's kept symbol verdicts live under the home."""
    name = hashlib.sha256(root_id.encode()).hexdigest()[:32]
    return home_memory_dir / "symbol-verdicts" / f"{name}.json"


def verdict_key(file_sha: str, path: str, name: str, want: str) -> str:
    """The key of a verdict on the file whose bytes hash to ``file_sha`` (hex)."""
    joined = "\0".join((VERSION, file_sha, path, name, want))
    return hashlib.sha256(joined.encode("utf-8", "surrogateescape")).hexdigest()[:40]


class Verdicts:
    """The kept verdicts of one workspace (``path`` None: kept in memory only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._kept: dict[str, list[object]] | None = None  # read on first use
        self._added = 0
        self.hits = 0  # verdicts answered from what was kept (tests bound the parses)

    def _table(self) -> dict[str, list[object]]:
        if self._kept is None:
            self._kept = self._read()
        return self._kept

    def _read(self) -> dict[str, list[object]]:
        if self.path is None:
            return {}
        try:
            got = jsonl.read_file(self.path, limit=_FILE_BYTES)
            data = json.loads(got[1]) if got is not None else None
        except (StoreError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return {}
        table = data.get("verdicts")
        return table if isinstance(table, dict) else {}

    def get(self, key: str) -> Verdict | None:
        """The verdict kept under ``key``, or None (none, or not one we wrote)."""
        row: Any = self._table().get(key)
        try:
            state, why, lines, symbol = row
            now = (int(lines[0]), int(lines[1])) if lines is not None else None
            if not isinstance(why, str) or not isinstance(symbol, str | None):
                return None
            verdict = Verdict(_STATES[state], why, now, symbol)
        except (TypeError, ValueError, IndexError, KeyError):
            return None
        self.hits += 1
        return verdict

    def put(self, key: str, verdict: Verdict) -> None:
        table = self._table()
        table.pop(key, None)
        table[key] = [verdict.state.value, verdict.why, verdict.now, verdict.symbol]
        self._added += 1

    def flush(self) -> None:
        """Write what was added since the last flush (merged with what another process wrote
        meanwhile; at most ``MAX_VERDICTS``, the last made kept). A write that fails is
        dropped: the verdicts are made again next time."""
        if not self._added or self.path is None or self._kept is None:
            return
        merged = self._read()
        merged.update(self._kept)
        if len(merged) > MAX_VERDICTS:
            merged = dict(list(merged.items())[-MAX_VERDICTS:])
        body = json.dumps({"version": VERSION, "verdicts": merged}, separators=(",", ":"))
        try:
            jsonl.ensure_dir(self.path.parent)
            jsonl.write_atomic(self.path, body.encode())
        except (StoreError, OSError):
            return
        self._kept, self._added = merged, 0


__all__ = ["MAX_VERDICTS", "VERSION", "Verdicts", "verdict_key", "verdicts_path"]
