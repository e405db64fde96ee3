"""Helpers of the citation tests: a workspace that is a real git repository, and a store on it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from dsh_memory_tui.store import MemoryStore


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "HOME": str(repo),
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
    )
    return done.stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def workspace(tmp_path: Path, *, repo: bool = True) -> tuple[Path, Path]:
    """``(home, workspace)``: the workspace holds ``app.py`` (8 lines), a git repo if ``repo``."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (ws / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 9)))
    if repo:
        git(ws, "init", "-q", "-b", "main")
        commit_all(ws, "first")
    return home, ws


def store_on(home: Path, ws: Path) -> MemoryStore:
    return MemoryStore.open(home, ws, "alice")


def verified(store: MemoryStore, *cites: str, title: str = "the app's lines") -> str:
    """A verified project record citing ``cites``; its id."""
    rid = store.create("project", "fact", title, f"{title}: content", citations=cites).id
    store.verify(rid)
    return rid


def settled(*paths: Path) -> None:
    """Each of ``paths`` modified an hour ago (a distinct mtime each call): a file written just
    before its read is read again at the next check (``text.RACY_NS``), an older one is not,
    so the tests that count reads age what they wrote."""
    for path in paths:
        st = os.lstat(path)  # not os.stat: tests count the checks' stats
        os.utime(path, ns=(st.st_atime_ns, time.time_ns() - 3600 * 10**9))
