"""Integers of any length and any nesting depth: JSON.parse takes both, so a record holding one
where any value is allowed is valid to the host. We give the host's verdict, never take such a
line out of the file, and write the value back byte for byte in a new revision.

The tests marked ``host`` run the real host's code (they skip without ``DSH_HOST_SRC``); the
others hold our verdict to what the host's rules say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui.model import Record, RecordInvalid, content_hash, parse_line
from dsh_memory_tui.store import MemoryStore

from .corpus import CaseDirs
from .host import HostHarness

NOW = 1_700_000_000_000

# JSON texts that Python's own reader cannot hold as JSON.parse does.
HUGE = {
    "int-5000-digits": "7" * 5000,
    "negative-int-5000-digits": "-" + "3" * 5000,
    "float-past-the-largest-double": "1e400",
    "float-of-5000-digits": "9" * 5000 + ".5",
    "array-2000-deep": "[" * 2000 + "1" + "]" * 2000,
    "object-1000-deep": '{"a":' * 1000 + "[]" + "}" * 1000,
    "mixed-300-deep": '[{"k":' * 150 + '"v"' + "}]" * 150,
}
# Where a record may hold any value: an unknown field at each level, and the untyped fields.
PLACES = ["top", "provenance", "governance", "sourceRef", "conflictGroup"]


def _proposal(rid: str, root_id: str) -> dict[str, Any]:
    content = f"Content of {rid}."
    return {
        "schemaVersion": 1,
        "id": rid,
        "scope": "project",
        "scopeKey": root_id,
        "type": "fact",
        "title": f"Title of {rid}",
        "content": content,
        "tags": ["t"],
        "provenance": {"kind": "agent", "sessionId": "s1", "note": "memory proposal"},
        "createdAt": NOW,
        "updatedAt": NOW,
        "useCount": 0,
        "contentHash": content_hash(content),
        "status": "active",
        "governance": {
            "origin": "model-suggested",
            "sourceRefs": [{"kind": "session", "id": "s1"}],
            "verification": "unverified",
            "revision": 1,
            "retention": "project-delete",
        },
    }


_MARK = "__VALUE__"


def _line_with(obj: dict[str, Any], place: str, value: str) -> bytes:
    """``obj`` as one line with the JSON text ``value`` at ``place`` (spliced in as text: no
    Python reader or writer touches it)."""
    obj = json.loads(json.dumps(obj))
    if place == "top":
        obj["hostExtra"] = _MARK
    elif place == "provenance":
        obj["provenance"]["hostTrace"] = _MARK
    elif place == "governance":
        obj["governance"]["policy"] = _MARK
    elif place == "sourceRef":
        obj["governance"]["sourceRefs"][0]["weight"] = _MARK
    else:
        obj["governance"]["conflictGroup"] = _MARK
    text = json.dumps(obj, separators=(",", ":"))
    return text.replace(f'"{_MARK}"', value).encode()


def _project_file(dirs: CaseDirs) -> Path:
    return dirs.scope_path("project")


def _write(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    path.chmod(0o600)


def _store(dirs: CaseDirs) -> MemoryStore:
    return MemoryStore.open(dirs.home, dirs.workspace, "alice")


def _current(store: MemoryStore) -> list[str]:
    view = store.view(store.file_for("project"))
    view.refresh()
    return sorted(view.current)


# ---------------------------------------------------------------- our verdict, no host


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("value", list(HUGE.values()), ids=list(HUGE))
def test_a_record_holding_it_where_any_value_is_allowed_is_valid(
    value: str, place: str, dirs: CaseDirs
) -> None:
    raw = _line_with(_proposal("memory:x", dirs.root_id), place, value)
    record = parse_line(raw, None)
    assert isinstance(record, Record)
    assert value.encode() in record.to_line()  # written back byte for byte


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("createdAt", "Memory createdAt is invalid"),
        ("useCount", "Memory useCount is invalid"),
        ("title", "Memory title is invalid"),
        ("schemaVersion", "Memory record schema is invalid"),
    ],
)
@pytest.mark.parametrize("value", list(HUGE.values()), ids=list(HUGE))
def test_in_a_field_of_a_type_it_gets_the_hosts_message(
    value: str, field: str, message: str, dirs: CaseDirs
) -> None:
    text = json.dumps(_proposal("memory:x", dirs.root_id), separators=(",", ":"))
    old = json.dumps(_proposal("memory:x", dirs.root_id)[field], separators=(",", ":"))
    raw = text.replace(f'"{field}":{old}', f'"{field}":{value}', 1).encode()
    with pytest.raises(RecordInvalid) as err:
        parse_line(raw, None)
    assert err.value.host_message == message


def test_check_reads_a_line_nested_100000_deep_without_a_traceback(dirs: CaseDirs) -> None:
    good = json.dumps(_proposal("memory:good", dirs.root_id), separators=(",", ":")).encode()
    deep = _line_with(_proposal("memory:deep", dirs.root_id), "top", "[" * 100_000 + "]" * 100_000)
    bad = b'{"schemaVersion":1,"x":' + b"[" * 100_000 + b"}"  # not JSON: too few closers
    _write(_project_file(dirs), [good, deep, bad])
    store = _store(dirs)
    report = store.check()
    assert [(p.kind, p.line_no) for p in report.problems] == [("corrupt", 3)]
    assert _current(store) == ["memory:deep", "memory:good"]
    assert [c.line_no for c in store.view(store.file_for("project")).corrupt] == [3]


# ------------------------------------------------------------------------ with the host


@pytest.mark.parametrize("value", list(HUGE.values()), ids=list(HUGE))
def test_the_host_and_we_both_read_it_valid_and_our_writes_keep_the_line(
    value: str, host: HostHarness, dirs: CaseDirs
) -> None:
    file = _project_file(dirs)
    lines = [_line_with(_proposal(f"memory:{p}", dirs.root_id), p, value) for p in PLACES]
    _write(file, lines)
    opened = host.run("open-warnings", home=dirs.home, workspace=dirs.workspace)
    assert (opened["warnings"], opened["records"]) == ([], len(PLACES))

    store = _store(dirs)
    assert _current(store) == sorted(f"memory:{p}" for p in PLACES)
    # Our next write appends: every line the host reads stays, byte for byte.
    store.create("project", "fact", "A new one", "Written by us.", [])
    data = file.read_bytes()
    assert all(line in data for line in lines)
    assert not file.with_name(file.name + ".corrupt").exists()
    # A new revision of each keeps the value as it was written.
    for place in PLACES:
        store.verify(f"memory:{place}")
    last = file.read_bytes().split(b"\n")[-1 - len(PLACES) : -1]
    assert [value.encode() in line for line in last] == [True] * len(PLACES)
    opened = host.run("open-warnings", home=dirs.home, workspace=dirs.workspace)
    assert (opened["warnings"], opened["records"]) == ([], len(PLACES) + 1)
    listed = host.run("list", home=dirs.home, workspace=dirs.workspace)
    verified = {r["id"] for r in listed["records"] if r.get("verification") == "verified"}
    assert verified >= {f"memory:{p}" for p in PLACES}


@pytest.mark.parametrize("value", list(HUGE.values()), ids=list(HUGE))
def test_in_a_typed_field_the_host_and_we_both_quarantine_it(
    value: str, host: HostHarness, dirs: CaseDirs
) -> None:
    good = _proposal("memory:good", dirs.root_id)
    text = json.dumps(_proposal("memory:bad", dirs.root_id), separators=(",", ":"))
    bad = text.replace('"useCount":0', f'"useCount":{value}', 1).encode()
    file = _project_file(dirs)
    _write(file, [json.dumps(good, separators=(",", ":")).encode(), bad])
    opened = host.run("open-warnings", home=dirs.home, workspace=dirs.workspace)
    assert [w["code"] for w in opened["warnings"]] == ["CORRUPT_RECORD"]
    assert _current(_store(dirs)) == ["memory:good"]
