"""The app's Textual-free state (``dsh_memory_tui.app.review``): what changed since it last
looked, each tab's membership, the banners' words, the status line's."""

from __future__ import annotations

from dsh_memory_tui.app.evidence import Evidence
from dsh_memory_tui.app.review import (
    Announcements,
    Index,
    ReviewRule,
    banner,
    review_facts,
    status_text,
    tab_rule,
    why_cell,
)
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    SourceRef,
    Status,
    Verification,
    make_record,
)
from dsh_memory_tui.queue import CONFLICT, DIGEST, MERGE, waiting
from dsh_memory_tui.queue import PROPOSAL as PROPOSAL_REASON
from dsh_memory_tui.store import MemoryStore

PROPOSAL = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
PYTEST = "memory:agent:preference:e7f137f5a11b5c7df5a6b47b57a73cab"  # user scope, a clean file
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"


def test_the_index_sees_every_change_since_it_looked_our_own_writes_included(
    alice_store: MemoryStore,
):
    index = Index()
    records = index.load(alice_store.views())
    assert PROPOSAL in {r.id for r in records} and index.record(PROPOSAL) is not None
    assert not index.changes(alice_store.views()).touched  # nothing since
    alice_store.verify(PYTEST)  # the write path takes its own line without reading it back
    changes = index.changes(alice_store.views())
    assert not changes.reset and list(changes.records) == [PYTEST]
    assert changes.records[PYTEST].governance.verification is Verification.VERIFIED
    assert not index.changes(alice_store.views()).touched
    alice_store.compact(alice_store.file_for(Scope.USER))  # the file is replaced
    assert index.changes(alice_store.views()).reset


def test_a_scope_tabs_rule_reads_its_flag_when_asked(alice_store: MemoryStore):
    shown = {"inactive": False}
    project = tab_rule(Scope.PROJECT, lambda: shown["inactive"])
    decision = alice_store.get(DECISION)
    archived = decision.model_copy(update={"status": Status.ARCHIVED})
    assert project(decision) and not project(archived)
    shown["inactive"] = True
    assert project(archived)


def review_rule(store: MemoryStore, derived: dict[str, bool]) -> tuple[ReviewRule, Index]:
    """The Review tab's rule over an index of ``store`` as the app builds it."""
    index = Index()
    index.load(store.views())
    facts = review_facts(index, store.paths.root_id, store.clock, lambda rid: False, Evidence())
    return ReviewRule(facts, lambda: derived["on"]), index


def test_the_review_rule_keeps_each_records_reasons_and_counts_them(alice_store: MemoryStore):
    derived = {"on": False}
    rule, index = review_rule(alice_store, derived)
    records = [r for view in alice_store.views() for r in view.current.values()]
    listed = {r.id for r in records if rule(r)}
    assert PROPOSAL in listed
    assert listed == {w.record.id for w in waiting(alice_store)}  # the CLI's queue, the same
    proposal = alice_store.get(PROPOSAL)
    assert why_cell(rule.of(proposal)) == rule.of(proposal)[0].label
    tally = rule.counts()
    assert sum(tally.values()) >= len(listed) and tally[PROPOSAL_REASON] >= 1
    line = rule.counts_line()
    assert line.startswith(f"{len(listed)} waiting: ")
    # A verify takes it out: asked again of the changed record, the counts follow.
    before = tally[PROPOSAL_REASON]
    alice_store.verify(PROPOSAL)
    assert not rule(alice_store.get(PROPOSAL))
    assert rule.counts().get(PROPOSAL_REASON, 0) == before - 1
    rule.reset()
    assert rule.counts() == {} and rule.counts_line() == "Nothing waits on a human"


def test_digests_wait_behind_d_and_the_line_says_how_many(alice_store: MemoryStore):
    derived = {"on": False}
    rule, _ = review_rule(alice_store, derived)
    digests = [
        r
        for view in alice_store.views()
        for r in view.current.values()
        if r.governance.origin is Origin.DERIVED and r.status is Status.ACTIVE
    ]
    assert digests  # the fixture's session digests
    assert not any(rule(r) for r in digests)
    assert rule.hidden == len({r.id for r in digests if DIGEST in rule.of(r)})
    assert f"(D: +{rule.hidden} session digests)" in rule.counts_line()
    derived["on"] = True
    assert all(rule(r) for r in digests if DIGEST in rule.of(r))
    assert rule.hidden == 0


def test_the_why_cell_names_the_first_reason_and_how_many_more():
    assert why_cell(()) == ""
    assert why_cell((MERGE,)) == "merge rival"
    assert why_cell((CONFLICT, PROPOSAL_REASON)) == "conflict +1"


def test_a_banner_counts_quarantined_lines_from_the_store(alice_store: MemoryStore):
    view = alice_store.view(alice_store.file_for(Scope.PROJECT))
    assert banner([view], alice_store.paths, {}) == ""
    text = banner([view], alice_store.paths, {view.path: 3})
    assert text == "ⓘ 3 corrupt line(s) quarantined in records.jsonl.corrupt"


def test_the_status_line_says_who_where_what_waits_and_what_runs(alice_store: MemoryStore):
    paths = alice_store.paths
    common = dict(marked=0, loading=False, live="off", demo=False, showing_inactive=False)
    text = status_text(paths, waiting=3, progress="", **common)
    assert text == f"user alice  ·  workspace {paths.workspace.name}  ·  live: off  ·  3 waiting"
    busy = dict(common, marked=2, loading=True, demo=True, showing_inactive=True)
    text = status_text(paths, waiting=3, progress="compacting… 2 s", **busy)
    assert text.startswith(f"compacting… 2 s  ·  DEMO in {paths.home.parent}  ·  live: off  ·  ")
    assert text.endswith("loading…  ·  2 marked  ·  showing archived/forgotten")


def test_new_proposals_are_counted_into_one_notification_naming_the_newest(
    alice_store: MemoryStore,
):
    told = Announcements()
    assert told.take(alice_store.get) is None
    first = alice_store.propose(
        "project", "fact", "Use ruff", "c", session=("alpha", alice_store.paths.root_id)
    ).record
    told.add([first, alice_store.get(DECISION)])  # a revision 2 is not a new proposal
    assert told.take(alice_store.get) == (
        "New proposal",
        "“Use ruff” (fact) from session alpha is waiting for review · o opens it",
    )
    more = [
        alice_store.propose(
            "user", "fact", f"P{i}", f"c{i}", session=(f"s{i}", alice_store.paths.root_id)
        ).record
        for i in range(4)
    ]
    told.add(more)
    title, message = told.take(alice_store.get)
    assert title == "Review queue" and told.newest == more[-1].id
    assert message == (
        "4 new proposals from sessions s0, s1 and 2 more, the newest “P3”, are waiting for"
        " review · o opens the newest"
    )
    assert told.take(alice_store.get) is None  # counted again from nothing


def test_the_newest_of_proposals_made_in_the_same_millisecond_is_the_last_one() -> None:
    """A fast agent (or the host and us at once) writes several proposals in one millisecond:
    the notification names the last of them, not whichever came first."""
    same_ms = [
        make_record(
            scope=Scope.USER,
            scope_key="alice",
            record_type=RecordType.FACT,
            title=f"P{i}",
            content=f"c{i}",
            tags=[],
            provenance=Provenance(kind=ProvenanceKind.AGENT, note="agent proposal"),
            origin=Origin.MODEL_SUGGESTED,
            source_refs=[SourceRef(kind="session", id="s")],
            now=1_000,
        )
        for i in range(4)
    ]
    told = Announcements()
    told.add(same_ms)
    assert told.newest == same_ms[-1].id
