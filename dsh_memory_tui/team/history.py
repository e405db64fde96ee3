"""The shared file's history in git: each committed version, and for each line the commit that
first brought it (its author, whether a merge made it).

``read_history`` walks the commits that touched the file, oldest first (``--topo-order``, every
branch: ``--full-history``), reads each version through one ``git cat-file`` process, and
parses each distinct line once. The first version read is the *baseline*: the history of the
file starts there (its first commit, a shallow clone's boundary, or the ``MAX_COMMITS`` cap).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .. import git
from ..errors import ErrorCode, StoreError
from ..jsonl import MAX_STORE_BYTES
from ..model import Record, RecordInvalid, parse_line, parse_lines

# The newest commits of the file read; older ones are the baseline's past.
MAX_COMMITS = 2000
_SEP = "\x1f"


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author: str  # "Name <email>"
    time: int  # seconds since the epoch (the committer's)

    @property
    def short(self) -> str:
        return self.sha[:12]

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def name(self) -> str:
        return self.author.split(" <", 1)[0]


WORKING_TREE = Commit("", (), "", 0)  # lines not committed yet


@dataclass(frozen=True, slots=True)
class Version:
    commit: Commit
    data: bytes


@dataclass(slots=True)
class History:
    """What git knows of the shared file: its versions oldest first, and each line's origin."""

    path: str  # the file's path in the repository ("" when not in one)
    versions: list[Version] = field(default_factory=list)
    origin: dict[bytes, Commit] = field(default_factory=dict)  # line -> the commit that brought it
    records: dict[bytes, Record] = field(default_factory=dict)  # line -> its record
    baseline: set[bytes] = field(default_factory=set)  # the lines of the first version read
    truncated: bool = False  # older commits than MAX_COMMITS were not read

    def take(self, data: bytes, commit: Commit) -> None:
        """One more version (newer than every one taken): its new lines get ``commit``."""
        lines = data.split(b"\n")
        fresh = [i for i, raw in enumerate(lines) if raw and raw not in self.origin]
        for raw, result in _entries(lines, fresh):
            if isinstance(result, Record):
                self.records[raw] = result
            self.origin.setdefault(raw, commit)
        if not self.versions and commit is not WORKING_TREE:
            self.baseline = {raw for raw in lines if raw}
        if commit is not WORKING_TREE:
            self.versions.append(Version(commit, data))


def _entries(lines: list[bytes], fresh: list[int]) -> Iterator[tuple[bytes, object]]:
    """Each new entry of a version: the lines of ``fresh`` one by one, or, when one of them
    is not JSON (a record spanning lines), every entry of the version that holds one.
    """
    out: list[tuple[bytes, object]] = []
    for i in fresh:
        try:
            out.append((lines[i], parse_line(lines[i], None)))
        except RecordInvalid as exc:
            if exc.not_json:
                break
            out.append((lines[i], exc))
    else:
        yield from out
        return
    wanted = set(fresh)
    for entry in parse_lines(lines, None):
        if any(i in wanted for i in range(entry.first, entry.last + 1)):
            yield entry.raw, entry.result


def repository_path(workspace: Path, shared: Path) -> tuple[Path, str] | None:
    """The repository's top and the shared file's path in it, or None outside git."""
    top = git.toplevel(workspace)
    if top is None:
        return None
    try:
        rel = Path(os.path.realpath(shared)).relative_to(os.path.realpath(top))
    except ValueError:
        return None
    return top, rel.as_posix()


def commits(top: Path, rel: str, revisions: str = "HEAD") -> tuple[list[Commit], bool]:
    """The commits of ``revisions`` (``HEAD``, ``A..B``) that touched ``rel``, oldest first,
    and whether older ones were left out (``MAX_COMMITS``). ``GIT_FAILED``.
    """
    fmt = _SEP.join(("%H", "%P", "%an <%ae>", "%ct"))
    out = git.run(
        top,
        "log",
        "--topo-order",
        "--full-history",
        f"--max-count={MAX_COMMITS + 1}",
        f"--format={fmt}",
        revisions,
        "--",
        rel,
    )
    found = []
    for line in out.decode("utf-8", "replace").splitlines():
        parts = line.split(_SEP)
        if len(parts) == 4:
            found.append(Commit(parts[0], tuple(parts[1].split()), parts[2], int(parts[3] or 0)))
    truncated = len(found) > MAX_COMMITS
    return list(reversed(found[:MAX_COMMITS])), truncated


def read_history(top: Path, rel: str, revisions: str = "HEAD") -> History:
    """Every version of ``rel`` in ``revisions``, oldest first (``History``). A version over
    the host's cap is skipped. ``GIT_FAILED`` when git cannot read them.
    """
    history = History(rel)
    found, history.truncated = commits(top, rel, revisions)
    with git.Blobs(top) as blobs:
        for commit in found:
            data = blobs.read(f"{commit.sha}:{rel}", MAX_STORE_BYTES)
            if data is not None:
                history.take(data, commit)
    return history


def head(top: Path) -> str | None:
    """The commit checked out (None before the first commit)."""
    return git.text(top, "rev-parse", "--verify", "-q", "HEAD") or None


def version_at(top: Path, rel: str, revision: str) -> bytes | None:
    """The file as ``revision`` holds it (None: not there). ``GIT_FAILED``."""
    with git.Blobs(top) as blobs:
        return blobs.read(f"{revision}:{rel}", MAX_STORE_BYTES)


def resolve(top: Path, revision: str) -> str:
    """``revision`` as a commit id; ``GIT_FAILED`` naming it when git does not know it."""
    got = git.text(top, "rev-parse", "--verify", "-q", f"{revision}^{{commit}}")
    if not got:
        raise StoreError(ErrorCode.GIT_FAILED, f"git does not know the revision {revision!r}")
    return got
