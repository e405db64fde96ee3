"""The one-line question in place of the status line: a verify's or reject's optional reason.

A dialog for one record's reason cost two screen switches (each a full repaint), a dozen widgets
mounted and styled, and several layouts per key press; this bar is always mounted and only
shown: the question, a text box, Enter to confirm, Escape (or focus moving away) to cancel.
Batches and shared-project records still ask in a dialog, which has room to list what they
touch and who sees it.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label

from ...present import visible
from .answer_input import AnswerInput


class AskBar(Horizontal):
    """Asks one question at a time; ``answered`` gets the reason ("" when left empty) or None
    when the question was cancelled."""

    DEFAULT_CSS = """
    AskBar { height: 1; display: none; background: $panel; }
    AskBar.-asking { display: block; }
    AskBar Label { width: 50%; height: 1; padding: 0 1; text-wrap: nowrap;
                   text-overflow: ellipsis; color: $text; text-style: bold; }
    AskBar Input, AskBar Input:focus { width: 1fr; height: 1; border: none; padding: 0; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._answered: Callable[[str | None], None] | None = None

    def compose(self) -> ComposeResult:
        yield Label("", id="ask-question", markup=False)
        yield AnswerInput(
            self.answer, lambda: self.asking, id="reason", placeholder="reason (optional)"
        )

    @property
    def asking(self) -> bool:
        return self._answered is not None

    @property
    def question(self) -> str:
        return str(self.query_one("#ask-question", Label).render())

    def ask(self, question: str, verb: str, answered: Callable[[str | None], None]) -> None:
        """Show ``question`` (record text in it is shown through ``visible``) and focus the
        text box at once, so keys typed right after the one that asked land in it."""
        if self._answered is not None:
            self.answer(None)
        self._answered = answered
        # A fixed width: a new question repaints the label and takes no layout.
        self.query_one("#ask-question", Label).update(visible(question), layout=False)
        box = self.query_one(AnswerInput)
        box.value = ""
        box.placeholder = f"reason (optional) · enter: {verb.lower()} · esc: cancel"
        self.add_class("-asking")
        self.screen.set_focus(box)

    def takes(self, event: events.Key) -> bool:
        """A key that reached the app while this asks (it was routed to the table before the
        question took the focus): a printable one is typed into the question, Enter and
        Escape answer it, in the order the keys came; False for others."""
        box = self.query_one(AnswerInput)
        if box.answers(event.key):
            return True
        char = event.character
        if char is None or not char.isprintable():
            return False
        box.insert_text_at_cursor(char)
        return True

    def answer(self, reason: str | None) -> None:
        answered, self._answered = self._answered, None
        if answered is None:
            return
        self.remove_class("-asking")
        answered(reason)

    @on(Input.Submitted, "#reason")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.answer(event.value.strip())

    @on(Input.Blurred, "#reason")
    def _blurred(self) -> None:
        # Focus moved away (a click, a tab): the question is dropped. A blur left over from
        # the last answer, arriving after a new question took the focus again, is not that.
        if self.screen.focused is not self.query_one(AnswerInput):
            self.answer(None)
