"""Near-duplicates (``lint.NearDuplicates``): records that say the same thing are paired
whatever the rewording, case, punctuation, word order or script; 200 distinct records of one
realistic project give no pair; the index follows records one at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_memory_tui import lint
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    SourceRef,
    make_record,
)

from .labelled import NEAR_DUPLICATES

DISTINCT = Path(__file__).with_name("distinct_records.txt")


def record(title: str, content: str, scope: Scope = Scope.PROJECT, rid: str | None = None):
    return make_record(
        scope=scope,
        scope_key="root:" + "0" * 64 if scope is not Scope.USER else "alice",
        record_type=RecordType.FACT,
        title=title,
        content=content,
        tags=[],
        provenance=Provenance(kind=ProvenanceKind.AGENT, note="memory proposal"),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="s1")],
        now=1_700_000_000_000,
        record_id=rid,
    )


def distinct_records():
    rows = [
        line.rstrip("\n").split("|")
        for line in DISTINCT.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    return [
        record(title, content, rid=f"memory:d{i}") for i, (_, title, content) in enumerate(rows)
    ]


@pytest.mark.parametrize(
    ("a", "b"), NEAR_DUPLICATES, ids=[f"{a[0]} ~ {b[0]}" for a, b in NEAR_DUPLICATES]
)
def test_a_reworded_record_is_a_near_duplicate(a, b):
    first, second = record(*a, rid="memory:a"), record(*b, rid="memory:b")
    index = lint.NearDuplicates([first])
    [found] = index.similar(second)
    assert found.record_id == "memory:a" and found.score >= lint.NEAR_DUPLICATE


def test_two_hundred_distinct_records_of_one_project_give_no_pair():
    records = distinct_records()
    assert len(records) == 200
    assert lint.NearDuplicates(records).pairs() == []


def test_near_duplicates_are_found_among_many_distinct_records():
    records = distinct_records()
    (t1, c1), (t2, c2) = NEAR_DUPLICATES[8]  # tmp_path in tests
    index = lint.NearDuplicates([*records, record(t1, c1, rid="memory:tmp")])
    assert [s.record_id for s in index.similar(record(t2, c2, rid="memory:new"))] == ["memory:tmp"]


def test_a_proposal_repeating_a_known_gotcha_finds_it():
    records = distinct_records()  # d5: "httpx 0.28 removed the proxies argument"
    (t1, c1), _ = NEAR_DUPLICATES[2]
    found = lint.NearDuplicates(records).similar(record(t1, c1, rid="memory:new"))
    assert [s.record_id for s in found] == ["memory:d5"]


def test_case_punctuation_and_word_order_do_not_matter():
    a = record("Pin httpx below 0.28", "Our client breaks on 0.28.")
    b = record("0.28: HTTPX -- pin below!", "on 0.28 our client BREAKS")
    assert (
        lint.similarity(lint.fingerprint(a.title, a.content), lint.fingerprint(b.title, b.content))
        == 1.0
    )


def test_chinese_text_without_spaces_is_compared_by_character_pairs():
    assert {"数据", "据库"} <= lint.tokens("数据库使用PostgreSQL")
    assert "postgres" in lint.tokens("数据库使用PostgreSQL")


def test_records_of_the_same_scope_come_first():
    mine = record("Run ruff before every commit", "CI fails without it.", rid="memory:p")
    user = record("Run ruff before every commit!", "CI fails without it", Scope.USER, "memory:u")
    index = lint.NearDuplicates([user, mine])
    probe = record("run ruff before each commit", "CI fails without it.", rid="memory:q")
    assert [s.record_id for s in index.similar(probe)] == ["memory:p", "memory:u"]


def test_the_index_follows_a_new_revision_and_a_removal():
    a = record("Run ruff before every commit", "CI fails without it.", rid="memory:a")
    b = record("Run ruff before each commit", "CI fails otherwise.", rid="memory:b")
    index = lint.NearDuplicates([a, b])
    assert [s.record_id for s in index.similar(a)] == ["memory:b"]
    index.update(record("Use PostgreSQL 16", "SQLite only in tests.", rid="memory:b"))
    assert index.similar(a) == []
    index.remove("memory:b")
    assert "memory:b" not in index and len(index) == 1


def test_a_record_is_not_its_own_near_duplicate():
    a = record("Run ruff before every commit", "CI fails without it.", rid="memory:a")
    assert lint.NearDuplicates([a]).similar(a) == []


def test_the_auto_writers_digests_are_not_compared():
    digest = record("Session workspace digest (auto)", "Files touched: 3 (3 created).")
    digest = digest.model_copy(
        update={"governance": digest.governance.model_copy(update={"origin": Origin.DERIVED})}
    )
    assert not lint.visible_to_reviewer(digest)
    assert lint.visible_to_reviewer(record("Run ruff", "CI fails on ruff errors."))
