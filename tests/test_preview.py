"""store.preview: a file's newest records read from its end are exactly what a full load reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.jsonl import ensure_dir
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    SourceRef,
    Verification,
    make_record,
)
from dsh_memory_tui.paths import StoreFile
from dsh_memory_tui.store import MemoryStore
from dsh_memory_tui.store.preview import (
    check_readable,
    newest_records,
    tail_records,
    total_bytes,
)

NOW = 1_800_000_000_000


def clock() -> int:
    return NOW


def line(
    file: StoreFile, i: int, *, content_bytes: int = 300, content: str = "", **changes: object
) -> bytes:
    """A host-valid line for record ``i`` of ``file`` (same id for the same ``i``); ``changes``
    go into its governance (a later revision, a verification...)."""
    record = make_record(
        scope=file.scope,
        scope_key=file.scope_key or "",
        record_type=RecordType.FACT,
        title=f"Record {i}",
        content=content or (f"content of {i} " * content_bytes)[:content_bytes],
        tags=["t"],
        provenance=Provenance(kind=ProvenanceKind.AGENT, sessionId="s", eventSeq=i),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="s")],
        record_id=f"memory:{i:08d}-0000-4000-8000-000000000000",
        now=NOW - 10_000_000 + i,
    )
    data = json.loads(record.to_line())
    data["governance"].update(changes)
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def write(file: StoreFile, lines: list[bytes]) -> None:
    ensure_dir(file.path.parent)
    file.path.write_bytes(b"".join(lines))


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    ws = tmp_path / "ws"
    ws.mkdir()
    return MemoryStore.open(tmp_path / "home", ws, "alice", clock=clock)


def full_load(store: MemoryStore, file: StoreFile) -> dict[str, Record]:
    view = MemoryStore(store.paths, clock=clock).view(file)
    view.refresh()
    return dict(view.current)


def assert_exact(preview: list[Record], current: dict[str, Record]) -> None:
    """Every previewed record is a current record, equal to it, and shown once."""
    assert len({r.id for r in preview}) == len(preview)
    for record in preview:
        assert record == current[record.id]


def mixed_lines(file: StoreFile, n: int) -> list[bytes]:
    """``n`` records, with later revisions of earlier ids, a corrupt line and another
    workspace's line spread among them."""
    out: list[bytes] = []
    for i in range(n):
        out.append(line(file, i))
        if i % 7 == 6:  # a new revision of an id first written a few lines up
            out.append(line(file, i - 3, revision=2, updatedAt=NOW - 1000 + i))
        if i % 50 == 25:
            out.append(b'{"schemaVersion":1,"id":"broken"\n')
        if i % 40 == 10:
            foreign = json.loads(line(file, 10_000 + i))
            foreign["scopeKey"] = "root:" + "0" * 64
            out.append(json.dumps(foreign).encode() + b"\n")
    return out


def test_a_small_file_is_read_whole_and_equals_the_full_load(store: MemoryStore) -> None:
    file = store.file_for(Scope.PROJECT)
    write(file, mixed_lines(file, 30))
    current = full_load(store, file)
    preview = tail_records(file, NOW)
    assert_exact(preview, current)
    assert {r.id for r in preview} == set(current)


def test_the_tail_of_a_big_file_holds_the_newest_records_each_as_loaded(
    store: MemoryStore,
) -> None:
    file = store.file_for(Scope.PROJECT)
    write(file, mixed_lines(file, 800))
    current = full_load(store, file)
    preview = tail_records(file, NOW, count=60)
    assert_exact(preview, current)
    assert 60 <= len(preview) < len(current)
    # The file's last record and the revisions written near its end are among them.
    ids = {r.id for r in preview}
    assert json.loads(line(file, 799))["id"] in ids
    assert any(r.governance.revision == 2 for r in preview)


@pytest.mark.parametrize("joined", ["a record spread over lines", "a record inside a join"])
def test_a_cut_anywhere_near_a_join_shows_only_what_the_load_shows(
    store: MemoryStore, joined: str
) -> None:
    # The host joins a line that is not JSON with the lines after it until they parse: a
    # record written with raw newlines is recovered, and a record line between "[" and "]"
    # becomes part of an array (invalid, not shown). Wherever a tail's cut falls, its pieces
    # must not pass for records of their own.
    file = store.file_for(Scope.PROJECT)
    inner = line(file, 5000, content="\n".join(f"line {n} of a long record" for n in range(6)))
    if joined == "a record spread over lines":
        block = [inner[:-1].replace(b"\\n", b"\n") + b"\n"]
    else:
        block = [b"[\n", inner, b"]\n"]
    lines = [line(file, i, content_bytes=40) for i in range(200)]
    lines[150:150] = block
    write(file, lines)
    current = full_load(store, file)
    inner_id = json.loads(inner)["id"]
    assert (inner_id in current) is (joined == "a record spread over lines")
    size = file.path.stat().st_size
    start = sum(len(x) for x in lines[:150])
    # A cut a byte either side of each line start in the block, and a few further in it.
    joined_bytes = b"".join(block)
    starts = [start] + [start + n + 1 for n, c in enumerate(joined_bytes) if c == 0x0A]
    cuts = {at + d for at in starts for d in (-1, 0, 1)} | set(range(start, starts[-1], 97))
    for cut in sorted(cuts):
        first_read = size - cut
        assert_exact(tail_records(file, NOW, count=1, first_read=first_read), current)


def test_an_expired_verification_is_shown_stale_as_the_load_shows_it(
    store: MemoryStore,
) -> None:
    file = store.file_for(Scope.PROJECT)
    verified = {
        "verification": "verified",
        "verifiedAt": NOW - 5000,
        "verifiedBy": "user",
        "expiresAt": NOW - 1,
        "revision": 2,
    }
    write(file, [line(file, i) for i in range(5)] + [line(file, 1, **verified)])
    current = full_load(store, file)
    preview = {r.id: r for r in tail_records(file, NOW)}
    stale = preview[json.loads(line(file, 1))["id"]]
    assert stale.governance.verification is Verification.STALE
    assert_exact(list(preview.values()), current)


def test_a_last_line_without_newline_is_shown_when_valid_and_left_when_torn(
    store: MemoryStore,
) -> None:
    file = store.file_for(Scope.PROJECT)
    lines = [line(file, i) for i in range(4)]
    write(file, lines[:3] + [lines[3].rstrip(b"\n")])
    assert len(tail_records(file, NOW)) == 4
    assert_exact(tail_records(file, NOW), full_load(store, file))
    write(file, lines[:3] + [lines[3][:50]])
    assert len(tail_records(file, NOW)) == 3
    assert_exact(tail_records(file, NOW), full_load(store, file))


def test_every_scope_is_previewed_and_missing_files_give_nothing(store: MemoryStore) -> None:
    project, user = store.file_for(Scope.PROJECT), store.file_for(Scope.USER)
    write(project, [line(project, i) for i in range(3)])
    write(user, [line(user, 100 + i) for i in range(2)])
    files = store.files()
    assert not store.file_for(Scope.SHARED).path.exists()
    assert len(newest_records(files, NOW)) == 5
    assert total_bytes(files) == project.path.stat().st_size + user.path.stat().st_size


def test_a_symlinked_store_file_is_refused_before_anything_is_read(
    store: MemoryStore, tmp_path: Path
) -> None:
    file = store.file_for(Scope.PROJECT)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(line(file, 1))
    ensure_dir(file.path.parent)
    os.symlink(elsewhere, file.path)
    for read in (lambda: check_readable([file]), lambda: newest_records([file], NOW)):
        with pytest.raises(StoreError) as err:
            read()
        assert err.value.code == ErrorCode.UNSAFE_PATH


# ------------------------------------------------- the newest records wherever they are


def newest_first_lines(file: StoreFile, n: int) -> list[bytes]:
    """The host's compaction order: each id where it was first seen, so the records updated
    last (here the first 40, revised at the end of time) are the file's first lines."""
    return [revised(file, i, 2, NOW - 100 + i) if i < 40 else line(file, i) for i in range(n)]


def revised(file: StoreFile, i: int, revision: int, updated_at: int) -> bytes:
    """Record ``i`` at ``revision``, updated at ``updated_at``."""
    data = json.loads(line(file, i, revision=revision))
    data["updatedAt"] = updated_at
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def newest_ids(current: dict[str, Record], count: int) -> set[str]:
    ranked = sorted(current.values(), key=lambda r: (-r.updatedAt, r.id))
    return {r.id for r in ranked[:count]}


def test_the_newest_records_at_the_start_of_a_big_file_are_found_each_as_loaded(
    store: MemoryStore,
) -> None:
    file = store.file_for(Scope.PROJECT)
    write(file, newest_first_lines(file, 2000))
    current = full_load(store, file)
    preview = newest_records([file], NOW, count=60)
    assert_exact(preview, current)
    assert {r.id for r in preview} == newest_ids(current, 60)
    # What the tail alone gives: none of the 40 newest.
    assert not {r.id for r in tail_records(file, NOW, count=60)} & newest_ids(current, 40)


def test_an_id_whose_last_line_is_invalid_shows_its_last_valid_line(store: MemoryStore) -> None:
    file = store.file_for(Scope.PROJECT)
    lines = newest_first_lines(file, 1000)
    bad = json.loads(revised(file, 3, 3, NOW))
    bad["title"] = ""  # JSON, but not a record the host keeps
    lines.append(json.dumps(bad).encode() + b"\n")
    write(file, lines)
    current = full_load(store, file)
    preview = {r.id: r for r in newest_records([file], NOW, count=60)}
    assert preview[bad["id"]].governance.revision == 2
    assert_exact(list(preview.values()), current)


@pytest.mark.parametrize("where", ["above a newest line", "a newest line's last line"])
def test_a_line_that_is_not_json_near_a_chosen_line_gives_only_what_the_load_shows(
    store: MemoryStore, where: str
) -> None:
    # A host join could start there: the scan cannot know, so the preview is the tail's.
    file = store.file_for(Scope.PROJECT)
    lines = newest_first_lines(file, 1000)
    if where == "above a newest line":
        lines.insert(10, b'{"schemaVersion":1,"id":"torn\n')
    else:
        rid = json.loads(line(file, 5))["id"]
        lines.append(f'{{"schemaVersion":1,"id":"{rid}","updatedAt":{NOW},"ti'.encode() + b"\n")
    write(file, lines)
    current = full_load(store, file)
    preview = newest_records([file], NOW, count=60)
    assert_exact(preview, current)
    assert {r.id for r in preview} == {r.id for r in tail_records(file, NOW, count=60)}


def test_the_mixed_file_of_every_case_is_previewed_exactly(store: MemoryStore) -> None:
    file = store.file_for(Scope.PROJECT)
    write(file, mixed_lines(file, 800) + newest_first_lines(file, 300)[:40])
    current = full_load(store, file)
    assert_exact(newest_records([file], NOW, count=60), current)
