"""Citation benchmark: ``dsh-memory sources``'s check over 2,000 records citing 500 files of a
generated tree. Not a test (no asserts on time).

Run:  python tests/benchmarks/bench_sources.py [--files 500] [--records 2000] [--lines 200]

Prints, in one run on this machine:
- cold: a new ``Sources`` (nothing cached) checking every record's citations (what one
  ``dsh-memory sources`` run does after loading the store), against reading and hashing each
  cited file once (the least any check can do; target <= 1.5x);
- warm: the same ``Sources`` checking them again, nothing changed (a long-running server's or
  the app's next check: a stat per file), against cold (target <= 0.1x);
- touched: warm after 50 files were rewritten (only those are read again).
Each timing is the best of several rounds. The store's load is not timed (``bench_store``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_memory_tui.model import (  # noqa: E402
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    make_record,
)
from dsh_memory_tui.paths import workspace_root_id  # noqa: E402
from dsh_memory_tui.sources import Citation, Sources, report  # noqa: E402
from dsh_memory_tui.store import MemoryStore  # noqa: E402

ROUNDS = 7


def best(fn: Callable[[], object], rounds: int = ROUNDS, setup: Callable[[], None] | None = None):
    times = []
    for _ in range(rounds):
        if setup is not None:
            setup()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def make_tree(ws: Path, files: int, lines: int, rng: random.Random) -> list[str]:
    paths = []
    for i in range(files):
        rel = f"pkg{i % 20}/mod{i}.py"
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        body = "".join(
            f"def f{i}_{n}(x):  # {rng.randrange(10**9)}\n    return x + {n}\n"
            for n in range(lines // 2)
        )
        (ws / rel).write_text(body)
        paths.append(rel)
    return paths


def make_store(home: Path, ws: Path, paths: list[str], records: int, lines: int) -> MemoryStore:
    """``records`` verified project records, each citing one file's lines (a ``Sources``
    without snapshots makes the refs), written as one file.
    """
    maker = Sources(ws)
    root = workspace_root_id(ws)
    out = []
    for n in range(records):
        path = paths[n % len(paths)]
        start = 1 + (n // len(paths)) * 10 % (lines - 10)
        ref = maker.cite(Citation(path, start, start + 9))
        record = make_record(
            scope=Scope.PROJECT,
            scope_key=root,
            record_type=RecordType.FACT,
            title=f"fact {n}",
            content=f"about {path}:{start}",
            tags=[],
            provenance=Provenance(kind=ProvenanceKind.USER),
            origin=Origin.USER_AUTHORED,
            source_refs=[ref],
            verification="verified",
            verified_at=1,
        )
        out.append(record)
    store = MemoryStore.open(home, ws, "bench")
    data = store.file_for(Scope.PROJECT).path
    data.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(data, "w") as f:
        for record in out:
            f.write(json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n")
    os.chmod(data, 0o600)
    return store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(23)
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        paths = make_tree(ws, args.files, args.lines, rng)
        store = make_store(home, ws, paths, args.records, args.lines)
        records = store.records()
        assert len(records) == args.records, len(records)
        size = sum(os.path.getsize(ws / p) for p in paths)

        def hash_once() -> None:
            for rel in paths:
                with open(ws / rel, "rb") as f:
                    hashlib.sha256(f.read()).hexdigest()

        holder: dict[str, Sources] = {}

        def fresh() -> None:
            holder["s"] = Sources(ws)

        def check() -> None:
            got = report(holder["s"], records)
            assert not any(rs.needs_review for rs in got)

        baseline = best(hash_once)
        cold = best(check, setup=fresh)
        fresh()
        check()
        warm = best(check)
        touched_paths = paths[:50]

        def touch() -> None:
            for rel in touched_paths:
                p = ws / rel
                p.write_bytes(p.read_bytes())
                st = p.stat()
                os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))

        touched = best(check, setup=touch)
        print(f"bench_sources: {args.records} records citing {args.files} files")
        print(f"  tree: {size / 1024 / 1024:.1f} MiB, {args.lines} lines a file")
        print(f"  hash each file once      {baseline * 1000:8.1f} ms")
        print(f"  cold check               {cold * 1000:8.1f} ms   {cold / baseline:5.2f}x hashing")
        print(f"  warm check               {warm * 1000:8.1f} ms   {warm / cold:5.3f}x cold")
        print(f"  warm, 50 files rewritten {touched * 1000:8.1f} ms   {touched / cold:5.3f}x cold")
        print("  targets: cold <= 1.5x hashing, warm <= 0.1x cold")


if __name__ == "__main__":
    main()
