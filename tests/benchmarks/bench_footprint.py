"""Memory benchmark (issue 35): the app holding four 8 MiB scopes, against the files' bytes and
beside visidata holding one of them. Not a test (no asserts on memory).

Run:  python tests/benchmarks/bench_footprint.py [--pairs 7] [--peers DIR] [--markdown FILE]
      python tests/benchmarks/bench_footprint.py --breakdown   # where our bytes go (tracemalloc)

Both programs run as a user runs them, in a real pseudo-terminal: started, their first frame
waited for, then left until they have drawn nothing for a second and use under a tenth of a
core (ours loads the rest of a big store, flags and indexes it in threads after its first
frame); then their resident memory (VmRSS) is read. The target: ours <= 4x the bytes of the
four files. visidata (from PyPI, into a throwaway virtualenv) is the peer, holding one file.

``--breakdown`` runs the app in this process under tracemalloc instead (pilot, no terminal) and
prints the Python memory each of our modules holds once everything is loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_app import _ESCAPES, SIZE, _cpu_of  # noqa: E402
from bench_startup import program, store_args  # noqa: E402
from sidebyside import Sample, Table, interleaved, median, ratio_text, visidata  # noqa: E402
from storegen import MIB, full_store, installed_bytecode  # noqa: E402

from dsh_memory_tui.model import Scope  # noqa: E402

SCOPES = (Scope.PROJECT, Scope.SHARED, Scope.USER, Scope.SESSION)


def settled_rss(argv: list[str], needle: str, timeout: float = 300.0) -> int:
    """Bytes resident in ``argv``'s process once it showed ``needle`` in a pseudo-terminal of
    ``SIZE`` and then went quiet (no output for 1 s, under 0.1 s of CPU in that second)."""
    import pty
    import signal

    pid, fd = pty.fork()
    if pid == 0:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        os.environ["TERM"] = "xterm-256color"
        os.execv(argv[0], argv)
    deadline = time.monotonic() + timeout
    want, seen, shown = needle.encode(), b"", False
    last_output = time.monotonic()
    try:
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{argv} never settled")
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise RuntimeError(f"{argv} ended before it settled")
                last_output = time.monotonic()
                if not shown:
                    seen += chunk
                    shown = want in _ESCAPES.sub(b"", seen)
                continue
            if shown and time.monotonic() - last_output >= 1.0:
                before = _cpu_of(pid)
                time.sleep(1.0)
                if _cpu_of(pid) - before < 0.1:
                    return _rss(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def measure(table: Table, tmp: Path, pairs: int, peers: Path | None) -> None:
    store = full_store(tmp / "store", files=SCOPES)
    files = [store.scope_file(s) for s in SCOPES if s is not Scope.SESSION]
    files.append(store.session_file("bench", "root"))
    ours_bytes = sum(f.path.stat().st_size for f in files)
    project = store.project_file()
    lines = project.path.read_bytes().splitlines()
    vd = visidata(tmp, peers / "vd-venv" if peers else None)
    ours_argv = [*program("dsh-memory-tui"), *store_args(store)]
    # The first tab's top row: the newest record of all four files (each file's last line).
    last = [json.loads(f.path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]) for f in files]
    newest = max(last, key=lambda r: r["updatedAt"])["title"]
    first = json.loads(lines[0])["title"][:17]  # visidata's first row, its column's width
    got = interleaved(
        {
            "ours": lambda: Sample(settled_rss(ours_argv, newest), 0.0),
            "vd": lambda: Sample(settled_rss([vd, str(project.path)], first), 0.0),
        },
        pairs,
    )
    vd_bytes = project.path.stat().st_size
    ours_x = [s.wall / ours_bytes for s in got["ours"]]
    vd_x = [s.wall / vd_bytes for s in got["vd"]]
    rss = [s.wall / MIB for s in got["ours"]]
    vd_rss = [s.wall / MIB for s in got["vd"]]
    table.add(
        f"the app holding four 8 MiB scopes ({ours_bytes / MIB:.1f} MiB of files), "
        "resident once settled",
        f"{median(rss):.0f} MiB ({min(rss):.0f}-{max(rss):.0f})",
        f"visidata holding one ({vd_bytes / MIB:.1f} MiB): "
        f"{median(vd_rss):.0f} MiB ({min(vd_rss):.0f}-{max(vd_rss):.0f}), "
        f"{ratio_text(vd_x)} its bytes",
        f"{ratio_text(ours_x)} the bytes",
        "<= 4.00x the bytes",
        median(ours_x) <= 4.0,
    )


BREAKDOWN_CHILD = r"""
import asyncio, gc, sys, tracemalloc
sys.path.insert(0, sys.argv[1])
from dsh_memory_tui.store import MemoryStore
from dsh_memory_tui.app.app import MemoryApp
tracemalloc.start()
async def main():
    app = MemoryApp(MemoryStore.open(sys.argv[2], sys.argv[3], "alice"), watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        while app.loading:
            await pilot.pause(0.05)
        for tab in "12345":
            await pilot.press(tab)
            await pilot.pause()
        for _ in range(3):  # the evidence and the citation check run after each load
            await app.workers.wait_for_complete()
            await pilot.pause(0.5)
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
    total = 0
    for stat in snapshot.statistics("filename"):
        total += stat.size
        if stat.size > 512 * 1024:
            name = stat.traceback[0].filename.replace(sys.argv[1] + "/", "")
            print(f"{stat.size / 2**20:8.1f} MiB {stat.count:>9,} blocks  {name}")
    print(f"{total / 2**20:8.1f} MiB in all (Python allocations)")
asyncio.run(main())
"""


def breakdown(tmp: Path) -> None:
    import subprocess

    store = full_store(tmp / "store", files=SCOPES)
    subprocess.run(
        [sys.executable, "-c", BREAKDOWN_CHILD, str(REPO), str(store.home), str(store.workspace)],
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7, help="interleaved pairs (at least 7)")
    parser.add_argument("--peers", type=Path, help="keep the peers' installs here between runs")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--breakdown", action="store_true", help="tracemalloc, by module")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dsh-bench-footprint-"))
    installed_bytecode(tmp)
    try:
        if args.breakdown:
            breakdown(tmp)
            return
        table = Table("Memory", "python tests/benchmarks/bench_footprint.py", timed=False)
        table.begin()
        measure(table, tmp, args.pairs, args.peers)
        table.end(args.markdown)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
