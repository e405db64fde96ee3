"""The app's actions are declared once (``actions.ACTIONS``) and everything that lists keys is
built from the declarations: every key the app binds and every key the README lists is in the
help, every action has its screen method, and a write is refused on a read-only file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsh_memory_tui.app.actions import (
    ACTIONS,
    OTHER_KEYS,
    Here,
    Needs,
    Shown,
    Writes,
    help_lines,
    refusal,
)
from dsh_memory_tui.app.panes import TABS, RecordPane
from dsh_memory_tui.app.screens.main import MainScreen
from dsh_memory_tui.app.widgets.record_table import RecordTable

README = Path(__file__).parents[2] / "README.md"
TYPED = {"/": "slash", "?": "question_mark", "*": "asterisk", "-": "minus"}


def keys_in_the_help() -> set[str]:
    """Every key the help screen tells, by Textual's name."""
    told = {a.key for a in ACTIONS if Shown.HELP in a.shown_in}
    told |= {key for other in OTHER_KEYS for key in other.keys}
    lines = " ".join(text for _, text in help_lines())
    # An action without a line of its own is told on another's ("- unmarks every row").
    told |= {
        a.key for a in ACTIONS if Shown.HELP not in a.shown_in and f" {a.shown} " in f" {lines}"
    }
    return told


def bound_keys(cls: type) -> set[str]:
    out: set[str] = set()
    for binding in cls.BINDINGS:  # type: ignore[attr-defined]
        out.update(k.strip() for k in binding.key.split(","))
    return out


def test_every_key_the_main_screen_and_its_tables_bind_is_in_the_help():
    bound = bound_keys(MainScreen) | bound_keys(RecordTable) | bound_keys(RecordPane)
    assert bound - keys_in_the_help() == set()
    assert {t.key for t in TABS} <= keys_in_the_help()


def readme_keys() -> set[str]:
    """The keys of the README's table of the app's keys (its first column), by Textual's
    name."""
    text = README.read_text()
    table = text[text.index("| key | action |") : text.index("The key bar at the bottom")]
    keys: set[str] = set()
    for row in table.splitlines()[2:]:
        if not row.startswith("|"):
            continue
        first = row.split("|")[1]
        found = re.findall(r"`([^`]+)`", first)
        if re.search(r"`1`-`5`", first):
            found = [str(n) for n in range(1, 6)]
        keys.update(TYPED.get(k, k) for k in found)
    return keys


def test_every_key_the_readme_lists_is_in_the_help():
    assert readme_keys() - keys_in_the_help() == set()
    assert {"m", "j", "k", "g", "G", "enter"} <= readme_keys()  # the ones the help left out


def test_every_action_has_its_method_on_the_main_screen():
    for a in ACTIONS:
        assert callable(getattr(MainScreen, f"action_{a.action}", None)), a.action


def test_the_key_bar_palette_and_help_are_built_from_the_declarations():
    bindings = {b.action: b for b in MainScreen.BINDINGS if b.action in {a.action for a in ACTIONS}}  # type: ignore[union-attr]
    for a in ACTIONS:
        b = bindings[a.action]
        assert (b.key, b.description, b.show, b.priority) == (a.key, a.label, a.footer, a.priority)
    assert [text for _, text in help_lines()] == [
        *[a.help for a in ACTIONS if Shown.HELP in a.shown_in][:-2],
        *[k.help for k in OTHER_KEYS],
        *[a.help for a in ACTIONS if Shown.HELP in a.shown_in][-2:],
    ]


@pytest.mark.parametrize(
    "action", [a for a in ACTIONS if a.writes is Writes.ITS_RECORDS], ids=lambda a: a.action
)
def test_every_write_of_records_is_refused_on_a_read_only_file(action, alice_store):
    record = next(r for r in alice_store.records() if r.scope.value != "session")
    here = Here(now=alice_store.clock(), read_only=lambda rid: "records.jsonl")
    why = refusal(action.action, [record], here)
    assert why is not None and why[0] == "STORE_TOO_LARGE", action.action
    assert action.needs.records  # a write of its records needs them


def test_only_what_needs_nothing_runs_while_the_store_loads(alice_store):
    loading = Here(now=alice_store.clock(), loading=True)
    for a in ACTIONS:
        assert (refusal(a.action, [], loading) is None) == (a.needs is Needs.NOTHING), a.action
