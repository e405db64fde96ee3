"""Watch the store directories (not the files: a watch on a file goes silent after the first
atomic replace) and yield when a data file changes. Latency settings chosen by measurement:
``debounce=50, step=10`` gave p95 ~20 ms from append to event at ~1.4% CPU, against ~100 ms
with watchfiles' defaults.

Polling is ours, not watchfiles': its poller compares modification times in whole seconds, so an
append in the same second as the file's last change went unseen until some later change. Ours
compares (inode, size, mtime in ns) of each data file.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from watchfiles import Change, awatch

from ..paths import is_data_file

log = logging.getLogger(__name__)

DEBOUNCE_MS = 50
STEP_MS = 10
POLL_DELAY_MS = 100


def data_file_filter(change: Change, path: str) -> bool:
    """Only our ``.jsonl`` data files: not ``.lock``, ``.bak``, ``.corrupt`` or temporaries."""
    name = os.path.basename(path)
    return is_data_file(name) and not name.startswith(".")


def polling_forced() -> bool:
    return os.environ.get("WATCHFILES_FORCE_POLLING", "").lower() not in ("", "0", "false", "no")


async def watch_store_dirs(
    dirs: Sequence[Path], on_mode: Callable[[str], None] | None = None
) -> AsyncIterator[set[tuple[Change, str]]]:
    """Yield each batch of data-file changes under ``dirs`` (recursively), forever.

    Uses inotify; falls back to polling when inotify cannot start (or when
    ``WATCHFILES_FORCE_POLLING`` is set) and reports which through ``on_mode``.
    """
    force = polling_forced()
    while True:
        mode = "polling" if force else "inotify"
        if on_mode:
            on_mode(mode)
        if force:
            async for changes in poll_dirs(dirs):
                yield changes
            return
        try:
            async for changes in awatch(
                *dirs,
                watch_filter=data_file_filter,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                force_polling=False,
                recursive=True,
                ignore_permission_denied=True,
            ):
                yield changes
            return
        except (OSError, RuntimeError) as exc:
            log.debug("inotify unavailable (%s); polling instead", exc)
            force = True


Stamp = tuple[int, int, int]  # inode, size, mtime in ns


def scan_dirs(dirs: Sequence[Path]) -> dict[str, Stamp]:
    """Every data file under ``dirs`` (recursively, links not followed) and its stamp."""
    out: dict[str, Stamp] = {}
    for top in dirs:
        for directory, _subdirs, files in os.walk(top):
            for name in files:
                path = os.path.join(directory, name)
                if not data_file_filter(Change.modified, path):
                    continue
                try:
                    st = os.lstat(path)
                except OSError:
                    continue  # gone between the listing and the stat
                out[path] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def changes_between(before: dict[str, Stamp], after: dict[str, Stamp]) -> set[tuple[Change, str]]:
    changes = {(Change.deleted, p) for p in before.keys() - after.keys()}
    for path, stamp in after.items():
        old = before.get(path)
        if old is None:
            changes.add((Change.added, path))
        elif old != stamp:
            changes.add((Change.modified, path))
    return changes


async def poll_dirs(
    dirs: Sequence[Path], delay_ms: int = POLL_DELAY_MS
) -> AsyncIterator[set[tuple[Change, str]]]:
    """Yield the data-file changes under ``dirs`` every ``delay_ms`` in which there were any.
    The scans run in a thread: polling is for file systems where a stat may be slow.
    """
    seen = await asyncio.to_thread(scan_dirs, dirs)
    while True:
        await asyncio.sleep(delay_ms / 1000)
        now = await asyncio.to_thread(scan_dirs, dirs)
        changes = changes_between(seen, now)
        seen = now
        if changes:
            yield changes
