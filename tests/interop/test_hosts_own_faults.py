"""Faults of the host's own code that we must survive, each shown with the host's code first:

- a FIFO in place of a store file: the host's read blocks on it for good; we refuse it
  (UNSAFE_PATH) at once;
- a dangling symlink in place of a store file: the host writes through it, creating the file it
  points to; we refuse it and create nothing;
- an empty ``.lock`` (what the host leaves when its lock file is created but its pid cannot be
  written, a full disk: ``withLock`` opens ``wx``, then ``writeFile`` fails and the file stays):
  every host write is refused "busy" until it is 60 s old; we wait, name "an unknown process"
  and when it turns stale, and break it then, as the host does.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.store import MemoryStore

from .corpus import CaseDirs
from .host import HostHarness


def _propose(host: HostHarness, dirs: CaseDirs, title: str) -> dict[str, object]:
    return host.propose(
        title, f"{title} content", home=dirs.home, workspace=dirs.workspace, check=False
    )


def _store(dirs: CaseDirs, timeout_s: float = 5) -> MemoryStore:
    return MemoryStore.open(dirs.home, dirs.workspace, "alice", lock_timeout_s=timeout_s)


def test_a_fifo_store_file_hangs_the_host_and_is_refused_by_us(
    dirs: CaseDirs, host: HostHarness
) -> None:
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True)
    os.mkfifo(data, 0o600)
    cmd = host.command("list", home=dirs.home, workspace=dirs.workspace)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(cmd, env=host.env(), capture_output=True, timeout=5)
    store = _store(dirs)
    # Refused before any open: opening a FIFO would wait for a writer forever (as the host does).
    for act in (
        lambda: store.records("project"),
        lambda: store.create("project", "fact", "t", "c"),
    ):
        with pytest.raises(StoreError) as err:
            act()
        assert err.value.code == "UNSAFE_PATH"


def test_a_dangling_symlink_is_written_through_by_the_host_and_refused_by_us(
    dirs: CaseDirs, host: HostHarness, tmp_path: Path
) -> None:
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True)
    target = tmp_path / "elsewhere.jsonl"
    data.symlink_to(target)
    with pytest.raises(StoreError) as err:
        _store(dirs).create("project", "fact", "ours", "ours")
    assert err.value.code == "UNSAFE_PATH" and not target.exists()
    made = _propose(host, dirs, "through the link")
    assert made["rc"] == 0  # the host's fault: its line went outside the store
    assert b"through the link" in target.read_bytes()
    with pytest.raises(StoreError) as err:  # and we still refuse the link
        _store(dirs).records("project")
    assert err.value.code == "UNSAFE_PATH"


def test_an_empty_lock_refuses_the_host_and_we_break_it_once_stale(
    dirs: CaseDirs, host: HostHarness
) -> None:
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True)
    lock = data.with_name(data.name + ".lock")
    lock.write_bytes(b"")
    refused = _propose(host, dirs, "while empty")
    assert refused["rc"] == 1 and "busy" in str(refused["error"])
    with pytest.raises(StoreError) as err:
        _store(dirs, timeout_s=0.2).create("project", "fact", "waits", "waits")
    assert err.value.code == "LOCK_TIMEOUT"
    assert "an unknown process" in err.value.message and "turns stale at" in err.value.message
    then = time.time() - 61
    os.utime(lock, (then, then))  # the minute has passed
    rid = _store(dirs).create("project", "fact", "breaks it", "breaks it").id
    assert not lock.exists()
    assert _propose(host, dirs, "after")["rc"] == 0
    seen = host.run("list", "--full", home=dirs.home, workspace=dirs.workspace)
    assert rid in {r["id"] for r in seen["records"]}
