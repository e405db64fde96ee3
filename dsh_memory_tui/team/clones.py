"""Whose clone wrote a record of the shared file (``CloneNames``): its rootId, named by the
git author who first committed a line of it when git can tell.
"""

from __future__ import annotations

from pathlib import Path

from .. import git


def short_root(root_id: str) -> str:
    """A rootId as people read it: its first 8 hex."""
    return "clone " + root_id.removeprefix("root:")[:8]


class CloneNames:
    """Who wrote the records of other clones (rootIds) in a shared file: the git author of the
    first commit that added a line of that rootId, else the rootId's first hex. Asked once per
    rootId (one ``git log -S``); nothing when the workspace is not in a git repository.
    """

    def __init__(self, workspace: Path, shared: Path, own_root: str) -> None:
        self.workspace = workspace
        self.shared = shared
        self.own_root = own_root
        self._names: dict[str, str] = {}

    def label(self, scope_key: str) -> str:
        """ "" for this clone's records; the author (or the rootId's first hex) otherwise."""
        if scope_key == self.own_root:
            return ""
        name = self._names.get(scope_key)
        if name is None:
            author = _first_author(self.workspace, self.shared, scope_key)
            name = self._names[scope_key] = author or short_root(scope_key)
        return name


def _first_author(workspace: Path, shared: Path, scope_key: str) -> str | None:
    done = git.text(
        workspace,
        "log",
        "--no-textconv",
        "--format=%an",
        "-S",
        f'"scopeKey":"{scope_key}"',
        "--",
        str(shared),
    )
    names = [n for n in (done or "").split("\n") if n.strip()]
    return names[-1].strip() if names else None  # newest first: the last is who added it
