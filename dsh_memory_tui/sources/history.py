"""What git knows about a cited file: the cited text in an earlier commit (the diff when no
snapshot was kept), and where a file that is gone was renamed to (git's own rename detection
over what was committed, staged, and is in the working tree).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from .snapshots import NOT_KEPT

# How far back git history is searched for the cited text.
GIT_COMMITS = 200
GIT_TIMEOUT = 10.0


def _git(
    workspace: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            ["git", "-C", os.fspath(workspace), *args],
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", **(env or {})},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _toplevel(workspace: Path) -> Path | None:
    top = _git(workspace, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return None
    return Path(os.fsdecode(top.stdout.strip()))


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
    root = _toplevel(workspace)
    if root is None:
        return None, f"{NOT_KEPT}, and the workspace is not a git repository"
    in_repo = _in_repo(root, workspace / path)
    if in_repo is None:
        return None, f"{NOT_KEPT}, and the file is outside the git repository"
    log = _git(root, "log", f"-n{GIT_COMMITS}", "--format=%H", "--", in_repo)
    commits = log.stdout.decode().split() if log is not None and log.returncode == 0 else []
    for commit in commits:
        shown = _git(root, "show", f"{commit}:{in_repo}")
        if shown is None or shown.returncode != 0:
            continue
        got = cited_in(shown.stdout)
        if got is not None and got[0] == digest:
            return got[1], f"git commit {commit[:12]}"
    shallow = _git(root, "rev-parse", "--is-shallow-repository")
    if shallow is not None and shallow.stdout.strip() == b"true":
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
    root = _toplevel(workspace)
    if root is None:
        return None
    old = _in_repo(root, workspace / path)
    if old is None:
        return None
    base = "HEAD"
    held = _git(root, "cat-file", "-e", f"HEAD:{old}")
    if held is None or held.returncode != 0:
        last = _git(root, "log", "-n1", "--format=%H", "--", old)
        commit = last.stdout.decode().strip() if last is not None and last.returncode == 0 else ""
        if not commit:
            return None  # never committed: git cannot tell where it went
        base = f"{commit}^"
    with tempfile.TemporaryDirectory(prefix="dsh-renames-") as tmp:
        index = os.path.join(tmp, "index")
        env = {"GIT_INDEX_FILE": index}
        git_dir = _git(root, "rev-parse", "--git-dir")
        if git_dir is not None and git_dir.returncode == 0:
            real = root / os.fsdecode(git_dir.stdout.strip()) / "index"
            if real.is_file():
                shutil.copyfile(real, index)
        # Untracked files as intent-to-add: the working tree's renames are seen too.
        _git(root, "add", "--intent-to-add", "--all", "--", ".", env=env)
        diff = _git(root, "diff", "-M", "--name-status", "-z", base, "--", env=env)
    if diff is None or diff.returncode != 0:
        return None
    fields = diff.stdout.split(b"\0")
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status.startswith(b"R") and i + 2 < len(fields):
            if os.fsdecode(fields[i + 1]) == old:
                return _in_workspace(root, workspace, os.fsdecode(fields[i + 2]))
            i += 3
        elif status.startswith(b"C") and i + 2 < len(fields):
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
