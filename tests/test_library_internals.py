"""Every library internal the package uses is still there (ARCHITECTURE.md lists them with the
tested range): a new version that drops one fails here, naming it, not somewhere in the app."""

from __future__ import annotations

import inspect

import pytest


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


def test_detect_secrets_plugin_map_and_detectors_are_there():
    pytest.importorskip("detect_secrets")  # lint.py's secret finders, imported on first need
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, DENYLIST

    classes = list(get_mapping_from_secret_type_to_class().values())
    assert any(issubclass(c, RegexBasedDetector) for c in classes)
    assert Base64HighEntropyString in classes and DENYLIST and CONFIG_DENYLIST_REGEX_TO_GROUP
