"""The base of every dialog and view opened over the main screen: its own key bar.

Under a modal screen the main screen stays drawn, its key bar too; that bar's keys (``v
Verify`` inside a form) do nothing while the modal is open. Each modal screen gets its own bar,
docked in the same bottom row over the main one, showing the keys that work in it: its
bindings and its focused widget's with ``show=True`` (Textual's active bindings of a modal stop
at the modal screen, so the main screen's and the app's are not among them). The command
palette (Textual's) gets one the same way (``Palette``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from textual.command import CommandPalette
from textual.screen import ModalScreen, Screen

from ..widgets.keybar import KeyBar

ResultType = TypeVar("ResultType")


def _own_key_bar(screen: Screen[Any]) -> None:
    screen.mount(KeyBar(read_now=True))


class Modal(ModalScreen[ResultType]):
    """A modal screen with its own key bar (added once mounted: each subclass composes only
    its own content, and its ``on_mount`` runs as well as this one)."""

    def on_mount(self) -> None:
        _own_key_bar(self)


class Palette(CommandPalette):
    """Textual's command palette (``ctrl+p``) with a key bar of its own."""

    def on_mount(self) -> None:
        _own_key_bar(self)
