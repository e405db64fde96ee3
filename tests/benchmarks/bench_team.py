"""Team benchmark: ``merge-file`` of two 8 MiB sides of a shared file against a validated load
of both. Not a test (no asserts on time).

Run:  python tests/benchmarks/bench_team.py [--mib 8] [--changes 120]

The base is a shared file of two clones' records (realistic agent proposals); each side appends
``--changes`` lines to it (new records, and new revisions of existing ones, some of the same
records on both sides) to about ``--mib`` MiB. Measured in this run on this machine:

- load: a fresh ``FileView`` of each side, refreshed (every line validated): what opening both
  files costs, the baseline;
- merge: ``team.merge_file`` (read the three files, merge by record id, write the result);
- the CLI: ``dsh-memory merge-file`` as git runs it (a process: interpreter start included).

The target: merge <= 1.5x load. Each timing is the best of several rounds.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_store import best, realistic_line
from storegen import installed_bytecode

from dsh_memory_tui.jsonl import MAX_STORE_BYTES
from dsh_memory_tui.model import Location, Record, Scope, parse_line
from dsh_memory_tui.model import next_revision as revised
from dsh_memory_tui.paths import StoreFile, workspace_root_id
from dsh_memory_tui.store.view import FileView
from dsh_memory_tui.team import merge_file

ROUNDS = 5


def build(base_dir: Path, mib: float, changes: int) -> tuple[Path, Path, Path, Location, str]:
    """The three files of a merge, and the location of the merging clone."""
    alice, bob = workspace_root_id(base_dir / "alice"), workspace_root_id(base_dir / "bob")
    location = Location(Scope.SHARED, alice)
    rng = random.Random(11)
    target = int(mib * 1024 * 1024)
    room = 3 * changes * 1500  # both sides' changes, and the conflicts' lines, fit in 8 MiB
    base_target = min(target, MAX_STORE_BYTES) - room
    lines: list[bytes] = []
    size = 0
    i = 0
    while True:
        line = realistic_line(i, alice if i % 2 else bob, rng, 1100, Scope.SHARED)
        if size + len(line) > base_target:
            break
        lines.append(line)
        size += len(line)
        i += 1
    base = b"".join(lines)
    records = [parse_line(line[:-1], location) for line in lines]
    own = [r for r in records if isinstance(r, Record)]
    both = rng.sample(own, changes // 6)  # records both sides change

    def side(seed: int, start: int) -> bytes:
        pick = random.Random(seed)
        out = bytearray(base)
        for n in range(changes):
            if n < len(both):
                record = both[n]
                # One revision written two ways on the two sides: a conflict to resolve.
                out += revised(record, record.updatedAt + 1, {"tags": [f"s{seed}"]}).to_line()
            elif n % 2:
                record = pick.choice(own)
                out += revised(record, record.updatedAt + 5, {"tags": [f"e{seed}"]}).to_line()
            else:
                out += realistic_line(
                    start + n, alice if seed % 2 else bob, pick, 1100, Scope.SHARED
                )
        return bytes(out)

    paths = []
    for name, data in (("base", base), ("ours", side(1, i)), ("theirs", side(2, i + changes))):
        path = base_dir / name
        path.write_bytes(data)
        paths.append(path)
    return paths[0], paths[1], paths[2], location, alice


def load_both(ours: Path, theirs: Path, location: Location) -> None:
    for path in (ours, theirs):
        file = StoreFile(path, Scope.SHARED, location.scope_key)
        view = FileView(file, "bench", 5.0, lambda: int(time.time() * 1000))
        view.refresh()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=8.0, help="each side's size")
    parser.add_argument("--changes", type=int, default=120, help="lines each side appends")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        installed_bytecode(root)
        base, ours, theirs, location, _ = build(root, args.mib, args.changes)
        original = ours.read_bytes()

        def merge() -> None:
            ours.write_bytes(original)
            merge_file(base, ours, theirs, location)

        load = best(lambda: load_both(ours, theirs, location), ROUNDS)
        merged = best(merge, ROUNDS)
        size = len(ours.read_bytes())
        ours.write_bytes(original)
        workspace = root / "alice"
        workspace.mkdir()

        def cli() -> None:
            ours.write_bytes(original)
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "dsh_memory_tui.cli",
                    "--home",
                    str(root / "home"),
                    "--workspace",
                    str(workspace),
                    "merge-file",
                    str(base),
                    str(ours),
                    str(theirs),
                ],
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr

        process = best(cli, 3)
        mib = 1024 * 1024
        print(
            f"sides: {len(original) / mib:.2f} MiB and {theirs.stat().st_size / mib:.2f} MiB, "
            f"base {base.stat().st_size / mib:.2f} MiB, merged {size / mib:.2f} MiB"
        )
        print("| what | seconds | vs load of both |")
        print("|---|---|---|")
        print(f"| validated load of both sides (baseline) | {load:.3f} | 1.00x |")
        ratio = merged / load
        print(f"| merge-file in process (read 3, merge, write) | {merged:.3f} | {ratio:.2f}x |")
        print(
            f"| dsh-memory merge-file (a process, as git runs it) | {process:.3f} | "
            f"{process / load:.2f}x |"
        )


if __name__ == "__main__":
    main()
