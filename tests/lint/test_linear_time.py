"""Every risk detector runs in time linear in the text: each crafted blow-up shape
(tests/lint/crafted.py: repeated prefixes, nested repeats, long runs without a terminator, hidden
and expanding characters) at 1 MiB, through every detector (``lint.text_flags``) and the
near-duplicate words (``lint.fingerprint``).

The work is counted, not timed: the Python calls made (a detector that loops per match or per
character makes one or more each; a backtracking one made millions per candidate), and the
findings (bounded per detector). The engines' own cost is linear by construction (RE2, the
provider rules' native scanner); their time is measured by tests/benchmarks/bench_lint_crafted.py
(each shape against an ordinary text of the same size, at two sizes), never asserted here: a
timed ratio failed on a machine at load 6.
"""

from __future__ import annotations

import sys

import pytest

from dsh_memory_tui import lint
from dsh_memory_tui.lint import linear, secrets

from .crafted import crafted, ordinary

MIB = 1 << 20
SHAPES = crafted(MIB)


def calls_made(fn, *args) -> int:
    """How many Python and C functions ``fn(*args)`` called."""
    count = 0

    def hook(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(hook)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return count


@pytest.fixture(scope="module", autouse=True)
def rules_loaded():
    secrets.provider_scanner()  # once: loading is not the work being counted


def test_there_are_fifty_crafted_shapes_and_each_is_a_mebibyte():
    assert len(SHAPES) == 50
    assert len({name for name, _ in SHAPES}) == 50
    assert all(len(text) == MIB for _, text in SHAPES)


@pytest.mark.parametrize(("name", "text"), SHAPES, ids=[name for name, _ in SHAPES])
def test_a_crafted_mebibyte_costs_linear_work_and_gets_bounded_flags(name, text):
    made = calls_made(lint.text_flags, text, "content")
    assert made <= len(text), (name, made)
    # Near-duplicate words: a Chinese run is its character pairs, one generator step each.
    made = calls_made(lint.fingerprint, "title", text)
    assert made <= 2 * len(text), (name, made)

    found = lint.text_flags(text, "content")
    detectors = 19  # secret 6, instruction 7, pii 4, url 1, invisible 1
    assert len(found) <= detectors * (linear.MAX_FOUND + 1), (name, len(found))
    assert all(0 <= f.start < f.end <= len(text) for f in found)


def test_an_ordinary_mebibyte_is_counted_the_same_way():
    """The baseline the crafted shapes are held to (one call a character) is far above what
    an ordinary record's text costs: the bound is about shapes, not about slack."""
    assert calls_made(lint.text_flags, ordinary(MIB), "content") <= MIB // 20


def test_a_detector_past_its_budget_flags_the_rest_of_the_text_unread():
    text = "4111 1111 1111 1112 " * (linear.budget(MIB) // 10)  # Luhn fails: all candidates
    found = [f for f in lint.text_flags(text, "content") if f.kind == "pii"]
    assert found and found[-1].what == lint.NOT_EXAMINED and found[-1].end == len(text)


def test_a_secret_past_the_findings_cap_is_in_the_flag_of_the_rest():
    key = "AKIA81U33XTPLPFT75V2"
    text = f"{key} " * (linear.MAX_FOUND + 5) + "and the last one " + key
    found = [f for f in lint.text_flags(text, "content") if f.kind == "secret"]
    last = found[-1]
    assert last.what == lint.NOT_EXAMINED and last.start < text.rindex(key) < last.end
