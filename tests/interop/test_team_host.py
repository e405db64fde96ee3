"""Team memory against the real host (``DSH_HOST_SRC``): two clones at different paths, the
host writing in each, our store governing the other's records, git merging through our driver.
The host then opens every merged file clean and sees its own records' new revisions; it never
shows another clone's records (its own rule, docs/host.md).
"""

from __future__ import annotations

from typing import Any

from teamgit import Clone, make_team

from .host import HostHarness

DRIVER_ENV = {"PATH": "/usr/bin:/bin"}


def host_propose(host: HostHarness, clone: Clone, title: str, content: str) -> str:
    done = host.run(
        "propose",
        "--type",
        "fact",
        "--title",
        title,
        "--content",
        content,
        home=clone.home,
        workspace=clone.path,
        scope="shared-project",
    )
    return str(done["id"])


def host_sees(host: HostHarness, clone: Clone) -> dict[str, dict[str, Any]]:
    """What the host of ``clone`` opens: no warning, writable, and its records by id."""
    opened = host.run(
        "open-warnings", home=clone.home, workspace=clone.path, scope="shared-project"
    )
    assert (opened["warnings"], opened["readOnly"]) == ([], False)
    seen = host.run("list", "--full", home=clone.home, workspace=clone.path, scope="shared-project")
    return {r["id"]: r for r in seen["records"]}


def pull(clone: Clone) -> None:
    done = clone.git("pull", "-q", "--no-rebase", "origin", "main", env=DRIVER_ENV)
    assert done.returncode == 0, done.stderr


def test_each_host_opens_the_merged_file_clean_and_sees_its_records_new_revisions(
    host: HostHarness, tmp_path
):
    _, alice, bob = make_team(tmp_path)
    a1 = host_propose(host, alice, "Build", "make build")
    alice.commit("a1")
    alice.git("push", "-q", "origin", "main")
    pull(bob)
    b1 = host_propose(host, bob, "Test", "pytest -q")
    bob.store.verify(a1, confirm_shared=True)  # Bob reviews Alice's record
    bob.commit("bob")
    bob.git("push", "-q", "origin", "main")
    a2 = host_propose(host, alice, "Lint", "ruff check")
    alice.commit("a2")
    pull(alice)
    mine = host_sees(host, alice)
    assert set(mine) == {a1, a2}  # Bob's own record is his host's, not Alice's
    assert mine[a1]["governance"]["verification"] == "verified"
    assert mine[a1]["governance"]["revision"] == 2
    alice.git("push", "-q", "origin", "main")
    pull(bob)
    assert set(host_sees(host, bob)) == {b1}
    # Ours shows each clone the whole team's records.
    assert {r.id for r in bob.store.records()} >= {a1, a2, b1}


def test_the_host_sees_one_revision_decided_two_ways_unverified_with_its_rival(
    host: HostHarness, tmp_path
):
    _, alice, bob = make_team(tmp_path)
    rid = host_propose(host, alice, "Release", "tag then push")
    alice.commit("release")
    alice.git("push", "-q", "origin", "main")
    pull(bob)
    bob.store.edit(rid, 1, content="tag, push, announce", confirm_shared=True)
    bob.commit("bob's edit")
    bob.git("push", "-q", "origin", "main")
    alice.store.edit(rid, 1, content="tag and push both remotes", confirm_shared=True)
    alice.commit("alice's edit")
    pull(alice)
    seen = host_sees(host, alice)
    assert seen[rid]["governance"]["revision"] == 3
    assert seen[rid]["governance"]["verification"] == "unverified"
    rivals = [r for r in seen.values() if r["id"] != rid]
    assert len(rivals) == 1 and rivals[0]["title"] == seen[rid]["title"]
    assert {rivals[0]["content"], seen[rid]["content"]} == {
        "tag, push, announce",
        "tag and push both remotes",
    }
    group = seen[rid]["governance"]["conflictGroup"]
    assert group and rivals[0]["governance"]["conflictGroup"] == group


def test_the_hosts_forget_merged_over_an_edit_leaves_no_text(host: HostHarness, tmp_path):
    _, alice, bob = make_team(tmp_path)
    rid = host_propose(host, alice, "Token", "staging token abc123")
    alice.commit("token")
    alice.git("push", "-q", "origin", "main")
    pull(bob)
    bob.store.edit(rid, 1, content="staging token def456", confirm_shared=True)
    bob.commit("rotate")
    bob.git("push", "-q", "origin", "main")
    host.run("forget", rid, home=alice.home, workspace=alice.path, scope="shared-project")
    alice.commit("forget")
    pull(alice)
    data = alice.shared.read_bytes()
    assert b"abc123" not in data and b"def456" not in data
    assert host_sees(host, alice)[rid]["status"] == "forgotten"


def test_a_record_whose_lines_look_like_conflict_markers_survives_check_repair(
    host: HostHarness, tmp_path
):
    from test_team_conflict_markers import CODE, record_with_markers

    clone, rid, _ = record_with_markers(tmp_path)

    def host_content() -> str:
        seen = host.run(
            "list", "--full", home=clone.home, workspace=clone.path, scope="shared-project"
        )
        return {r["id"]: r for r in seen["records"]}[rid]["content"]

    assert host_content() == CODE  # the host reads it as one record
    done = clone.cli("check", "--repair")
    assert "conflict" not in done.stdout, done.stdout
    assert host_content() == CODE
    assert clone.store.get(rid).content == CODE


def test_after_a_revert_of_a_compaction_and_a_pull_the_host_sees_the_newest_revision(
    host: HostHarness, tmp_path
):
    _, alice, bob = make_team(tmp_path)
    rid = host_propose(host, alice, "Release", "tag then push")
    host.run("govern", rid, "verify", home=alice.home, workspace=alice.path, scope="shared-project")
    alice.commit("release, verified")
    host.run("compact", home=alice.home, workspace=alice.path, scope="shared-project")
    alice.commit("compact")
    alice.git("push", "-q", "origin", "main")
    pull(bob)
    alice.git("revert", "--no-edit", "HEAD")  # revision 1 comes back on one side only
    alice.git("push", "-q", "origin", "main")
    bob.create("Lint", "ruff check")
    bob.commit("lint")
    pull(bob)
    pull(alice)
    for clone in (alice, bob):
        assert clone.store.get(rid).governance.verification.value == "verified"
    seen = host_sees(host, alice)
    assert seen[rid]["governance"]["revision"] == 2
    assert seen[rid]["governance"]["verification"] == "verified"
