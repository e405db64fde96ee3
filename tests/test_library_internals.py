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


def test_pydantic_cores_model_attributes_the_fence_uses_are_there():
    # model_base.OpenModel: pydantic-core makes a model by setting these on a plain class.
    from dsh_memory_tui.model import Provenance

    made = Provenance.model_validate({"kind": "user", "newer": 1})
    assert made.__dict__["kind"] == "user", "__dict__"
    assert made.__pydantic_fields_set__ == {"kind", "newer"}, "__pydantic_fields_set__"
    assert made.__pydantic_extra__ == {"newer": 1}, "__pydantic_extra__"
    into = Provenance.__new__(Provenance)
    Provenance.core_validator.validate_python({"kind": "agent"}, self_instance=into)
    assert into.kind == "agent", "self_instance"
