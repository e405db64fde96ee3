"""The filter box: a key that narrows the filter tests only what the last key showed, and what
the table shows is always what a fresh filter over every record would show."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.widgets import Input

from dsh_memory_tui.app.panes import RecordFilter
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    SourceRef,
    Verification,
    make_record,
)
from dsh_memory_tui.queue import waiting
from dsh_memory_tui.store import MemoryStore

from .helpers import (
    PROPOSAL,
    SIZE,
    burst,
    current,
    goto,
    make_app,
    select,
    table_keys,
    wait_for,
)

WORDS = ["ruff", "rust", "pytest", "postgres", "pg", "lint", "retry", "r"]
TOKENS = [
    *WORDS,
    "type:f",
    "type:fact",
    "type:d",
    "tag:ru",
    "tag:rust",
    "origin:m",
    "origin:model",
    "pinned",
]


def _record(i: int, title: str, content: str, tags: list[str], kind: RecordType) -> Record:
    return make_record(
        scope=Scope.USER,
        scope_key="alice",
        record_type=kind,
        title=title,
        content=content,
        tags=tags,
        provenance=Provenance(kind=ProvenanceKind.AGENT, sessionId="s", eventSeq=i),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="s")],
        now=1_764_000_000_000 + i,
    )


records = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
        st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join),
        st.lists(st.sampled_from(WORDS), max_size=2, unique=True),
        st.sampled_from(list(RecordType)),
    ),
    min_size=1,
    max_size=12,
)
filters = st.lists(st.sampled_from(TOKENS), max_size=3).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(records, filters, filters)
def test_a_narrowing_filter_never_matches_what_the_wider_one_did_not(rows, wide, narrow):
    a, b = RecordFilter.parse(wide, 0), RecordFilter.parse(narrow, 0)
    made = [_record(i, t, c or "x", tags, k) for i, (t, c, tags, k) in enumerate(rows)]
    if b.narrows(a):
        assert {r.id for r in made if b.matches(r)} <= {r.id for r in made if a.matches(r)}


def test_typing_on_narrows_and_a_changed_word_does_not():
    typed = [RecordFilter.parse(t, 0) for t in ("r", "ru", "ruf", "ruf ty", "ruf typo")]
    for before, after in zip(typed, typed[1:], strict=False):
        assert after.narrows(before)
    assert not RecordFilter.parse("rust", 0).narrows(RecordFilter.parse("ruf", 0))
    assert not RecordFilter.parse("r", 0).narrows(RecordFilter.parse("ru", 0))  # backspace
    assert not RecordFilter.parse("type:fact", 0).narrows(RecordFilter.parse("type:d", 0))
    assert RecordFilter.parse("type:fact", 0).narrows(RecordFilter.parse("type:f", 0))
    # a word that becomes a field is not a narrowing ("ty" is no longer searched as text)
    assert not RecordFilter.parse("ruf type:f", 0).narrows(RecordFilter.parse("ruf ty", 0))


async def test_the_table_shows_what_a_fresh_filter_shows_after_every_key(tmp_path: Path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(home, ws, "alice")
    for i, (title, tags) in enumerate(
        [
            ("Use ruff for lint", ["ruff"]),
            ("Rust toolchain pinned", ["rust"]),
            ("Retry postgres twice", ["pg"]),
            ("pytest -x in CI", []),
            ("Run ruff format", ["ruff", "lint"]),
        ]
    ):
        store.create("user", "fact" if i % 2 else "decision", title, f"about {title}", tags=tags)
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "user")
        await pilot.press("slash")
        everything = {r.id: r for r in store.records(Scope.USER)}
        typed = ""
        keys = [*"ru", "f", "backspace", "s", "space", *"type:f", "backspace", "backspace"]
        for n, key in enumerate(keys):
            if n == 2:  # a record arrives between two keys: the narrowed list must see it
                store.create("user", "fact", "Ruff everywhere", "ruff ruff", tags=["ruff"])
                app.sync()
                everything = {r.id: r for r in store.records(Scope.USER)}
            await pilot.press(key)
            typed = typed[:-1] if key == "backspace" else typed + (" " if key == "space" else key)
            wanted = RecordFilter.parse(typed)
            expected = sorted(rid for rid, r in everything.items() if wanted.matches(r))
            await wait_for(
                pilot,
                lambda e=expected: sorted(table_keys(app, "user")) == e,
                what=f"the rows for {typed!r}",
            )


async def test_scope_filters_the_review_tab_by_whose_the_proposal_is(fixture_home):
    home, ws = fixture_home
    store = MemoryStore.open(home, ws, "alice")
    queue = [w.record for w in waiting(store)]  # what the Review tab lists
    assert {r.scope for r in queue} >= {Scope.PROJECT, Scope.USER}  # the fixture's mix
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "review")
        await pilot.press("slash", *"scope:user")
        want = sorted(r.id for r in queue if r.scope is Scope.USER)
        await wait_for(pilot, lambda: sorted(table_keys(app, "review")) == want, what="users")
    assert RecordFilter.parse("scope:sh", 0).fields == (("scope", ("sh",)),)
    assert not RecordFilter.parse("scope:sh", 0).problems
    assert RecordFilter.parse("scope:galaxy", 0).problems


# ------------------------------------------------------------------------- keys typed right after /


async def test_keys_typed_right_after_slash_go_to_the_filter(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        burst(app, "slash", *"vitest")
        await pilot.pause()
        await pilot.press("e")  # and through the pilot, one more
        await wait_for(pilot, lambda: app.pane("project").filter.words == ("viteste",))
        filter_box = app.pane("project").query_one(".filter", Input)
        assert filter_box.value == "viteste"
        assert app.screen is app.screen_stack[0]  # no reason dialog, no edit form
        assert not isinstance(app.screen, RecordForm)
    assert current(home, ws, PROPOSAL).governance.verification is Verification.UNVERIFIED


async def test_a_filter_typed_through_the_pilot_in_one_call_holds_every_key(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        await pilot.press("slash", "v", "i", "t", "e", "s", "t")
        await wait_for(pilot, lambda: app.pane("project").filter.words == ("vitest",))
        assert app.pane("project").query_one(".filter", Input).value == "vitest"
        assert app.screen is app.screen_stack[0]
    assert current(home, ws, PROPOSAL).governance.verification is Verification.UNVERIFIED
