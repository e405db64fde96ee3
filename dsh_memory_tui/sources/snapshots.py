"""Private copies of cited text, named by its hash, so the diff since a citation needs no git.

One directory per workspace under the home (``snapshots_dir``), 0600 files in 0700
directories; at most ``MAX_SNAPSHOT_BYTES`` each and ``MAX_SNAPSHOTS_BYTES`` per workspace.
Text a secret detector flags (``lint``'s, passed in by the store: a key in a cited ``.env``,
a token in ``.git/config``) is never copied into the home: its diff comes from git history or is not
shown, and says so. ``prune`` removes what no record cites; ``erase`` what a forgotten
record cited.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from .. import jsonl
from ..errors import StoreError
from .kinds import HASH

# A snapshot holds at most this much cited text; a larger citation is diffed from git only.
MAX_SNAPSHOT_BYTES = 256 * 1024
# All snapshots of one workspace; past it, new citations get no snapshot (git history only).
MAX_SNAPSHOTS_BYTES = 64 * 1024 * 1024
# What the diff says when no snapshot is at hand.
NOT_KEPT = "no snapshot was kept (text holding a secret, or over 256 KiB, never is)"


def snapshots_dir(home_memory_dir: Path, root_id: str) -> Path:
    """Where one workspace's snapshots live under the home."""
    return home_memory_dir / "snapshots" / hashlib.sha256(root_id.encode()).hexdigest()[:32]


def snapshots_size(directory: Path) -> int:
    total = 0
    try:
        for entry in os.scandir(directory):
            if entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    except FileNotFoundError:
        return 0
    return total


# Whether a text holds a secret (the store passes ``lint``'s detectors; this package reads
# no record text, and ``lint`` reads ours).
SecretCheck = Callable[[bytes], bool]


class Snapshots:
    """One workspace's snapshots (``directory`` None: none are kept); ``secret``: the secret
    detectors (without them nothing is kept: a snapshot could copy a secret)."""

    def __init__(self, directory: Path | None, secret: SecretCheck | None = None) -> None:
        self.directory = directory
        self.secret = secret

    def path(self, digest: object) -> Path | None:
        if self.directory is None or not isinstance(digest, str) or not HASH.match(digest):
            return None
        return self.directory / digest.removeprefix("sha256:")

    def keep(self, digest: str, data: bytes) -> None:
        """Keep ``data`` as the snapshot of ``digest``, unless it is one already, too large,
        would pass the workspace's bound, or holds a secret."""
        path = self.path(digest)
        if path is None or self.directory is None or len(data) > MAX_SNAPSHOT_BYTES:
            return
        if self.secret is None or os.path.lexists(path) or self.secret(data):
            return
        jsonl.ensure_dir(self.directory)
        if snapshots_size(self.directory) + len(data) > MAX_SNAPSHOTS_BYTES:
            return
        jsonl.write_atomic(path, data)

    def read(self, digest: object, digest_of: Callable[[bytes], str]) -> bytes | None:
        """The text kept when ``digest`` was cited, if it is kept and still hashes so."""
        path = self.path(digest)
        if path is None:
            return None
        try:
            got = jsonl.read_file(path)
        except StoreError:
            return None
        if got is None or digest_of(got[1]) != digest:
            return None
        return got[1]

    def prune(self, cited: Iterable[object]) -> int:
        """Remove every snapshot whose hash is not in ``cited``; the number removed."""
        if self.directory is None or not os.path.isdir(self.directory):
            return 0
        keep = {h.removeprefix("sha256:") for h in cited if isinstance(h, str)}
        removed = 0
        for entry in os.scandir(self.directory):
            if entry.name not in keep and entry.is_file(follow_symlinks=False):
                removed += _unlink(entry.path)
        return removed

    def erase(self, digests: Iterable[object], everywhere: bool = False) -> int:
        """Remove the snapshots of ``digests`` (a forgotten record's); ``everywhere``: in
        every workspace's directory under the home too (a user-scope record's citations were
        made in any of them). The number removed.
        """
        if self.directory is None:
            return 0
        names = {d.removeprefix("sha256:") for d in digests if isinstance(d, str) and HASH.match(d)}
        dirs = [self.directory]
        if everywhere and os.path.isdir(self.directory.parent):
            dirs = [Path(e.path) for e in os.scandir(self.directory.parent) if e.is_dir()]
        return sum(_unlink(os.path.join(d, name)) for d in dirs for name in names)


def _unlink(path: str | os.PathLike[str]) -> int:
    try:
        os.unlink(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return 0
    return 1
