"""A conflict group's versions side by side, each rival with a diff of its content against the
version to keep; K (or Enter) keeps the highlighted one, as the host's "Keep this version" does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from ...errors import StoreError
from ...governance import Action, keep_plan
from ...model import Record
from ...present import SHORT_ORIGIN, visible, when
from .modal import Modal

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class PairChoice:
    """What a side-by-side view decided for two records: keep ``keep`` over ``other`` as it
    is, or (``merge``) open the merge form for the two."""

    keep: str
    other: str
    merge: bool


_PLAN_WORDS = {
    Action.VERIFY: "verify it",
    Action.REVERIFY: "re-verify it",
}


def diff_text(base: str, other: str) -> Text:
    """``other``'s lines against ``base``'s: ``-`` lines only the kept version has, ``+`` lines
    only this one has, two spaces before a line both have.
    """
    a, b = visible(base, multiline=True).splitlines(), visible(other, multiline=True).splitlines()
    out = Text()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for line in a[i1:i2]:
                out.append(f"  {line}\n")
            continue
        for line in a[i1:i2]:
            out.append(f"- {line}\n", style="red")
        for line in b[j1:j2]:
            out.append(f"+ {line}\n", style="green")
    out.rstrip()
    return out


def plan_text(chosen: Record, versions: Sequence[Record], now: int) -> str:
    """What keeping ``chosen`` writes, in words (or why it cannot be kept)."""
    try:
        plan = keep_plan(chosen, versions, now)
    except StoreError as exc:
        return f"This version cannot be kept: {exc.message}"
    own = [_PLAN_WORDS[a] for r, a in plan if r.id == chosen.id]
    rejected = sum(1 for r, a in plan if r.id != chosen.id and a is Action.REJECT)
    archived = sum(1 for r, a in plan if r.id != chosen.id and a is Action.ARCHIVE)
    parts = own or ["it stays verified"]
    if rejected:
        parts.append(f"reject {rejected} unverified version{'s' if rejected != 1 else ''}")
    if archived:
        parts.append(f"archive {archived} other version{'s' if archived != 1 else ''}")
    return "Keep the highlighted version: " + "; ".join(parts) + " (one locked write)."


class SideBySide(Modal[R]):
    """Records side by side, one of them chosen (←/→): the chosen one's content, each other's
    as a diff against it. Subclasses say what the title, each head, the plan, the legend and
    the buttons are, and what a button does."""

    # Its own box, not .dialog-box (the app's stylesheet makes that one 84 columns wide).
    # Type selectors match subclasses too.
    DEFAULT_CSS = """
    SideBySide .conflict-box {
        width: 98%; height: 94%; border: thick $primary; background: $surface; padding: 0 1;
    }
    SideBySide #versions { height: 1fr; }
    SideBySide .version { width: 1fr; height: 1fr; border: round $primary 40%;
                          padding: 0 1; margin: 0 1 0 0; }
    SideBySide .version.chosen { border: thick $success; }
    SideBySide .version-head { color: $text-muted; }
    SideBySide .version.chosen .version-head { color: $success; text-style: bold; }
    SideBySide #plan { height: auto; padding: 1 0 0 0; }
    SideBySide #legend { height: auto; color: $text-muted; }
    """

    BINDINGS = [
        # Priority: a focused column would take the arrows to scroll sideways.
        Binding("left,h", "move(-1)", "Previous", priority=True),
        Binding("right,l", "move(1)", "Next", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, versions: Sequence[Record]) -> None:
        super().__init__(classes="dialog")
        self.versions = list(versions)
        self.chosen = 0

    def title_text(self) -> str:
        raise NotImplementedError

    def head(self, i: int, record: Record) -> str:
        raise NotImplementedError

    def plan(self) -> str:
        raise NotImplementedError

    legend = ""
    buttons: tuple[tuple[str, str, str], ...] = ()  # (label, id, variant) before Cancel

    def compose(self) -> ComposeResult:
        with Vertical(classes="conflict-box"):
            yield Label(self.title_text(), classes="dialog-title", markup=False)
            with Horizontal(id="versions"):
                for i, _record in enumerate(self.versions):
                    with VerticalScroll(classes="version", id=f"version-{i}"):
                        yield Static(classes="version-head", markup=False)
                        yield Static(classes="version-body", markup=False)
            yield Static(id="plan", markup=False)
            yield Static(self.legend, id="legend", markup=False)
            with Horizontal(classes="dialog-buttons"):
                for label, button_id, variant in self.buttons:
                    yield Button(label, id=button_id, variant=variant)  # type: ignore[arg-type]
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self._render_versions()
        self.query_one(f"#{self.buttons[0][1]}", Button).focus()

    def _render_versions(self) -> None:
        chosen = self.versions[self.chosen]
        for i, record in enumerate(self.versions):
            box = self.query_one(f"#version-{i}", VerticalScroll)
            box.set_class(i == self.chosen, "chosen")
            box.query_one(".version-head", Static).update(self.head(i, record))
            body: Text | str = (
                visible(record.content, multiline=True)
                if i == self.chosen
                else diff_text(chosen.content, record.content)
            )
            box.query_one(".version-body", Static).update(body)
        self.query_one("#plan", Static).update(self.plan())

    def action_move(self, step: int) -> None:
        self.chosen = (self.chosen + step) % len(self.versions)
        self._render_versions()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def pressed(self, button_id: str | None) -> None:
        raise NotImplementedError

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(None)
        else:
            self.pressed(event.button.id)


class ConflictScreen(SideBySide[str | PairChoice | None]):
    """The versions of one conflict group; dismisses with the id to keep, a ``PairChoice`` to
    merge the highlighted version with the next one, or None."""

    BINDINGS = [
        Binding("K", "keep", "Keep this version", priority=True),
        Binding("enter", "keep", "Keep this version", show=False),
        Binding("M,m", "merge", "Merge", priority=True),
    ]
    legend = (
        "- only in the highlighted version · + only in that one   "
        "←/→ choose · K keeps · M merges · Esc cancels"
    )
    buttons = (
        ("Keep this version (K)", "keep", "success"),
        ("Merge… (M)", "merge", "primary"),
    )

    def __init__(
        self,
        chosen: Record,
        rivals: Sequence[Record],
        group: object,
        clock: Callable[[], int],
    ) -> None:
        super().__init__([chosen, *rivals])
        self.group = group
        self.clock = clock

    def title_text(self) -> str:
        first = self.versions[0]
        return (
            f"Conflict group {self.group or ''}: {len(self.versions)} versions of "
            f"“{visible(first.title)}” ({first.type.value})"
        )

    def head(self, i: int, record: Record) -> str:
        g = record.governance
        mark = "● keep this version" if i == self.chosen else f"○ version {i + 1}"
        return (
            f"{mark}\n{visible(record.title)}\n"
            f"{record.status.value} · {g.verification.value} · "
            f"{SHORT_ORIGIN[g.origin]} · r{g.revision} · {when(record.updatedAt)}\n"
            f"{record.contentHash[:15]} · {visible(record.id)}\n"
        )

    def plan(self) -> str:
        return plan_text(self.versions[self.chosen], self.versions, self.clock())

    def action_keep(self) -> None:
        self.dismiss(self.versions[self.chosen].id)

    def action_merge(self) -> None:
        other = self.versions[(self.chosen + 1) % len(self.versions)]
        self.dismiss(PairChoice(self.versions[self.chosen].id, other.id, merge=True))

    def pressed(self, button_id: str | None) -> None:
        if button_id == "merge":
            self.action_merge()
        else:
            self.action_keep()
