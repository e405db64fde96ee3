"""Each citation's state, computed at read: ok, moved (an edit above must not cry wolf),
changed, missing; a file is read again only when its size, mtime, inode or device changed.
"""

from __future__ import annotations

import os

from citing import store_on, verified, workspace

from dsh_memory_tui.sources import Sources, State, report


def _state(store, rid):
    (check,) = store.sources.checks(store.get(rid))
    return check


def test_an_untouched_citation_is_ok(tmp_path):
    store = store_on(*workspace(tmp_path))
    rid = verified(store, "app.py:3-4")
    assert _state(store, rid).state is State.OK
    assert store.sources.holds(store.get(rid))


def test_lines_added_above_move_the_citation_without_breaking_it(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-4")
    text = (ws / "app.py").read_text()
    (ws / "app.py").write_text("# header\n# more\n" + text)
    check = _state(store, rid)
    assert (check.state, check.now_at) == (State.MOVED, (5, 6))
    assert "now at lines 5-6" in check.why
    assert store.sources.holds(store.get(rid))


def test_a_changed_cited_line_is_changed(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-4")
    (ws / "app.py").write_text((ws / "app.py").read_text().replace("line 4", "line four"))
    check = _state(store, rid)
    assert check.state is State.CHANGED
    assert not store.sources.holds(store.get(rid))


def test_a_change_outside_the_cited_lines_is_not_a_change(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-4")
    (ws / "app.py").write_text((ws / "app.py").read_text().replace("line 7", "line seven"))
    assert _state(store, rid).state is State.OK


def test_a_file_cut_short_is_changed_and_says_where_it_ends(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:7-8")
    (ws / "app.py").write_text("line 1\nline 2\n")
    check = _state(store, rid)
    assert check.state is State.CHANGED
    assert "ends at line 2" in check.why


def test_a_deleted_file_is_missing(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:1-2")
    (ws / "app.py").unlink()
    assert _state(store, rid).state is State.MISSING


def test_a_file_replaced_by_a_symlink_out_is_missing(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:1-2")
    (tmp_path / "elsewhere.py").write_text((ws / "app.py").read_text())
    (ws / "app.py").unlink()
    (ws / "app.py").symlink_to(tmp_path / "elsewhere.py")
    check = _state(store, rid)
    assert check.state is State.MISSING
    assert "outside the workspace" in check.why


def test_a_file_converted_to_crlf_still_holds(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:2-5")
    (ws / "app.py").write_bytes((ws / "app.py").read_bytes().replace(b"\n", b"\r\n"))
    assert _state(store, rid).state is State.OK


def test_a_file_is_not_read_again_while_its_size_mtime_and_inode_stay(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    path = ws / "app.py"
    assert _state(store, rid).state is State.OK
    before = os.stat(path)
    # Same size, same inode, mtime put back: the check is one stat and still says ok.
    with open(path, "r+b") as f:
        f.seek(len(b"line 1\nline 2\n"))
        f.write(b"LINE 3")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _state(store, rid).state is State.OK
    # A new mtime: read again, and the change is seen.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert _state(store, rid).state is State.CHANGED


def test_a_fresh_reader_sees_the_same_states(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    ok, bad = verified(store, "app.py:1-1", title="a"), verified(store, "app.py:2-2", title="b")
    (ws / "app.py").write_text((ws / "app.py").read_text().replace("line 2", "line two"))
    fresh = Sources(ws)
    states = {rs.record.id: rs.needs_review for rs in report(fresh, store.records())}
    assert states == {ok: False, bad: True}
