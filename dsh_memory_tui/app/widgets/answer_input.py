"""A one-line answer box (a verify's or reject's reason) that answers in the order keys came.

As bindings, Enter and Escape would run only once the key had bubbled up to the app, after the
keys typed behind them (tmux, a paste, a laggy ssh link) had been typed into the box: "looks
right", Enter, "q" saved the reason "looks rightq" and did not quit. Here Enter answers with the
text before it and Escape cancels, at once; a key that reaches the box after its answer was
forwarded to it before the focus moved on, and goes to the app, in order.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.widgets import Input


class AnswerInput(Input):
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
        if not self._is_open():
            event.stop()
            event.prevent_default()
            if self.app.focused is self:  # the focus has not moved on yet: after a frame
                self.call_after_refresh(self._to_app, event.key, event.character)
            else:
                self._to_app(event.key, event.character)
        elif event.key in ("enter", "escape"):
            event.stop()
            event.prevent_default()
            self._answer(self.value.strip() if event.key == "enter" else None)
        else:
            await super()._on_key(event)

    def _to_app(self, key: str, character: str | None) -> None:
        self.app.post_message(events.Key(key, character))
