"""Changing a Line-API widget's virtual size without a layout of the whole screen."""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


def set_virtual_size(widget: ScrollView, size: Size) -> None:
    """Set ``widget.virtual_size`` to ``size``, skipping the layout pass when it is not needed.

    Assigning ``virtual_size`` asks Textual for a layout of the whole screen, and after a
    layout every scrolling widget repaints its scrollbar in one more frame: at 20,000 rows that
    was most of what a verify cost. A widget whose own size does not depend on its content
    only needs its scrollbar told and its offset clamped, unless the scrollbar appears or
    goes away (that changes the width left for content, so it takes the full layout).
    """
    if widget.virtual_size == size:
        return
    overflow = widget.styles.overflow_y
    wants_bar = overflow == "scroll" or (
        overflow == "auto" and size.height > widget.container_size.height
    )
    if (
        not widget.is_mounted
        or not widget.container_size
        or (wants_bar != widget.show_vertical_scrollbar)
    ):
        widget.virtual_size = size
        return
    widget.set_reactive(Widget.virtual_size, size)
    if widget.show_vertical_scrollbar:
        bar = widget.vertical_scrollbar
        bar.window_virtual_size = size.height
        bar.window_size = widget.container_size.height - widget.scrollbar_size_horizontal
    widget.scroll_y = widget.scroll_y  # the validator clamps it to the new maximum
    # Scrolling by the wheel or a key starts from the target: clamp it too, or the first step
    # after a shrink would go from the old, larger offset and be clamped back to no move.
    widget.scroll_target_y = widget.scroll_y
    widget.refresh()
