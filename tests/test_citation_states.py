"""Each citation's state, computed at read: ok, moved (an edit above must not cry wolf),
changed, missing; a file is read again only when its size, mtime, inode or device changed.
"""

from __future__ import annotations

import os
import time

from citing import settled, store_on, verified, workspace

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
    settled(path)  # written an hour ago: its stat is trusted
    assert _state(store, rid).state is State.OK
    before = os.stat(path)
    # Same size, same inode, an old mtime put back on purpose: the check is one stat and
    # still says ok (what the stat shortcut trusts: docs/citations.md).
    with open(path, "r+b") as f:
        f.seek(len(b"line 1\nline 2\n"))
        f.write(b"LINE 3")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _state(store, rid).state is State.OK
    # A new mtime: read again, and the change is seen.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert _state(store, rid).state is State.CHANGED


def test_a_same_size_edit_just_after_a_read_keeping_the_mtime_is_seen(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-3")
    path = ws / "app.py"
    # Modified as the check reads it (an mtime in the future is always so): racily clean.
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, time.time_ns() + 60 * 10**9))
    assert _state(store, rid).state is State.OK
    before = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(len(b"line 1\nline 2\n"))
        f.write(b"LINE 3")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path)[1:] == before[1:]  # the same size, inode, mtime
    assert _state(store, rid).state is State.CHANGED
    assert not store.sources.holds(store.get(rid))


def test_a_fresh_reader_sees_the_same_states(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    ok, bad = verified(store, "app.py:1-1", title="a"), verified(store, "app.py:2-2", title="b")
    (ws / "app.py").write_text((ws / "app.py").read_text().replace("line 2", "line two"))
    fresh = Sources(ws)
    states = {rs.record.id: rs.needs_review for rs in report(fresh, store.records())}
    assert states == {ok: False, bad: True}


def _cited_stats(monkeypatch, ws) -> list[str]:
    """Every ``os.stat`` of a file under ``ws`` from now on."""
    seen: list[str] = []
    real = os.stat
    top = os.path.realpath(ws)

    def counting(path, *args, **kwargs):
        # A check stats relative to the workspace (``dir_fd``) in a batch, else by full path.
        full = os.fspath(path)
        if kwargs.get("dir_fd") is not None:
            full = os.path.join(os.readlink(f"/proc/self/fd/{kwargs['dir_fd']}"), full)
        if full.startswith(top):
            seen.append(full)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting)
    return seen


def _many(store, ws) -> list[str]:
    """Ten records citing three files, thirty citations in all."""
    for name in ("a.py", "b.py", "c.py"):
        (ws / name).write_text("".join(f"{name} {i}\n" for i in range(1, 21)))
        settled(ws / name)
    cites = [f"{n}:{i}-{i + 1}" for n in ("a.py", "b.py", "c.py") for i in range(1, 11)]
    return [verified(store, *cites[i::10], title=f"r{i}") for i in range(10)]


def test_a_check_reads_each_changed_file_once_for_all_its_citations(tmp_path, monkeypatch):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    _many(store, ws)
    records = store.records()
    fresh = Sources(ws)
    stats = _cited_stats(monkeypatch, ws)
    assert not any(rs.needs_review for rs in report(fresh, records))
    assert fresh.reads == 3  # one read per file, whatever its ten citations
    assert sorted(os.path.basename(p) for p in stats) == ["a.py", "b.py", "c.py"]
    stats.clear()
    (ws / "b.py").write_text((ws / "b.py").read_text().replace("b.py 5\n", "b.py five\n"))
    settled(ws / "b.py")
    found = report(fresh, records)
    assert fresh.reads == 4  # only the changed file again
    assert len(stats) == 3  # one stat per file per check
    assert sum(rs.needs_review for rs in found) == 2  # b.py:4-5 and b.py:5-6


async def test_the_mcp_server_keeps_its_states_and_rechecks_only_changed_files(tmp_path):
    from dsh_memory_tui.mcp import MemoryServer

    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    ids = _many(store, ws)
    server = MemoryServer(store_on(home, ws), "s1")
    sources = server.store.sources
    assert len(server.view().records) == 10
    reads = sources.reads
    for _ in range(3):
        assert len(server.view(query="r").records) == 10
    assert sources.reads == reads  # nothing changed: stats only
    (ws / "c.py").write_text((ws / "c.py").read_text().replace("c.py 10\n", "c.py ten\n"))
    settled(ws / "c.py")
    served = {r.id for r in server.view().records}
    assert sources.reads == reads + 1
    assert served == set(ids) - {ids[8], ids[9]}  # c.py:9-10 and c.py:10-11
