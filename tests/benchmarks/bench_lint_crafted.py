"""Crafted-input benchmark for the risk flags (``dsh_memory_tui.lint``): each of the 50 crafted
texts of tests/lint/crafted.py (the classic regular-expression blow-up shapes, one or more for
every detector) against an ordinary record's text of the same size, measured in the same run,
interleaved (ordinary, then every crafted text, each round), median and spread of the rounds.
Not a test (no asserts on time): tests/lint/test_linear_time.py holds the work done.

Run:  python tests/benchmarks/bench_lint_crafted.py [--sizes 65536,1048576] [--rounds 5]

Target (issue 31): the slowest crafted text costs at most 3x the ordinary one. Before the
detectors ran under RE2, a 64 KiB proposal of ``"sk-" * 21666`` took 22.7 s and ``"curl " *
13000`` 17.6 s (Python's ``re`` backtracking).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from lint.crafted import crafted, ordinary  # noqa: E402

from dsh_memory_tui import lint  # noqa: E402
from dsh_memory_tui.lint import secrets  # noqa: E402


def seconds(text: str) -> float:
    start = time.perf_counter()
    lint.text_flags(text, "content")  # uncached: ``flags`` would remember the text
    return time.perf_counter() - start


def measure(size: int, rounds: int) -> None:
    base_text = ordinary(size)
    texts = crafted(size)
    base: list[float] = []
    times: dict[str, list[float]] = {name: [] for name, _ in texts}
    for _ in range(rounds):
        base.append(seconds(base_text))
        for name, text in texts:
            times[name].append(seconds(text))
    base_ms = statistics.median(base) * 1000
    print(
        f"\n{size // 1024} KiB, {rounds} rounds: ordinary record {base_ms:.2f} ms"
        f" (spread {min(base) * 1000:.2f}..{max(base) * 1000:.2f})"
    )
    rows = sorted(
        (
            (statistics.median(t) * 1000, name, min(t) * 1000, max(t) * 1000)
            for name, t in times.items()
        ),
        reverse=True,
    )
    print(f"{'crafted text':44} {'ms':>9} {'x ordinary':>10} {'spread ms':>18} flags")
    for ms, name, low, high in rows:
        found = lint.kinds(lint.text_flags(dict(texts)[name], "content"))
        print(
            f"{name:44} {ms:9.2f} {ms / base_ms:10.2f} {low:8.2f}..{high:<8.2f}"
            f" {', '.join(found) or '-'}"
        )
    worst_ms, worst = rows[0][0], rows[0][1]
    ratio = worst_ms / base_ms
    verdict = "met" if ratio <= 3 else "MISSED"
    print(f"slowest: {worst} at {ratio:.2f}x the ordinary record: target <= 3x {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="65536,1048576")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    secrets.provider_scanner()
    loaded = time.perf_counter() - start
    print(f"provider rules loaded in {loaded:.2f} s (cache: {secrets.rule_cache()})")
    for size in (int(s) for s in args.sizes.split(",")):
        measure(size, args.rounds)


if __name__ == "__main__":
    main()
