"""A one-line answer box (a verify's or reject's reason) that answers in the order keys came.

As bindings, Enter and Escape would run only once the key had bubbled up to the app, after the
keys typed behind them (tmux sending several at once, a laggy ssh link) had been typed into the
box: "looks right", Enter, "q" saved the reason "looks rightq" and did not quit. Here Enter
answers with the text before it and Escape cancels, at once; a key that reaches the box after
its answer was forwarded to it before the focus moved on, and goes to the app, in order.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.binding import Binding

from .ordered_keys import OrderedInput


class AnswerInput(OrderedInput):
    # Shown in the key bar while it asks (the placeholder that says so is gone once typing).
    # The keys themselves are taken in ``_on_key``, in the order they came, before any
    # binding: these run only for a click on the bar's key.
    BINDINGS = [
        Binding("enter", "answer('enter')", "Confirm"),
        Binding("escape", "answer('escape')", "Cancel"),
    ]

    def __init__(
        self,
        answer: Callable[[str | None], None],
        is_open: Callable[[], bool],
        **kwargs: object,
    ) -> None:
        """``answer(text)`` on Enter (stripped), ``answer(None)`` on Escape; ``is_open()``
        False once the question is answered (or not asked)."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._answer, self._is_open = answer, is_open

    async def _on_key(self, event: events.Key) -> None:
        # Input's own _on_key runs after this one (Textual calls each class's handler) unless
        # the default is prevented here.
        if not self._is_open():
            self._to_app(event)
        elif self.answers(event.key):
            event.stop()
            event.prevent_default()

    def answers(self, key: str) -> bool:
        """Enter answers with the text, Escape cancels (True); any other key does not."""
        if key not in ("enter", "escape"):
            return False
        self._answer(self.value.strip() if key == "enter" else None)
        return True

    def action_answer(self, key: str) -> None:
        if self._is_open():
            self.answers(key)

    def _to_app(self, event: events.Key) -> None:
        """``event`` came after the answer: not this box's. The app gets it as a new key, and
        forwards it to what has the focus now (never this closed box again)."""
        event.stop()
        event.prevent_default()
        if self.app.focused is self:
            self.screen.set_focus(None)
        self.app.post_message(events.Key(event.key, event.character))
