"""Export and import dialogs over bundle.py: scopes and a path out; a path, a plan, a target in."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from ...bundle import ImportPlan, apply_import, export_bundle, plan_import
from ...errors import StoreError
from ...model import AUDIENCE_BY_SCOPE, Scope
from ...store import MemoryStore

ConfirmShared = Callable[[Path, Callable[[], None]], None]


def default_export_path() -> str:
    return str(Path.cwd() / f"dsh-memory-{datetime.now():%Y%m%d-%H%M}.json")


class ExportDialog(ModalScreen[str | None]):
    """Choose scopes and a path; dismisses with a one-line summary of what was written."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, store: MemoryStore, path: str | None = None) -> None:
        super().__init__(classes="dialog")
        self.store = store
        self.path = path or default_export_path()

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label("Export a bundle", classes="dialog-title")
            yield Static(
                f"Current records of the chosen scopes (not forgotten; only {self.store.user_id}'s"
                " user profile), written 0600.", classes="dialog-message",
            )
            for scope in Scope:
                yield Checkbox(scope.value, value=scope is not Scope.SESSION, id=f"x-{scope.value}")
            yield Label("File", classes="field-label")
            yield Input(self.path, id="path")
            yield Static("", id="export-error", classes="form-error hidden")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted)
    def _export(self) -> None:
        scopes = [s for s in Scope if self.query_one(f"#x-{s.value}", Checkbox).value]
        error = self.query_one("#export-error", Static)
        if not scopes:
            error.update("Choose at least one scope.")
            error.remove_class("hidden")
            return
        path = Path(self.query_one("#path", Input).value.strip()).expanduser()
        try:
            result = export_bundle(self.store, path, scopes=scopes)
        except StoreError as exc:
            error.update(f"error[{exc.code}]: {exc.message}")
            error.remove_class("hidden")
            return
        self.dismiss(f"Exported {result.count} record(s) to {result.path}")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def describe_plan(plan: ImportPlan, limit: int = 50) -> str:
    """The plan in words: counts, then each record by its place in the bundle's ``records``."""
    lines = [
        f"Into {plan.target.path}:",
        f"  {len(plan.new)} new   {len(plan.duplicates)} duplicate   {len(plan.invalid)} invalid",
    ]
    for index, record in list(zip(plan.new_indexes, plan.new, strict=True))[:limit]:
        lines.append(f"  + records[{index}] {record.type.value:<10} {record.title}")
    if len(plan.new) > limit:
        lines.append(f"  … and {len(plan.new) - limit} more")
    for dup in plan.duplicates[:limit]:
        lines.append(f"  = records[{dup.index}] already there as {dup.existing_id}")
    for bad in plan.invalid:
        lines.append(f"  ! records[{bad.index}] {bad.id or '(no id)'}: {bad.reason}")
    return "\n".join(lines)


class ImportDialog(ModalScreen[str | None]):
    """A path and a target scope; Preview shows the plan; Import writes it (nothing before)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self, store: MemoryStore, confirm_shared: ConfirmShared, path: str = "",
        target: Scope = Scope.PROJECT,
    ) -> None:
        super().__init__(classes="dialog")
        self.store = store
        self.confirm_shared = confirm_shared
        self.path = path
        self.target = target
        self.plan: ImportPlan | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box import-box"):
            yield Label("Import a bundle", classes="dialog-title")
            yield Label("Bundle file", classes="field-label")
            yield Input(self.path, id="path", placeholder="path/to/bundle.json")
            yield Label("Into scope", classes="field-label")
            yield Select(
                [(f"{s.value} ({AUDIENCE_BY_SCOPE[s]})", s)
                 for s in Scope if s is not Scope.SESSION],
                value=self.target, allow_blank=False, id="target",
            )
            with VerticalScroll(id="plan-box"):
                yield Static("Preview shows what would be written; nothing is written before "
                             "Import.", id="plan", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Preview", id="preview", variant="primary")
                yield Button("Import", id="ok", variant="success", disabled=True)
                yield Button("Cancel", id="cancel")

    @on(Input.Changed)
    @on(Select.Changed)
    def _stale(self) -> None:
        self.plan = None
        self.query_one("#ok", Button).disabled = True

    @on(Button.Pressed, "#preview")
    @on(Input.Submitted)
    def action_preview(self) -> None:
        text = self.query_one("#plan", Static)
        path = self.query_one("#path", Input).value.strip()
        if not path:
            text.update("Type the path of a bundle first.")
            return
        target: Scope = self.query_one("#target", Select).value  # type: ignore[assignment]
        try:
            self.plan = plan_import(self.store, Path(path).expanduser(), target)
        except StoreError as exc:
            self.plan = None
            text.update(f"error[{exc.code}]: {exc.message}")
            self.query_one("#ok", Button).disabled = True
            return
        text.update(describe_plan(self.plan))
        self.query_one("#ok", Button).disabled = not self.plan.new
        if self.plan.new:
            self.query_one("#ok", Button).focus()

    @on(Button.Pressed, "#ok")
    def _import(self) -> None:
        plan = self.plan
        if plan is None:
            return

        def write(confirmed: bool = False) -> None:
            try:
                result = apply_import(self.store, plan, confirm_shared=confirmed)
            except StoreError as exc:
                self.query_one("#plan", Static).update(f"error[{exc.code}]: {exc.message}")
                return
            self.dismiss(f"Imported {len(result.written)} record(s) into {plan.target.path}")

        if plan.target.scope is Scope.SHARED:
            self.confirm_shared(plan.target.path, lambda: write(True))
        else:
            write()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
