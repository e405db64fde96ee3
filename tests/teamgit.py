"""A team in ``tmp_path``: a bare origin and clones at different paths, each with its own home,
the real git and the real ``dsh-memory`` (tests of team memory and its merge driver).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import run_cli

from dsh_memory_tui.model import Record, Scope, parse_line
from dsh_memory_tui.paths import StorePaths
from dsh_memory_tui.store import MemoryStore

SHARED = ".dsh/workspace-memory/shared.jsonl"


def git(
    cwd: Path,
    *args: str,
    author: str = "Tester",
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``git args`` in ``cwd`` as ``author``, with no user or system config in the way."""
    full = {
        **os.environ,
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": f"{author.lower()}@example.com",
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": f"{author.lower()}@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        **(env or {}),
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=full, timeout=120
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )
    return done


@dataclass
class Clone:
    """One teammate's clone: its working tree (its own path, so its own rootId) and home."""

    path: Path
    home: Path
    author: str

    @property
    def store(self) -> MemoryStore:
        return MemoryStore.open(self.home, self.path, self.author.lower())

    @property
    def root_id(self) -> str:
        return StorePaths(self.home, self.path.resolve(), "x").root_id

    @property
    def shared(self) -> Path:
        return self.path / SHARED

    def cli(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(self.home, self.path, *args, user=self.author.lower(), env=env)

    def ok(self, *args: str) -> str:
        done = self.cli(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def git(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return git(self.path, *args, author=self.author, env=env, check=check)

    def create(self, title: str, content: str, **kw: Any) -> Record:
        return self.store.create(
            Scope.SHARED, "fact", title, content, confirm_shared=True, **kw
        ).record

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def publish(self, message: str) -> str:
        """Commit everything and push it to the origin: the commit's sha."""
        self.commit(message)
        self.git("push", "-q", "origin", "HEAD")
        return self.git("rev-parse", "HEAD").stdout.strip()

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.shared.read_bytes().splitlines() if x.strip()]


def make_team(tmp_path: Path, *, install: bool = True) -> tuple[Path, Clone, Clone]:
    """A bare origin with one commit, and two clones of it at unrelated paths (alice's and
    bob's), each with the driver installed (``install``: in the clone's own git files, so
    nothing to commit) and its own home.
    """
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(origin), str(seed))
    (seed / "README").write_text("a project\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "start")
    git(seed, "push", "-q", "origin", "main")
    clones = []
    for author, where in (("Alice", "alice/work/project"), ("Bob", "elsewhere/bob-project")):
        path = tmp_path / where
        path.parent.mkdir(parents=True)
        git(tmp_path, "clone", "-q", str(origin), str(path))
        clone = Clone(path, tmp_path / f"home-{author.lower()}", author)
        if install:
            clone.ok("git", "install")  # each clone's own: nothing to commit
        clones.append(clone)
    return origin, clones[0], clones[1]


def verified_by_alice_pulled_by_bob(alice: Clone, bob: Clone) -> Record:
    """A shared record Alice made and verified, published, and pulled into Bob's clone."""
    record = alice.create("Release", "tag then push")
    alice.store.verify(record.id, confirm_shared=True)
    alice.publish("release")
    bob.git("pull", "-q", "origin", "main")
    return record


def decided_two_ways(alice: Clone, bob: Clone, record: Record) -> Record:
    """Bob and Alice each edit ``record`` (revision 2) and Alice pulls Bob's edit with git's
    own merge (the driver installed): the rival version the merge kept beside hers."""
    bob.store.edit(record.id, 2, content="tag, push, announce", confirm_shared=True)
    bob.publish("bob's release")
    alice.store.edit(record.id, 2, content="tag and push both remotes", confirm_shared=True)
    alice.commit("alice's release")
    done = alice.git("pull", "--no-rebase", "origin", "main", env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    _, [rival] = alice.store.conflict(record.id)
    return rival


def records_of(data: bytes) -> dict[str, dict[str, Any]]:
    """Each id's current line (the last one), as the host reads a file."""
    out: dict[str, dict[str, Any]] = {}
    for line in data.splitlines():
        if line.strip():
            obj = json.loads(line)
            out[obj["id"]] = obj
    return out


def all_valid(data: bytes, root_id: str) -> None:
    """Every line is a record the host accepts in a shared file (a teammate's or ours)."""
    from dsh_memory_tui.model import Location

    for line in data.splitlines():
        if line.strip():
            assert isinstance(parse_line(line, Location(Scope.SHARED, root_id)), Record), line
