"""Secrets in cited files stay out of the home: citing a ``.env`` or ``.git/config`` whose
text a secret detector flags keeps no snapshot (the diff comes from git history, or says it
cannot be shown and why); a record's ``forget`` erases the snapshots it made (but a text
another record still cites), in every workspace's directory for a user-scope record.
"""

from __future__ import annotations

from pathlib import Path

from citing import commit_all, store_on, verified, workspace

SECRET = "GITHUB_TOKEN=ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\n"


def _kept(home: Path) -> list[bytes]:
    root = home / "workspace-memory" / "snapshots"
    return [p.read_bytes() for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_a_cited_env_file_holding_a_token_is_not_snapshotted(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / ".env").write_text("DEBUG=1\n" + SECRET)
    commit_all(ws, "env")
    store = store_on(home, ws)
    rid = verified(store, ".env", ".env:1-1", "app.py:2-2")
    kept = _kept(home)
    assert b"DEBUG=1" in kept and b"line 2" in kept  # the lines without a secret are kept
    assert not any(b"ghp_" in k for k in kept)
    (ws / ".env").write_text("DEBUG=0\n" + SECRET)
    whole = next(c for c in store.sources.checks(store.get(rid)) if c.label == ".env")
    head, *diff = store.sources.diff(whole)
    assert "git commit" in head  # from history, not from the home
    assert "-DEBUG=1" in diff and "+DEBUG=0" in diff


def test_without_git_the_diff_of_a_secret_says_why_it_cannot_be_shown(tmp_path):
    home, ws = workspace(tmp_path, repo=False)
    (ws / ".git").mkdir()  # not a repository: only a config file
    (ws / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://alice:ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d'
        "@github.com/a/b.git\n"
    )
    store = store_on(home, ws)
    rid = verified(store, ".git/config")
    assert _kept(home) == []
    (ws / ".git" / "config").write_text("[core]\n")
    (check,) = store.sources.checks(store.get(rid))
    (head,) = store.sources.diff(check)
    assert "no snapshot was kept (text holding a secret" in head
    assert "edit its citations" in head


def test_forget_erases_the_snapshots_the_record_made_but_those_others_cite(tmp_path):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    gone = verified(store, "app.py:1-2", "app.py:5-5", title="a")
    verified(store, "app.py:5-5", title="b")
    store.edit(gone, 2, citations=["app.py:3-3"])  # an earlier revision cited other lines
    assert {b"line 1\nline 2", b"line 3", b"line 5"} <= set(_kept(home))
    store.forget(gone)
    assert sorted(_kept(home)) == [b"line 5"]  # the other record cites it


def test_forget_of_a_user_record_erases_its_snapshots_in_every_workspace(tmp_path):
    home, ws = workspace(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.md").write_text("use tabs\n")
    rid = (
        store_on(home, other)
        .create("user", "preference", "Tabs", "tabs", citations=["notes.md"])
        .id
    )
    assert _kept(home) == [b"use tabs"]
    store_on(home, ws).forget(rid)  # from another workspace
    assert _kept(home) == []
