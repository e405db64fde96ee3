"""Team memory through real git: an origin and two clones at different paths (Alice's and
Bob's), each with ``dsh-memory git install``. Merges in both directions, pull, pull --rebase
and cherry-pick all go through the driver without a conflict; a compaction on one branch does
not make a later merge conflict; without the driver, ``dsh-memory check`` finds what git left.
"""

from __future__ import annotations

import json
import os

from teamgit import SHARED, Clone, all_valid, git, make_team, records_of

from dsh_memory_tui.model import Record, Scope, content_hash

DRIVER_ENV = {"PATH": "/usr/bin:/bin"}  # git without our venv on its PATH


def start(alice: Clone, bob: Clone, title: str, content: str) -> Record:
    """Alice's first shared record, published; Bob pulls it."""
    record = alice.create(title, content)
    alice.publish(title.lower())
    bob.git("pull", "-q", "origin", "main")
    return record


def shared_titles(clone: Clone) -> dict[str, str]:
    return {
        r["title"]: r["governance"]["verification"]
        for r in records_of(clone.shared.read_bytes()).values()
    }


def _info(clone: Clone, name: str) -> str:
    path = clone.path / ".git" / "info" / name
    return path.read_text() if path.exists() else ""


def test_install_sets_the_attributes_the_ignore_and_the_drivers_once(tmp_path):
    _, alice, _ = make_team(tmp_path)
    again = alice.cli("git", "install")
    assert again.returncode == 0, again.stderr
    attributes = _info(alice, "attributes")
    assert attributes.count(f"/{SHARED} merge=dsh-memory diff=dsh-memory\n") == 1
    assert _info(alice, "exclude").count(f"/{SHARED}.*\n") == 1
    assert not (alice.path / ".gitattributes").exists()  # nothing that blocks a pull
    assert alice.git("status", "--porcelain").stdout == ""
    driver = alice.git("config", "--get", "merge.dsh-memory.driver").stdout.strip()
    assert driver.endswith("-m dsh_memory_tui.cli merge-file %O %A %B %P")
    assert os.path.isabs(driver.split()[0].strip("'"))
    textconv = alice.git("config", "--get", "diff.dsh-memory.textconv").stdout.strip()
    assert textconv.endswith("-m dsh_memory_tui.cli git textconv")
    assert "git merges shared.jsonl by record id" in alice.ok("git", "status")


def test_status_says_what_is_missing_and_exits_1(tmp_path):
    _, alice, _ = make_team(tmp_path, install=False)
    done = alice.cli("git", "status")
    assert done.returncode == 1
    assert "not set up (the merge attribute, the driver in the repository's config)" in (
        done.stdout
    )
    assert "dsh-memory git install" in done.stdout


def test_uninstall_removes_the_attributes_the_ignore_and_the_drivers(tmp_path):
    _, alice, _ = make_team(tmp_path)
    info = alice.path / ".git" / "info" / "attributes"
    info.write_text("*.png binary\n" + info.read_text())
    alice.ok("git", "uninstall")
    assert _info(alice, "attributes") == "*.png binary\n"
    assert f"/{SHARED}" not in _info(alice, "exclude")
    for key in ("merge.dsh-memory.driver", "diff.dsh-memory.textconv"):
        assert alice.git("config", "--get", key, check=False).returncode == 1


def test_uninstall_takes_out_an_earlier_installs_committed_line(tmp_path):
    _, alice, _ = make_team(tmp_path)
    (alice.path / ".gitattributes").write_text(f"*.png binary\n/{SHARED} merge=dsh-memory\n")
    alice.ok("git", "uninstall")
    assert (alice.path / ".gitattributes").read_text() == "*.png binary\n"


def test_install_outside_a_repository_is_a_clear_error(tmp_path):
    loose = Clone(tmp_path / "loose", tmp_path / "home", "Alice")
    loose.path.mkdir()
    done = loose.cli("git", "install")
    assert done.returncode == 1 and "error[GIT_FAILED]" in done.stderr
    assert "not in a git repository" in done.stderr and "Traceback" not in done.stderr


def test_two_branches_merge_in_both_directions_without_a_conflict(tmp_path):
    _, alice, bob = make_team(tmp_path)
    start(alice, bob, "Build", "make build")
    alice.git("checkout", "-q", "-b", "lint")
    alice.create("Lint", "ruff check")
    alice.commit("lint")
    alice.git("checkout", "-q", "main")
    alice.git("checkout", "-q", "-b", "test")
    alice.create("Test", "pytest -q")
    alice.commit("test")
    alice.git("checkout", "-q", "-b", "both-ways", "lint")
    done = alice.git("merge", "-q", "--no-edit", "test", env=DRIVER_ENV)
    one = records_of(alice.shared.read_bytes())
    alice.git("checkout", "-q", "test")
    alice.git("merge", "-q", "--no-edit", "lint", env=DRIVER_ENV)
    other = records_of(alice.shared.read_bytes())
    assert done.returncode == 0
    assert one == other and {r["title"] for r in one.values()} == {"Build", "Lint", "Test"}
    all_valid(alice.shared.read_bytes(), alice.root_id)


def test_a_pull_merges_both_clones_records(tmp_path):
    _, alice, bob = make_team(tmp_path)
    record = start(alice, bob, "Build", "make build")
    bob.store.verify(record.id, confirm_shared=True)
    bob.create("Test", "pytest -q")
    bob.publish("bob's review")
    alice.create("Lint", "ruff check")
    alice.commit("lint")
    done = alice.git("pull", "-q", "--no-rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    assert shared_titles(alice) == {"Build": "verified", "Test": "unverified", "Lint": "unverified"}
    # Bob's verify of Alice's record is keyed to Alice's clone: her store sees it as hers.
    assert alice.store.get(record.id).scopeKey == alice.root_id


def test_pull_rebase_replays_through_the_driver(tmp_path):
    _, alice, bob = make_team(tmp_path)
    start(alice, bob, "Build", "make build")
    alice.create("Lint", "ruff check")
    alice.publish("lint")
    bob.create("Test", "pytest -q")
    bob.commit("test")
    bob.create("Docs", "mkdocs build")
    bob.commit("docs")
    done = bob.git("pull", "-q", "--rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    assert set(shared_titles(bob)) == {"Build", "Lint", "Test", "Docs"}
    assert bob.git("log", "--format=%s", "-3").stdout.split() == ["docs", "test", "lint"]


def test_cherry_pick_takes_one_commits_records(tmp_path):
    _, alice, _ = make_team(tmp_path)
    alice.create("Build", "make build")
    alice.commit("build")
    alice.git("checkout", "-q", "-b", "feature")
    alice.create("Lint", "ruff check")
    alice.commit("lint")
    alice.create("Test", "pytest -q")
    alice.commit("test")
    alice.git("checkout", "-q", "main")
    alice.create("Docs", "mkdocs build")
    alice.commit("docs")
    done = alice.git("cherry-pick", "feature", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    assert set(shared_titles(alice)) == {"Build", "Docs", "Test"}


def test_a_forget_against_an_edit_merges_to_the_forget(tmp_path):
    _, alice, bob = make_team(tmp_path)
    record = start(alice, bob, "Token", "staging token abc123")
    bob.store.edit(record.id, 1, content="staging token def456", confirm_shared=True)
    bob.publish("rotate")
    alice.store.forget(record.id, confirm_shared=True)
    alice.commit("forget the token")
    done = alice.git("pull", "-q", "--no-rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    data = alice.shared.read_bytes()
    assert b"abc123" not in data and b"def456" not in data
    assert records_of(data)[record.id]["status"] == "forgotten"


def test_one_revision_decided_two_ways_is_left_for_k(tmp_path):
    _, alice, bob = make_team(tmp_path)
    record = start(alice, bob, "Release", "tag then push")
    bob.store.edit(record.id, 1, content="tag, push, announce", confirm_shared=True)
    bob.publish("bob's release")
    alice.store.edit(record.id, 1, content="tag and push both remotes", confirm_shared=True)
    alice.commit("alice's release")
    done = alice.git("pull", "--no-rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    assert "decided differently" in done.stderr
    store = alice.store
    group, rivals = store.conflict(record.id)
    assert group is not None and len(rivals) == 1
    assert alice.ok("check").endswith("0 problem(s), 0 left\n")


def test_a_compaction_on_one_branch_does_not_make_a_later_merge_conflict(tmp_path):
    _, alice, bob = make_team(tmp_path)
    record = alice.create("Build", "make build")
    store = alice.store
    for revision, content in enumerate(["make all", "make -j8", "make -j16"], 1):
        store.edit(record.id, revision, content=content, confirm_shared=True)
    alice.publish("build")
    bob.git("pull", "-q", "origin", "main")
    bob.create("Test", "pytest -q")
    bob.publish("test")
    alice.store.compact(alice.store.paths.shared_file(), confirm_shared=True)
    alice.store.verify(record.id, confirm_shared=True)
    alice.commit("compact")
    done = alice.git("pull", "-q", "--no-rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    data = alice.shared.read_bytes()
    assert b"make all" not in data  # the compaction holds
    assert shared_titles(alice) == {"Build": "verified", "Test": "unverified"}


def test_an_8_mib_side_merges(tmp_path):
    _, alice, bob = make_team(tmp_path)
    alice.create("Build", "make build")
    line = json.loads(alice.shared.read_bytes())
    with open(alice.shared, "ab") as f:
        n = 0
        while f.tell() < 8 * 1024 * 1024 - 70_000:
            n += 1
            content = f"note {n} " + "y" * 60_000
            f.write(
                json.dumps(
                    dict(
                        line, id=f"memory:n{n}", content=content, contentHash=content_hash(content)
                    )
                ).encode()
                + b"\n"
            )
    alice.publish("big")
    bob.git("pull", "-q", "origin", "main")
    bob.create("Test", "pytest -q")
    bob.publish("test")
    alice.create("Lint", "ruff")
    alice.commit("lint")
    done = alice.git("pull", "-q", "--no-rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    data = alice.shared.read_bytes()
    assert len(data) < 8 * 1024 * 1024
    assert {"Test", "Lint"} <= set(shared_titles(alice))


def test_without_the_driver_check_finds_the_conflict_markers_and_repairs_them(tmp_path):
    _, alice, bob = make_team(tmp_path, install=False)
    start(alice, bob, "Build", "make build")
    bob.create("Test", "pytest -q")
    bob.publish("test")
    alice.create("Lint", "ruff")
    alice.commit("lint")
    merged = alice.git("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert merged.returncode == 1  # git's own line merge conflicts at the end
    done = alice.cli("check")
    assert done.returncode == 1
    assert "conflict: git conflict marker" in done.stdout
    assert "dsh-memory check --repair" in done.stdout
    fixed = alice.cli("check", "--repair")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert set(shared_titles(alice)) == {"Build", "Test", "Lint"}
    assert alice.ok("check").endswith("0 problem(s), 0 left\n")


def test_check_finds_one_revision_decided_two_ways_and_repairs_it(tmp_path):
    _, alice, bob = make_team(tmp_path, install=False)
    record = start(alice, bob, "Release", "tag then push")
    bob.store.verify(record.id, confirm_shared=True)
    alice.store.reject(record.id, confirm_shared=True)
    # What a union merge (or a hand resolution keeping both lines) leaves.
    with open(alice.shared, "ab") as f:
        f.write(bob.shared.read_bytes().splitlines(keepends=True)[-1])
    done = alice.cli("check")
    assert done.returncode == 1
    assert f"divergent: {record.id} revision 2 was decided 2 ways" in done.stdout
    fixed = alice.cli("check", "--repair")
    assert fixed.returncode == 0, fixed.stdout
    now = alice.store.get(record.id)
    assert now.governance.revision == 3 and now.governance.verification.value == "unverified"
    assert alice.ok("check").endswith("0 problem(s), 0 left\n")


def test_a_team_scope_is_shown_to_a_clone_made_later(tmp_path):
    origin, alice, _ = make_team(tmp_path)
    alice.create("Build", "make build")
    alice.publish("build")
    late = tmp_path / "third" / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(late))
    carol = Clone(late, tmp_path / "home-carol", "Carol")
    assert [r.title for r in carol.store.records(Scope.SHARED)] == ["Build"]


def test_two_branches_that_each_created_the_file_merge_by_record_id(tmp_path):
    _, alice, bob = make_team(tmp_path)  # the base has .gitattributes but no shared file
    alice.create("Build", "make build")
    alice.publish("alice starts the team memory")
    bob.create("Test", "pytest -q")
    bob.commit("bob starts it too")
    done = bob.git("pull", "-q", "--no-rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr
    assert set(shared_titles(bob)) == {"Build", "Test"}
    all_valid(bob.shared.read_bytes(), bob.root_id)


def test_a_workspace_below_the_repository_root_gets_its_own_attribute_line(tmp_path):
    _, alice, _ = make_team(tmp_path, install=False)
    service = Clone(alice.path / "services" / "api", alice.home, "Alice")
    service.path.mkdir(parents=True)
    service.ok("git", "install")
    attributes = _info(alice, "attributes")
    assert attributes == f"/services/api/{SHARED} merge=dsh-memory diff=dsh-memory\n"
    assert "git merges shared.jsonl by record id" in service.ok("git", "status")
    assert alice.cli("git", "status").returncode == 1  # the root's own file is not covered


def test_the_docs_order_of_steps_works_from_two_fresh_clones(tmp_path):
    """Each teammate installs first, then pulls: nothing install wrote is in a pull's way."""
    _, alice, bob = make_team(tmp_path, install=False)
    alice.ok("git", "install")
    alice.create("Build", "make build")
    alice.publish("build")
    bob.ok("git", "install")  # before the pull, as docs/team.md says
    done = bob.git("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stderr
    assert set(shared_titles(bob)) == {"Build"}


def test_the_shared_files_backup_is_never_left_untracked(tmp_path):
    _, alice, _ = make_team(tmp_path)
    alice.create("Build", "make build")
    alice.commit("build")
    alice.ok("compact", "--scope", "shared-project", "--yes-shared")  # writes shared.jsonl.bak
    assert (alice.path / f"{SHARED}.bak").exists()
    assert alice.git("status", "--porcelain", "--untracked-files=all").stdout == ""


def test_a_workspace_path_with_a_space_gets_a_valid_attribute_line(tmp_path):
    _, alice, _ = make_team(tmp_path, install=False)
    odd = Clone(alice.path / "my service [v2]", alice.home, "Alice")
    odd.path.mkdir()
    odd.ok("git", "install")
    rel = f"my service [v2]/{SHARED}"
    got = alice.git("check-attr", "merge", "diff", "--", rel).stdout
    assert got == f"{rel}: merge: dsh-memory\n{rel}: diff: dsh-memory\n"
    assert "git merges shared.jsonl by record id" in odd.ok("git", "status")
    (alice.path / f"{rel}.bak").parent.mkdir(parents=True)
    (alice.path / f"{rel}.bak").write_text("x")
    assert alice.git("check-ignore", "-q", f"{rel}.bak", check=False).returncode == 0
