"""Every case of host-corpus/validation.jsonl: the file the host opened, and what it decided.

Our store, opening the same file, must see the same records (normalized as the host returns
them), warn about the same lines for the same reasons, be read-only exactly when the host is,
and put the same text in ``.corrupt`` when it quarantines. Both of our parse paths (the pydantic
fast path and the rule-by-rule one) give the same verdicts. With ``DSH_HOST_SRC`` set, the host
itself then opens the file our store rewrote and finds nothing to warn about.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import plain_line_validator

from dsh_memory_tui import model
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.governance import is_erased
from dsh_memory_tui.model import (
    MAX_SCOPE_KEY_BYTES,
    ForeignLine,
    FutureLine,
    Location,
    Record,
    RecordInvalid,
    Scope,
    effective,
    now_ms,
    parse_lines,
    user_id_problem,
    utf8_len,
)
from dsh_memory_tui.paths import StorePaths
from dsh_memory_tui.store import MemoryStore

from .corpus import CaseDirs, expected_host, validation_cases, write_validation_case
from .hostform import host_form

CASES = validation_cases()
IDS = [c["case"] for c in CASES]
QUARANTINED = ("CORRUPT_RECORD", "BAD_HASH", "TRUNCATED_LINE")
# Lines of a shape an earlier dsh-memory wrote: a rewrite makes them host-valid (maintenance).
OUR_OLD_LINES = ("sourceRef-kind-record-refused", "sourceRef-kind-bundle-refused")


def _store_for(case: dict[str, Any], dirs: CaseDirs) -> tuple[MemoryStore, Any]:
    key = dirs.text(case["scopeKey"])
    scope = Scope(case["scope"])
    if scope is Scope.USER:
        # The store itself takes any scopeKey up to 512 bytes (the domain's 256-character
        # userId rule is ``resolve_user``'s): build the paths directly, as the case did.
        store = MemoryStore(StorePaths(dirs.home, dirs.workspace, key))
        if utf8_len(key) > MAX_SCOPE_KEY_BYTES:
            raise StoreError("USAGE", "a scope key over 512 bytes")
        return store, store.paths.user_file()
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    if scope is Scope.SESSION:
        session_id, root = key.split("|", 1)
        return store, store.paths.session_file(session_id, root)
    return store, store.paths.scope_file(scope)


def _verdicts(data: bytes, location: Location) -> dict[str, Any]:
    """What ``parse_lines`` decides for a whole file, in the host's terms."""
    lines = data.split(b"\n")
    records: dict[str, Record] = {}
    warnings, corrupt, read_only = [], [], False
    for entry in parse_lines(lines, location):
        code = entry.warning_code(len(lines), data.endswith(b"\n"))
        result = entry.result
        if isinstance(result, RecordInvalid):
            warnings.append((code, entry.first + 1, result.host_message))
            corrupt.append((entry.first + 1, entry.quarantine_text))
        elif isinstance(result, FutureLine):
            warnings.append((code, entry.first + 1))
            read_only = True
        elif isinstance(result, Record):
            records[result.id] = result
            if code:
                warnings.append((code, entry.first + 1))
        else:
            assert isinstance(result, ForeignLine)
    now = now_ms()
    return {
        "records": [host_form(effective(r, now)) for r in records.values()],
        "warnings": warnings,
        "corrupt": corrupt,
        "readOnly": read_only,
    }


def _host_verdicts(host: dict[str, Any]) -> dict[str, Any]:
    warnings = [
        (w["code"], w["line"], w["message"]) if w["code"] in QUARANTINED else (w["code"], w["line"])
        for w in host["warnings"]
    ]
    return {
        "records": host["records"],
        "warnings": warnings,
        "corrupt": [(c["line"], c["raw"]) for c in host["corrupt"] or []],
        "readOnly": host["readOnly"],
    }


@pytest.mark.parametrize(
    "path", ["fast", "plain", "rule"], ids=["fast-path", "fast-path-plain-validator", "rule-path"]
)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_file_gets_the_hosts_verdict(
    case: dict[str, Any], path: str, dirs: CaseDirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = expected_host(case, dirs)
    if "error" in expected:
        with pytest.raises(Exception, match="512|scope key|USAGE"):
            _store_for(case, dirs)
        return
    monkeypatch.setattr(model, "FAST_PATH", path != "rule")
    store, file = _store_for(case, dirs)
    data = write_validation_case(case, dirs).read_bytes()
    if path == "plain":  # the fall-back when the constrained build fails
        with plain_line_validator(monkeypatch):
            got = _verdicts(data, store.view(file).location)
    else:
        got = _verdicts(data, store.view(file).location)
    assert got == _host_verdicts(expected)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_store_shows_what_the_host_shows(case: dict[str, Any], dirs: CaseDirs) -> None:
    expected = expected_host(case, dirs)
    if "error" in expected:
        return
    store, file = _store_for(case, dirs)
    path = write_validation_case(case, dirs)
    data = path.read_bytes()
    view = store.view(file)
    view.refresh()
    now = now_ms()
    shown = [host_form(effective(r, now)) for r in view.current.values()]
    assert shown == expected["records"]
    assert bool(view.future) == expected["readOnly"]
    lines = data.split(b"\n")
    last_line = len(lines) if not data.endswith(b"\n") else None
    host_corrupt = [
        w["line"]
        for w in expected["warnings"]
        if w["code"] in QUARANTINED and w["line"] != last_line
    ]
    assert [c.line_no for c in view.corrupt] == host_corrupt
    # A last line without LF that is not a record: the host warns, we call it torn (a writer
    # may still be writing it) until a writer holding the lock quarantines it.
    torn_on_host = any(
        w["line"] == last_line for w in expected["warnings"] if w["code"] in QUARANTINED
    )
    assert view.torn == torn_on_host
    assert path.read_bytes() == data  # reading changes nothing


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_after_our_compaction_the_file_reads_the_same_and_is_clean(
    case: dict[str, Any], dirs: CaseDirs
) -> None:
    expected = expected_host(case, dirs)
    if "error" in expected or expected["readOnly"]:
        return
    store, file = _store_for(case, dirs)
    path = write_validation_case(case, dirs)
    store.compact(file, confirm_shared=True)
    view = store.view(file)
    view.refresh()
    assert not view.corrupt and not view.torn
    now = now_ms()
    records = [host_form(effective(r, now)) for r in view.current.values()]
    host_corrupt = [(c["line"], c["raw"]) for c in expected["corrupt"] or []]
    if case["case"] in OUR_OLD_LINES:
        # A kind an earlier dsh-memory wrote: migrated to `import`, not quarantined.
        [record] = records
        assert [r["kind"] for r in record["governance"]["sourceRefs"]] == ["import"]
        records, host_corrupt = [], []
    wanted = expected["records"]
    forgotten = {r["id"] for r in wanted if r["status"] == "forgotten"}
    # The host's forget keeps the text; our compaction erases it (its design's scrub).
    assert all(is_erased(view.current[rid]) for rid in forgotten)
    text = ("title", "content", "contentHash", "tags", "updatedAt", "governance")
    assert [_without(r, text) if r["id"] in forgotten else r for r in records] == [
        _without(r, text) if r["id"] in forgotten else r for r in wanted
    ]
    quarantined = [json.loads(line) for line in _lines(path.with_name(path.name + ".corrupt"))]
    assert [(q["line"], q["raw"]) for q in quarantined] == host_corrupt
    assert all(isinstance(q["capturedAt"], int) for q in quarantined)


def _without(record: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in keys}


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_host_opens_our_compacted_file_without_a_warning(
    case: dict[str, Any], dirs: CaseDirs, host: Any
) -> None:
    expected = expected_host(case, dirs)
    if "error" in expected or expected["readOnly"]:
        return
    store, file = _store_for(case, dirs)
    write_validation_case(case, dirs)
    store.compact(file, confirm_shared=True)
    args: dict[str, Any] = {"scope": case["scope"]}
    if case["scope"] == "user":
        args["user"] = dirs.text(case["scopeKey"])
        if user_id_problem(args["user"]) is not None:
            # The host's domain refuses such an id as we do (``resolve_user``).
            got = host.run("list", home=dirs.home, workspace=dirs.workspace, check=False, **args)
            assert got["rc"] == 1 and got["error"]["message"] == "User Memory id is invalid"
            return
    if case["scope"] == "session":
        args["session"] = dirs.text(case["scopeKey"]).split("|", 1)[0]
    got = host.run("list", "--full", home=dirs.home, workspace=dirs.workspace, **args)
    assert got["warnings"] == []
    if case["case"] in OUR_OLD_LINES:
        [record] = got["records"]  # migrated: the host now reads it too
        assert [r["kind"] for r in record["governance"]["sourceRefs"]] == ["import"]
        return
    wanted = expected["records"]
    forgotten = {r["id"] for r in wanted if r["status"] == "forgotten"}  # erased by our compaction
    text = ("title", "content", "contentHash", "tags", "updatedAt", "governance")
    assert [_without(r, text) if r["id"] in forgotten else r for r in got["records"]] == [
        _without(r, text) if r["id"] in forgotten else r for r in wanted
    ]
