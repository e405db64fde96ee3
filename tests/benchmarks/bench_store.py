"""Store benchmark: load, tail read, concurrent appends, memory. Not a test (no asserts on time).

Run:  python tests/benchmarks/bench_store.py [--workers 4] [--appends 2000]

Everything is measured in this run on this machine; ratios are against baselines measured in
the same run, so they mean the same on a faster or slower machine. Each timing is the best of
several rounds (the least disturbed by other processes).
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from dsh_memory_tui.jsonl import MAX_STORE_BYTES, sync_data  # noqa: E402
from dsh_memory_tui.lock import HostLock  # noqa: E402
from dsh_memory_tui.model import (  # noqa: E402
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    SourceRef,
    make_record,
)
from dsh_memory_tui.paths import StorePaths, workspace_root_id  # noqa: E402
from dsh_memory_tui.store import FileView, MemoryStore  # noqa: E402
from dsh_memory_tui.store.view import gc_paused  # noqa: E402

WORDS = [
    "the",
    "service",
    "uses",
    "postgres",
    "with",
    "pgbouncer",
    "in",
    "front;",
    "tests",
    "run",
    "on",
    "sqlite;",
    "ruff",
    "and",
    "mypy",
    "gate",
    "every",
    "commit;",
    "deploys",
    "go",
    "through",
    "release",
    "branch",
    "after",
    "review",
    "by",
    "two",
    "people",
]
ROUNDS = 11
APPEND_ROUNDS = 3


def best(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def realistic_line(
    i: int, workspace: str, rng: random.Random, size: int, scope: Scope = Scope.PROJECT
) -> bytes:
    """A proposal of about ``size`` bytes, as the agent writes them (``workspace``: the
    file's scopeKey).
    """

    def make(content: str) -> bytes:
        return make_record(
            scope=scope,
            scope_key=workspace,
            record_type=rng.choice(list(RecordType)),
            title=f"Observation {i}: " + " ".join(rng.choices(WORDS, k=6)),
            content=content,
            tags=rng.sample(["db", "ci", "style", "deploy", "tests"], 2),
            provenance=Provenance(
                kind=ProvenanceKind.AGENT,
                sessionId=f"sess-{i % 40:04d}",
                eventSeq=i,
                note="agent proposal",
            ),
            origin=Origin.MODEL_SUGGESTED,
            source_refs=[
                SourceRef(kind="session", id=f"sess-{i % 40:04d}"),
                SourceRef(kind="event", id=str(i)),
            ],
        ).to_line()

    # Content as an agent writes it: Markdown lines (so every line of the file has escapes),
    # a list, a code span, a quote, and in one record of four a non-ASCII character.
    parts: list[str] = []
    line = make("x")
    while len(line) < size:
        words = " ".join(rng.choices(WORDS, k=8))
        kind = rng.randrange(5)
        if kind == 0:
            parts.append(f"- {words}")
        elif kind == 1:
            parts.append(f'`{rng.choice(WORDS)}` is "{words}"')
        else:
            parts.append(words.capitalize() + ".")
        if i % 4 == 0 and len(parts) == 2:
            parts[-1] += " — naïve"
        line = make("\n".join(parts))
    return line


def build_file(workspace: Path, target: int, size: int) -> Path:
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / ".dsh" / "workspace-memory" / "records.jsonl"
    fill(path, Scope.PROJECT, workspace_root_id(workspace), target, size)
    return path


def fill(path: Path, scope: Scope, scope_key: str, target: int, size: int) -> None:
    """Write ``path``: records of ``scope`` and ``scope_key``, up to ``target`` bytes."""
    rng = random.Random(7)
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    out = bytearray()
    i = 0
    while True:
        line = realistic_line(i, scope_key, rng, size, scope)
        if len(out) + len(line) > target:
            break
        out += line
        i += 1
    path.write_bytes(bytes(out))


def fresh_view(store: MemoryStore) -> FileView:
    return FileView(store.file_for(Scope.PROJECT), store.user_id, store.lock_timeout, store.clock)


# ---------------------------------------------------------------- the measurements


def measure_load(store: MemoryStore, path: Path) -> dict[str, float]:
    lines = path.read_bytes().split(b"\n")[:-1]

    def json_loads() -> list[object]:
        return [json.loads(line) for line in lines]

    def load() -> FileView:
        view = fresh_view(store)
        view.refresh()
        assert len(view.current) == len(lines) and not view.corrupt
        return view

    # The floor: the record's own validator (pydantic's strict parse in Rust, the host's text
    # limits added), with none of the rules, hashes or the view.
    from dsh_memory_tui.model_fast import line_validator

    validate = line_validator()

    def parse_only() -> list[object]:
        return [validate(line, strict=True) for line in lines]

    # Interleaved rounds, so all see the same machine state.
    baseline, full, floor = [], [], []
    for _ in range(ROUNDS):
        baseline.append(best(json_loads, 1))
        gc.collect()
        full.append(best(load, 1))
        gc.collect()
        with gc_paused(len(lines)):  # as the load runs
            floor.append(best(parse_only, 1))
        gc.collect()
    return {
        "records": len(lines),
        "bytes": path.stat().st_size,
        "json_loads_s": min(baseline),
        "load_s": min(full),
        "parse_only_s": min(floor),
        # Each round's load against the baseline measured just before it: a slow moment of
        # the machine then weighs on both.
        "round_ratio": statistics.median(f / b for f, b in zip(full, baseline, strict=True)),
    }


def measure_tail(store: MemoryStore, path: Path, rng: random.Random) -> dict[str, float]:
    view = fresh_view(store)
    view.refresh()
    times = []
    for i in range(200):
        line = realistic_line(10_000_000 + i, store.paths.root_id, rng, 1100)
        with path.open("ab") as f:  # another process's append, as far as the view knows
            f.write(line)
        start = time.perf_counter()
        change = view.refresh()
        times.append(time.perf_counter() - start)
        assert len(change.ids) == 1 and not change.reset
    return {"tail_s": statistics.median(times), "tail_min_s": min(times)}


def _appender(
    home: str, workspace: str, worker: int, count: int, start: mp.Event, out: mp.Queue
) -> None:
    store = MemoryStore.open(home, workspace, "alice")
    store.refresh()
    rng = random.Random(worker)
    body = " ".join(rng.choices(WORDS, k=40))
    acked = []
    start.wait()
    for i in range(count):
        r = store.propose(
            "project",
            "fact",
            f"worker {worker} #{i}",
            f"{worker}/{i} {body}",
            source_refs=[SourceRef(kind="session", id=f"w{worker}")],
        )
        acked.append(r.id)
    out.put(acked)


def measure_appends(base: Path, workers: int, count: int) -> dict[str, float]:
    home, workspace = base / "append-home", base / "append-ws"
    workspace.mkdir(mode=0o700, parents=True)
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_appender, args=(str(home), str(workspace), w, count, start, out))
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    time.sleep(0.5)  # let every worker import and open the store before the clock starts
    t0 = time.perf_counter()
    start.set()
    acked = [i for _ in procs for i in out.get(timeout=600)]
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join(60)
    store = MemoryStore.open(home, workspace, "alice")
    current = {r.id for r in store.records("project")}
    lines = store.file_for("project").path.read_bytes().count(b"\n")
    return {
        "appends": len(acked),
        "lost": len(set(acked) - current),
        "duplicated": lines - len(set(acked)),
        "append_s": elapsed,
        "append_rate": len(acked) / elapsed,
        "append_bytes": store.file_for("project").path.stat().st_size,
    }


def _bare_appender(path: str, count: int, line: bytes, start: mp.Event) -> None:
    lock = path + ".lock"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    start.wait()
    for _ in range(count):
        while True:
            try:
                held = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                break
            except FileExistsError:
                time.sleep(0.00005)
        os.write(held, str(os.getpid()).encode())
        os.close(held)
        os.write(fd, line)
        os.unlink(lock)
        sync_data(fd)
    os.close(fd)


def measure_bare_appends(base: Path, workers: int, count: int) -> float:
    """The disk's part, as a reference: the same processes doing only the host's lock
    protocol around each synced append (no store, no record): appends/s."""
    path = str(base / "bare.jsonl")
    ctx = mp.get_context("fork")
    start = ctx.Event()
    line = b"x" * 1100 + b"\n"
    procs = [
        ctx.Process(target=_bare_appender, args=(path, count, line, start)) for _ in range(workers)
    ]
    for p in procs:
        p.start()
    time.sleep(0.2)
    t0 = time.perf_counter()
    start.set()
    for p in procs:
        p.join(120)
    return workers * count / (time.perf_counter() - t0)


def measure_primitives(base: Path) -> dict[str, float]:
    lock = HostLock(base / "probe.lock", 5.0)

    def acquire() -> None:
        with lock.held():
            pass

    fd = os.open(base / "probe", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:

        def fsync() -> None:
            os.write(fd, b"x\n")
            os.fsync(fd)

        acquire_s = statistics.median(best(acquire, 1) for _ in range(300))
        fsync_s = statistics.median(best(fsync, 1) for _ in range(300))
    finally:
        os.close(fd)
    return {"lock_s": acquire_s, "fsync_s": fsync_s}


def measure_memory(store: MemoryStore, path: Path) -> dict[str, float]:
    gc.collect()
    tracemalloc.start()
    view = fresh_view(store)
    view.refresh()
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = len(view.current)
    return {"mem_per_record": held / n, "bytes_per_record": path.stat().st_size / n}


def measure_four_files(base: Path, size: int) -> dict[str, float]:
    """Peak RSS of a fresh process that loads four 8 MiB files (project, shared-project,
    user, a session) through ``MemoryStore.records``: everything the app holds for them.
    """
    home, workspace = base / "four-home", base / "four-ws"
    workspace.mkdir(mode=0o700)
    paths = StorePaths(home, workspace, "alice")
    session = paths.session_file("sess-1")
    for file in (paths.project_file(), paths.shared_file(), paths.user_file(), session):
        fill(file.path, file.scope, file.scope_key or "", MAX_STORE_BYTES, size)
    code = (
        "import resource, sys\n"
        "from dsh_memory_tui.store import MemoryStore\n"
        "store = MemoryStore.open(sys.argv[1], sys.argv[2], 'alice')\n"
        "n = len(store.records(include_inactive=True))\n"
        "print(n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(home), str(workspace)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    records, rss_kib = done.stdout.split()
    return {"four_records": int(records), "four_rss": int(rss_kib) * 1024}


# ---------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--appends", type=int, default=2000, help="appends per worker")
    parser.add_argument("--record-bytes", type=int, default=1100)
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="dsh-bench-"))
    try:
        workspace, home = base / "ws", base / "home"
        path = build_file(workspace, MAX_STORE_BYTES, args.record_bytes)
        store = MemoryStore.open(home, workspace, "alice")
        load = measure_load(store, path)
        tail = measure_tail(store, path, random.Random(3))
        path.write_bytes(path.read_bytes()[: load["bytes"]])  # back to the measured file
        memory = measure_memory(store, path)
        four = measure_four_files(base, args.record_bytes)
        prim = measure_primitives(base)
        # Best of APPEND_ROUNDS, each ours then the bare reference in fresh files (as every
        # timing here: the round least disturbed); every round's rate is printed too.
        runs = []
        for k in range(APPEND_ROUNDS):
            run = measure_appends(base / f"appends-{k}", args.workers, args.appends)
            runs.append(
                (run, measure_bare_appends(base / f"appends-{k}", args.workers, args.appends))
            )
        appends, bare = max(runs, key=lambda r: r[0]["append_rate"])
        rates = sorted(r["append_rate"] for r, _ in runs)
        versus = statistics.median(r["append_rate"] / b for r, b in runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    lost = sum(r["lost"] for r, _ in runs)
    duplicated = sum(r["duplicated"] for r, _ in runs)
    ms = 1000.0
    rows = [
        (
            "validated load / per-line json.loads",
            f"{load['load_s'] / load['json_loads_s']:.2f}x",
            "<= 1.50x",
            f"{load['load_s'] * ms:.1f} ms vs {load['json_loads_s'] * ms:.1f} ms, best of "
            f"{ROUNDS}; median of the rounds' ratios {load['round_ratio']:.2f}x "
            f"({load['records']} records, {load['bytes'] / 2**20:.2f} MiB)",
        ),
        (
            "  floor: the record validator alone / json.loads",
            f"{load['parse_only_s'] / load['json_loads_s']:.2f}x",
            "",
            f"{load['parse_only_s'] * ms:.1f} ms: pydantic's strict parse, no rule, hash or view",
        ),
        (
            "one appended record / full load",
            f"1/{load['load_s'] / tail['tail_s']:.0f}",
            "<= 1/1000",
            f"{tail['tail_s'] * 1e6:.0f} us median (best {tail['tail_min_s'] * 1e6:.0f} us)",
        ),
        (
            f"{args.workers} procs x {args.appends} locked fsynced appends",
            f"{appends['append_rate']:.0f} rec/s",
            ">= 1500 rec/s",
            f"best of {APPEND_ROUNDS}: {appends['append_s']:.2f} s; rounds "
            f"{', '.join(f'{r:.0f}' for r in rates)}; lost {lost}, duplicated {duplicated}",
        ),
        (
            "  reference: the lock protocol and sync alone",
            f"{bare:.0f} rec/s",
            "",
            f"the same {args.workers} processes, only O_EXCL/write/unlink/sync per append "
            f"(ours: {versus:.2f}x of it, median of the rounds)",
        ),
        (
            "memory per loaded record / its bytes",
            f"{memory['mem_per_record'] / memory['bytes_per_record']:.2f}x",
            "<= 4.00x",
            f"{memory['mem_per_record']:.0f} B per {memory['bytes_per_record']:.0f}-byte record",
        ),
        (
            "peak RSS, four 8 MiB files loaded",
            f"{four['four_rss'] / 1e6:.0f} MB",
            "< 300 MB",
            f"{four['four_records']} records in one process (project, shared, user, session)",
        ),
        (
            "host lock acquire+release; fsync (reference)",
            "",
            "",
            f"{prim['lock_s'] * 1e6:.0f} us; {prim['fsync_s'] * 1e6:.0f} us",
        ),
    ]
    print_table(rows)


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    """The benchmark's rows as a Markdown table (measure, result, target, absolute)."""
    headers = ("measure", "result", "target", "absolute")
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(4)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    print(f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
