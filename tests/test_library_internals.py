"""Every library internal the package uses is still there (ARCHITECTURE.md lists them with the
tested range): a new version that drops one fails here, naming it, not somewhere in the app."""

from __future__ import annotations

import inspect


def test_textuals_toast_and_its_notification_are_there():
    from textual.widgets._toast import Toast  # app.MemoryApp.on_click

    assert "self._notification" in inspect.getsource(Toast.__init__), "Toast._notification"


def test_textuals_tab_keeps_its_label_in_label():
    from textual.widgets import Tab  # tabs._relabel

    tab = Tab("Review (3)")
    assert str(tab._label) == "Review (3)", "Tab._label"


def test_pydantics_internals_the_fence_uses_are_there():
    from pydantic import BaseModel

    from dsh_memory_tui.model import Record

    assert hasattr(BaseModel, "__pydantic_fields_set__"), "__pydantic_fields_set__"
    assert isinstance(Record.__pydantic_core_schema__, dict), "__pydantic_core_schema__"
    assert callable(Record.__pydantic_validator__.validate_json), "__pydantic_validator__"
    assert Record.__pydantic_complete__ is True, "__pydantic_complete__"
