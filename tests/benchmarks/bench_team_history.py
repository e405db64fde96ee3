"""Team history benchmark: reading the shared file's versions from git, and the chain check
that reads them. Not a test (no asserts on time).

Run:  python tests/benchmarks/bench_team_history.py [--commits 200] [--records 5]

A repository whose shared file grows by ``--records`` records a commit (half of the previous
commit's verified), ``--commits`` commits. Measured in this run, interleaved, median and spread
of the rounds:

- per-commit ``git show COMMIT:PATH`` of every version (one process each): the baseline, what
  the citation diff did before ``git.Blobs``;
- ``git.Blobs``: the same versions through one ``git cat-file --batch`` process;
- ``team.chain.broken_chains`` cold (history read and every line judged) and warm (HEAD and
  the files unchanged: a cached answer after one ``git rev-parse``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dsh_memory_tui import git
from dsh_memory_tui.model import Scope
from dsh_memory_tui.store import MemoryStore
from dsh_memory_tui.team import chain
from dsh_memory_tui.team.history import commits, repository_path

ROUNDS = 5


def build(root: Path, n_commits: int, per_commit: int) -> MemoryStore:
    ws = root / "ws"
    ws.mkdir()
    env = ["-c", "user.email=a@example.com", "-c", "user.name=A"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    store = MemoryStore.open(root / "home", ws, "alice")
    made: list[str] = []
    for c in range(n_commits):
        for i in range(per_commit):
            title = f"note {c}-{i}"
            made.append(
                store.create(
                    Scope.SHARED, "fact", title, f"{title}: " + "words " * 40, confirm_shared=True
                ).record.id
            )
        for rid in made[-2 * per_commit : -per_commit : 2]:
            store.verify(rid, confirm_shared=True)
        subprocess.run(["git", *env, "add", "-A"], cwd=ws, check=True)
        subprocess.run(["git", *env, "commit", "-q", "-m", f"c{c}"], cwd=ws, check=True)
    return store


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--records", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = build(Path(tmp), args.commits, args.records)
        where = repository_path(store.paths.workspace, store.paths.shared_file().path)
        assert where is not None
        top, rel = where
        found, _ = commits(top, rel)
        size = store.paths.shared_file().path.stat().st_size

        def shows() -> None:
            for c in found:
                git.run(top, "show", f"{c.sha}:{rel}")

        def batch() -> None:
            with git.Blobs(top) as blobs:
                for c in found:
                    blobs.read(f"{c.sha}:{rel}")

        def cold() -> None:
            chain._VERDICTS.clear()
            chain._HISTORIES.clear()
            chain.broken_chains(store.paths)

        def warm() -> None:
            chain.broken_chains(store.paths)

        runs: dict[str, list[float]] = {"show": [], "batch": [], "cold": [], "warm": []}
        for _ in range(ROUNDS):  # interleaved: load changes hit every variant alike
            runs["show"].append(timed(shows))
            runs["batch"].append(timed(batch))
            runs["cold"].append(timed(cold))
            runs["warm"].append(timed(warm))
        base = statistics.median(runs["show"])
        print(f"{len(found)} versions of a shared file of {size / 1024:.0f} KiB at HEAD")
        for name, label in (
            ("show", "git show per version (baseline)"),
            ("batch", "git cat-file --batch (git.Blobs)"),
            ("cold", "broken_chains, cold"),
            ("warm", "broken_chains, warm"),
        ):
            values = runs[name]
            median = statistics.median(values)
            print(
                f"{label:<36} median {median * 1000:8.1f} ms  "
                f"spread {min(values) * 1000:.1f}-{max(values) * 1000:.1f} ms  "
                f"{median / base:5.2f}x baseline"
            )


if __name__ == "__main__":
    main()
