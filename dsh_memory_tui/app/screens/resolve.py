"""K: resolve a conflict group or a near-duplicate pair (the main screen's key).

A conflict group's versions side by side, one kept (``MemoryStore.keep``); near-duplicates side
by side, one kept as it is or both merged in the merge form (``MemoryStore.merge``). Plain
functions of the main screen, which calls them from ``action_keep``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...model import Status
from ...store import KeepResult, MergeResult

if TYPE_CHECKING:
    from .conflict import PairChoice
    from .main import MainScreen


def merge_pair(screen: MainScreen, choice: PairChoice | None) -> None:
    """A side-by-side view's decision for two records: keep one as it is (a merge with
    its own text) or open the merge form; then one locked write (``MemoryStore.merge``)."""
    from .merge import MergeForm, MergeRequest

    if choice is None:
        return
    keep, other = screen.tabs.record(choice.keep), screen.tabs.record(choice.other)
    if keep is None or other is None:
        return

    def merge(request: MergeRequest | None) -> None:
        if request is None:
            return

        def write(confirmed: bool) -> MergeResult:
            return screen.host.store.merge(
                request.keep,
                request.other,
                title=request.title,
                content=request.content,
                reason=request.reason,
                base_revision=request.base_revision,
                confirm_shared=confirmed,
            )

        def done(result: MergeResult) -> None:
            retired = result.other
            word = "rejected" if retired.status is Status.ACTIVE else "archived"
            revision = result.kept.governance.revision
            screen.notify(
                f"merged into “{result.kept.title}” (revision {revision}, verified); "
                f"“{retired.title}” {word}",
                title="Merged",
                markup=False,
            )
            screen.tabs.current_pane.table.move_cursor_to_key(result.kept.id)

        screen.host.run_write([keep.scope], write, done, keys=[request.keep, request.other])

    if choice.merge:
        screen.app.push_screen(MergeForm(keep, other), merge)
    else:
        merge(
            MergeRequest(
                keep.id, other.id, keep.title, keep.content, None, keep.governance.revision
            )
        )


def keep(screen: MainScreen) -> None:
    """The conflict view: the group's versions side by side, K keeps the chosen one; on a
    record in no conflict group, its near-duplicates (keep one, or merge)."""
    from .conflict import ConflictScreen, PairChoice

    record = screen.tabs.current_record()
    if record is None:
        return
    group, rivals = screen.tabs.conflict_info(record)
    if not rivals and screen.tabs.near_pair(record):
        # K on near-duplicates: side by side; keep one (a new revision naming both, the
        # other rejected or archived) or merge them (the merge form).
        from .merge import NearDuplicateScreen

        screen.app.push_screen(
            NearDuplicateScreen(record, screen.tabs.near_pair(record)),
            lambda choice: merge_pair(screen, choice),
        )
        return

    def chosen(rid: str | PairChoice | None) -> None:
        if isinstance(rid, PairChoice):
            merge_pair(screen, rid)
            return
        target = screen.tabs.record(rid) if rid else None
        if target is None:
            return

        def write(confirmed: bool) -> KeepResult:
            return screen.host.store.keep(
                target.id, base_revision=target.governance.revision, confirm_shared=confirmed
            )

        def done(result: KeepResult) -> None:
            parts = [f"kept “{result.kept.title}” ({result.kept.governance.verification.value})"]
            if result.rejected:
                parts.append(f"{len(result.rejected)} rejected")
            if result.archived:
                parts.append(f"{len(result.archived)} archived")
            screen.notify("; ".join(parts), title="Conflict resolved", markup=False)
            screen.tabs.current_pane.table.move_cursor_to_key(target.id)

        members = [target.id, *(r.id for r in screen.tabs.group_records(target))]
        screen.host.run_write([target.scope], write, done, keys=members)

    screen.app.push_screen(ConflictScreen(record, rivals, group, screen.host.store.clock), chosen)
