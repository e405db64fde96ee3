"""Near-duplicates side by side (K on a record with no conflict group but a near-duplicate) and
the merge form: keep one of the pair, or write the merged text (prefilled with both), which
``MemoryStore.merge`` saves as a new revision of the kept record naming both parents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static, TextArea

from ... import lint
from ...model import Record
from ...present import SHORT_ORIGIN, visible, when
from ...store import merged_content
from .conflict import PairChoice, SideBySide
from .form import FormScreen, UnsavedChanges


@dataclass(frozen=True, slots=True)
class MergeRequest:
    """The merge form's answer, for ``MemoryStore.merge``."""

    keep: str
    other: str
    title: str
    content: str
    reason: str | None
    base_revision: int


def retire_word(record: Record) -> str:
    return "rejected" if record.governance.verification.value == "unverified" else "archived"


class NearDuplicateScreen(SideBySide[PairChoice | None]):
    """A record and its near-duplicates; ←/→ choose which to keep, K keeps it over the first
    other one, M merges the two."""

    BINDINGS = [
        Binding("K", "keep", "Keep this one", priority=True),
        Binding("M,m", "merge", "Merge", priority=True),
    ]
    legend = (
        "- only in the highlighted one · + only in that one   ←/→ choose · "
        "K keeps it · M merges · Esc cancels"
    )
    buttons = (
        ("Keep this one (K)", "keep", "success"),
        ("Merge… (M)", "merge", "primary"),
    )

    def __init__(self, record: Record, similar: Sequence[tuple[Record, float]]) -> None:
        super().__init__([record, *(r for r, _ in similar)])
        self.scores = [1.0, *(s for _, s in similar)]

    def title_text(self) -> str:
        return (
            f"Near-duplicates of “{visible(self.versions[0].title)}”: {len(self.versions)} "
            "records that say nearly the same thing"
        )

    def head(self, i: int, record: Record) -> str:
        g = record.governance
        mark = "● keep this one" if i == self.chosen else f"○ {self.scores[i]:.0%} alike"
        flags = lint.describe(lint.record_flags(record))
        return (
            f"{mark}\n{visible(record.title)}\n"
            f"{record.scope.value} · {g.verification.value} · {SHORT_ORIGIN[g.origin]} · "
            f"r{g.revision} · {when(record.updatedAt)}\n{visible(record.id)}\n"
            + (f"risk: {flags}\n" if flags else "")
        )

    def _other(self) -> Record:
        return self.versions[1 if self.chosen == 0 else 0]

    def plan(self) -> str:
        other = self._other()
        return (
            "Keep the highlighted one: a new revision of it, verified, naming both; "
            f"“{visible(other.title)}” is {retire_word(other)} (one locked write). "
            "Merge: write the text of the two first."
        )

    def action_keep(self) -> None:
        self.dismiss(PairChoice(self.versions[self.chosen].id, self._other().id, merge=False))

    def action_merge(self) -> None:
        self.dismiss(PairChoice(self.versions[self.chosen].id, self._other().id, merge=True))

    def pressed(self, button_id: str | None) -> None:
        if button_id == "merge":
            self.action_merge()
        else:
            self.action_keep()


class MergeForm(FormScreen[MergeRequest | None]):
    """The merged title and content (prefilled: the kept record's, then the other's) and a
    reason, which the merged text needs when it carries risk flags."""

    DEFAULT_CSS = """
    MergeForm .merge-box {
        width: 90%; height: 90%; border: thick $primary; background: $surface; padding: 0 1;
    }
    MergeForm TextArea { height: 1fr; }
    MergeForm .error { color: $error; height: auto; }
    """

    BINDINGS = [Binding("ctrl+s", "save", "Merge", priority=True)]
    NOTE = "#error"

    def __init__(self, keep: Record, other: Record) -> None:
        super().__init__(classes="dialog")
        self.keep, self.other = keep, other
        self.unsaved = UnsavedChanges(self._typed)

    def compose(self) -> ComposeResult:
        with Vertical(classes="merge-box"):
            yield Label(
                f"Merge “{visible(self.other.title)}” into “{visible(self.keep.title)}” "
                f"(it is then {retire_word(self.other)})",
                classes="dialog-title",
                markup=False,
            )
            yield Label("Title")
            yield Input(self.keep.title, id="title", select_on_focus=False)
            yield Label("Content")
            yield TextArea(merged_content(self.keep, self.other), id="content")
            yield Label("Reason (needed when the text carries risk flags)")
            yield Input("", id="reason", select_on_focus=False)
            yield Static("", id="error", classes="error hidden", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Merge (ctrl+s)", id="save", variant="success")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#content", TextArea).focus()
        self.unsaved.opened()

    def _typed(self) -> tuple[str, str, str]:
        title, reason = (self.query_one(f"#{name}", Input).value for name in ("title", "reason"))
        return title, self.query_one("#content", TextArea).text, reason

    def action_save(self) -> None:
        title = self.query_one("#title", Input).value.strip()
        content = self.query_one("#content", TextArea).text
        reason = self.query_one("#reason", Input).value.strip() or None
        if not title or not content.strip():
            self.say("The title and the content cannot be empty.")
            return
        found = lint.flags(title, content)
        if found and reason is None:
            self.say(f"Risk flags: {lint.describe(found)}. Say why it may be relied on.")
            self.query_one("#reason", Input).focus()
            return
        self.dismiss(
            MergeRequest(
                self.keep.id,
                self.other.id,
                title,
                content,
                reason,
                self.keep.governance.revision,
            )
        )

    @on(Input.Changed)
    @on(TextArea.Changed)
    def _changed(self) -> None:
        self.edited()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()
