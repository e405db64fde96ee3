"""Watch the store directories (not the files: a watch on a file goes silent after the first
atomic replace) and yield when a data file changes. Latency settings chosen by measurement:
``debounce=50, step=10`` gave p95 ~20 ms from append to event at ~1.4% CPU, against ~100 ms
with watchfiles' defaults.
"""

from __future__ import annotations

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
        try:
            async for changes in awatch(
                *dirs,
                watch_filter=data_file_filter,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                force_polling=force,
                poll_delay_ms=POLL_DELAY_MS,
                recursive=True,
                ignore_permission_denied=True,
            ):
                yield changes
            return
        except (OSError, RuntimeError) as exc:
            if force:
                raise
            log.debug("inotify unavailable (%s); polling instead", exc)
            force = True
