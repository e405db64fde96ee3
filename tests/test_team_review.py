"""A teammate's memory commit read like code: ``git log -p``, ``git show`` and ``git diff``
print the shared file as records (through the diff driver ``git install`` sets), and
``dsh-memory git diff`` says per record what each commit did and who did it. The merge driver
leaves git's own conflict for a file that is not a memory store, and refuses a huge side by
its size.
"""

from __future__ import annotations

import os

from teamgit import SHARED, Clone, make_team

from dsh_memory_tui.team.merge import MAX_SIDE_BYTES


def test_git_log_p_shows_a_verify_as_a_changed_verification_line(tmp_path):
    _, alice, bob = make_team(tmp_path)
    record = alice.create("Deploy", "run make deploy\nthen tag")
    alice.commit("deploy")
    alice.store.verify(record.id, confirm_shared=True)
    alice.commit("verify")
    log = alice.git("log", "-p", "-1", "--", SHARED).stdout
    assert f" memory {record.id}: Deploy\n" in log
    assert "-    verification: unverified\n" in log
    assert "+    verification: verified by user (alice) at " in log
    assert "     | run make deploy\n     | then tag\n" in log
    assert '"scopeKey"' not in log and "{" not in log  # never raw JSON lines
    shown = alice.git("show", "HEAD~1", "--", SHARED).stdout
    assert f"+memory {record.id}: Deploy\n" in shown


def test_an_edit_shows_the_contents_change_and_a_forget_the_tombstone(tmp_path):
    _, alice, _ = make_team(tmp_path)
    record = alice.create("Deploy", "run make deploy")
    alice.commit("deploy")
    alice.store.edit(record.id, 1, content="run make release", confirm_shared=True)
    diff = alice.git("diff", "--", SHARED).stdout
    assert "-    | run make deploy\n+    | run make release\n" in diff
    alice.commit("edit")
    alice.store.forget(record.id, confirm_shared=True)
    diff = alice.git("diff", "--", SHARED).stdout
    assert "+    fact, forgotten, revision 3" in diff
    assert "-    | run make release\n" in diff and "+    | This memory was forgotten" in diff


def test_bidi_and_invisible_characters_are_shown_as_stand_ins(tmp_path):
    _, alice, _ = make_team(tmp_path)
    alice.create("Deploy \u202eyolped", "run \u200b")
    alice.commit("x")
    shown = alice.git("show", "HEAD", "--", SHARED).stdout
    assert "\u202e" not in shown and "\u200b" not in shown
    assert "Deploy \\u202eyolped" in shown


def test_git_diff_lists_each_records_change_with_its_verifier_and_the_author(tmp_path):
    _, alice, bob = make_team(tmp_path)
    a = alice.create("Deploy", "run make deploy")
    b = alice.create("Lint", "ruff check")
    alice.commit("two")
    alice.git("push", "-q", "origin", "main")
    bob.git("pull", "-q", "origin", "main")
    start = bob.git("rev-parse", "HEAD").stdout.strip()
    bob.store.verify(a.id, confirm_shared=True)
    bob.store.reject(b.id, confirm_shared=True)
    bob.commit("review")
    bob.store.forget(b.id, confirm_shared=True)
    bob.commit("forget")
    bob.store.apply("archive", a.id, confirm_shared=True)
    out = bob.ok("git", "diff", start).splitlines()
    sha = bob.git("rev-parse", "HEAD~1").stdout[:12]
    assert any(
        line.startswith(f"{sha} Bob <bob@example.com>: verified {a.id} 'Deploy'")
        and "verified by user (bob)" in line
        for line in out
    ), out
    assert any(f"rejected {b.id} 'Lint'" in line for line in out)
    assert any(f": forgotten {b.id}" in line for line in out)
    assert out[-1] == "3 memory change(s)"
    uncommitted = bob.ok("git", "diff").splitlines()
    assert uncommitted[0].startswith(f"not committed: archived {a.id} 'Deploy'")


def test_merge_file_leaves_gits_conflict_for_a_file_that_is_no_memory_store(tmp_path):
    clone = Clone(tmp_path / "p", tmp_path / "home", "Alice")
    clone.path.mkdir()
    paths = []
    for name, text in (("base", "a\nb\n"), ("ours", "a\nours\n"), ("theirs", "a\ntheirs\n")):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    done = clone.cli("merge-file", *paths, "README.md")
    assert done.returncode == 1
    assert "is not a memory store" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "ours").read_text() == "a\nours\n"


def test_merge_file_refuses_a_huge_side_by_its_size_unread(tmp_path):
    clone = Clone(tmp_path / "p", tmp_path / "home", "Alice")
    clone.shared.parent.mkdir(parents=True)
    record = clone.create("Build", "make build")
    line = record.to_line()
    for name in ("base", "ours"):
        (tmp_path / name).write_bytes(line)
    huge = tmp_path / "theirs"
    with huge.open("wb") as f:
        f.truncate(2 << 30)  # 2 GiB, sparse: reading it whole would take gigabytes
    assert os.path.getsize(huge) > MAX_SIDE_BYTES
    done = clone.cli("merge-file", *(str(tmp_path / n) for n in ("base", "ours", "theirs")))
    assert done.returncode == 1
    assert "error[STORE_TOO_LARGE]" in done.stderr and "2048 MiB" in done.stderr
    assert (tmp_path / "ours").read_bytes() == line


def test_a_pull_of_a_non_store_file_given_the_attribute_stays_gits_conflict(tmp_path):
    _, alice, bob = make_team(tmp_path)
    info = alice.path / ".git" / "info" / "attributes"
    info.write_text(info.read_text() + "/notes.txt merge=dsh-memory\n")
    (alice.path / "notes.txt").write_text("one\n")
    alice.commit("notes")
    alice.git("push", "-q", "origin", "main")
    bob.git("pull", "-q", "origin", "main")
    (bob.path / "notes.txt").write_text("bob\n")
    bob.commit("bob")
    bob.git("push", "-q", "origin", "main")
    (alice.path / "notes.txt").write_text("alice\n")
    alice.commit("alice")
    done = alice.git("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode != 0
    assert "notes.txt" in alice.git("diff", "--name-only", "--diff-filter=U").stdout


def test_list_warns_when_the_shared_file_holds_conflict_markers(tmp_path):
    clone = Clone(tmp_path / "p", tmp_path / "home", "Alice")
    clone.shared.parent.mkdir(parents=True)
    a = clone.create("Build", "make build").to_line()
    b = clone.create("Test", "pytest").to_line()
    clone.shared.write_bytes(b"<<<<<<< HEAD\n" + a + b"=======\n" + b + b">>>>>>> bob\n")
    done = clone.cli("list")
    assert done.returncode == 0
    assert "has git conflict markers (line 1 and 2 more)" in done.stderr
    assert "dsh-memory check --repair" in done.stderr
    assert "conflict markers" not in clone.cli("list", "--scope", "project").stderr
