"""Export and import dialogs over bundle.py: scopes, a format and a path out; a path, a format, a
target and the plan in. Both fit an 80x24 terminal: their buttons, the export's error and the
plan's counts stay in view while the rest scrolls.

An export goes to the home directory unless told otherwise: the current directory is usually
the workspace, where a bundle (the user's profile in it) could be committed with the project."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from ...bundle import (
    ExportResult,
    ImportPlan,
    ImportResult,
    apply_import,
    export_bundle,
    format_for_path,
    plan_import,
)
from ...errors import StoreError
from ...model import AUDIENCE_BY_SCOPE, Scope
from ...present import visible
from ...store import MemoryStore
from ..labels import home_path
from ..widgets.ordered_keys import OrderedInput
from .modal import Modal

# The app's one write flow (MemoryApp.run_write): shared confirmation, the write in a worker,
# then ``done(result)`` or ``failed(error)`` on the event loop.
RunWrite = Callable[..., None]
# Its reads (MemoryApp.run_read): ``read()`` in a worker, then ``done(result)`` or
# ``failed(error)`` on the event loop.
RunRead = Callable[[Callable[[], Any], Callable[[Any], None], Callable[[StoreError], None]], None]

SUFFIX = {"json": ".json", "markdown": ".md"}
EXPORT_FORMATS = [("JSON", "json"), ("Markdown", "markdown")]
IMPORT_FORMATS = [("by file", "auto"), ("JSON", "json"), ("Markdown", "markdown")]

# The dialogs' own layout; the app's stylesheet gives every dialog its box and title.
BUNDLE_CSS = """
.bundle-row {
    height: auto;
}
.bundle-row .row-label {
    width: 8;
    padding: 1 1 0 0;
    color: $text-muted;
}
.bundle-row Input {
    width: 1fr;
}
#export-scopes Checkbox {
    width: auto;
    margin-right: 1;
}
#target {
    width: 1fr;
}
#format {
    width: 18;
}
#export-body {
    height: auto;
    max-height: 45vh;
}
#export-error {
    max-height: 4;
}
#plan-counts {
    height: auto;
    max-height: 3;
    text-style: bold;
    padding: 0 1;
}
#plan-counts.error {
    color: $error;
}
#import-plan {
    height: 1fr;
    min-height: 3;
    border: round $primary 40%;
}
.bundle-buttons {
    height: auto;
    align-horizontal: right;
}
.bundle-buttons Button {
    margin-left: 1;
}
"""


def default_export_path(fmt: str = "json") -> str:
    """``~/dsh-memory-<date>-<time>.json``: in the home directory, never the workspace."""
    return f"~/dsh-memory-{datetime.now():%Y%m%d-%H%M}{SUFFIX[fmt]}"


class MarkedCheckbox(Checkbox):
    """A checkbox whose mark is an X only when it is checked: its state reads without colour
    (Textual's draws the same X either way, in another colour)."""

    # Textual's class constant, here per state.
    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # noqa: N802
        return "X" if self.value else " "


class ExportDialog(Modal[str | None]):
    """Choose scopes, a format and a path; dismisses with a summary of what was written."""

    DEFAULT_CSS = BUNDLE_CSS
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self, store: MemoryStore, run_read: RunRead, path: str | None = None, fmt: str = "json"
    ) -> None:
        super().__init__(classes="dialog")
        self.store = store
        self.run_read = run_read
        self.exporting = False
        # Set by Cancel while the export waits for the store: it then writes nothing.
        self._cancelled = threading.Event()
        self.fmt = fmt
        self.path = path or default_export_path(fmt)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label("Export a bundle", classes="dialog-title")
            with VerticalScroll(id="export-body"):
                yield Static(
                    f"Not forgotten; only {self.store.user_id}'s user profile; written 0600. "
                    "Markdown is the host's v0.7 format.",
                    classes="dialog-message",
                )
                with Horizontal(id="export-scopes", classes="bundle-row"):
                    for scope in Scope:  # every scope the reviewer sees, by default
                        yield MarkedCheckbox(scope.value, value=True, id=f"x-{scope.value}")
                with Horizontal(classes="bundle-row"):
                    yield Label("Save as", classes="row-label")
                    yield Select(EXPORT_FORMATS, value=self.fmt, allow_blank=False, id="format")
                    yield OrderedInput(self.path, id="path")
            yield Static("", id="export-error", classes="form-error hidden", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    @on(Select.Changed, "#format")
    def _format_changed(self, event: Select.Changed) -> None:
        """A path still ending in the other format's suffix follows the new format."""
        fmt = str(event.value)
        if fmt == self.fmt or fmt not in SUFFIX:
            return
        box = self.query_one("#path", Input)
        old = SUFFIX[self.fmt]
        if box.value.endswith(old):
            box.value = box.value[: -len(old)] + SUFFIX[fmt]
        self.fmt = fmt

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted)
    def _export(self) -> None:
        scopes = [s for s in Scope if self.query_one(f"#x-{s.value}", Checkbox).value]
        error = self.query_one("#export-error", Static)
        if not scopes:
            error.update("Choose at least one scope.")
            error.remove_class("hidden")
            return
        if self.exporting:
            return  # one export at a time
        path = Path(self.query_one("#path", Input).value.strip()).expanduser()
        # The path's suffix decides, as in the CLI (JSON written to notes.md would not import);
        # the format chosen here is for a path without one. Taken now, not when the worker runs.
        fmt = format_for_path(path, self.fmt)
        self.exporting = True
        cancelled = self._cancelled
        app = self.app  # to tell what was written if the dialog is closed meanwhile

        def export() -> ExportResult | None:
            if cancelled.is_set():  # cancelled while it waited for a write: nothing to do
                return None
            return export_bundle(self.store, path, scopes=scopes, fmt=fmt)

        def failed(exc: StoreError) -> None:
            self.exporting = False
            if self.is_attached:
                error.update(f"error[{exc.code}]: {exc.message}")
                error.remove_class("hidden")
            elif not cancelled.is_set():
                app.notify(exc.message, title=f"error[{exc.code}]", severity="error")

        def exported(result: ExportResult | None) -> None:
            self.exporting = False
            if result is None:
                return
            summary = self._summary(result)
            if self.is_attached:
                self.dismiss(summary)
            else:  # Cancel came once the file was being written: say it was
                app.notify(summary, title="Exported before the cancel took effect")

        self.run_read(export, exported, failed)

    def _summary(self, result: ExportResult) -> str:
        summary = result.summary
        if result.left_out:
            summary += (
                f"; {len(result.left_out)} left out (the host's import would refuse "
                "them: `dsh-memory export` lists them)"
            )
        if result.over_host_limits:
            summary += f"; the host cannot import it ({result.over_host_limits})"
        return summary

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self._cancelled.set()
        self.dismiss(None)


def describe_plan(plan: ImportPlan, limit: int = 500) -> str:
    """The plan in words: the target, then each record by its place in the bundle."""
    scope = plan.target.scope
    lines = [
        f"Into {scope.value} ({AUDIENCE_BY_SCOPE[scope]}): {visible(home_path(plan.target.path))}"
    ]
    for index, record in list(zip(plan.new_indexes, plan.new, strict=True))[:limit]:
        lines.append(
            f"new        {plan.where(index):<12} {record.type.value:<10} {visible(record.title)}"
        )
    if len(plan.new) > limit:
        lines.append(f"… and {len(plan.new) - limit} more new")
    for dup in plan.duplicates[:limit]:
        lines.append(
            f"duplicate  {plan.where(dup.index):<12} already there as {visible(dup.existing_id)}"
        )
    for bad in plan.invalid:
        lines.append(
            f"invalid    {plan.where(bad.index):<12} "
            f"{visible(bad.id or '(no id)')}: {visible(bad.reason)}"
        )
    return "\n".join(lines)


class ImportDialog(Modal[str | None]):
    """A path, a format and a target scope; Preview shows the plan (its counts always in view,
    its lines in a scrolling box); Import writes it (nothing before)."""

    DEFAULT_CSS = BUNDLE_CSS
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        store: MemoryStore,
        run_write: RunWrite,
        run_read: RunRead,
        path: str = "",
        target: Scope = Scope.PROJECT,
    ) -> None:
        super().__init__(classes="dialog")
        self.store = store
        self.run_write = run_write
        self.run_read = run_read
        self._asked = 0  # the preview whose plan may still be shown
        self.path = path
        self.target = target
        self.plan: ImportPlan | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box import-box"):
            yield Label("Import a bundle (JSON or Markdown)", classes="dialog-title")
            with Horizontal(classes="bundle-row"):
                yield Label("File", classes="row-label")
                yield OrderedInput(
                    self.path, id="path", placeholder="path/to/bundle.json or notes.md"
                )
            with Horizontal(classes="bundle-row"):
                yield Label("Into", classes="row-label")
                yield Select(
                    [(s.value, s) for s in Scope if s is not Scope.SESSION],
                    value=self.target,
                    allow_blank=False,
                    id="target",
                )
                yield Select(IMPORT_FORMATS, value="auto", allow_blank=False, id="format")
            yield Static(
                "Preview shows what would be written; nothing is written before Import.",
                id="plan-counts",
                markup=False,
            )
            with VerticalScroll(id="import-plan"):
                yield Static("", id="plan", markup=False)
            with Horizontal(classes="bundle-buttons"):
                yield Button("Preview", id="preview", variant="primary")
                yield Button("Import", id="ok", variant="success", disabled=True)
                yield Button("Cancel", id="cancel")

    def _show(self, counts: str, plan: str = "", error: bool = False) -> None:
        line = self.query_one("#plan-counts", Static)
        line.update(counts)
        line.set_class(error, "error")
        self.query_one("#plan", Static).update(plan)
        self.query_one("#import-plan", VerticalScroll).scroll_home(animate=False)

    @on(Input.Changed)
    @on(Select.Changed)
    def _stale(self) -> None:
        self._asked += 1  # a plan still being made is for what was typed before
        if self.plan is None and "Reading the bundle" in str(
            self.query_one("#plan-counts", Static).render()
        ):
            self._show("")  # that plan will not be shown
        self.plan = None
        self.query_one("#ok", Button).disabled = True

    @on(Button.Pressed, "#preview")
    @on(Input.Submitted)
    def action_preview(self) -> None:
        path = self.query_one("#path", Input).value.strip()
        if not path:
            self._show("Type the path of a bundle first.", error=True)
            return
        target: Scope = self.query_one("#target", Select).value  # type: ignore[assignment]
        fmt = str(self.query_one("#format", Select).value)
        self._asked += 1
        asked = self._asked
        self.plan = None
        self.query_one("#ok", Button).disabled = True
        self._show("Reading the bundle…")

        def failed(exc: StoreError) -> None:
            if self.is_attached and asked == self._asked:
                self._show(f"error[{exc.code}]: {exc.message}", error=True)

        def done(plan: ImportPlan) -> None:
            if self.is_attached and asked == self._asked:
                self._planned(plan)

        self.run_read(
            lambda: plan_import(
                self.store, Path(path).expanduser(), target, fmt=None if fmt == "auto" else fmt
            ),
            done,
            failed,
        )

    def _planned(self, plan: ImportPlan) -> None:
        self.plan = plan
        kind = "Markdown" if self.plan.format == "markdown" else "JSON"
        self._show(
            f"{self.plan.counts} ({kind}, {self.plan.total} in the file)", describe_plan(self.plan)
        )
        self.query_one("#ok", Button).disabled = not self.plan.new
        if self.plan.new:
            self.query_one("#ok", Button).focus()

    @on(Button.Pressed, "#ok")
    def _import(self) -> None:
        plan = self.plan
        if plan is None:
            return

        def done(result: ImportResult) -> None:
            if self.is_attached and self.app.screen is self:
                self.dismiss(f"Imported {len(result.written)} record(s) into {plan.target.path}")

        def failed(exc: StoreError) -> bool:
            if not self.is_attached:
                return False
            self._show(f"error[{exc.code}]: {exc.message}", describe_plan(plan), error=True)
            return True

        self.run_write(
            [plan.target.scope],
            lambda confirmed: apply_import(self.store, plan, confirm_shared=confirmed),
            done,
            failed=failed,
            keys=[f"file:{plan.target.path}"],
            progress=f"importing {len(plan.new)} record(s)",
        )

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
