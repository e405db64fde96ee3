"""The app's flags, Textual-free: what the tabs show, the load, the watcher, pending syncs and
the quit that waits for a write. ``review.Index`` holds the records' side and
``write_queue.WriteQueue`` the writes; this holds the app's own. Tested without a pilot
(tests/app/test_app_state.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Quit(Enum):
    """The pending quit's next step (``AppFlags``)."""

    NOTHING = "nothing"
    EXIT = "exit"  # quit now
    WAIT = "wait"  # say the app quits once the running write is done
    STAY = "stay"  # a write failed: say the app stays open


@dataclass
class AppFlags:
    show_inactive: bool = False  # archived and forgotten records shown (A)
    review_derived: bool = False  # the review queue shows derived session digests (D)
    loading: bool = False  # a big store's first frame: its files' ends, while it loads
    watch_mode: str = "off"  # what the status line says of the watcher
    sync_count: int = 0  # syncs run (tests and benchmarks read it)
    sync_pending: bool = False  # a sync is scheduled for the next frame
    full_sync_due: bool = False  # a full rebuild came while a write held the store
    agent_view_due: bool = False  # W's read is running
    quit_due: bool = False  # q came: quit once the writes are done
    quit_said: bool = False  # ... and the app said it waits for them

    def quit_pressed(self) -> Quit:
        """q: the first waits for the writes (``after_keys``); the second quits at once."""
        if self.quit_due:
            return Quit.EXIT
        self.quit_due = True
        return Quit.NOTHING

    def after_keys(self, writing: bool) -> Quit:
        """Once the keys ahead of q were handled: quit, or say (once) that it waits."""
        if not self.quit_due or self.quit_said:
            return Quit.NOTHING  # a write failed meanwhile and said so; or said already
        if not writing:
            return Quit.EXIT
        self.quit_said = True
        return Quit.WAIT

    def after_write(self, failed: bool, writing: bool) -> Quit:
        """A write ended: a failure calls a pending quit off (the error, or the form's merge,
        is for the reviewer); the last write's success lets it go ahead."""
        if not self.quit_due:
            return Quit.NOTHING
        if failed:
            self.quit_due = self.quit_said = False
            return Quit.STAY
        return Quit.NOTHING if writing else Quit.EXIT
