"""8. Hostile inputs: bundles built to make an import plan do unbounded work, and event files
that never end, each in a real process with a deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui.bundle import MAX_BUNDLE_BYTES, MAX_BUNDLE_RECORDS

from .conftest import Figures

REPO_ROOT = Path(__file__).parent.parent.parent
DEADLINE_S = 180  # a hang guard only (a busy machine included): each case takes seconds
# What a plan may add to a fresh process's peak memory for a refused 8 MiB bundle: the bytes,
# their text and the first 10,001 entries, not a Python object per value of the file.
PLAN_MEMORY_MB = 120

_PLAN = """
import json, resource, sys, time
from dsh_memory_tui.bundle import plan_import
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.store import MemoryStore
store = MemoryStore.open(sys.argv[1], sys.argv[2], "alice")
store.records("user")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
try:
    plan = plan_import(store, sys.argv[3], "user")
    out = {"counts": plan.counts, "new": len(plan.new), "invalid": len(plan.invalid)}
except StoreError as exc:
    out = {"code": str(exc.code), "message": exc.message}
out["seconds"] = time.monotonic() - started
out["mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps(out))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def _plan_in_child(tmp_path: Path, name: str, data: bytes) -> dict[str, Any]:
    """``plan_import`` of ``data`` (saved as ``name``) in a fresh Python process."""
    bundle = tmp_path / name
    bundle.write_bytes(data)
    (tmp_path / "ws").mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _PLAN, str(tmp_path / "home"), str(tmp_path / "ws"), str(bundle)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _json_bundle(entries: list[bytes], tail: bytes = b"]}") -> bytes:
    return b'{"schemaVersion": 1, "records": [' + b",".join(entries) + tail


def _fill(unit: bytes) -> list[bytes]:
    """As many ``unit`` entries as fit a bundle of at most 8 MiB."""
    return [unit] * ((MAX_BUNDLE_BYTES - 64) // (len(unit) + 1))


def _markdown(section: bytes, sections: int | None = None) -> bytes:
    """``sections`` copies of ``section`` (default: as many as fit in 8 MiB) between ``---``."""
    if sections is None:
        sections = (MAX_BUNDLE_BYTES - 64) // (len(section) + 5)
    return b"\n---\n".join([section] * sections)


# name -> (file name, its bytes (built when the case runs), what the plan must say)
HOSTILE_BUNDLES: dict[str, tuple[str, Callable[[], bytes], str]] = {
    "a million {} (3 MB)": (
        "million.json",
        lambda: _json_bundle([b"{}"] * 1_000_000),
        "more than 10000 records",
    ),
    "8 MiB of {}": ("objects.json", lambda: _json_bundle(_fill(b"{}")), "more than 10000 records"),
    "8 MiB of []": ("lists.json", lambda: _json_bundle(_fill(b"[]")), "more than 10000 records"),
    "8 MiB of 0": ("numbers.json", lambda: _json_bundle(_fill(b"0")), "more than 10000 records"),
    "10,001 entries, then bad JSON": (
        "cut.json",
        lambda: _json_bundle([b"{}"] * (MAX_BUNDLE_RECORDS + 1), b",NaN"),
        "more than 10000 records",  # stopped there: the rest was never read
    ),
    "a top-level list of 8 MiB of {}": (
        "top.json",
        lambda: b"[" + b",".join(_fill(b"{}")) + b"]",
        "the top level is a JSON list, not an object",
    ),
    "8 MiB + 1 byte": (
        "big.json",
        lambda: _json_bundle([], b"]" + b" " * MAX_BUNDLE_BYTES + b"}"),
        "larger than the 8 MiB a bundle may have",
    ),
    "10,001 Markdown sections": (
        "many.md",
        lambda: _markdown(b"# t\n\nc", MAX_BUNDLE_RECORDS + 1),
        "more than 10000 records",
    ),
    "8 MiB of untitled Markdown sections": (
        "untitled.md",
        lambda: _markdown(b"x"),
        "no '# title' section",
    ),
    "8 MiB of '#' Markdown sections": (
        "hashes.md",
        lambda: _markdown(b"#"),
        "no '# title' section",
    ),
    "8 MiB of content-less Markdown sections": (
        "empty.md",
        lambda: _markdown(b"# t\n\n"),
        "more than 10000 records",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_BUNDLES))
def test_a_hostile_bundle_is_refused_before_its_records_are_built(
    case: str, tmp_path: Path, figures: Figures
) -> None:
    """Bundles built for unbounded work (a million `{}`, 8 MiB of `{}`, `[]` or `0`, 10,001
    entries followed by bad JSON, a top-level list, one byte over 8 MiB, 10,001 Markdown
    sections, 8 MiB of untitled, `#`-only or content-less sections): each plan, in a fresh
    process, is BUNDLE_INVALID (the host's limits: 8 MiB, 10,000 records) or an empty plan,
    found before one record per entry is built: the entries past the 10,000th are never read,
    and the plan adds less than 120 MB to the process's peak memory.
    """
    name, build, expected = HOSTILE_BUNDLES[case]
    data = build()
    out = _plan_in_child(tmp_path, name, data)
    assert out.get("code") == "BUNDLE_INVALID", out
    assert expected in out["message"], out
    assert out["mb"] < PLAN_MEMORY_MB, out
    figures.add("hostile bundles refused")
    figures.add("bundle bytes refused", len(data))
    figures.add("plan time, all cases (ms)", round(out["seconds"] * 1000))


@pytest.mark.parametrize(
    ("version", "accepted"),
    [(b"1", True), (b"1.0", True), (b"10e-1", True), (b"true", False), (b'"1"', False)],
)
def test_schema_version_is_the_number_1_as_json_parse_reads_it(
    version: bytes, accepted: bool, tmp_path: Path, figures: Figures
) -> None:
    """A bundle's `schemaVersion` must be the number 1 after `JSON.parse`, as the host's
    `=== 1`: `1`, `1.0` and `10e-1` are imported, `true` and `"1"` refused.
    """
    out = _plan_in_child(tmp_path, "v.json", b'{"schemaVersion": %s, "records": []}' % version)
    assert ("code" not in out) is accepted, out
    figures.add("schemaVersion spellings checked")


AUTO_WRITE = [sys.executable, "-m", "dsh_memory_tui.cli", "--user", "alice", "auto-write"]


def _auto_write(tmp_path: Path, *args: str, **kw: Any) -> subprocess.Popen[str]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    cmd = [*AUTO_WRITE[:3], "--home", str(tmp_path / "home"), "--workspace", str(tmp_path / "ws")]
    return subprocess.Popen(
        [*cmd, *AUTO_WRITE[3:], *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        **kw,
    )


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_auto_write_refuses_an_events_path_that_is_not_a_regular_file(
    kind: str, tmp_path: Path, figures: Figures
) -> None:
    """`dsh-memory auto-write --events` on a FIFO no one writes to (its `open` used to block
    past SIGTERM), on `/dev/zero` (it used to grow 3 GB in 7 s) or on a directory: UNSAFE_PATH
    at once, one line on stderr, exit 1, nothing written.
    """
    path = {"fifo": tmp_path / "events", "/dev/zero": Path("/dev/zero"), "directory": tmp_path}[
        kind
    ]
    if kind == "fifo":
        os.mkfifo(path)
    proc = _auto_write(tmp_path, "--events", str(path))
    try:
        stdout, stderr = proc.communicate(timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr
    assert stderr.startswith("error[UNSAFE_PATH]: ") and stderr.count("\n") == 1, stderr
    assert not (tmp_path / "home" / "workspace-memory" / "sessions").exists()
    figures.add("non-regular events files refused")


def _proc_field(pid: int, name: str, field: str) -> int:
    for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == field:
            return int(value.split()[0])
    raise KeyError(field)


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc")
def test_auto_write_on_an_endless_line_stays_small_and_stops_on_sigterm(
    tmp_path: Path, figures: Figures
) -> None:
    """`dsh-memory auto-write < /dev/zero` (one line that never ends): after it has read
    256 MiB its memory is still under 150 MB (a line past 1 MiB is skipped, unbuffered), and
    SIGTERM ends it within the deadline; the over-long line is named (exit 1).
    """
    with open("/dev/zero", "rb") as zero:
        proc = _auto_write(tmp_path, stdin=zero)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while _proc_field(proc.pid, "io", "rchar") < 256 << 20:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "it never read 256 MiB"
            time.sleep(0.01)
        rss_kb = _proc_field(proc.pid, "status", "VmRSS")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert rss_kb < 150 * 1024, f"{rss_kb} kB after 256 MiB of one line"
    assert proc.returncode == 1, stderr  # the over-long line is named, and skipped
    assert stderr.startswith("warning: events line 1 skipped") and "error[INVALID_EVENT]" in stderr
    figures.add("bytes of an endless line read", 256 << 20)
    figures.add("peak memory after them (MB)", rss_kb // 1024)


def test_auto_write_ends_on_sigterm_while_reading_a_huge_events_file(
    tmp_path: Path, figures: Figures
) -> None:
    """A sparse 64 GiB events file (zeros, no newline): `auto-write --events` reads it in
    chunks, skipping the endless line, and SIGTERM ends it promptly (exit 1: the line is named)."""
    events = tmp_path / "events.jsonl"
    with open(events, "wb") as f:
        f.truncate(64 << 30)
    proc = _auto_write(tmp_path, "--events", str(events))
    try:
        deadline = time.monotonic() + DEADLINE_S
        while _proc_field(proc.pid, "io", "rchar") < 64 << 20:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "it never started reading"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=DEADLINE_S)  # SIGTERM honoured
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr  # the over-long line is named, and skipped
    assert stderr.startswith("warning: events line 1 skipped") and "error[INVALID_EVENT]" in stderr
    figures.add("SIGTERMs obeyed mid-file")
