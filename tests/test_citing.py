"""Citing a file: ``PATH[:START-END]`` becomes a host-valid ``file`` sourceRef (kind, id naming
path and lines, the cited text's sha256), and every bad citation is a clear INVALID_CITATION
with nothing written.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from citing import store_on, workspace

from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import MAX_SOURCE_REFS
from dsh_memory_tui.sources import MAX_CITED_FILE_BYTES, Citation


def _sha(text: bytes) -> str:
    return "sha256:" + hashlib.sha256(text).hexdigest()


def test_a_line_range_becomes_a_file_ref_with_the_cited_texts_hash(tmp_path):
    store = store_on(*workspace(tmp_path))
    record = store.create("project", "fact", "t", "c", citations=["app.py:2-3"]).record
    (ref,) = record.governance.sourceRefs
    assert (ref.kind, ref.id) == ("file", "app.py:2-3")
    assert ref.contentHash == _sha(b"line 2\nline 3")


def test_a_path_alone_cites_the_whole_file(tmp_path):
    store = store_on(*workspace(tmp_path))
    record = store.create("project", "fact", "t", "c", citations=["./app.py"]).record
    (ref,) = record.governance.sourceRefs
    assert ref.id == "app.py"
    assert ref.contentHash == _sha("\n".join(f"line {i}" for i in range(1, 9)).encode())


def test_a_proposal_keeps_its_other_refs_beside_its_citations(tmp_path):
    store = store_on(*workspace(tmp_path))
    record = store.propose(
        "project", "fact", "t", "c", citations=["app.py:1-1"], session=("s1", None)
    ).record
    assert [r.kind for r in record.governance.sourceRefs] == ["session", "file"]


def test_a_crlf_file_hashes_like_its_lf_twin(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "dos.txt").write_bytes(b"a\r\nb\r\n")
    (ws / "unix.txt").write_bytes(b"a\nb")
    store = store_on(home, ws)
    dos = store.sources.cite(Citation.parse("dos.txt:1-2"))
    unix = store.sources.cite(Citation.parse("unix.txt:1-2"))
    assert dos.contentHash == unix.contentHash


def test_a_file_that_is_not_utf8_can_be_cited(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "latin1.txt").write_bytes("café\nnaïve\n".encode("latin-1"))
    ref = store_on(home, ws).sources.cite(Citation.parse("latin1.txt:2-2"))
    assert ref.contentHash == _sha("naïve".encode("latin-1"))


def test_a_binary_file_is_cited_whole_not_by_lines(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02\nzz\n")
    sources = store_on(home, ws).sources
    assert sources.cite(Citation.parse("blob.bin")).kind == "file"
    with pytest.raises(StoreError, match="binary file; cite it whole"):
        sources.cite(Citation.parse("blob.bin:1-1"))


def _refused(tmp_path: Path, ws: Path, home: Path, cite: str, message: str) -> None:
    store = store_on(home, ws)
    with pytest.raises(StoreError) as caught:
        store.create("project", "fact", "t", "c", citations=[cite])
    assert caught.value.code is ErrorCode.INVALID_CITATION
    assert message in caught.value.message
    assert store.records() == []
    assert not (ws / ".dsh" / "workspace-memory" / "records.jsonl").exists()


@pytest.mark.parametrize(
    ("cite", "message"),
    [
        ("/etc/passwd", "relative to the workspace"),
        ("../outside.txt", "inside the workspace"),
        ("src/../../outside.txt", "inside the workspace"),
        ("nope.py", "no such file"),
        ("app.py:7-12", "has 8 lines; lines 7-12 are past its end"),
        ("app.py:0-2", "1-based"),
        ("app.py:5-3", "START <= END"),
        ("", "needs a path"),
    ],
)
def test_a_bad_citation_is_refused_and_nothing_is_written(tmp_path, cite, message):
    home, ws = workspace(tmp_path)
    (tmp_path / "outside.txt").write_text("secret\n")
    _refused(tmp_path, ws, home, cite, message)


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path):
    home, ws = workspace(tmp_path)
    (tmp_path / "outside.txt").write_text("secret\n")
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    _refused(tmp_path, ws, home, "link.txt", "outside the workspace")


def test_a_directory_is_refused(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "src").mkdir()
    _refused(tmp_path, ws, home, "src", "is a directory")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    home, ws = workspace(tmp_path)
    os.mkfifo(ws / "pipe")
    _refused(tmp_path, ws, home, "pipe", "not a regular file")


def test_a_file_over_the_bound_is_refused(tmp_path):
    home, ws = workspace(tmp_path)
    with open(ws / "huge.log", "wb") as f:
        f.truncate(MAX_CITED_FILE_BYTES + 1)
    _refused(tmp_path, ws, home, "huge.log", "too large")


def test_more_than_32_citations_are_refused(tmp_path):
    home, ws = workspace(tmp_path)
    cites = [f"app.py:{i}-{i}" for i in range(1, 9)] + [
        f"app.py:{a}-{b}" for a in range(1, 9) for b in range(a + 1, 9)
    ]
    assert len(cites) > MAX_SOURCE_REFS
    store = store_on(home, ws)
    with pytest.raises(StoreError, match="at most 32") as caught:
        store.create("project", "fact", "t", "c", citations=cites)
    assert caught.value.code is ErrorCode.INVALID_CITATION
    assert store.records() == []


def test_an_edit_replaces_the_citations_and_makes_a_verified_record_stale(tmp_path):
    store = store_on(*workspace(tmp_path))
    rid = store.create("project", "fact", "t", "c", citations=["app.py:1-2"]).id
    store.verify(rid)
    edited = store.edit(rid, 2, citations=["app.py:3-4"])
    assert [r.id for r in edited.governance.sourceRefs] == ["app.py:3-4"]
    assert edited.governance.verification.value == "stale"
    assert store.edit(rid, 3, citations=["app.py:3-4"]).governance.revision == 3  # no change
