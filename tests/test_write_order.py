"""The app's write queue without Textual (``app.write_queue.WriteQueue``), on real threads: one
write at a time in the order asked, each under the store's gate, its end on the "event loop"
(here a queue the test drains) before the next starts, a read never between two writes' steps,
the status line's words."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

import pytest

from dsh_memory_tui.app.write_queue import WriteQueue
from dsh_memory_tui.errors import ErrorCode, StoreError


class Loop:
    """An event loop: callbacks handed over from threads, run by ``drain`` in the test's."""

    def __init__(self) -> None:
        self.calls: queue.Queue[Callable[[], None]] = queue.Queue()
        self.threads: list[threading.Thread] = []

    def start_thread(self, run: Callable[[], None], group: str, name: str) -> None:
        thread = threading.Thread(target=run, name=f"{group}:{name}")
        self.threads.append(thread)
        thread.start()

    def run_next(self, timeout: float = 30.0) -> None:
        self.calls.get(timeout=timeout)()


@pytest.fixture
def loop() -> Loop:
    return Loop()


def test_writes_run_one_at_a_time_in_the_order_asked_each_after_the_last_ones_end(loop: Loop):
    changed: list[str] = []
    writes = WriteQueue(loop.start_thread, loop.calls.put, lambda: changed.append("status"))
    order: list[str] = []
    release = threading.Event()

    def write(name: str) -> Callable[[], str]:
        def run() -> str:
            if name == "first":
                release.wait(30)
            order.append(f"ran {name}")
            return name

        return run

    def finished(result: object, error: StoreError | None) -> None:
        order.append(f"ended {result}")

    for name in ("first", "second", "third"):
        writes.submit(write(name), finished, keys=[name], label=f"writing {name}")
    assert len(loop.threads) == 1  # the others wait their turn
    assert writes.queued == 2 and writes.writing == {"first", "second", "third"}
    assert writes.progress(now=writes.running[1].started + 2.4).startswith(  # type: ignore[operator]
        "writing first… 2 s (+2 queued)"
    )
    release.set()
    for _ in range(3):
        loop.run_next()
    assert order == [
        "ran first", "ended first", "ran second", "ended second", "ran third", "ended third",
    ]  # fmt: skip
    assert writes.running == {} and writes.progress() == "" and len(loop.threads) == 3
    assert changed.count("status") == 6  # three asked, three ended


def test_a_refused_write_hands_its_error_over_and_the_next_one_still_runs(loop: Loop):
    writes = WriteQueue(loop.start_thread, loop.calls.put)
    got: list[tuple[object, str | None]] = []

    def refused() -> None:
        raise StoreError(ErrorCode.REVISION_CONFLICT, "someone else wrote it")

    def record(result: object, error: StoreError | None) -> None:
        got.append((result, error.code if error else None))

    writes.submit(refused, record)
    writes.submit(lambda: "written", record)
    loop.run_next()
    loop.run_next()
    assert got == [(None, "REVISION_CONFLICT"), ("written", None)]


def test_a_stopped_queue_starts_no_further_write(loop: Loop):
    writes = WriteQueue(loop.start_thread, loop.calls.put)

    def stop(result: object, error: StoreError | None) -> None:
        writes.stopped = True  # the app exits as this write ends

    writes.submit(lambda: 1, stop)
    writes.submit(lambda: 2, stop)
    loop.run_next()
    assert len(loop.threads) == 1 and writes.queued == 1


def test_a_read_waits_for_the_running_write_and_never_sees_it_half_done(loop: Loop):
    writes = WriteQueue(loop.start_thread, loop.calls.put)
    steps: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def write() -> None:
        steps.append("write begins")
        inside.set()
        release.wait(30)
        steps.append("write ends")

    writes.submit(write, lambda result, error: None)
    assert inside.wait(30)
    writes.read(lambda: steps.append("read") or len(steps), lambda r, e: steps.append(f"saw {r}"))
    release.set()
    loop.run_next()
    loop.run_next()
    assert steps == ["write begins", "write ends", "read", "saw 3"]
