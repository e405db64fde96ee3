"""Build large, valid store files quickly for benchmarks (lines written directly, no locking)."""

from __future__ import annotations

import os
from pathlib import Path

from dsh_memory_tui.jsonl import ensure_dir
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    SourceRef,
    make_record,
)
from dsh_memory_tui.paths import StoreFile, StorePaths

MIB = 1024 * 1024


def installed_bytecode(tmp: Path) -> None:
    """Let the processes a benchmark starts run as an installed program does: compiled modules
    cached (pip compiles what it installs; an editable install writes them at its first run).
    This shell may forbid writing them (PYTHONDONTWRITEBYTECODE): then every process would
    compile the package's ~15,000 lines first. The cache goes to a directory of this run, not
    into the tree; the peers' installed packages are compiled already.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")


WORDS = (
    "service",
    "handler",
    "retry",
    "postgres",
    "queue",
    "token",
    "deploy",
    "cache",
    "schema",
    "migration",
    "timeout",
    "endpoint",
    "logging",
    "metrics",
    "config",
)


def record_line(file: StoreFile, i: int, content_bytes: int, proposal: bool = True) -> bytes:
    words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(content_bytes // 8))
    record = make_record(
        scope=file.scope,
        scope_key=file.scope_key or "",
        record_type=list(RecordType)[i % 4],
        title=f"Record {i}: {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} rule",
        content=words[:content_bytes],
        tags=[WORDS[i % len(WORDS)]],
        provenance=Provenance(
            kind=ProvenanceKind.AGENT if proposal else ProvenanceKind.USER,
            sessionId="bench",
            eventSeq=i,
        ),
        origin=Origin.MODEL_SUGGESTED if proposal else Origin.USER_AUTHORED,
        source_refs=[SourceRef(kind="session", id="bench")] if proposal else [],
        now=1_764_000_000_000 + i,
    )
    return record.to_line()


def fill(
    file: StoreFile,
    *,
    target_bytes: int | None = None,
    count: int | None = None,
    content_bytes: int = 600,
    start: int = 0,
) -> int:
    """Write records to ``file`` until it holds ``target_bytes`` (or ``count`` records).
    Returns the number of records written.
    """
    ensure_dir(file.path.parent)
    lines: list[bytes] = []
    size = 0
    i = start
    while True:
        if count is not None and len(lines) >= count:
            break
        line = record_line(file, i, content_bytes)
        if target_bytes is not None and size + len(line) > target_bytes:
            break
        lines.append(line)
        size += len(line)
        i += 1
    fd = os.open(file.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"".join(lines))
    finally:
        os.close(fd)
    return len(lines)


def paths(root: Path, user: str = "alice") -> StorePaths:
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    return StorePaths.resolve(root / "home", ws, user)


def full_store(
    root: Path, *, files: tuple[Scope, ...] = (Scope.PROJECT,), target_bytes: int = 8 * MIB - 4096
) -> StorePaths:
    """A store whose ``files`` are each just under 8 MiB (about 7,500 records apiece)."""
    p = paths(root)
    for n, scope in enumerate(files):
        file = p.session_file("bench", "root") if scope is Scope.SESSION else p.scope_file(scope)
        fill(file, target_bytes=target_bytes, start=n * 100_000)
    return p
