"""present: what a person reads of a record. Control, bidi and invisible characters are shown as
visible stand-ins; a revision's change is a diff of its text fields and content."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    SourceRef,
    make_record,
)
from dsh_memory_tui.present import (
    ADDED,
    CONTEXT,
    HUNK,
    NOTE,
    REMOVED,
    REVISION,
    hidden_characters,
    hidden_warning,
    history_lines,
    json_for_terminal,
    record_facts,
    record_hidden_characters,
    revision_diff,
    visible,
)


def _record(**fields: object) -> Record:
    """A host-valid agent proposal in a project file."""
    return make_record(
        scope=Scope.PROJECT,
        record_type=RecordType.FACT,
        provenance=Provenance(kind=ProvenanceKind.AGENT),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="s1")],
        now=1_700_000_000_000,
        **fields,  # type: ignore[arg-type]
    )


def test_escape_sequences_are_shown_not_sent() -> None:
    assert visible("a\x1b[8mb\x07") == "a␛[8mb␇"
    assert visible("csi\x9b31m") == "csi\\x9b31m"  # a C1 CSI: ESC [ on many terminals


def test_bidi_and_zero_width_characters_are_shown_as_escapes() -> None:
    assert visible("abc\u202edef\u2066\u200b\ufeff") == "abc\\u202edef\\u2066\\u200b\\ufeff"


@pytest.mark.parametrize(
    "char",
    [
        "\u2028",  # line separator: a line break to some terminals and to str.splitlines
        "\u2029",
        "\U000e0041",  # a tag character: ASCII text no reader sees
        "\ufe01",  # a variation selector other than the emoji ones
        "\u3164",  # Hangul filler: renders as blank
        "\ud800",  # a lone surrogate (JSON can carry one; no terminal can print it)
        "\u00ad",
    ],
)
def test_other_invisible_characters_are_shown(char: str) -> None:
    shown = visible(f"a{char}b")
    assert shown.startswith("a\\") and shown.endswith("b") and char not in shown
    assert hidden_characters(char) == 1


def test_every_control_and_format_character_is_replaced() -> None:
    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            if code in range(0x600, 0x606) or code in (0x6DD, 0x70F, 0x890, 0x891, 0x8E2):
                continue  # prepended Arabic marks: drawn, not hidden
            if code in (0x110BD, 0x110CD) or 0x13430 <= code <= 0x1343F:
                continue  # Kaithi and Egyptian format marks: drawn
            if 0x1BCA0 <= code <= 0x1BCA3:
                continue  # shorthand format controls: drawn
            assert visible(char) != char, hex(code)


def test_multiline_keeps_newlines_and_tabs_and_shows_carriage_returns() -> None:
    assert visible("a\n\tb\rc", multiline=True) == "a\n\tb␍c"
    assert visible("a\n\tb") == "a␊␉b"
    assert hidden_characters("a\n\tb\r", multiline=True) == 1


def test_emoji_presentation_selectors_stay() -> None:
    assert visible("⚠\ufe0f") == "⚠\ufe0f"


def test_visible_text_is_printable_and_stable() -> None:
    text = "".join(map(chr, range(0, 0x300))) + "\u202e\u200b\U000e0020"
    shown = visible(text)
    assert shown.replace("\xa0", " ").isprintable()  # a no-break space is a space
    assert visible(shown) == shown


def test_a_records_hidden_characters_are_counted_in_every_field() -> None:
    record = _record(
        scope_key="root:\u202e",
        title="t\u200b",
        content="c\rd\n",
        tags=["x\u2066"],
    )
    assert record_hidden_characters(record) == 4
    assert hidden_warning(4).startswith("contains 4 control, bidi or invisible characters")
    assert hidden_warning(0) == ""


def test_facts_are_visible() -> None:
    record = _record(
        scope_key="root:1",
        title="t",
        content="c",
        tags=["x\u202ey", "\x9b"],
    )
    facts = dict(record_facts(record, 1_700_000_000_000))
    assert facts["tags"] == "x\\u202ey, \\x9b"


def _edited(record: Record, **changes: object) -> Record:
    gov = record.governance.model_copy(update={"revision": record.governance.revision + 1})
    return record.model_copy(update={**changes, "governance": gov})


def test_a_revision_is_a_diff_of_its_text() -> None:
    old = _record(
        scope_key="root:1",
        title="Old title",
        content="one\ntwo\nthree\nfour",
        tags=["a"],
    )
    new = _edited(old, title="New title", content="one\n2\u202e\nthree\nfour", tags=["a", "b"])
    diff = revision_diff(old, new)
    assert (REMOVED, "title: Old title") in diff and (ADDED, "title: New title") in diff
    assert (REMOVED, "tags: a") in diff and (ADDED, "tags: a, b") in diff
    assert (HUNK, "content @@ -1,3 +1,3 @@") in diff
    assert [d for d in diff if d[0] in (REMOVED, ADDED, CONTEXT)][4:] == [
        (CONTEXT, "one"),
        (REMOVED, "two"),
        (ADDED, "2\\u202e"),
        (CONTEXT, "three"),
    ]
    lines = history_lines([old, new])
    assert lines[0][0] == REVISION and lines[0][1].endswith("created")
    assert lines[1][0] == REVISION
    assert lines[1][1].endswith("title changed; tags changed; content changed")


def test_a_carriage_return_inside_a_line_is_not_a_line_break_of_the_diff() -> None:
    old = _record(
        scope_key="root:1",
        title="t",
        content="safe line",
        tags=[],
    )
    new = _edited(old, content="safe line\rrm -rf /")
    assert (ADDED, "safe line␍rm -rf /") in revision_diff(old, new)


def test_a_huge_content_change_is_not_diffed() -> None:
    old = _record(
        scope_key="root:1",
        title="t",
        content="\n".join(map(str, range(4000))),
        tags=[],
    )
    new = _edited(old, content="\n".join(map(str, range(1, 4001))))
    assert revision_diff(old, new) == [
        (NOTE, "content: 4000 lines -> 4000 lines (too long to diff here)")
    ]


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, ascii_only=st.booleans())
def test_json_for_terminal_keeps_the_values_and_leaves_nothing_invisible(
    value: object, ascii_only: bool
) -> None:
    """Whatever the JSON text (ASCII, which takes a shortcut, or not): the same values, and
    not one character ``visible`` would replace is left raw."""
    text = json.dumps(value, ensure_ascii=ascii_only, indent=2)
    shown = json_for_terminal(text)
    assert json.loads(shown) == json.loads(text)
    assert hidden_characters(shown.replace("\n", " ")) == 0


def test_json_for_terminal_escapes_del_in_an_ascii_text() -> None:
    text = json.dumps({"title": "a\x7fb"}, ensure_ascii=False)
    assert text.isascii()
    assert json_for_terminal(text) == '{"title": "a\\u007fb"}'
