"""Citation benchmarks: ratios against a floor measured in the same run. Not a test (no asserts
on time).

Run:  python tests/benchmarks/bench_sources.py [process|mcp|engine|all] [--pairs 7]

- ``process``: ``dsh-memory sources --json`` as a whole process, over 1,000 and 5,000 verified
  records citing 2,000 and 10,000 line ranges in 1,000 files, against the floor: one python
  process that stats, reads and sha256-hashes each cited file once (target <= 3x at both
  sizes). CPU time (user + system) of the processes, steadier than wall time on a busy
  machine; both printed; and against ``list --json`` of the same store (what starting and
  reading the records costs alone).
- ``mcp``: the MCP server's read-back (``workspace_memory_search`` then ``_list``, in process,
  a warm server) over 5,000 records citing 10,000 ranges, against the same records citing
  none (a session ref in their place): target <= 1.2x.
- ``engine``: one ``Sources`` checking every citation cold (nothing read yet), warm (nothing
  changed: a stat per file) and after 50 files changed, in process, against hashing each file
  once (cold), and against cold (warm).

Each ratio is taken over interleaved pairs (ours, then the floor; the order swapped every
pair), at least 7: the median and the spread (lowest-highest) are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from storegen import installed_bytecode  # noqa: E402

from dsh_memory_tui.mcp import MemoryServer  # noqa: E402
from dsh_memory_tui.model import (  # noqa: E402
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    SourceRef,
    make_record,
)
from dsh_memory_tui.paths import workspace_root_id  # noqa: E402
from dsh_memory_tui.sources import Citation, Sources, report  # noqa: E402
from dsh_memory_tui.store import MemoryStore  # noqa: E402

T = TypeVar("T")
FILES = 1000
LINES = 200
SIZES = ((1000, 2), (5000, 2))  # records, citations each: 2,000 and 10,000 ranges
OURS = [sys.executable, "-m", "dsh_memory_tui.cli"]
FLOOR = (
    "import hashlib, os, sys\n"
    "for rel in open(sys.argv[1]).read().split('\\n'):\n"
    "    path = os.path.join(sys.argv[2], rel)\n"
    "    os.stat(path)\n"
    "    with open(path, 'rb') as f:\n"
    "        hashlib.sha256(f.read()).hexdigest()\n"
)


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
        # Written an hour ago, as a workspace's files are: a file modified within 2 s of a
        # check is read again at the next (``text.RACY_NS``), which is not what is measured.
        os.utime(ws / rel, ns=(time.time_ns(), time.time_ns() - 3600 * 10**9))
    return paths


def write_store(home: Path, ws: Path, records: list[Record]) -> MemoryStore:
    store = MemoryStore.open(home, ws, "bench")
    data = store.file_for(Scope.PROJECT).path
    data.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(data, "w") as f:
        for record in records:
            f.write(json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":")))
            f.write("\n")
    os.chmod(data, 0o600)
    return MemoryStore.open(home, ws, "bench")


def cited_records(ws: Path, paths: list[str], records: int, each: int) -> list[Record]:
    """``records`` verified project records, each citing ``each`` 6-line ranges of the tree."""
    maker, root = Sources(ws), workspace_root_id(ws)
    out = []
    for n in range(records):
        refs = []
        for k in range(each):
            at = n * each + k
            start = 1 + (at // len(paths)) * 7 % (LINES - 10)
            refs.append(maker.cite(Citation(paths[at % len(paths)], start, start + 5)))
        out.append(
            make_record(
                scope=Scope.PROJECT,
                scope_key=root,
                record_type=RecordType.FACT,
                title=f"fact {n}",
                content=f"about {n}",
                tags=[],
                provenance=Provenance(kind=ProvenanceKind.USER),
                origin=Origin.USER_AUTHORED,
                source_refs=refs,
                verification="verified",
                verified_at=1,
            )
        )
    return out


def uncited(records: list[Record], root: str) -> list[Record]:
    """The same records in another workspace, a session ref in place of their citations."""
    out = []
    for record in records:
        gov = record.governance.model_copy(
            update={"sourceRefs": [SourceRef(kind="session", id="s")]}
        )
        out.append(record.model_copy(update={"scopeKey": root, "governance": gov}))
    return out


def child_time(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd`` (stdout discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def pairs(ours: Callable[[], T], floor: Callable[[], T], count: int) -> tuple[list[T], list[T]]:
    """``count`` interleaved pairs (the order swapped every pair): each side's times."""
    a, b = [], []
    for i in range(count):
        if i % 2:
            b.append(floor())
            a.append(ours())
        else:
            a.append(ours())
            b.append(floor())
    return a, b


def ratio_line(name: str, a: list[float], b: list[float], target: float | None, unit: str) -> str:
    ratios = sorted(x / y for x, y in zip(a, b, strict=True))
    med = statistics.median(ratios)
    goal = (
        ""
        if target is None
        else f"  target <= {target:g}x: " + ("met" if med <= target else "NOT met")
    )
    return (
        f"  {name:<44} {statistics.median(a) * 1000:8.1f} {unit} vs "
        f"{statistics.median(b) * 1000:7.1f} {unit}   {med:5.2f}x "
        f"({ratios[0]:.2f}-{ratios[-1]:.2f}){goal}"
    )


def bench_process(tmp: Path, count: int) -> None:
    print(f"sources --json, whole process ({count} interleaved pairs; CPU, then wall)")
    rng = random.Random(23)
    ws = tmp / "ws"
    ws.mkdir()
    paths = make_tree(ws, FILES, LINES, rng)
    listing = tmp / "cited.txt"
    listing.write_text("\n".join(paths))
    floor_cmd = [sys.executable, "-c", FLOOR, str(listing), str(ws)]
    for records, each in SIZES:
        home = tmp / f"home{records}"
        write_store(home, ws, cited_records(ws, paths, records, each))
        ours_cmd = [*OURS, "--home", str(home), "--workspace", str(ws), "sources", "--json"]
        child_time(ours_cmd)  # bytecode compiled, the files in the page cache
        got = pairs(lambda cmd=ours_cmd: child_time(cmd), lambda: child_time(floor_cmd), count)
        name = f"{records:,} records, {records * each:,} ranges, {FILES:,} files"
        for i, unit in ((1, "CPU"), (0, "wall")):
            a, b = ([run[i] for run in side] for side in got)
            print(ratio_line(f"{name} ({unit})", a, b, 3, "ms"))
        # What reading the same records costs alone (the start-up and the load are in both).
        list_cmd = [*OURS, "--home", str(home), "--workspace", str(ws), "list", "--json"]
        got = pairs(lambda c=ours_cmd: child_time(c), lambda c=list_cmd: child_time(c), count)
        a, b = ([run[1] for run in side] for side in got)
        print(ratio_line("  the same vs list --json of its records (CPU)", a, b, None, "ms"))


def bench_mcp(tmp: Path, count: int) -> None:
    print(f"MCP read-back, a warm server in process ({count} interleaved pairs; CPU)")
    rng = random.Random(29)
    ws, plain_ws = tmp / "mws", tmp / "mplain"
    ws.mkdir()
    plain_ws.mkdir()
    paths = make_tree(ws, FILES, LINES, rng)
    records = cited_records(ws, paths, 5000, 2)
    servers = {}
    for name, root, home, recs in (
        ("cited", ws, tmp / "mhome", records),
        ("plain", plain_ws, tmp / "mplainhome", uncited(records, workspace_root_id(plain_ws))),
    ):
        server = MemoryServer(write_store(home, root, recs), "bench-session")
        server.search("fact")  # loaded, use counts written once
        server.list_records()
        servers[name] = server

    def readback(server: MemoryServer, rounds: int = 5) -> float:
        start = time.process_time()
        for _ in range(rounds):
            server.search("fact 12")
            server.list_records()
        return (time.process_time() - start) / rounds

    a, b = pairs(lambda: readback(servers["cited"]), lambda: readback(servers["plain"]), count)
    print(ratio_line("search + list, 10,000 citations vs none", a, b, 1.2, "ms"))


def bench_engine(tmp: Path, count: int) -> None:
    print(f"Sources in process ({count} interleaved pairs; CPU)")
    rng = random.Random(31)
    ws = tmp / "ews"
    ws.mkdir()
    paths = make_tree(ws, FILES, LINES, rng)
    records = cited_records(ws, paths, 5000, 2)

    def clock(fn: Callable[[], object]) -> float:
        start = time.process_time()
        fn()
        return time.process_time() - start

    def hash_once() -> float:
        def run() -> None:
            for rel in paths:
                os.stat(ws / rel)
                with open(ws / rel, "rb") as f:
                    hashlib.sha256(f.read()).hexdigest()

        return clock(run)

    def cold() -> float:
        sources = Sources(ws)
        return clock(lambda: report(sources, records))

    a, b = pairs(cold, hash_once, count)
    print(ratio_line("cold: every citation checked, nothing cached", a, b, 1.5, "ms"))
    warm_sources = Sources(ws)
    report(warm_sources, records)
    a, b = pairs(lambda: clock(lambda: report(warm_sources, records)), cold, count)
    print(ratio_line("warm: nothing changed, vs cold", a, b, 0.1, "ms"))

    def touched() -> float:
        for rel in paths[:50]:
            p = ws / rel
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        return clock(lambda: report(warm_sources, records))

    a, b = pairs(touched, cold, count)
    print(ratio_line("50 files touched, vs cold", a, b, 0.2, "ms"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "what", nargs="?", default="all", choices=["process", "mcp", "engine", "all"]
    )
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    count = max(7, args.pairs)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        installed_bytecode(tmp)
        print(f"bench_sources {time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.1f}")
        if args.what in ("process", "all"):
            bench_process(tmp, count)
        if args.what in ("mcp", "all"):
            bench_mcp(tmp, count)
        if args.what in ("engine", "all"):
            bench_engine(tmp, count)


if __name__ == "__main__":
    main()
