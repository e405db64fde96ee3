"""Git's conflict markers in a shared file, told apart from a record's own lines: a record
whose content holds ``<<<<<<< ours`` on a line of its own (raw newlines, which both programs
read as one record) is a record, never a conflict; ``check --repair`` leaves it whole.
"""

from __future__ import annotations

import json
from pathlib import Path

from teamgit import Clone

from dsh_memory_tui.team import conflict_marker_lines, split_conflicts

CODE = "Resolve by hand:\n```\n<<<<<<< ours\nkeep = 1\n=======\nkeep = 2\n>>>>>>> theirs\n```"


def spread(line: bytes) -> bytes:
    """A record's line with its content's newlines written raw: one record on several
    physical lines, as an older writer or a hand edit leaves it (both programs recover it).
    """
    obj = json.loads(line)
    escaped = json.dumps(obj["content"], ensure_ascii=False)
    assert escaped.encode() in line
    return line.replace(escaped.encode(), escaped.replace("\\n", "\n").encode())


def record_with_markers(tmp_path: Path) -> tuple[Clone, str, bytes]:
    clone = Clone(tmp_path / "project", tmp_path / "home", "Alice")
    clone.shared.parent.mkdir(parents=True)
    rid = clone.create("Merge by hand", CODE).id
    clone.create("Build", "make build")
    lines = clone.shared.read_bytes().splitlines(keepends=True)
    data = spread(lines[0]) + b"".join(lines[1:])
    clone.shared.write_bytes(data)
    assert b"\n<<<<<<< ours\n" in data and b"\n=======\n" in data
    return clone, rid, data


def test_a_records_own_marker_lines_are_not_conflict_markers(tmp_path):
    _, _, data = record_with_markers(tmp_path)
    assert conflict_marker_lines(data) == []
    base, ours, theirs = split_conflicts(data)
    assert base == ours == theirs == data


def test_check_reports_no_conflict_and_repair_keeps_the_record(tmp_path):
    clone, rid, data = record_with_markers(tmp_path)
    done = clone.cli("check")
    assert "conflict" not in done.stdout, done.stdout
    clone.cli("check", "--repair")
    assert clone.store.get(rid).content == CODE
    assert b"<<<<<<< ours" in clone.shared.read_bytes()


def test_a_real_conflict_beside_such_a_record_is_still_found_and_merged(tmp_path):
    clone, rid, data = record_with_markers(tmp_path)
    other = Clone(tmp_path / "other", tmp_path / "home-b", "Bob")
    other.shared.parent.mkdir(parents=True)
    extra = other.create("Lint", "ruff check").to_line()
    mine = clone.create("Test", "pytest -q").to_line()
    conflicted = data + b"<<<<<<< HEAD\n" + mine + b"=======\n" + extra + b">>>>>>> bob\n"
    clone.shared.write_bytes(conflicted)
    n = data.count(b"\n")
    assert conflict_marker_lines(conflicted) == [n + 1, n + 3, n + 5]
    done = clone.cli("check", "--repair")
    assert done.returncode == 0, done.stdout + done.stderr
    store = clone.store
    assert store.get(rid).content == CODE
    assert {r.title for r in store.records("shared-project")} >= {"Merge by hand", "Test", "Lint"}
