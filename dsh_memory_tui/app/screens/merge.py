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
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from ... import lint
from ...model import Record
from ...present import SHORT_ORIGIN, visible, when
from ...store.memory import merged_content
from .conflict import diff_text


@dataclass(frozen=True, slots=True)
class PairChoice:
    """What the near-duplicate view decided: keep ``keep`` over ``other`` as it is, or
    (``merge``) open the merge form for the two."""

    keep: str
    other: str
    merge: bool


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


class NearDuplicateScreen(ModalScreen[PairChoice | None]):
    """A record and its near-duplicates; ←/→ choose which to keep, K keeps it over the first
    other one, M merges the two."""

    DEFAULT_CSS = """
    NearDuplicateScreen .conflict-box {
        width: 98%; height: 94%; border: thick $primary; background: $surface; padding: 0 1;
    }
    NearDuplicateScreen #versions { height: 1fr; }
    NearDuplicateScreen .version { width: 1fr; height: 1fr; border: round $primary 40%;
                                   padding: 0 1; margin: 0 1 0 0; }
    NearDuplicateScreen .version.chosen { border: thick $success; }
    NearDuplicateScreen .version-head { color: $text-muted; }
    NearDuplicateScreen #plan { height: auto; padding: 1 0 0 0; }
    NearDuplicateScreen #legend { height: auto; color: $text-muted; }
    """

    BINDINGS = [
        Binding("left,h", "move(-1)", "Previous", priority=True),
        Binding("right,l", "move(1)", "Next", priority=True),
        Binding("K", "keep", "Keep this one", priority=True),
        Binding("M,m", "merge", "Merge", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, record: Record, similar: Sequence[tuple[Record, float]]) -> None:
        super().__init__(classes="dialog")
        self.versions = [record, *(r for r, _ in similar)]
        self.scores = [1.0, *(s for _, s in similar)]
        self.chosen = 0

    def compose(self) -> ComposeResult:
        first = self.versions[0]
        with Vertical(classes="conflict-box"):
            yield Label(
                f"Near-duplicates of “{visible(first.title)}”: {len(self.versions)} records "
                "that say nearly the same thing",
                classes="dialog-title",
                markup=False,
            )
            with Horizontal(id="versions"):
                for i in range(len(self.versions)):
                    with VerticalScroll(classes="version", id=f"version-{i}"):
                        yield Static(classes="version-head", markup=False)
                        yield Static(classes="version-body", markup=False)
            yield Static(id="plan", markup=False)
            yield Static(
                "- only in the highlighted one · + only in that one   ←/→ choose · "
                "K keeps it · M merges · Esc cancels",
                id="legend",
                markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Keep this one (K)", id="keep", variant="success")
                yield Button("Merge… (M)", id="merge", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self._render_versions()
        self.query_one("#keep", Button).focus()

    def _other(self) -> Record:
        return self.versions[1 if self.chosen == 0 else 0]

    def _render_versions(self) -> None:
        chosen = self.versions[self.chosen]
        for i, record in enumerate(self.versions):
            box = self.query_one(f"#version-{i}", VerticalScroll)
            box.set_class(i == self.chosen, "chosen")
            g = record.governance
            mark = "● keep this one" if i == self.chosen else f"○ {self.scores[i]:.0%} alike"
            flags = lint.describe(lint.record_flags(record))
            head = (
                f"{mark}\n{visible(record.title)}\n"
                f"{record.scope.value} · {g.verification.value} · {SHORT_ORIGIN[g.origin]} · "
                f"r{g.revision} · {when(record.updatedAt)}\n{visible(record.id)}\n"
                + (f"risk: {flags}\n" if flags else "")
            )
            box.query_one(".version-head", Static).update(head)
            body = (
                visible(record.content, multiline=True)
                if i == self.chosen
                else diff_text(chosen.content, record.content)
            )
            box.query_one(".version-body", Static).update(body)
        other = self._other()
        self.query_one("#plan", Static).update(
            f"Keep the highlighted one: a new revision of it, verified, naming both; "
            f"“{visible(other.title)}” is {retire_word(other)} (one locked write). "
            "Merge: write the text of the two first."
        )

    def action_move(self, step: int) -> None:
        self.chosen = (self.chosen + step) % len(self.versions)
        self._render_versions()

    def action_keep(self) -> None:
        self.dismiss(PairChoice(self.versions[self.chosen].id, self._other().id, merge=False))

    def action_merge(self) -> None:
        self.dismiss(PairChoice(self.versions[self.chosen].id, self._other().id, merge=True))

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "keep":
            self.action_keep()
        elif event.button.id == "merge":
            self.action_merge()
        else:
            self.dismiss(None)


class MergeForm(ModalScreen[MergeRequest | None]):
    """The merged title and content (prefilled: the kept record's, then the other's) and a
    reason, which the merged text needs when it carries risk flags."""

    DEFAULT_CSS = """
    MergeForm .merge-box {
        width: 90%; height: 90%; border: thick $primary; background: $surface; padding: 0 1;
    }
    MergeForm TextArea { height: 1fr; }
    MergeForm .error { color: $error; height: auto; }
    """

    BINDINGS = [
        Binding("ctrl+s", "save", "Merge", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, keep: Record, other: Record) -> None:
        super().__init__(classes="dialog")
        self.keep, self.other = keep, other

    def compose(self) -> ComposeResult:
        with Vertical(classes="merge-box"):
            yield Label(
                f"Merge “{visible(self.other.title)}” into “{visible(self.keep.title)}” "
                f"(it is then {retire_word(self.other)})",
                classes="dialog-title",
                markup=False,
            )
            yield Label("Title")
            yield Input(self.keep.title, id="title")
            yield Label("Content")
            yield TextArea(merged_content(self.keep, self.other), id="content")
            yield Label("Reason (needed when the text carries risk flags)")
            yield Input("", id="reason")
            yield Static("", id="error", classes="error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Merge (ctrl+s)", id="save", variant="success")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#content", TextArea).focus()

    def action_save(self) -> None:
        title = self.query_one("#title", Input).value.strip()
        content = self.query_one("#content", TextArea).text
        reason = self.query_one("#reason", Input).value.strip() or None
        error = self.query_one("#error", Static)
        if not title or not content.strip():
            error.update("The title and the content cannot be empty.")
            return
        found = lint.flags(title, content)
        if found and reason is None:
            error.update(f"Risk flags: {lint.describe(found)}. Say why it may be relied on.")
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

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(None)
