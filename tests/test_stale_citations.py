"""What a changed or missing citation does to a verified, active record: it is not served to
agents, cannot be pinned, and waits for re-review; the host's ``stale`` transition records
it; re-verify (the host's ``reverify``) takes today's text and hash.
"""

from __future__ import annotations

import pytest
from citing import store_on, verified, workspace

from dsh_memory_tui.agent_view import Audience, agent_view, eligible, served_records
from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import now_ms
from dsh_memory_tui.sources import State


def _served(store):
    return [r.id for r in served_records(store, Audience())]


def _break(ws, old="line 3", new="line three"):
    (ws / "app.py").write_text((ws / "app.py").read_text().replace(old, new))


def test_a_verified_record_whose_cited_code_changed_is_not_served(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    assert _served(store) == [rid]
    _break(ws)
    assert _served(store) == []
    assert "the app's lines" not in agent_view(store, Audience()).text
    assert not eligible(store.get(rid), now_ms(), store.sources)


def test_a_record_is_served_again_once_the_code_is_put_back(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    _break(ws)
    assert _served(store) == []
    _break(ws, "line three", "line 3")
    assert _served(store) == [rid]


def test_a_moved_citation_is_still_served(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    (ws / "app.py").write_text("# new first line\n" + (ws / "app.py").read_text())
    assert _served(store) == [rid]


def test_a_record_whose_cited_code_changed_cannot_be_pinned(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    _break(ws)
    with pytest.raises(StoreError, match="app.py:3-3 is changed") as caught:
        store.apply("pin", rid)
    assert caught.value.code is ErrorCode.INVALID_TRANSITION
    assert store.get(rid).governance.revision == 2


def test_mark_stale_is_the_hosts_stale_transition_and_unpins(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    store.apply("pin", rid)
    _break(ws)
    (written,), skipped = store.mark_stale([rid])
    assert skipped == []
    assert written.governance.verification.value == "stale"
    assert written.governance.pinnedAt is None
    assert written.governance.revision == 4


def test_reverify_takes_todays_text_through_stale_then_reverify(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    _break(ws)
    record = store.reverify_citations(rid, reason="still true")
    history = store.history(rid)
    assert [r.governance.verification.value for r in history[-2:]] == ["stale", "verified"]
    assert record.governance.revision == 4
    assert record.governance.reviewNote == "still true"
    (check,) = store.sources.checks(record)
    assert check.state is State.OK
    assert _served(store) == [rid]


def test_reverify_of_a_moved_citation_points_it_at_its_new_lines(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-4")
    store.mark_stale([rid])
    (ws / "app.py").write_text("# one\n# two\n" + (ws / "app.py").read_text())
    record = store.reverify_citations(rid)
    assert [r.id for r in record.governance.sourceRefs] == ["app.py:5-6"]
    assert record.governance.revision == 4  # stale already: one reverify


def test_reverify_of_a_citation_whose_file_is_gone_is_refused(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    (ws / "app.py").unlink()
    with pytest.raises(StoreError) as caught:
        store.reverify_citations(rid)
    assert caught.value.code is ErrorCode.INVALID_CITATION
    assert store.get(rid).governance.revision == 2


def test_an_unverified_record_with_changed_code_needs_no_rereview(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    record = store.create("project", "fact", "t", "c", citations=["app.py:3-3"]).record
    _break(ws)
    assert store.sources.holds(record)
    assert store.sources.broken(record)[0].state is State.CHANGED
