"""Benchmark: export and import plan of an 8 MiB store, against a validated load of that store.

    python tests/benchmarks/bench_bundle.py

Builds a project store file just under the 8 MiB cap (~7,500 realistic records: mixed types,
origins and verification, a few lines of content each, tags, source refs) in a temporary
directory, then times, best of 5, each on a fresh ``MemoryStore`` (nothing cached):

- load: ``MemoryStore(...).records()``, every line parsed and validated;
- export: ``export_bundle`` of every scope (the load included);
- plan, empty target: ``plan_import`` of that bundle into an empty workspace (every record new);
- plan, same store: ``plan_import`` into the store it came from (every record a duplicate;
  the target's load included);
- the same export and empty-target plan in the host's Markdown format.

Each is printed with its ratio to the load measured in the same run (the target: <= 3x).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dsh_memory_tui.bundle import export_bundle, plan_import
from dsh_memory_tui.jsonl import MAX_STORE_BYTES, ensure_dir
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    SourceRef,
    Verification,
    make_record,
)
from dsh_memory_tui.paths import StorePaths
from dsh_memory_tui.store import MemoryStore

ROUNDS = 5
USER = "bench"
WORDS = [
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
    "fixture",
    "pytest",
    "ruff",
    "branch",
    "release",
    "api",
    "worker",
    "batch",
    "index",
    "lock",
]
ORIGINS = {
    Origin.USER_AUTHORED: ProvenanceKind.USER,
    Origin.MODEL_SUGGESTED: ProvenanceKind.AGENT,
    Origin.DERIVED: ProvenanceKind.TOOL,
}


def _sentence(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(words)).capitalize() + "."


def build_store(root: Path) -> tuple[StorePaths, int, int]:
    """A project file filled to just under 8 MiB. Returns the paths, records and bytes."""
    (root / "workspace").mkdir()
    paths = StorePaths.resolve(root / "home", root / "workspace", USER)  # scopeKey: the rootId
    file = paths.project_file()
    ensure_dir(file.path.parent)
    rnd = random.Random(7)
    lines: list[bytes] = []
    size = 0
    while True:
        i = len(lines)
        origin = rnd.choice(list(ORIGINS))
        session = f"sess-{i // 50:04d}"
        verified = origin is Origin.USER_AUTHORED and rnd.random() < 0.5
        content = "\n".join(_sentence(rnd, rnd.randint(8, 22)) for _ in range(rnd.randint(2, 7)))
        record = make_record(
            scope=Scope.PROJECT,
            scope_key=file.scope_key or "",
            record_type=rnd.choice(list(RecordType)),
            title=f"{_sentence(rnd, rnd.randint(3, 8))[:-1]} ({i})",
            content=content,
            tags=rnd.sample(WORDS, rnd.randint(0, 3)),
            provenance=Provenance(kind=ORIGINS[origin], sessionId=session, eventSeq=i),
            origin=origin,
            source_refs=[]
            if origin is Origin.USER_AUTHORED
            else [SourceRef(kind="session", id=session), SourceRef(kind="event", id=str(i))],
            verification=Verification.VERIFIED if verified else Verification.UNVERIFIED,
            verified_at=1_764_000_000_000 + i if verified else None,
            now=1_764_000_000_000 + i,
        )
        line = record.to_line()
        # Room for what export adds (the bundle's head, a comma per record, conflict groups):
        # the bundle must fit the 8 MiB an import takes, as the host's.
        if size + len(line) > MAX_STORE_BYTES - (128 << 10):
            break
        lines.append(line)
        size += len(line)
    file.path.write_bytes(b"".join(lines))
    file.path.chmod(0o600)
    return paths, len(lines), size


def best_times(runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best of ``ROUNDS`` for each run; the runs take turns, so a busy moment on the machine
    slows them all rather than skewing one ratio."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(ROUNDS):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths, count, size = build_store(root)
        bundle = root / "bundle.json"
        markdown = root / "bundle.md"
        (root / "workspace2").mkdir()
        empty = StorePaths.resolve(root / "home2", root / "workspace2", USER)

        def load() -> None:
            assert len(MemoryStore(paths).records()) == count

        def export() -> None:
            assert export_bundle(MemoryStore(paths), bundle).count == count

        def plan_into_empty() -> None:
            assert len(plan_import(MemoryStore(empty), bundle, Scope.PROJECT).new) == count

        def plan_into_same() -> None:
            plan = plan_import(MemoryStore(paths), bundle, Scope.PROJECT)
            assert len(plan.duplicates) == count

        def export_markdown() -> None:
            assert export_bundle(MemoryStore(paths), markdown, fmt="markdown").count == count

        def plan_markdown() -> None:
            assert len(plan_import(MemoryStore(empty), markdown, Scope.PROJECT).new) == count

        export()  # the bundles the plans read
        export_markdown()
        best = best_times(
            {
                "validated load": load,
                "export": export,
                "import plan, empty target": plan_into_empty,
                "import plan, same store": plan_into_same,
                "export, Markdown": export_markdown,
                "import plan, Markdown, empty target": plan_markdown,
            }
        )
        base = best["validated load"]
        print(
            f"store: {count} records, {size / 1024 / 1024:.2f} MiB; "
            f"bundle: {bundle.stat().st_size / 1024 / 1024:.2f} MiB "
            f"(Markdown {markdown.stat().st_size / 1024 / 1024:.2f} MiB); best of {ROUNDS}; "
            f"Python {sys.version.split()[0]}"
        )
        print()
        print("| operation | time | ratio to load |")
        print("|---|---:|---:|")
        for name, seconds in best.items():
            print(f"| {name} | {seconds * 1000:.0f} ms | {seconds / base:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
