"""The one git runner (``dsh_memory_tui.git``): its environment, its errors, its timeout, and
history read through one ``git cat-file`` process.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from citing import commit_all, git, store_on, verified, workspace

from dsh_memory_tui import git as gitrun
from dsh_memory_tui.errors import ErrorCode, StoreError


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "é.txt").write_text("one\n")
    commit_all(repo, "first")
    return repo


def test_the_users_output_settings_do_not_change_what_we_read(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    config = tmp_path / "gitconfig"
    config.write_text("[color]\n\tui = always\n[core]\n\tquotepath = true\n\tpager = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    assert gitrun.text(repo, "ls-files") == "é.txt"
    assert gitrun.text(repo, "log", "--format=%s") == "first"


def test_a_repository_named_by_the_environment_is_not_the_one_read(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # as inside a hook of another repo
    assert gitrun.text(repo, "log", "--format=%s") == "first"


def test_a_failure_names_the_command_and_gits_complaint(tmp_path):
    with pytest.raises(StoreError) as err:
        gitrun.run(tmp_path, "log")
    assert err.value.code is ErrorCode.GIT_FAILED
    assert err.value.message.startswith("git log: fatal: not a git repository")
    assert gitrun.attempt(tmp_path, "log") is None
    assert gitrun.toplevel(tmp_path) is None


def test_a_command_that_never_finishes_is_stopped_and_says_so(tmp_path):
    repo = _repo(tmp_path)
    fifo = repo / "pipe"
    os.mkfifo(fifo)  # git blocks opening it: no writer ever comes
    with pytest.raises(StoreError) as err:
        gitrun.run(repo, "hash-object", "--", str(fifo), timeout=0.5)
    assert err.value.message == "git hash-object did not finish in 0.5 s"


def test_git_never_reads_the_callers_stdin(tmp_path):
    repo = _repo(tmp_path)
    # hash-object --stdin would wait for our terminal if it inherited it
    assert gitrun.text(repo, "hash-object", "--stdin") == gitrun.text(
        repo, "hash-object", "-t", "blob", "/dev/null"
    )


def test_blobs_reads_many_objects_in_one_process(tmp_path):
    repo = _repo(tmp_path)
    for i in range(5):
        (repo / "é.txt").write_text(f"version {i}\n")
        commit_all(repo, f"v{i}")
    commits = (gitrun.text(repo, "log", "--format=%H") or "").split()
    with gitrun.Blobs(repo) as blobs:
        got = [blobs.read(f"{c}:é.txt") for c in commits]
        assert blobs.read("HEAD:absent") is None
        assert blobs.read("HEAD:é.txt", max_bytes=3) is None  # too large: skipped unread
        assert blobs.read("HEAD~1:é.txt") == b"version 3\n"  # and the stream is still in step
        assert blobs.read("a\nb") is None
    assert got == [f"version {i}\n".encode() for i in range(4, -1, -1)] + [b"one\n"]


def _counting_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH that logs each run, then runs the real one."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "bin"
    shim.mkdir()
    log = tmp_path / "git-runs"
    script = shim / "git"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return log


def test_the_cited_text_is_found_deep_in_history_with_a_handful_of_git_processes(
    tmp_path, monkeypatch
):
    home, ws = workspace(tmp_path)
    store = store_on(home, ws)
    rid = verified(store, "app.py:3-5")
    shutil.rmtree(store.sources.snapshots)
    for i in range(60):  # sixty later versions of the file, the cited one is the oldest
        (ws / "app.py").write_text("".join(f"line {j} v{i}\n" for j in range(1, 9)))
        commit_all(ws, f"v{i}")
    log = _counting_git(tmp_path, monkeypatch)
    (check,) = store.sources.checks(store.get(rid))
    head, *diff = store.sources.diff(check)
    first = git(ws, "rev-list", "--max-parents=0", "HEAD").strip()
    assert f"git commit {first[:12]}" in head and "-line 4" in diff
    runs = log.read_text().splitlines()
    assert len(runs) <= 4, runs  # rev-parse, log, one cat-file (was 61 git show)
