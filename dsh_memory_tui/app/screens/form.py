"""The Create/Edit form: validates before saving, errors beside their field, conflicts in place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from ...errors import ErrorCode, StoreError
from ...model import (
    AUDIENCE_BY_SCOPE,
    MAX_CONTENT_BYTES,
    MAX_TAG_BYTES,
    MAX_TAGS,
    MAX_TITLE_BYTES,
    Record,
    RecordType,
    Scope,
)


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True, slots=True)
class FormResult:
    """What the form hands to the saver. ``base_revision`` is None for a new record."""

    record_type: RecordType
    title: str
    content: str
    tags: list[str]
    scope: Scope
    record_id: str | None
    base_revision: int | None


Saver = Callable[[FormResult, Callable[[str], None]], None]


def parse_tags(text: str) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


class RecordForm(ModalScreen[str | None]):
    """New (``record`` None) or Edit. ``save(result, done)`` writes; it calls ``done(id)`` on
    success (possibly later, after a confirmation) and raises StoreError on failure.
    ``reload()`` returns the record's newest version after a REVISION_CONFLICT.
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "save", "Save", priority=True),
    ]
    AUTO_FOCUS = "#title"

    def __init__(
        self,
        *,
        record: Record | None,
        scopes: Sequence[Scope],
        default_scope: Scope,
        save: Saver,
        reload: Callable[[str], Record] | None = None,
    ) -> None:
        super().__init__(classes="dialog")
        self.record = record
        self.scopes = list(scopes)
        self.default_scope = default_scope
        self.saver = save
        self.reload = reload
        self.base_revision = record.governance.revision if record else None

    def compose(self) -> ComposeResult:
        r = self.record
        heading = f"Edit {r.id} (revision {r.governance.revision})" if r else "New memory record"
        with Vertical(classes="dialog-box form-box"):
            yield Label(heading, classes="dialog-title", id="form-heading")
            yield Static("", id="form-error", classes="form-error hidden")
            with Horizontal(id="conflict-bar", classes="hidden"):
                yield Button("Reload newer version", id="reload", variant="warning")
                yield Button("Save mine over it", id="overwrite", variant="error")
            with VerticalScroll(classes="form-fields"):
                if r is None:
                    yield Label("Scope", classes="field-label")
                    yield Select(
                        [(f"{s.value} ({AUDIENCE_BY_SCOPE[s]})", s) for s in self.scopes],
                        value=self.default_scope,
                        allow_blank=False,
                        id="scope",
                    )
                yield Label("Type", classes="field-label")
                yield Select(
                    [(t.value, t) for t in RecordType],
                    value=r.type if r else RecordType.FACT,
                    allow_blank=False,
                    id="type",
                )
                yield Label("Title", classes="field-label")
                yield Input(r.title if r else "", id="title", placeholder="one line")
                yield Static("", id="title-error", classes="field-error")
                yield Label("Content (Markdown)", classes="field-label")
                yield TextArea(r.content if r else "", id="content", soft_wrap=True)
                yield Static("", id="content-error", classes="field-error")
                yield Label("Tags (comma-separated)", classes="field-label")
                yield Input(", ".join(r.tags) if r else "", id="tags")
                yield Static("", id="tags-error", classes="field-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (ctrl+s)", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    # ------------------------------------------------------------------ validation

    def _errors(self) -> dict[str, str]:
        title = self.query_one("#title", Input).value.strip()
        content = self.query_one("#content", TextArea).text
        tags = self.query_one("#tags", Input).value
        errors: dict[str, str] = {}
        # The host's limits (its validateRecord); the store checks everything again.
        if not title:
            errors["title"] = "A title is required."
        elif "\n" in title or _bytes(title) > MAX_TITLE_BYTES:
            errors["title"] = f"Keep the title to one line of at most {MAX_TITLE_BYTES} bytes."
        if not content.strip():
            errors["content"] = "Content is required."
        elif _bytes(content) > MAX_CONTENT_BYTES:
            errors["content"] = f"Content is at most {MAX_CONTENT_BYTES // 1024} KiB."
        tag_list = parse_tags(tags)
        if len(tag_list) > MAX_TAGS:
            errors["tags"] = f"At most {MAX_TAGS} tags."
        elif any(_bytes(t) > MAX_TAG_BYTES for t in tag_list):
            errors["tags"] = f"A tag is at most {MAX_TAG_BYTES} bytes."
        return errors

    def _show_errors(self, errors: dict[str, str]) -> None:
        for name in ("title", "content", "tags"):
            label = self.query_one(f"#{name}-error", Static)
            label.update(errors.get(name, ""))
            label.set_class(name in errors, "visible")

    def _result(self) -> FormResult:
        r = self.record
        scope = r.scope if r else self.query_one("#scope", Select).value
        return FormResult(
            record_type=self.query_one("#type", Select).value,  # type: ignore[arg-type]
            title=self.query_one("#title", Input).value.strip(),
            content=self.query_one("#content", TextArea).text,
            tags=parse_tags(self.query_one("#tags", Input).value),
            scope=scope,  # type: ignore[arg-type]
            record_id=r.id if r else None,
            base_revision=self.base_revision,
        )

    @on(Input.Changed)
    @on(TextArea.Changed)
    def _revalidate(self) -> None:
        # Clear errors as the user fixes them; new errors only appear on save.
        errors = self._errors()
        for name in ("title", "content", "tags"):
            label = self.query_one(f"#{name}-error", Static)
            if name not in errors:
                label.update("")
                label.remove_class("visible")

    # ------------------------------------------------------------------ saving

    def action_save(self) -> None:
        errors = self._errors()
        self._show_errors(errors)
        if errors:
            first = next(iter(errors))
            self.query_one(f"#{first}").focus()
            return
        self._error("")
        try:
            self.saver(self._result(), self.dismiss)
        except StoreError as exc:
            if exc.code == ErrorCode.REVISION_CONFLICT and self.record is not None:
                self._error(f"{exc.message}")
                self.query_one("#conflict-bar").remove_class("hidden")
            else:
                self._error(f"error[{exc.code}]: {exc.message}")

    def _error(self, text: str) -> None:
        box = self.query_one("#form-error", Static)
        box.update(text)
        box.set_class(not text, "hidden")

    @on(Button.Pressed, "#save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#reload")
    def _reload_pressed(self) -> None:
        assert self.record is not None and self.reload is not None
        newer = self.reload(self.record.id)
        self.record = newer
        self.base_revision = newer.governance.revision
        self.query_one("#type", Select).value = newer.type
        self.query_one("#title", Input).value = newer.title
        self.query_one("#content", TextArea).text = newer.content
        self.query_one("#tags", Input).value = ", ".join(newer.tags)
        self.query_one("#form-heading", Label).update(
            f"Edit {newer.id} (revision {newer.governance.revision}, reloaded)"
        )
        self._error("")
        self.query_one("#conflict-bar").add_class("hidden")

    @on(Button.Pressed, "#overwrite")
    def _overwrite_pressed(self) -> None:
        assert self.record is not None and self.reload is not None
        self.base_revision = self.reload(self.record.id).governance.revision
        self.query_one("#conflict-bar").add_class("hidden")
        self.action_save()
