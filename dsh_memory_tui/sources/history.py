"""What git knows about a cited file: the cited text in an earlier commit (the diff when no
snapshot was kept), and where a file that is gone was renamed to (git's own rename detection
over what was committed, staged, and is in the working tree).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from .. import git
from ..errors import StoreError
from .snapshots import NOT_KEPT
from .text import MAX_CITED_FILE_BYTES

# How far back git history is searched for the cited text.
GIT_COMMITS = 200


def _in_repo(root: Path, full: Path) -> str | None:
    """``full``'s path in the repository at ``root`` (``/``-separated), or None outside it."""
    try:
        return Path(os.path.realpath(full)).relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return None


def git_text(
    workspace: Path,
    path: str,
    digest: object,
    cited_in: Callable[[bytes], tuple[str, bytes] | None],
) -> tuple[bytes | None, str]:
    """The cited text from git history: the newest of the last ``GIT_COMMITS`` commits that
    touched ``path`` in which ``cited_in`` (the hash and text the citation has in a version
    of the file, or None) gives ``digest``; else None and why.
    """
    root = git.toplevel(workspace)
    if root is None:
        return None, f"{NOT_KEPT}, and the workspace is not a git repository"
    in_repo = _in_repo(root, workspace / path)
    if in_repo is None:
        return None, f"{NOT_KEPT}, and the file is outside the git repository"
    log = git.text(root, "log", f"-n{GIT_COMMITS}", "--format=%H", "--", in_repo)
    try:
        # The file's versions through one git cat-file, newest first, until one holds it.
        with git.Blobs(root) as blobs:
            for commit in (log or "").split():
                shown = blobs.read(f"{commit}:{in_repo}", MAX_CITED_FILE_BYTES)
                got = None if shown is None else cited_in(shown)
                if got is not None and got[0] == digest:
                    return got[1], f"git commit {commit[:12]}"
    except StoreError as exc:
        return None, f"{NOT_KEPT}, and git's history cannot be read ({exc.message})"
    if git.text(root, "rev-parse", "--is-shallow-repository") == "true":
        return None, f"{NOT_KEPT}, and this shallow clone's history does not hold the cited text"
    return None, (
        f"{NOT_KEPT}, and the last {GIT_COMMITS} commits of the file do not hold the cited text"
    )


def renamed(workspace: Path, path: str) -> str | None:
    """Where git's rename detection says the workspace file ``path`` (gone now) went: its
    new path relative to the workspace, or None (not a repository, never committed, deleted,
    or renamed out of the workspace). Compares the last commit that held the file with the
    working tree, staged and unstaged changes and untracked files alike, through a copy of the
    index (the repository's own is never written).
    """
    root = git.toplevel(workspace)
    if root is None:
        return None
    old = _in_repo(root, workspace / path)
    if old is None:
        return None
    base = "HEAD"
    if git.attempt(root, "cat-file", "-e", f"HEAD:{old}") is None:
        commit = git.text(root, "log", "-n1", "--format=%H", "--", old)
        if not commit:
            return None  # never committed: git cannot tell where it went
        base = f"{commit}^"
    with tempfile.TemporaryDirectory(prefix="dsh-renames-") as tmp:
        index = Path(tmp) / "index"
        git_dir = git.text(root, "rev-parse", "--git-dir")
        if git_dir and (root / git_dir / "index").is_file():
            shutil.copyfile(root / git_dir / "index", index)
        # Untracked files as intent-to-add: the working tree's renames are seen too.
        git.attempt(root, "add", "--intent-to-add", "--all", "--", ".", index=index)
        diff = git.attempt(root, "diff", "-M", "--name-status", "-z", base, "--", index=index)
    if diff is None:
        return None
    fields = diff.split(b"\0")
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status[:1] in (b"R", b"C") and i + 2 < len(fields):
            if status[:1] == b"R" and os.fsdecode(fields[i + 1]) == old:
                return _in_workspace(root, workspace, os.fsdecode(fields[i + 2]))
            i += 3
        else:
            i += 2
    return None


def _in_workspace(root: Path, workspace: Path, in_repo: str) -> str | None:
    try:
        return (
            Path(os.path.realpath(root / in_repo))
            .relative_to(os.path.realpath(workspace))
            .as_posix()
        )
    except ValueError:
        return None
