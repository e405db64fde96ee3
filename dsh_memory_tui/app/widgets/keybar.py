"""The key bar: the screen's shown bindings on one line, drawn as text.

Textual's ``Footer`` recomposes itself (a widget per key, 20 to 60 of them mounted and styled)
whenever the screen's bindings change: when a dialog opens or closes, when focus moves, when an
action becomes available. That cost more than the write a verify makes. This bar keeps one line
of text and repaints it only when what it says changed; its size never depends on its content,
so a change takes no layout.

A focused button is shown as Enter (``⏎``) and its label (what Enter does there: a dialog that
starts on Cancel says so), unless its label names its own key (``Save (ctrl+s)``). What does not
fit ends in ``…`` and the help key (``?`` lists every key); the command palette key stays at the
right edge. Clicking a key presses it, as in Textual's footer; a disabled key (dim) rings the
bell. Every modal screen has one of its own (``screens.modal.Modal``), over the main screen's.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Button


class Key(NamedTuple):
    key: str  # what a click presses
    display: str  # how the key is written ("space", "^p")
    description: str
    enabled: bool


HELP_KEY = "question_mark"
NAMES_ITS_KEY = re.compile(r"\(\S+\)$")  # a button label that ends with its key: "Edit (e)"


class KeyBar(Widget):
    """The shown bindings of the screen it is on, as one line."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"keybar--key", "keybar--description"}
    DEFAULT_CSS = """
    KeyBar {
        height: 1;
        width: 1fr;
        dock: bottom;
        background: $footer-background;
        color: $footer-foreground;
        .keybar--key { color: $footer-key-foreground; text-style: bold; }
        .keybar--description { color: $footer-description-foreground; }
    }
    """

    def __init__(self, *, read_now: bool = False, **kwargs: object) -> None:
        """``read_now``: read the keys once mounted too, for a bar mounted into a screen
        already composed (a dialog's), which may come after that screen's last signal (its
        focus set as it mounted). The main screen's waits for its first signal: its widgets,
        which its action checks ask, may still be composing."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._read_now = read_now
        self.keys: tuple[Key, ...] = ()
        self.palette: Key | None = None
        # x ranges of what was drawn, for clicks: (start, end, key)
        self._spans: list[tuple[int, int, Key]] = []
        self._strip: Strip | None = None
        self._drawn_for: tuple[object, ...] = ()
        self._due = False

    @property
    def text(self) -> str:
        """What the bar shows, as plain text (for tests and the help screen)."""
        strip = self._line(self.size.width or 200)
        return strip.text.rstrip()

    def on_mount(self) -> None:
        # Read once the screen says its bindings are ready (the app's checks need it mounted).
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        if self._read_now:
            self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        # Read after the refresh, as Textual's footer does: the signal comes while the
        # screen's widgets (which the app's action checks ask) may still be composing. Several
        # signals before that refresh are read once.
        if self.is_attached and screen is self.screen and not self._due:
            self._due = True
            self.call_after_refresh(self._reread)

    def _reread(self) -> None:
        self._due = False
        if not self.is_attached:
            return
        screen = self.screen
        keys, palette = self._read(screen)
        if (keys, palette) != (self.keys, self.palette):
            self.keys, self.palette = keys, palette
            self._strip = None
            self.refresh()

    def _read(self, screen: Screen[object]) -> tuple[tuple[Key, ...], Key | None]:
        app = self.app
        shown: list[Key] = []
        seen_actions: set[str] = set()
        palette: Key | None = None
        for key, active in screen.active_bindings.items():
            binding: Binding = active.binding
            if key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                palette = Key(key, app.get_key_display(binding), "palette", active.enabled)
                continue
            display, description = app.get_key_display(binding), binding.description
            if isinstance(active.node, Button) and binding.action == "press":
                label = active.node.label  # the focused button: Enter presses it
                description = label if isinstance(label, str) else label.plain
                if NAMES_ITS_KEY.search(description):
                    continue  # "Save (ctrl+s)": its key's own entry says it
            elif not binding.show:
                continue
            if binding.action in seen_actions:
                continue  # one entry per action, as Textual's footer does
            seen_actions.add(binding.action)
            shown.append(Key(key, display, description, active.enabled))
        return tuple(shown), palette

    # ------------------------------------------------------------------ drawing

    def render_line(self, y: int) -> Strip:
        if y != 0:
            return Strip.blank(self.size.width, self.rich_style)
        return self._line(self.size.width)

    def _line(self, width: int) -> Strip:
        state = (width, self.keys, self.palette, self.rich_style)
        if self._strip is not None and state == self._drawn_for:
            return self._strip
        base = self.rich_style
        key_style = base + self.get_component_rich_style("keybar--key", partial=True)
        text_style = base + self.get_component_rich_style("keybar--description", partial=True)
        dim = Style(dim=True)

        def entry(k: Key) -> list[Segment]:
            extra = Style() if k.enabled else dim
            parts = [Segment(k.display, key_style + extra)]
            if k.description:
                parts.append(Segment(" " + k.description, text_style + extra))
            return parts

        right = [*entry(self.palette), Segment(" ", base)] if self.palette else []
        right_width = sum(s.cell_length for s in right)
        room = max(0, width - right_width - (2 if right else 0))
        help_key = next((k for k in self.keys if k.key == HELP_KEY), None)
        more = [Segment("… ", text_style)] + (entry(help_key) if help_key else [])
        more_width = sum(s.cell_length for s in more)

        segments: list[Segment] = []
        spans: list[tuple[int, int, Key]] = []
        x = 0
        for i, k in enumerate(self.keys):
            parts = entry(k)
            w = sum(s.cell_length for s in parts)
            last = i == len(self.keys) - 1
            need = w + (0 if last else 1 + more_width)
            if x + need > room and not (last and x + w <= room):
                if x + more_width <= room:
                    segments += more
                    if help_key is not None:
                        spans.append((x + 2, x + more_width, help_key))
                    x += more_width
                break
            segments += parts
            spans.append((x, x + w, k))
            x += w
            if not last:
                segments.append(Segment(" ", base))
                x += 1
        if right:
            segments.append(Segment(" " * max(0, width - x - right_width), base))
            spans.append((width - right_width, width, self.palette))  # type: ignore[arg-type]
            segments += right
        strip = Strip(segments).adjust_cell_length(width, base).crop(0, width)
        self._strip, self._drawn_for, self._spans = strip, state, spans
        return strip

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                if key.enabled:
                    self.app.simulate_key(key.key)
                else:
                    self.app.bell()
                return
