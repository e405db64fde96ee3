"""JSON read as the host's JSON.parse reads it (``js_json.loads_js``, ``scan_js``), whatever the
depth or the length of a number, and written back as it was (``dumps_js``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_memory_tui.js_json import MAX_NESTING, RawJSON, _loads_flat, dumps_js, loads_js, scan_js

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json, st.sampled_from([None, 1]), st.sampled_from([(",", ":"), (" , ", " : ")]))
def test_the_flat_reader_reads_what_the_json_module_reads(
    value: Any, indent: int | None, separators: tuple[str, str]
) -> None:
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    assert _loads_flat(text) == json.loads(text) == loads_js(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[1,]",
        '{"a":1,}',
        '{"a" 1}',
        "{1:2}",
        "[1 2]",
        "[1",
        "[1]]",
        "01",
        "-",
        "[.5]",
        "[1.]",
        "[1e]",
        "tru",
        '"abc',
        '["\x01"]',
        "[NaN]",
        "[Infinity]",
        "[-Infinity]",
        "\ufeff[1]",
        "[" * 5000 + "]" * 4999,
        "[" * 5000 + "1,]" + "]" * 4999,
    ],
)
def test_what_is_not_json_is_refused_at_any_depth(text: str) -> None:
    with pytest.raises(ValueError):
        loads_js(text)
    with pytest.raises(ValueError):
        _loads_flat(text)


def test_a_repeated_key_keeps_its_last_value_in_its_first_place() -> None:
    got = _loads_flat('{"a":1,"b":2,"a":3}')
    assert list(got.items()) == [("a", 3), ("b", 2)]


@pytest.mark.parametrize(
    "number", ["7" * 5000, "-" + "3" * 5000, "1e400", "-2.5E+400", "9" * 5000 + ".5"]
)
def test_a_number_python_cannot_hold_is_kept_as_its_text(number: str) -> None:
    text = '{"a":[' + number + ',1],"b":"x"}'
    value = loads_js(text)
    assert value["a"] == [RawJSON(number), 1]
    assert dumps_js(value) == text


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 1000, 100_000])
def test_nesting_of_any_depth_is_read_and_written_back_byte_for_byte(depth: int) -> None:
    deep = "[" * depth + '{"k":-0.5}' + "]" * depth
    text = '{"x":' + deep + ',"y":[1]}'
    value = loads_js(text)
    assert value["y"] == [1]
    assert dumps_js(value) == text
    # Past MAX_NESTING levels (the top object is level 1) the rest is one piece of text.
    node, level = value["x"], 2
    while isinstance(node, list):
        node, level = node[0], level + 1
    assert isinstance(node, RawJSON) and level == MAX_NESTING + 1


def test_scan_js_reads_one_value_and_says_where_it_ends() -> None:
    deep = "[" * 3000 + "]" * 3000
    text = "[1, " + deep + "] tail"
    assert scan_js(text, 0)[1] == len(text) - len(" tail")
    assert scan_js(text, 1 + text.index(deep) - 1)[1] == text.index(deep) + len(deep)
    assert scan_js("7" * 5000 + ",", 0) == (RawJSON("7" * 5000), 5000)


def test_a_string_that_looks_like_the_stand_in_is_written_as_a_string() -> None:
    value = {"a": "\x00raw:0\x00", "b": RawJSON("1e400")}
    assert json.loads(dumps_js({"a": value["a"]})) == {"a": "\x00raw:0\x00"}
    assert dumps_js(value) == '{"a":"\\u0000raw:0\\u0000","b":1e400}'
