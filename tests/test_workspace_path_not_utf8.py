"""A workspace whose path is not UTF-8: the host cannot open it (node reads the path as text:
PROJECT_UNAVAILABLE, "Process working directory is unavailable"), so nothing written to its
project, shared-project or session memory would ever reach the agent. We refuse those writes
with HOST_CANNOT_OPEN (nothing written), still read what is there, write the user scope (not
the workspace's), and ``check`` says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_cli_process

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.model import Scope, SourceRef
from dsh_memory_tui.store import MemoryStore

NOT_UTF8 = os.fsdecode(b"project-\xff\xfe")


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / NOT_UTF8
    ws.mkdir()
    return ws


@pytest.mark.parametrize("scope", ["project", "shared-project", "session"])
def test_a_write_to_the_workspaces_memory_is_refused_and_nothing_is_written(
    scope: str, tmp_path: Path
) -> None:
    store = MemoryStore.open(tmp_path / "home", _workspace(tmp_path), "alice")
    session = ("s1", None) if scope == "session" else None
    refs = [SourceRef(kind="url", id="https://example.com")]
    with pytest.raises(StoreError) as err:
        store.propose(
            scope, "fact", "t", "c", session=session, source_refs=refs, confirm_shared=True
        )
    assert err.value.code == "HOST_CANNOT_OPEN"
    assert "\\xff\\xfe is not valid UTF-8" in err.value.message
    assert "nothing was written" in err.value.message
    assert not store.file_for(scope, session).path.exists()


def test_the_user_scope_is_written_and_the_workspaces_records_are_still_read(
    tmp_path: Path,
) -> None:
    home, ws = tmp_path / "home", _workspace(tmp_path)
    store = MemoryStore.open(home, ws, "alice")
    rid = store.create(Scope.USER, "preference", "Tabs", "Use tabs").id
    assert store.get(rid).title == "Tabs"
    # A project file already there (written before this check existed, or copied in): read.
    elsewhere = tmp_path / "readable"
    elsewhere.mkdir()
    source = MemoryStore.open(home, elsewhere, "alice")
    source.create(Scope.PROJECT, "fact", "Old", "Written elsewhere")
    project = store.file_for(Scope.PROJECT).path
    project.parent.mkdir(parents=True)
    os.rename(source.file_for(Scope.PROJECT).path, project)
    assert [r.title for r in store.records(Scope.PROJECT)] == []  # another rootId: foreign
    assert store.adoptable(store.file_for(Scope.PROJECT)) != {}
    report = store.check()
    assert any("is not valid UTF-8: the host cannot open" in note for note in report.notes)


def test_the_cli_says_why_in_one_line_without_raw_bytes(tmp_path: Path) -> None:
    # A real process: the path's bytes reach it through argv and leave it through a real pipe.
    done = run_cli_process(
        tmp_path / "home",
        _workspace(tmp_path),
        "create",
        "--scope",
        "project",
        "--type",
        "fact",
        "--title",
        "t",
        "--content",
        "c",
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error[HOST_CANNOT_OPEN]: ") and done.stderr.count("\n") == 1
    assert "project-\\xff\\xfe" in done.stderr and "\udcff" not in done.stderr
