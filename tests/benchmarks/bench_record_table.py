"""Benchmark RecordTable with 20,000 rows: CPU per set_rows, upsert, remove and cursor move.

Run: python tests/benchmarks/bench_record_table.py [--rows N] [--repeat N]

Each figure is CPU time (time.process_time) per operation, averaged over --repeat runs:
"call" is the method alone; "+frame" adds `await pilot.pause()`, i.e. Textual processing the
resulting messages and repainting the screen. The target is well under 10 ms for both.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from dsh_memory_tui.app.widgets.record_table import Column, RecordTable, Row

COLUMNS = (
    Column("id", "ID", 10),
    Column("scope", "Scope", 9),
    Column("title", "Title", None),
    Column("updated", "Updated", 16),
)


def make_row(number: int, title: str = "") -> Row:
    return Row(
        f"key-{number:06d}",
        (f"{number:08x}", "workspace", title or f"remembered fact number {number}", "2025-01-01"),
        dim=number % 7 == 0,
    )


class BenchApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RecordTable(COLUMNS)


async def cpu_ms(
    pilot: Pilot[None], repeat: int, operation: Callable[[int], None], frame: bool
) -> float:
    """Mean CPU milliseconds of `operation(i)`, optionally including the next frame."""
    total = 0.0
    for i in range(repeat):
        start = time.process_time()
        operation(i)
        if frame:
            await pilot.pause()
        total += time.process_time() - start
        if not frame:
            # Let the app catch up outside the measurement so calls do not pile up.
            await pilot.pause()
    return total / repeat * 1000


async def report(
    label: str, pilot: Pilot[None], repeat: int, operation: Callable[[int], None]
) -> None:
    call = await cpu_ms(pilot, repeat, operation, frame=False)
    framed = await cpu_ms(pilot, repeat, operation, frame=True)
    print(f"{label:<42} {call:8.3f} ms call {framed:8.3f} ms +frame")


async def timed(awaitable: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    await awaitable()
    return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000


async def main(row_count: int, repeat: int) -> None:
    rows = [make_row(number) for number in range(row_count)]
    app = BenchApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(RecordTable)
        table.focus()
        await pilot.pause()

        async def first_fill() -> None:
            table.set_rows(rows)
            await pilot.pause()

        cpu, wall = await timed(first_fill)
        print(f"rows: {row_count}, repeat: {repeat}")
        print(f"{'first set_rows + first frame':<42} {cpu:8.3f} ms cpu {wall:8.3f} ms wall")

        # Pre-build the snapshots so only the table's own work is measured.
        snapshots = []
        for i in range(repeat * 2):
            snapshot = list(rows)
            changed = (i * 37) % row_count
            snapshot[changed] = make_row(changed, f"edited {i}")
            snapshots.append(snapshot)
        await report(
            "set_rows, one row changed", pilot, repeat, lambda i: table.set_rows(snapshots[i])
        )
        await report(
            "set_rows, one row changed (2nd batch)",
            pilot,
            repeat,
            lambda i: table.set_rows(snapshots[repeat + i]),
        )
        await report(
            "upsert, replace in place",
            pilot,
            repeat,
            lambda i: table.upsert(make_row(i * 11, f"upserted {i}")),
        )
        await report(
            "upsert, insert new row at top",
            pilot,
            repeat,
            lambda i: table.upsert(make_row(row_count + i), position=0),
        )
        await report(
            "upsert, move existing row to top",
            pilot,
            repeat,
            lambda i: table.upsert(make_row(row_count // 2 + i, "moved"), position=0),
        )
        await report(
            "remove", pilot, repeat, lambda i: table.remove_row(f"key-{row_count + i:06d}")
        )
        await report("cursor down (action)", pilot, repeat, lambda i: table.action_cursor_down())
        await report("page down (action)", pilot, repeat, lambda i: table.action_cursor_page_down())
        await report("toggle mark (action)", pilot, repeat, lambda i: table.toggle_mark())

        total = 0.0
        for _ in range(repeat):
            start = time.process_time()
            await pilot.press("down")
            total += time.process_time() - start
        print(f"{'key press down (dispatch + frame)':<42} {total / repeat * 1000:8.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=50)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.rows, arguments.repeat))
