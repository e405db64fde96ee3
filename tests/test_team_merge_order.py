"""A merge never makes an older revision current: after every merge, each record's lines end
in revision order, and both directions give the same records and the same current line per id;
and no history the tool and git wrote is taken for a forged one (``team.chain``).
Real git repositories (two worktrees at different paths, so two rootIds), the real driver, and
random histories: proposals, verifies, rejects, edits, forgets, pins, archives, compactions,
commits, reverts, cherry-picks and merges on each side.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability.harness import scaled
from teamgit import SHARED, Clone, git, make_team, records_of

from dsh_memory_tui import team
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.model import Scope
from dsh_memory_tui.store import MemoryStore
from dsh_memory_tui.team.chain import broken_chains


def lines_in_revision_order(data: bytes) -> None:
    """Every id's current (last) line holds its highest revision."""
    top: dict[str, int] = {}
    last: dict[str, int] = {}
    for raw in data.splitlines():
        if raw.strip():
            obj = json.loads(raw)
            revision = obj["governance"]["revision"]
            top[obj["id"]] = max(top.get(obj["id"], 0), revision)
            last[obj["id"]] = revision
    late = {rid: (last[rid], top[rid]) for rid in top if last[rid] != top[rid]}
    assert not late, f"current line older than an earlier one: {late}"


# ----------------------------------------------------------------- the seams, one by one


def test_a_revert_of_a_compaction_does_not_make_an_older_revision_current(tmp_path):
    _, alice, bob = make_team(tmp_path)
    rid = alice.create("Release", "tag then push").id
    alice.store.verify(rid, confirm_shared=True)
    alice.store.apply("pin", rid, confirm_shared=True)
    alice.commit("release, verified, pinned")
    alice.store.compact(alice.store.file_for(Scope.SHARED), confirm_shared=True)
    alice.commit("compact")
    alice.git("revert", "--no-edit", "HEAD")  # the old lines come back, after the newest
    data = alice.shared.read_bytes()
    lines_in_revision_order(data)
    assert records_of(data)[rid]["governance"]["revision"] == 3
    assert alice.store.get(rid).governance.pinned


def test_a_merge_where_only_one_side_adds_older_lines_keeps_the_newest_current(tmp_path):
    _, alice, bob = make_team(tmp_path)
    rid = alice.create("Release", "tag then push").id
    alice.store.verify(rid, confirm_shared=True)
    alice.commit("release")
    alice.store.compact(alice.store.file_for(Scope.SHARED), confirm_shared=True)
    alice.commit("compact")
    alice.git("push", "-q", "origin", "main")
    bob.git("pull", "-q", "--no-rebase", "origin", "main")
    alice.git("revert", "--no-edit", "HEAD")  # one branch brings back lines of revision 1
    alice.git("push", "-q", "origin", "main")
    bob.create("Lint", "ruff check")  # the other does not touch the record
    bob.commit("lint")
    done = bob.git("pull", "-q", "--no-rebase", "origin", "main")
    assert done.returncode == 0, done.stderr
    data = bob.shared.read_bytes()
    lines_in_revision_order(data)
    assert records_of(data)[rid]["governance"]["verification"] == "verified"


def test_check_reports_and_repair_mends_a_current_line_older_than_an_earlier_one(tmp_path):
    alice = Clone(tmp_path / "project", tmp_path / "home", "Alice")
    alice.shared.parent.mkdir(parents=True)
    rid = alice.create("Release", "tag then push").id
    alice.store.verify(rid, confirm_shared=True)
    first, second = alice.shared.read_bytes().splitlines(keepends=True)
    alice.shared.write_bytes(second + first)  # what the merge used to leave
    assert alice.store.get(rid).governance.verification.value == "unverified"
    done = alice.cli("check")
    assert done.returncode == 1
    assert f"out-of-order: {rid}: its current line is revision 1" in done.stdout
    done = alice.cli("check", "--repair")
    assert done.returncode == 0, done.stdout
    lines_in_revision_order(alice.shared.read_bytes())
    assert alice.store.get(rid).governance.verification.value == "verified"
    assert alice.cli("check").returncode == 0


def test_cherry_pick_of_an_older_commit_keeps_the_newest_current(tmp_path):
    _, alice, bob = make_team(tmp_path)
    rid = alice.create("Release", "tag then push").id
    alice.commit("release")
    alice.git("push", "-q", "origin", "main")
    bob.git("pull", "-q", "--no-rebase", "origin", "main")
    bob.git("checkout", "-q", "-b", "side")
    bob.store.verify(rid, confirm_shared=True)
    bob.commit("verify")
    bob.git("checkout", "-q", "main")
    bob.store.reject(rid, confirm_shared=True)  # decided the other way on main
    bob.commit("reject")
    side = bob.git("rev-parse", "side").stdout.strip()
    done = bob.git("cherry-pick", side, check=False)
    assert done.returncode == 0, done.stderr
    data = bob.shared.read_bytes()
    lines_in_revision_order(data)
    current = records_of(data)[rid]
    assert current["governance"]["revision"] == 3  # decided two ways: unverified for review
    assert current["governance"]["verification"] == "unverified"


# ----------------------------------------------------------------- random histories


@dataclass
class Side:
    """One branch in its own worktree (its own path, so its own rootId) and its own home."""

    name: str
    path: Path
    home: Path

    def store(self) -> MemoryStore:
        return MemoryStore.open(self.home, self.path, self.name)

    def git(self, *args: str, check: bool = True) -> Any:
        return git(self.path, *args, author=self.name.title(), check=check)

    def commit(self) -> None:
        self.git("add", "-A")
        if self.git("diff", "--cached", "--quiet", check=False).returncode:
            self.git("commit", "-q", "-m", "memory")


def worktrees(root: Path) -> tuple[Side, Side]:
    """A repository with the driver installed and a first record committed, and a second
    worktree on its own branch."""
    a = Side("alice", root / "alice" / "project", root / "home-a")
    b = Side("bob", root / "bob" / "checkout", root / "home-b")
    a.path.mkdir(parents=True)
    a.git("init", "-q", "-b", "alice")
    team.install(a.path)
    # The file is in the first commit: a revert never deletes it (git leaves a modify/delete
    # conflict to a person, drivers are not asked)
    a.store().create(Scope.SHARED, "fact", "Start", "a project", confirm_shared=True)
    a.commit()
    a.git("worktree", "add", "-q", "-b", "bob", str(b.path))
    return a, b


OPS = (
    "propose",
    "verify",
    "reject",
    "edit",
    "forget",
    "pin",
    "archive",
    "compact",
    "commit",
    "revert",
    "cherry-pick",
    "merge",
)


def step(side: Side, other: Side, op: str, n: int) -> None:
    store = side.store()
    shared = store.records(Scope.SHARED, include_inactive=True)
    target = shared[n % len(shared)] if shared else None
    try:
        if op == "propose":
            store.create(Scope.SHARED, "fact", f"{side.name} {n}", f"note {n}", confirm_shared=True)
        elif op in ("verify", "reject", "pin", "archive") and target is not None:
            store.apply(op, target.id, confirm_shared=True)
        elif op == "edit" and target is not None:
            store.edit(
                target.id,
                target.governance.revision,
                content=f"{side.name} edit {n}",
                confirm_shared=True,
            )
        elif op == "forget" and target is not None:
            store.forget(target.id, confirm_shared=True)
        elif op == "compact":  # what it removes is committed first: no history is lost
            side.commit()
            store.compact(store.file_for(Scope.SHARED), confirm_shared=True)
    except StoreError:
        pass  # the rules refuse it in this state: nothing written
    if op == "commit":
        side.commit()
    elif op in ("revert", "cherry-pick", "merge"):
        side.commit()
        git_step(side, other, op)


def git_step(side: Side, other: Side, op: str) -> None:
    if op == "revert":
        parents = side.git("log", "-1", "--format=%P").stdout.split()
        if len(parents) != 1:
            return  # a merge or the first commit
        done = side.git("revert", "--no-edit", "HEAD", check=False)
    elif op == "cherry-pick":
        tip = other.git("rev-parse", "HEAD").stdout.strip()
        parents = other.git("log", "-1", "--format=%P").stdout.split()
        if (
            len(parents) != 1
            or side.git("merge-base", "--is-ancestor", tip, "HEAD", check=False).returncode == 0
        ):
            return
        done = side.git(
            "cherry-pick", "--allow-empty", "--keep-redundant-commits", tip, check=False
        )
    else:
        done = side.git("merge", "-q", "--no-edit", other.name, check=False)
    unmerged = side.git("diff", "--name-only", "--diff-filter=U").stdout.split()
    assert SHARED not in unmerged, f"git {op}: the driver left a conflict\n{done.stderr}"
    if done.returncode != 0:  # an empty revert or pick: nothing to replay
        side.git(op, "--abort", check=False)
        return
    if (side.path / SHARED).exists():
        lines_in_revision_order((side.path / SHARED).read_bytes())


def merged_into(side: Side, other: Side, branch: str) -> bytes:
    side.git("checkout", "-q", "-b", branch)
    done = side.git("merge", "-q", "--no-edit", other.name, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    path = side.path / SHARED
    return path.read_bytes() if path.exists() else b""


history = st.lists(
    st.tuples(st.booleans(), st.sampled_from(OPS), st.integers(0, 50)), min_size=4, max_size=24
)


@settings(
    max_examples=scaled(12, 200),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history)
def test_random_histories_merge_alike_in_both_directions(steps):
    with tempfile.TemporaryDirectory(prefix="team-order-") as tmp:
        a, b = worktrees(Path(tmp))
        for on_a, op, n in steps:
            side, other = (a, b) if on_a else (b, a)
            step(side, other, op, n)
        a.commit()
        b.commit()
        ab = merged_into(a, b, "a-with-b")
        ba = merged_into(b, a, "b-with-a")
        for data in (ab, ba):
            lines_in_revision_order(data)
        assert records_of(ab) == records_of(ba)
        for side in (a, b):  # nothing the tool and git wrote breaks a history
            assert broken_chains(side.store().paths) == {}
