"""The diff since the citation: the cited text as it was (a private snapshot, else git
history, else a line saying why not) against the file now.
"""

from __future__ import annotations

import os
import shutil
import stat

from citing import commit_all, git, store_on, verified, workspace

from dsh_memory_tui.model import SourceRef
from dsh_memory_tui.sources import Sources, State, cited_hash, cited_hashes


def _change(ws):
    (ws / "app.py").write_text((ws / "app.py").read_text().replace("line 4", "line four"))


def _diff(store, rid):
    (check,) = store.sources.checks(store.get(rid))
    return store.sources.diff(check)


def test_the_diff_comes_from_the_snapshot_taken_when_it_was_cited(tmp_path):
    home, ws = workspace(tmp_path, repo=False)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-5")
    _change(ws)
    head, *diff = _diff(store, rid)
    assert "the snapshot taken when it was cited" in head
    assert diff == [
        "--- app.py (cited)",
        "+++ app.py (now)",
        "@@ -3,3 +3,3 @@",
        " line 3",
        "-line 4",
        "+line four",
        " line 5",
    ]


def test_snapshots_are_private(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    verified(store, "app.py:3-5")
    snaps = store.sources.snapshots
    assert snaps is not None
    (snap,) = list(snaps.iterdir())
    assert stat.S_IMODE(os.stat(snaps).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(snaps.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(snap).st_mode) == 0o600
    assert snaps.is_relative_to(home)


def test_without_a_snapshot_the_diff_comes_from_git_history(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-5")
    shutil.rmtree(store.sources.snapshots)
    _change(ws)
    commit_all(ws, "four")
    head, *diff = _diff(store, rid)
    first = git(ws, "rev-list", "--max-parents=0", "HEAD").strip()
    assert f"git commit {first[:12]}" in head
    assert "-line 4" in diff and "+line four" in diff


def test_without_snapshot_or_git_the_diff_says_it_cannot_be_shown(tmp_path):
    home, ws = workspace(tmp_path, repo=False)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-5")
    shutil.rmtree(store.sources.snapshots)
    _change(ws)
    (head,) = _diff(store, rid)
    assert head.startswith(
        "app.py:3-5: lines 3-5 changed; the diff cannot be shown: no snapshot was kept "
    )
    assert "and the workspace is not a git repository. If the memory still holds" in head


def test_a_shallow_clone_without_the_cited_version_says_so(tmp_path):
    _, origin = workspace(tmp_path)
    first = git(origin, "rev-parse", "HEAD").strip()
    (origin / "app.py").write_text((origin / "app.py").read_text().replace("line 4", "line 4b"))
    commit_all(origin, "second")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    # A citation of the first version, which the clone's one commit does not hold.
    old = b"\n".join(git(origin, "show", f"{first}:app.py").encode().splitlines()[2:5])
    ref = SourceRef(kind="file", id="app.py:3-5", contentHash=cited_hash(old))
    shallow = Sources(clone)
    check = shallow.check(ref)
    assert check.state is State.CHANGED
    (head,) = shallow.diff(check)
    assert "and this shallow clone's history does not hold the cited text. If the" in head
    full = Sources(origin)
    assert full.diff(full.check(ref))[0].startswith(
        f"app.py:3-5: lines 3-5 changed; the cited text (git commit {first[:12]})"
    )


def test_a_deleted_file_shows_its_cited_text_removed(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:2-2")
    (ws / "app.py").unlink()
    head, *diff = _diff(store, rid)
    assert "the file is gone" in head
    assert "-line 2" in diff


def test_a_moved_citation_says_where_to(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:2-2")
    (ws / "app.py").write_text("# top\n" + (ws / "app.py").read_text())
    assert _diff(store, rid) == ["app.py:2-2: the cited text is unchanged, now at lines 3-3"]


def test_prune_removes_the_snapshots_nothing_cites(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:1-1")
    store.edit(rid, 2, citations=["app.py:2-2"])  # the first snapshot is cited no more
    assert len(list(store.sources.snapshots.iterdir())) == 2
    live = store.records(include_inactive=True)
    assert store.sources.prune(cited_hashes(live)) == 1
    (ref,) = store.get(rid).governance.sourceRefs
    assert [p.name for p in store.sources.snapshots.iterdir()] == [
        ref.contentHash.removeprefix("sha256:")
    ]


def test_every_diff_opens_with_a_whole_sentence_saying_what_to_do(tmp_path):
    """No sentence with a hole ("against the file is gone"): each state's first line says
    what is compared, or why nothing can be and what the reviewer can do."""
    home, ws = workspace(tmp_path, repo=False)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-5")
    heads = {}
    for name, edit in (
        ("ok", lambda: None),
        ("moved", lambda: (ws / "app.py").write_text("# x\n" + (ws / "app.py").read_text())),
        ("changed", lambda: _change(ws)),
        ("missing", lambda: (ws / "app.py").unlink()),
    ):
        edit()
        (check,) = store.sources.checks(store.get(rid))
        heads[name] = store.sources.diff(check)[0]
    shutil.rmtree(store.sources.snapshots)
    (check,) = store.sources.checks(store.get(rid))
    heads["no old text"] = store.sources.diff(check)[0]
    assert heads["ok"] == "app.py:3-5: unchanged since it was cited"
    assert heads["moved"] == "app.py:3-5: the cited text is unchanged, now at lines 4-6"
    assert heads["changed"].endswith("against the file now (lines 4-6)")
    assert heads["missing"].startswith("app.py:3-5: the file is gone (deleted, or moved where")
    assert heads["missing"].endswith(
        "is shown as removed. If the code lives on elsewhere and the memory still holds, "
        "re-verify it and give where the code is now; else edit its citations or archive it"
    )
    assert heads["no old text"].endswith("else edit its citations or archive it")
    for head in heads.values():
        assert "against the file is gone" not in head and ": :" not in head
