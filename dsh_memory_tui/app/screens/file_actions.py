"""The main screen's whole-file actions: adopt a moved project's lines, compact, export and
import bundles, and the views over every file (the agent view, the audit log).

``WholeFiles`` is owned by ``MainScreen`` (not a mixin of it): the screen's ``action_<name>``
for these keys calls it, and its availability check asks ``adopt_view``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import StoreError
from ...model import Scope
from ...store import AdoptResult, FileView, other_roots
from ..actions import EDITABLE_SCOPES
from ..labels import home_path
from .dialogs import ConfirmDialog

if TYPE_CHECKING:
    from .main import MainScreen


class WholeFiles:
    """The whole-file actions of one main screen."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.host = screen.host
        self._adoptable: dict[Scope, FileView | None] = {}  # adopt_view's last answers

    def adopt_view(self) -> FileView | None:
        """The active tab's project file when it has lines of another workspace's rootId (a
        moved or copied project), else None. Not the shared file: its other rootIds are the
        team's clones, whose records adopting would take from their authors' hosts (the CLI's
        ``adopt --scope shared-project`` does it for a moved project)."""
        scope = self.screen.tabs.current_pane.spec.scope
        if scope is not Scope.PROJECT:
            return None
        if not self.host.writes.gate.acquire(blocking=False):
            # A write is running and may be rebuilding the view: the answer from before it.
            return self._adoptable.get(scope)
        try:
            view = self.host.store.view(self.host.store.file_for(scope))
            self._adoptable[scope] = view if other_roots(view, self.host.store.paths) else None
        finally:
            self.host.writes.gate.release()
        return self._adoptable[scope]

    def adopt(self) -> None:
        view = self.adopt_view()
        if view is None:
            return
        roots = other_roots(view, self.host.store.paths)
        lines = "\n".join(f"  {n} line(s) of {root}" for root, n in roots.items())

        def write(confirmed: bool) -> AdoptResult:
            return self.host.store.adopt(view.file, confirm_shared=confirmed)

        def done(result: AdoptResult) -> None:
            text = (
                f"adopted {result.lines} line(s): {len(result.ids)} record(s) now shown "
                "here (and to the host)"
            )
            if result.left:
                text += f"; {len(result.left)} left as they were ({result.left[0][1]})"
            self.screen.notify(text, title="Adopted", markup=False)

        def answered(yes: bool | None) -> None:
            if yes:
                self.host.run_write(
                    [view.scope],
                    write,
                    done,
                    keys=[f"file:{view.path}"],
                    progress=f"adopting into {view.path.name}",
                )

        self.screen.app.push_screen(
            ConfirmDialog(
                "Adopt a moved project's records?",
                f"{home_path(view.path)} holds lines of another workspace:\n{lines}\n"
                "written when this project was at another path (or by a copy of it). Neither the "
                "host nor this app shows them here. Adopting rewrites those lines under this "
                "workspace's rootId, in one locked write: each record keeps its history, and a "
                ".bak of the file is written first.",
                "Adopt",
            ),
            answered,
        )

    def compact(self) -> None:
        scope = self.screen.tabs.current_pane.spec.scope
        if scope is None or scope is Scope.SESSION:
            files = self.host.store.files(Scope.SESSION) if scope else []
        else:
            files = [self.host.store.file_for(scope)]
        files = [f for f in files if f.path.exists()]
        if not files:
            self.screen.notify("Nothing to compact on this tab.")
            return

        def write(confirmed: bool) -> list[str]:  # in the write worker
            lines = []
            for f in files:
                result = self.host.store.compact(f, confirm_shared=confirmed)
                lines.append(f"{f.path.name}: {result.bytes_before} -> {result.bytes_after} bytes")
            return lines

        def done(lines: list[str]) -> None:
            self.screen.notify("\n".join(lines), title="Compacted", markup=False)

        def answered(yes: bool | None) -> None:
            if yes:
                self.host.run_write(
                    [f.scope for f in files],
                    write,
                    done,
                    keys=[f"file:{f.path}" for f in files],
                    progress="compacting " + ", ".join(f.path.name for f in files[:2]),
                )

        names = "\n".join(home_path(f.path) for f in files)
        self.screen.app.push_screen(
            ConfirmDialog(
                "Compact?",
                f"Keep only each record's current revision in:\n{names}\n"
                "(a .bak of each file is written first)",
                "Compact",
            ),
            answered,
        )

    def agent_view(self) -> None:
        from .agent import AgentData, AgentScreen, agent_data

        def read() -> AgentData:
            return agent_data(self.host.store, self.host.session)

        def reload(show: Callable[[AgentData], None]) -> None:  # after a lever's write
            self.host.run_read(read, show, failed)

        def show(data: AgentData) -> None:
            self.host.flags.agent_view_due = False
            if self.screen.is_active:  # not under a dialog opened meanwhile
                self.screen.app.push_screen(AgentScreen(data, reload))

        def failed(exc: StoreError) -> None:
            self.host.flags.agent_view_due = False
            self.screen.notify(
                exc.message, title=f"error[{exc.code}]", severity="error", markup=False
            )

        if self.host.flags.agent_view_due:
            return  # W pressed again while it reads
        self.host.flags.agent_view_due = True
        # Read in a worker, after any write the app is running (run_read).
        self.host.run_read(read, show, failed)

    def audit(self) -> None:
        from ...audit import AuditLog
        from ...settings import DEFAULT_MAX_BYTES
        from .audit import AuditScreen

        log = AuditLog(self.host.store.paths.home, DEFAULT_MAX_BYTES)

        def show(read: Any) -> None:
            if self.screen.is_active:  # not under a dialog opened meanwhile
                self.screen.app.push_screen(AuditScreen(read, str(log.path)))

        def refused(exc: StoreError) -> None:
            self.screen.notify(
                exc.message, title=f"error[{exc.code}]", severity="error", markup=False
            )

        self.host.run_read(log.read, show, refused)

    def export(self) -> None:
        from .bundles import ExportDialog

        self.screen.app.push_screen(
            ExportDialog(self.host.store, self.host.run_read), self._bundle_done
        )

    def import_bundle(self) -> None:
        from .bundles import ImportDialog

        scope = self.screen.tabs.current_pane.spec.scope
        target = scope if scope in EDITABLE_SCOPES else Scope.PROJECT
        self.screen.app.push_screen(
            ImportDialog(self.host.store, self.host.run_write, self.host.run_read, target=target),
            self._bundle_done,
        )

    def _bundle_done(self, message: str | None) -> None:
        if message:
            self.screen.notify(message)
        self.host.sync()
