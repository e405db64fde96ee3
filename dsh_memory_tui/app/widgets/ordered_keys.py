"""Text boxes whose editing keys apply in the order they were typed.

Textual inserts a printable key in the box's own key handler, but runs a bound key (backspace,
ctrl+u, the arrows, ctrl+k...) only after it has bubbled up to the app: under fast input
(tmux sending a burst, a paste, a laggy link) the letters behind it are inserted first. Filter
``xyz``, three backspaces, ``qq`` gave ``xy``, not ``qq`` (Textual issue #6605; its fix, PR
#6631, is not in a release: textual 8.2.8, the newest, has the bug). ``KeysInOrder`` does what
that fix does: a key bound on the box itself (not a priority binding, which the app runs before
the key reaches the box) runs its action right there, as the key arrives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.widgets import Input, TextArea

if TYPE_CHECKING:  # for the type checker, the mixin has a box's attributes
    from textual.widget import Widget

    class _Base(Widget): ...
else:
    _Base = object


class KeysInOrder(_Base):
    """Mixin (before the Textual box in its bases: Textual runs each class's ``_on_key`` in
    method resolution order) that runs the box's own bindings inline."""

    async def _on_key(self, event: events.Key) -> None:
        bindings = self._bindings.key_to_bindings
        for key in event.aliases:
            for binding in bindings.get(key, ()):
                if binding.priority:
                    continue
                event.stop()
                event.prevent_default()  # not the box's own handler: the key is done
                await self.run_action(binding.action)
                return


class OrderedInput(KeysInOrder, Input):
    """``Input`` whose keys apply in the order typed."""


class OrderedTextArea(KeysInOrder, TextArea):
    """``TextArea`` whose keys apply in the order typed."""
