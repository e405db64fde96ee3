"""Benchmark ``dsh-memory mcp`` through the SDK's own client: tool-call round trips and the
server's idle CPU. Not a test (no asserts on time).

Run:  python tests/benchmarks/bench_mcp.py [--records 7000] [--calls 300] [--idle 10]

The store: ``--records`` verified records (5/7 in the project file, 2/7 in the user's profile,
about 250 bytes of content each), every one of them served, so each search ranks them all.
The server is a real ``python -m dsh_memory_tui.cli mcp`` subprocess over stdio; each figure is
the time from ``ClientSession.call_tool`` to its result, in the client.

- propose: ``--calls`` proposals with new content (each one a locked append to the 5,000-line
  project file);
- search: ``--calls`` searches (one word, two words, an exact title, no match; at most 100
  results as Markdown); the use of every record returned is written once per run, so this
  first pass also appends those lines (one locked batch per call);
- search again: the same searches once more (every use already written: reads only);
- list: ``--calls`` lists (pinned first, 100 records);
- idle CPU: the server's utime + stime from ``/proc/<pid>/stat`` over ``--idle`` seconds with
  no request, after the calls;
- the audit's cost: two more servers on the same store, one writing the audit log and one with
  ``DSH_AUDIT=off``, ``--calls`` lists each, alternating (one on, one off) so both see the same
  machine load; their p50s and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from dsh_memory_tui.jsonl import ensure_dir  # noqa: E402
from dsh_memory_tui.model import (  # noqa: E402
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Verification,
    make_record,
)
from dsh_memory_tui.paths import StoreFile, StorePaths  # noqa: E402

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
T0 = 1_764_000_000_000


def write_verified(file: StoreFile, count: int, start: int) -> None:
    ensure_dir(file.path.parent)
    out = []
    for i in range(start, start + count):
        words = " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 31))
        record = make_record(
            scope=file.scope,
            scope_key=file.scope_key or "",
            record_type=list(RecordType)[i % 4],
            title=f"Record {i}: {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} rule",
            content=words[:250],
            tags=[WORDS[i % len(WORDS)]],
            provenance=Provenance(kind=ProvenanceKind.USER),
            origin=Origin.USER_AUTHORED,
            source_refs=[],
            verification=Verification.VERIFIED,
            verified_at=T0 + i,
            now=T0 + i,
        )
        out.append(record.to_line())
    fd = os.open(file.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"".join(out))
    finally:
        os.close(fd)


def server_pid() -> int:
    """The MCP server: this process's child running ``dsh_memory_tui.cli``."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"dsh_memory_tui.cli" in cmdline:
            return int(entry)
    raise RuntimeError("server process not found")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(name: str, times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p95 = ms[max(0, round(0.95 * len(ms)) - 1)]
    return (
        f"{name:<13} n={len(ms):<4} p50 {statistics.median(ms):7.2f} ms   "
        f"p95 {p95:7.2f} ms   max {ms[-1]:7.2f} ms"
    )


async def measure(
    session: ClientSession,
    args: argparse.Namespace,
    paths: StorePaths,
    queries: list[str],
    rng: random.Random,
) -> tuple[dict[str, list[float]], float, int, tuple[float, float]]:
    first = time.perf_counter()
    await session.call_tool("workspace_memory_list", {"scope": "session"})
    first_call = time.perf_counter() - first
    timings: dict[str, list[float]] = {"propose": [], "search": [], "search again": [], "list": []}
    lines_before = sum(1 for _ in paths.project_file().path.open("rb"))
    for i in range(args.calls):
        t = time.perf_counter()
        result = await session.call_tool(
            "workspace_memory_propose",
            {
                "type": "fact",
                "title": f"Bench proposal {i}",
                "content": f"proposal {i}: {' '.join(rng.sample(WORDS, 8))}",
                "tags": ["bench"],
            },
            meta={"claudecode/toolUseId": f"toolu_{i}"},
        )
        timings["propose"].append(time.perf_counter() - t)
        assert not result.is_error, result
    for name in ("search", "search again"):  # the first pass also writes use counts
        for query in queries:
            t = time.perf_counter()
            result = await session.call_tool("workspace_memory_search", {"query": query})
            timings[name].append(time.perf_counter() - t)
            assert not result.is_error, result
    for _ in range(args.calls):
        t = time.perf_counter()
        result = await session.call_tool("workspace_memory_list", {})
        timings["list"].append(time.perf_counter() - t)
        assert not result.is_error, result
    lines_after = sum(1 for _ in paths.project_file().path.open("rb"))
    pid = server_pid()
    await asyncio.sleep(1.0)
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    await asyncio.sleep(args.idle)
    cpu1, t1 = cpu_seconds(pid), time.perf_counter()
    return timings, first_call, lines_after - lines_before, (cpu1 - cpu0, t1 - t0)


async def run(args: argparse.Namespace, root: Path) -> None:
    paths = StorePaths.resolve(root / "home", root / "ws", "alice")
    (root / "ws").mkdir(parents=True, exist_ok=True)
    project = args.records * 5 // 7
    write_verified(paths.project_file(), project, 0)
    write_verified(paths.user_file(), args.records - project, project)
    size = paths.project_file().path.stat().st_size + paths.user_file().path.stat().st_size
    print(
        f"store: {args.records} verified records ({project} project, "
        f"{args.records - project} user), {size / 1e6:.1f} MB"
    )

    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "dsh_memory_tui.cli",
            "--home",
            str(paths.home),
            "--workspace",
            str(paths.workspace),
            "--user",
            "alice",
            "mcp",
            "--session",
            "bench",
        ],
        env={"PYTHONPATH": str(REPO)},
        cwd=str(paths.workspace),
    )
    rng = random.Random(14)
    queries = []
    for i in range(args.calls):
        kind = i % 4
        if kind == 0:
            queries.append(rng.choice(WORDS))
        elif kind == 1:
            queries.append(f"{rng.choice(WORDS)} {rng.choice(WORDS)}")
        elif kind == 2:
            n = rng.randrange(args.records)
            queries.append(
                f"Record {n}: {WORDS[n % len(WORDS)]} {WORDS[(n * 7) % len(WORDS)]} rule"
            )
        else:
            queries.append(f"zz{i} nothing")
    with open(root / "server.log", "w") as errlog:
        start = time.perf_counter()
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            ready = time.perf_counter() - start
            got = await measure(session, args, paths, queries, rng)
    timings, first_call, appended, (cpu, idle) = got
    print(
        f"startup (spawn to initialized): {ready * 1000:.0f} ms; first call "
        f"{first_call * 1000:.1f} ms"
    )
    for name, times in timings.items():
        print(summary(name, times))
    print(
        f"project lines appended during the run: {appended} ({args.calls} proposals + use counts)"
    )
    print(f"idle CPU over {idle:.1f} s: {cpu:.3f} s ({100 * cpu / idle:.2f} % of one core)")
    await audit_cost(args, params, root)


async def audit_cost(args: argparse.Namespace, params: StdioServerParameters, root: Path) -> None:
    """List p50 with the audit and without it (``DSH_AUDIT=off``), calls alternating."""
    env_on = dict(params.env or {})
    env_off = {**env_on, "DSH_AUDIT": "off"}
    on = params.model_copy(update={"env": env_on, "args": [*params.args[:-1], "audit-on"]})
    off = params.model_copy(update={"env": env_off, "args": [*params.args[:-1], "audit-off"]})
    log = root / "home" / "audit" / "audit.jsonl"
    with open(root / "server-audit.log", "w") as errlog:
        async with (
            stdio_client(on, errlog=errlog) as (read_on, write_on),
            ClientSession(read_on, write_on) as with_audit,
            stdio_client(off, errlog=errlog) as (read_off, write_off),
            ClientSession(read_off, write_off) as without,
        ):
            await with_audit.initialize()
            await without.initialize()
            for _ in range(5):  # warm up; the first list also writes the use counts
                await with_audit.call_tool("workspace_memory_list", {})
                await without.call_tool("workspace_memory_list", {})
            entries_before = sum(1 for _ in log.open("rb")) if log.exists() else 0
            times: dict[str, list[float]] = {"list audited": [], "list unaudited": []}
            for _ in range(args.calls):
                for name, session in (("list audited", with_audit), ("list unaudited", without)):
                    t = time.perf_counter()
                    result = await session.call_tool("workspace_memory_list", {})
                    times[name].append(time.perf_counter() - t)
                    assert not result.is_error, result
    entries = sum(1 for _ in log.open("rb")) - entries_before
    for name, values in times.items():
        print(summary(name, values))
    ratio = statistics.median(times["list audited"]) / statistics.median(times["list unaudited"])
    print(
        f"audit cost: list p50 with the audit / without = {ratio:.3f}x "
        f"({entries} entries appended, {log.stat().st_size / 1e6:.2f} MB log)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=7000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        asyncio.run(run(args, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
