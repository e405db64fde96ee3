"""3. Faults: the Nth open, write, fsync, fdatasync or replace fails (ENOSPC, EIO, a short
write), once or for good; and a real full disk (RLIMIT_FSIZE)."""

from __future__ import annotations

import resource
import signal
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui.errors import StoreError

from .conftest import Figures
from .harness import (
    SCENARIOS,
    FaultyOS,
    Prepared,
    Scenario,
    assert_next_write_succeeds,
    prepare,
    run_in_child,
    store_os,
)

FAULTS = [
    (call, kind)
    for call in ("open", "write", "fsync", "fdatasync", "replace")
    for kind in ("ENOSPC", "EIO")
] + [("write", "short")]

NTH_LIMIT = 200  # no operation makes this many calls of one kind


def _check_failed_run(prepared: Prepared, exc: StoreError, what: str) -> None:
    """A failed write: a typed error, every file in its old or new state (or a committed
    step between), no temporary left, and the store still takes the next write."""
    state = prepared.state()
    assert not prepared.violations(state), (what, exc.code, prepared.violations(state))
    assert state.temporaries == 0, f"{what}: a temporary was left behind"
    assert_next_write_succeeds(prepared.site, prepared.path(), what)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name.replace(" ", "-"))
def test_failing_nth_call_is_a_typed_error_and_leaves_old_or_new_file(
    scenario: Scenario, tmp_path: Path, figures: Figures
) -> None:
    """For each of open/write/fsync/fdatasync/replace and each of ENOSPC, EIO and a short write,
    make the 1st, 2nd, ... call fail (once, then for good) until the operation no longer reaches
    it: a failure is always a StoreError (never a success after a failed sync), each file is
    byte-identical or holds the complete new state, and the next write succeeds. A short
    write alone is not an error: the rest is written and the record is complete.
    """
    prepared = prepare(scenario, tmp_path)
    for call, kind in FAULTS:
        for persistent in (False, True):
            for nth in range(1, NTH_LIMIT):
                what = f"{call} #{nth} {kind} {'for good' if persistent else 'once'}"
                prepared.fresh()
                stand_in = FaultyOS(call, kind, nth, persistent)
                error: StoreError | None = None
                with store_os(stand_in):
                    try:
                        prepared.run()
                    except StoreError as exc:
                        error = exc
                if not stand_in.fired:
                    assert error is None, f"{what}: failed without a fault: {error}"
                    assert prepared.state() == prepared.after
                    figures.add("clean runs (the fault was past the last call)")
                    break
                figures.add("faults injected", stand_in.fired)
                figures.add(f"{call} faults injected", stand_in.fired)
                if kind == "short" and not persistent:
                    assert error is None, f"{what}: a short write became an error: {error}"
                    assert prepared.state() == prepared.after, f"{what}: record incomplete"
                    figures.add("short writes completed")
                    continue
                assert error is not None, f"{what}: the fault was swallowed: success reported"
                figures.add(f"refused with {error.code}")
                _check_failed_run(prepared, error, what)
            else:
                raise AssertionError(f"{call}: still failing after {NTH_LIMIT} calls")


def _limits(prepared: Prepared) -> list[int]:
    """File size limits that cut the operation's writes at their start, middle and end."""
    sizes = [
        len(getattr(s, k) or b"")
        for s in (prepared.before, prepared.after)
        for k in ("data", "bak", "corrupt")
    ]
    points = {0, 1}
    for size in sizes:
        points.update({size - 1, size, size + 1, size // 2})
    top = max(sizes)
    return sorted(p for p in points if 0 <= p < top)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name.replace(" ", "-"))
def test_full_disk_is_write_failed_and_leaves_old_or_new_file(
    scenario: Scenario, tmp_path: Path, figures: Figures
) -> None:
    """A real full disk: the process's file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) cuts
    the operation's writes at their start, middle and end: WRITE_FAILED, each file old or
    new, no temporary left, and the next write (without the limit) succeeds.
    """
    prepared = prepare(scenario, tmp_path)
    wrong_codes: list[str] = []  # every limit is tried before failing on a wrong code
    for limit in _limits(prepared):
        prepared.fresh()

        def body(limit: int = limit) -> dict[str, Any]:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
            try:
                prepared.run()
            except StoreError as exc:
                return {"code": exc.code}
            return {"code": None}

        code = run_in_child(body).messages[-1]["code"]
        what = f"file size limit {limit}"
        if code is None:
            assert prepared.state() == prepared.after, f"{what}: success but not complete"
            figures.add("limits the operation fitted under")
            continue
        if code != "WRITE_FAILED":
            wrong_codes.append(f"{what}: {code}")
        figures.add(f"disk-full failures ({code})")
        _check_failed_run(prepared, StoreError(code, what), what)
    assert not wrong_codes, f"a full disk was not WRITE_FAILED: {wrong_codes}"
