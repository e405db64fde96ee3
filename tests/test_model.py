"""The record (SPEC 4): our API over the host's rules. ``parse_line`` results (records, foreign
and newer-schema lines), the host's message and our reason for each broken rule, legacy
defaults, the expired view, unknown fields, ``make_record``, ``next_revision`` and ids.

The host's verdict on every corpus case is checked in ``tests/interop``; here each rule is met
once, to pin down what our API returns for it. Pure functions: no files beyond the fixtures.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import plain_line_validator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory_tui import model, model_fast
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.model import (
    ForeignLine,
    FutureLine,
    Location,
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordInvalid,
    RecordType,
    Retention,
    Scope,
    SourceRef,
    Status,
    Verification,
    content_hash,
    effective,
    expired_view,
    import_id,
    is_expired,
    make_record,
    new_id,
    next_revision,
    parse_line,
    record_from_json,
    session_file_stem,
    session_scope_key,
    sha256_hex,
)

FIXTURE_RECORDS = (
    Path(__file__).parent / "fixtures/host/workspace/.dsh/workspace-memory/records.jsonl"
)
ROOT = "root:" + sha256_hex("/home/dev/projects/acme-api")
OTHER_ROOT = "root:" + sha256_hex("/srv/other-project")
PROJECT = Location(Scope.PROJECT, ROOT)


def fixture_lines() -> list[bytes]:
    text = FIXTURE_RECORDS.read_text(encoding="utf-8").replace("__ROOT_ID__", ROOT)
    return text.encode().splitlines()


def good() -> dict[str, Any]:
    """A complete, valid project record as the host writes it (fixture line 3)."""
    return json.loads(fixture_lines()[2])


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def invalid(obj: Any, location: Location | None = PROJECT) -> RecordInvalid:
    raw = obj if isinstance(obj, bytes) else line(obj)
    with pytest.raises(RecordInvalid) as err:
        parse_line(raw, location)
    return err.value


@pytest.fixture(
    params=["fast", "fast-plain", "host-order"],
    ids=["fast-path", "fast-path-with-the-plain-validator", "host-order-path"],
)
def both_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run a test with pydantic's fast path on and off, and on with the plain validator in
    place of the constrained one (what a pydantic that lays its schemas out otherwise gets):
    all must give the same answers.
    """
    monkeypatch.setattr(model, "FAST_PATH", request.param != "host-order")
    if request.param == "fast-plain":
        with plain_line_validator(monkeypatch):
            yield
    else:
        yield


def test_the_line_validator_refuses_what_its_added_constraints_rule_out() -> None:
    assert model_fast.validator_kind() == "constrained"
    assert model_fast._constraints_hold(model_fast.line_validator())


def test_the_line_validator_makes_the_same_records_as_the_models_own() -> None:
    for raw in fixture_lines():
        if not raw.strip():
            continue
        try:
            mine = model_fast.line_validator()(raw, strict=True)
        except model.ValidationError:
            continue
        theirs = model_fast.plain_validator(raw, strict=True)
        assert type(mine) is Record
        assert vars(mine) == vars(theirs)
        assert mine.model_fields_set == theirs.model_fields_set
        assert mine.model_extra == theirs.model_extra
        assert mine.to_line() == theirs.to_line()


# ---------------------------------------------------------------- enumerations


@pytest.mark.parametrize(
    ("enum", "values"),
    [
        (RecordType, {"decision", "preference", "convention", "fact"}),
        (Status, {"active", "archived", "forgotten"}),
        (Origin, {"user-authored", "imported", "derived", "model-suggested"}),
        (Verification, {"unverified", "verified", "rejected", "stale"}),
        (Retention, {"session-end", "project-delete", "user-managed"}),
        (ProvenanceKind, {"user", "agent", "tool", "import"}),
        (Scope, {"session", "project", "shared-project", "user"}),
    ],
)
def test_enumerations_are_exactly_the_specified_values(enum: type, values: set[str]) -> None:
    assert {m.value for m in enum} == values


def test_source_ref_kinds_are_the_hosts_five() -> None:
    assert model.SOURCE_REF_KINDS == ("session", "event", "file", "url", "import")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("type",), "note", "Memory type is invalid"),
        (("status",), "deleted", "Memory status is invalid"),
        (("scope",), "global", "Memory record scope does not match this store"),
        (("governance", "origin"), "human", "Memory governance enum is invalid"),
        (("governance", "verification"), "maybe", "Memory governance enum is invalid"),
        (("governance", "retention"), "forever", "Memory governance enum is invalid"),
        (("governance", "confidence"), "certain", "Memory confidence is invalid"),
        (("provenance", "kind"), "robot", "Memory provenance kind is invalid"),
    ],
)
def test_a_value_outside_its_enumeration_gets_the_hosts_message(
    both_paths: None, path: tuple[str, ...], value: str, message: str
) -> None:
    obj = good()
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    err = invalid(obj)
    assert err.host_message == message
    assert err.reason.startswith(message)


# ---------------------------------------------------------------- validation rules


def _set(path: str, value: Any) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            obj = obj[key]
        obj[last] = value

    return apply


def _drop(path: str) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            obj = obj[key]
        del obj[last]

    return apply


# name -> (mutation, the host's message)
MUTATIONS: dict[str, tuple[Any, str]] = {
    "hash not sha256-prefixed hex": (
        _set("contentHash", "md5:abc"),
        "Memory content hash is invalid",
    ),
    "hash in uppercase hex": (
        _set("contentHash", "sha256:" + "A" * 64),
        "Memory content hash is invalid",
    ),
    "hash of other content": (
        _set("contentHash", content_hash("something else")),
        "Memory content hash is invalid",
    ),
    "no sourceRefs for a non user-authored origin": (
        _set("governance.sourceRefs", []),
        "Non-user Memory requires a source reference",
    ),
    "a sourceRef of kind record": (
        _set("governance.sourceRefs", [{"kind": "record", "id": "memory:x"}]),
        "Memory source reference kind is invalid",
    ),
    "a sourceRef of kind bundle": (
        _set("governance.sourceRefs", [{"kind": "bundle", "id": "b"}]),
        "Memory source reference kind is invalid",
    ),
    "a sourceRef hash that is not a hash": (
        _set("governance.sourceRefs", [{"kind": "import", "id": "m", "contentHash": "x"}]),
        "Memory source reference hash is invalid",
    ),
    "verified without verifiedAt": (
        _set("governance.verification", "verified"),
        "Verified Memory requires a timestamp",
    ),
    "pinned without pinnedBy": (
        _set("governance.pinnedAt", 1764000120000),
        "Pinned Memory requires an actor",
    ),
    "revision 0": (_set("governance.revision", 0), "Memory revision is invalid"),
    "updatedAt before createdAt": (_set("updatedAt", 1), "Memory timestamps are invalid"),
    "negative useCount": (_set("useCount", -1), "Memory useCount is invalid"),
    "a required field missing": (_drop("title"), "Memory title is invalid"),
    "a null for an optional field": (_set("lastUsedAt", None), "Memory lastUsedAt is invalid"),
    "a null provenance sessionId": (
        _set("provenance.sessionId", None),
        "Memory provenance session is invalid",
    ),
    "a number given as a string": (
        _set("createdAt", "1764000120000"),
        "Memory createdAt is invalid",
    ),
    "a fraction for an integer": (
        _set("createdAt", 1764000120000.5),
        "Memory createdAt is invalid",
    ),
    "an integer past 2^53 - 1": (_set("updatedAt", 2**53), "Memory updatedAt is invalid"),
    "a boolean for a number": (_set("useCount", True), "Memory useCount is invalid"),
    "a boolean for schemaVersion": (_set("schemaVersion", True), "Memory record schema is invalid"),
    "a fraction for schemaVersion": (_set("schemaVersion", 1.5), "Memory record schema is invalid"),
    "tags not a list of strings": (_set("tags", [1]), "Memory tag is invalid"),
    "33 tags": (_set("tags", [f"t{i}" for i in range(33)]), "Memory tags are invalid"),
    "a title of 257 UTF-8 bytes": (_set("title", "é" * 128 + "x"), "Memory title is invalid"),
    "a title of JS whitespace only": (
        _set("title", "\u00a0\u3000\ufeff"),
        "Memory title is invalid",
    ),
    "a tab in a title": (_set("title", "a\tb"), "Memory title is invalid"),
    "a control character in content": (_set("content", "a\x07b"), "Memory content is invalid"),
    "content over 64 KiB": (_set("content", "x" * (64 * 1024 + 1)), "Memory content is invalid"),
    "scope of another file": (
        _set("scope", "user"),
        "Memory record scope does not match this store",
    ),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_broken_rule_gets_the_hosts_message_and_a_reason(both_paths: None, name: str) -> None:
    mutate, message = MUTATIONS[name]
    obj = good()
    mutate(obj)
    err = invalid(obj)
    assert err.host_message == message
    # The reason is the host's message, with what we know in words after it, on one line.
    assert err.reason == message or err.reason.startswith(message + " (")
    assert str(err) == err.reason
    assert "\n" not in err.reason and len(err.reason) < 200
    assert err.warning_code == ("BAD_HASH" if "hash" in message else "CORRUPT_RECORD")
    assert err.not_json is False


def test_reasons_say_more_than_the_hosts_message_where_it_is_shared() -> None:
    # The host has one message for several rules; our reason tells them apart.
    def reason(mutate: Any) -> str:
        obj = good()
        mutate(obj)
        return invalid(obj).reason

    assert reason(_set("title", None)) != reason(_set("title", "   "))
    assert "null" in reason(_set("title", None))
    assert "blank" in reason(_set("title", "\u3000"))
    assert "control character" in reason(_set("title", "a\x01"))
    assert "256" in reason(_set("title", "x" * 257))
    assert "record" in reason(_set("governance.sourceRefs", [{"kind": "record", "id": "m"}]))


def test_a_line_that_is_not_json_is_refused_as_not_json() -> None:
    for raw in (b'{"schemaVersion":1,"id":', b"{'single': 'quotes'}"):
        err = invalid(raw)
        assert err.host_message == "Memory record is invalid"
        assert err.reason == "Memory record is invalid (not valid JSON)"
        assert err.not_json is True
        assert err.warning_code == "CORRUPT_RECORD"


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_tokens_are_not_json(token: str) -> None:
    raw = line(good()).replace(b'"useCount":0', b'"useCount":' + token.encode())
    assert invalid(raw).not_json is True


def _nan_at(where: str, token: str) -> bytes:
    """A good line with ``token`` (bare, as JSON cannot hold it) where a value of any type is
    kept: an unknown field at each level, a field the host does not type, inside a list."""
    obj = good()
    gov = obj["governance"]
    marker = "__TOKEN__"
    if where == "unknown field":
        obj["later"] = marker
    elif where == "unknown field in governance":
        gov["later"] = marker
    elif where == "unknown field in provenance":
        obj["provenance"]["later"] = marker
    elif where == "unknown field in a source ref":
        gov["sourceRefs"][0]["later"] = marker
    elif where == "inside a list":
        obj["later"] = [1, marker]
    else:  # a governance field the host keeps whatever it holds
        gov[where] = marker
    return line(obj).replace(b'"' + marker.encode() + b'"', token.encode())


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(
    "where",
    [
        "unknown field",
        "unknown field in governance",
        "unknown field in provenance",
        "unknown field in a source ref",
        "inside a list",
        "conflictGroup",
        "reviewNote",
        "reviewedAt",
    ],
)
def test_nan_and_infinity_are_not_json_where_any_value_is_kept(
    where: str, token: str, both_paths: None
) -> None:
    """Rust's parser takes them (into fields of any type); the host's JSON.parse does not."""
    raw = _nan_at(where, token)
    assert token.encode() in raw
    assert invalid(raw).not_json is True


def test_a_value_that_is_not_an_object_is_refused() -> None:
    assert invalid(b"5").host_message == "Memory record must be an object"
    assert invalid(b'"text"').host_message == "Memory record must be an object"
    # An array is an object to JavaScript: it fails on its (missing) schemaVersion.
    assert invalid(b"[1, 2]").host_message == "Memory record schema is invalid"


def test_integers_in_float_form_are_accepted_and_written_as_integers(both_paths: None) -> None:
    obj = good()
    obj["createdAt"], obj["updatedAt"], obj["useCount"] = 1e3, 1.7e12, -0.0
    record = parse_line(line(obj), PROJECT)
    assert isinstance(record, Record)
    assert (record.createdAt, record.updatedAt, record.useCount) == (1000, 1700000000000, 0)
    out = json.loads(record.to_line())
    assert type(out["createdAt"]) is int and out["useCount"] == 0


def test_content_may_hold_tab_lf_and_cr_and_a_title_of_256_bytes_is_valid() -> None:
    obj = good()
    obj["content"] = "a\tb\nc\r\nd"
    obj["contentHash"] = content_hash(obj["content"])
    obj["title"] = "é" * 128  # 256 UTF-8 bytes
    assert isinstance(parse_line(line(obj), PROJECT), Record)


def test_verified_with_verified_at_is_valid() -> None:
    obj = good()
    obj["governance"] |= {"verification": "verified", "verifiedAt": obj["updatedAt"]}
    assert isinstance(parse_line(line(obj), PROJECT), Record)


# ---------------------------------------------------------------- whose line: Location


def _session_record(session_id: str, root: str) -> Record:
    key = session_scope_key(session_id, root)
    return make_record(
        scope=Scope.SESSION,
        scope_key=key,
        record_type=RecordType.FACT,
        title="t",
        content="c",
        tags=[],
        provenance=Provenance(kind=ProvenanceKind.TOOL, sessionId=session_id),
        origin=Origin.DERIVED,
        source_refs=[SourceRef(kind="session", id=session_id)],
    )


def test_a_session_file_owns_the_lines_whose_scope_key_hashes_to_its_name() -> None:
    record = _session_record("s1", ROOT)
    key = session_scope_key("s1", ROOT)
    assert session_file_stem(key) == sha256_hex(key)[:32]
    found_on_disk = Location(Scope.SESSION, None, session_file_stem(key))
    assert isinstance(parse_line(record.to_line(), found_on_disk), Record)
    assert isinstance(parse_line(record.to_line(), Location(Scope.SESSION, key)), Record)
    # Another session's line in this file: foreign, kept, not corrupt.
    other = Location(Scope.SESSION, None, session_file_stem("s2|" + ROOT))
    foreign = parse_line(record.to_line(), other)
    assert foreign == ForeignLine(key, record.id, "t")


def test_a_project_line_of_another_root_is_foreign_however_invalid() -> None:
    obj = good()
    obj["scopeKey"] = OTHER_ROOT
    assert parse_line(line(obj), PROJECT) == ForeignLine(OTHER_ROOT, obj["id"], obj["title"])
    obj["contentHash"] = "sha256:bad"  # the host never validates another root's line
    obj["schemaVersion"] = 2
    assert isinstance(parse_line(line(obj), PROJECT), ForeignLine)
    # Without a location nothing is foreign: the line is judged on its own.
    assert isinstance(parse_line(line(obj)), FutureLine)
    # The old key of an earlier version of ours (the workspace path) is foreign too.
    obj = good()
    obj["scopeKey"] = "/home/dev/projects/acme-api"
    assert isinstance(parse_line(line(obj), PROJECT), ForeignLine)


def test_a_line_of_another_scope_is_corrupt_not_foreign() -> None:
    obj = good()
    obj["scope"] = "shared-project"
    err = invalid(obj)
    assert err.host_message == "Memory record scope does not match this store"


def test_the_user_file_keeps_other_profiles_as_foreign_lines() -> None:
    obj = good()
    obj |= {"scope": "user", "scopeKey": "bob"}
    obj["governance"]["retention"] = "user-managed"
    assert isinstance(parse_line(line(obj), Location(Scope.USER, "alice")), ForeignLine)
    assert isinstance(parse_line(line(obj), Location(Scope.USER, "bob")), Record)


def test_record_from_json_applies_the_same_rules_as_parse_line() -> None:
    assert record_from_json(good(), PROJECT).id == good()["id"]
    for mutate, message in MUTATIONS.values():
        obj = good()
        mutate(obj)
        with pytest.raises(RecordInvalid) as err:
            record_from_json(obj, PROJECT)
        assert err.value.host_message == message
        assert err.value.reason == invalid(obj).reason
    with pytest.raises(RecordInvalid, match="must be an object"):
        record_from_json("a string")
    future = good() | {"schemaVersion": 2}
    with pytest.raises(RecordInvalid, match="unsupported"):
        record_from_json(future)
    with pytest.raises(RecordInvalid, match="not JSON"):
        record_from_json({"a": float("nan")})


# ---------------------------------------------------------------- newer schema


@pytest.mark.parametrize("version", [2, 0, -1, 3.0])
def test_any_other_safe_integer_schema_version_is_a_future_line(version: Any) -> None:
    obj = good() | {"schemaVersion": version}
    parsed = parse_line(line(obj), PROJECT)
    assert parsed == FutureLine(int(version), obj["id"], obj["title"], ROOT)


def test_the_fixture_newer_schema_line_is_a_future_line() -> None:
    parsed = parse_line(fixture_lines()[5], PROJECT)
    assert isinstance(parsed, FutureLine)
    assert parsed.schema_version == 2
    assert parsed.id == "memory:agent:fact:0f0e0d0c0b0a09080706050403020100"
    # Even one that breaks every rule of version 1.
    assert isinstance(parse_line(b'{"schemaVersion": 3, "whatever": true}'), FutureLine)


@pytest.mark.parametrize("version", ["1", None, 1.5, True, 2**53])
def test_a_schema_version_that_is_no_safe_integer_is_corrupt(version: Any) -> None:
    obj = good() | {"schemaVersion": version}
    assert invalid(obj).host_message == "Memory record schema is invalid"
    del obj["schemaVersion"]
    assert invalid(obj).host_message == "Memory record schema is invalid"


# ---------------------------------------------------------------- legacy records


@pytest.mark.parametrize(
    ("kind", "origin", "verification", "ref_kind"),
    [
        ("user", "user-authored", "verified", None),
        ("agent", "derived", "unverified", "session"),
        ("tool", "derived", "unverified", "session"),
        ("import", "imported", "unverified", "import"),
    ],
)
@pytest.mark.parametrize(
    ("scope", "retention"),
    [("project", "project-delete"), ("shared-project", "project-delete"), ("user", "user-managed")],
)
def test_a_record_without_governance_gets_the_hosts_defaults(
    both_paths: None,
    kind: str,
    origin: str,
    verification: str,
    ref_kind: str | None,
    scope: str,
    retention: str,
) -> None:
    obj = good()
    del obj["governance"]
    obj["scope"] = scope
    obj["provenance"] = {"kind": kind, "sessionId": "sess-9", "eventSeq": 7}
    key = "alice" if scope == "user" else ROOT
    obj["scopeKey"] = key
    raw = line(obj)
    record = parse_line(raw, Location(Scope(scope), key))
    assert isinstance(record, Record)
    assert record.is_legacy
    g = record.governance
    assert g.origin.value == origin
    assert g.verification.value == verification
    assert g.revision == 1
    assert g.retention.value == retention
    # One ref from the session id, none from the event (the host's memoryGovernance()).
    expected_refs = [] if ref_kind is None else [(ref_kind, "sess-9")]
    assert [(r.kind, r.id) for r in g.sourceRefs] == expected_refs
    if kind == "user":
        assert (g.verifiedAt, g.verifiedBy) == (obj["updatedAt"], "user")
    else:
        assert g.verifiedAt is None and g.verifiedBy is None
    # The line stays as it was; --json and exports show the defaults.
    assert record.to_line() == raw + b"\n"
    assert record.to_json()["governance"]["origin"] == origin


def test_a_legacy_record_without_a_session_id_refers_to_its_own_id() -> None:
    obj = good()
    del obj["governance"]
    obj["provenance"] = {"kind": "agent"}
    record = parse_line(line(obj), PROJECT)
    assert isinstance(record, Record)
    assert [(r.kind, r.id) for r in record.governance.sourceRefs] == [("session", obj["id"])]


def test_a_legacy_records_next_revision_writes_its_governance() -> None:
    record = parse_line(fixture_lines()[4], PROJECT)
    assert isinstance(record, Record) and record.is_legacy
    new = next_revision(record, record.updatedAt + 1, {"title": "renamed"})
    assert not new.is_legacy
    out = json.loads(new.to_line())
    assert out["governance"] == {
        "origin": "derived",
        "sourceRefs": [{"kind": "session", "id": "sess-host"}],
        "verification": "unverified",
        "revision": 2,
        "retention": "project-delete",
    }


def test_the_fixture_legacy_line_reads_with_defaults() -> None:
    record = parse_line(fixture_lines()[4], PROJECT)
    assert isinstance(record, Record)
    assert record.governance.origin is Origin.DERIVED
    assert record.governance.retention is Retention.PROJECT_DELETE
    assert [(r.kind, r.id) for r in record.governance.sourceRefs] == [("session", "sess-host")]


# ---------------------------------------------------------------- expiry


def _verified(expires_at: int, pinned: bool = True) -> Record:
    obj = good()
    obj["governance"] |= {
        "verification": "verified",
        "verifiedAt": obj["updatedAt"],
        "verifiedBy": "user",
        "expiresAt": expires_at,
    }
    if pinned:
        obj["governance"] |= {"pinnedAt": obj["updatedAt"], "pinnedBy": "user"}
    record = parse_line(line(obj), PROJECT)
    assert isinstance(record, Record)
    return record


def test_a_verified_record_past_expires_at_is_shown_stale_unpinned_one_revision_up() -> None:
    record = _verified(expires_at=2000)
    assert is_expired(record, 2000) and not is_expired(record, 1999)
    view = expired_view(record)
    assert view.governance.verification is Verification.STALE
    assert view.governance.revision == record.governance.revision + 1
    assert view.governance.pinnedAt is None and view.governance.pinnedBy is None
    assert view.governance.expiresAt == 2000
    assert view.id == record.id and view.content == record.content
    # A view: the record itself is unchanged.
    assert record.governance.verification is Verification.VERIFIED
    assert record.governance.pinned
    assert effective(record, 1999) is record
    assert effective(record, 2000).governance.verification is Verification.STALE


def test_only_a_verified_record_expires() -> None:
    obj = good()
    obj["governance"]["expiresAt"] = 1
    record = parse_line(line(obj), PROJECT)
    assert isinstance(record, Record)
    assert not is_expired(record, 10**13)
    assert effective(record, 10**13) is record


# ---------------------------------------------------------------- unknown fields, round trips


def test_valid_fixture_lines_serialize_back_byte_for_byte() -> None:
    for index in (0, 2, 3, 4):  # in the host's field order
        raw = fixture_lines()[index]
        record = parse_line(raw, PROJECT)
        assert isinstance(record, Record)
        assert record.to_line() == raw + b"\n"
    # Fields in another order come back in the host's order, with the same values.
    raw = fixture_lines()[1]
    record = parse_line(raw, PROJECT)
    assert isinstance(record, Record)
    assert json.loads(record.to_line()) == json.loads(raw)


def test_unknown_fields_survive_a_new_revision() -> None:
    obj = good()
    obj["hostHints"] = {"confidence": 0.82, "tags": ["x"]}
    obj["provenance"]["hostTrace"] = "t-1"
    obj["governance"]["policy"] = {"ttlDays": 30}
    obj["governance"]["sourceRefs"][0]["weight"] = 2
    record = parse_line(line(obj), PROJECT)
    assert isinstance(record, Record)
    new = next_revision(record, record.updatedAt + 5, {"title": "renamed"})
    out = json.loads(new.to_line())
    assert out["hostHints"] == {"confidence": 0.82, "tags": ["x"]}
    assert out["provenance"]["hostTrace"] == "t-1"
    assert out["governance"]["policy"] == {"ttlDays": 30}
    assert out["governance"]["sourceRefs"][0]["weight"] == 2
    assert out["title"] == "renamed"


def test_loaded_records_stay_independent_when_changed() -> None:
    raw = fixture_lines()[2]
    a = parse_line(raw, PROJECT)
    b = parse_line(raw, PROJECT)
    assert isinstance(a, Record) and isinstance(b, Record)
    a.provenance.eventSeq = None
    a.governance.reviewNote = "only on a"
    assert "reviewNote" not in b.to_json()["governance"]
    assert b.provenance.eventSeq == 1
    c = b.model_copy(update={"title": "copied"})
    d = copy.deepcopy(b)
    d.governance.reviewedBy = "zoe"
    assert c.title == "copied" and b.title != "copied"
    assert "reviewedBy" not in b.to_json()["governance"]
    # Provenance and source refs share their fields sets too.
    obj = good()
    del obj["provenance"]["note"]
    a, b = parse_line(line(obj), PROJECT), parse_line(line(obj), PROJECT)
    assert isinstance(a, Record) and isinstance(b, Record)
    a.provenance.note = "set on a"
    a.governance.sourceRefs[0].contentHash = "sha256:" + "0" * 64
    assert "note" not in b.to_json()["provenance"]
    assert "contentHash" not in b.to_json()["governance"]["sourceRefs"][0]
    e = b.governance.sourceRefs[0].model_copy(update={"contentHash": "sha256:" + "1" * 64})
    assert "contentHash" in e.model_dump(exclude_unset=True)
    assert "contentHash" not in b.to_json()["governance"]["sourceRefs"][0]
    assert parse_line(raw, PROJECT).to_line() == raw + b"\n"


# ---------------------------------------------------------------- revisions, make_record, ids


def test_next_revision_keeps_the_id_and_creation_and_never_goes_back_in_time() -> None:
    record = parse_line(line(good()), PROJECT)
    assert isinstance(record, Record)
    new = next_revision(record, record.updatedAt - 1000, {"content": "changed"})
    assert new.id == record.id
    assert new.createdAt == record.createdAt
    assert new.updatedAt == record.updatedAt
    assert new.governance.revision == record.governance.revision + 1
    assert new.contentHash == content_hash("changed")
    later = next_revision(record, record.updatedAt + 7, governance={"confidence": "high"})
    assert later.updatedAt == record.updatedAt + 7
    assert later.governance.confidence == "high"


def test_next_revision_drops_governance_fields_and_refuses_an_invalid_result() -> None:
    record = _verified(expires_at=10**13)
    new = next_revision(record, record.updatedAt, None, None, ("pinnedAt", "pinnedBy"))
    assert new.governance.pinnedAt is None
    assert "pinnedAt" not in json.loads(new.to_line())["governance"]
    with pytest.raises(StoreError) as err:
        next_revision(record, record.updatedAt, {"title": "x" * 257})
    assert err.value.code == "INVALID_RECORD"
    assert "Memory title is invalid" in err.value.message
    with pytest.raises(StoreError) as err:  # verified without verifiedAt
        next_revision(record, record.updatedAt, drop=("verifiedAt",))
    assert err.value.code == "INVALID_RECORD"


_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
UUID_ID = re.compile(rf"^memory:{_UUID4}$")
IMPORT_ID = re.compile(rf"^memory:import:{_UUID4}$")


def test_new_ids_are_the_hosts_uuid_ids() -> None:
    ids = {new_id() for _ in range(50)}
    assert len(ids) == 50 and all(UUID_ID.match(i) for i in ids)
    imports = {import_id() for _ in range(50)}
    assert len(imports) == 50 and all(IMPORT_ID.match(i) for i in imports)


@pytest.mark.parametrize(
    ("scope", "key", "retention"),
    [
        (Scope.PROJECT, ROOT, "project-delete"),
        (Scope.SHARED, ROOT, "project-delete"),
        (Scope.USER, "alice", "user-managed"),
        (Scope.SESSION, session_scope_key("s", ROOT), "session-end"),
    ],
)
def test_make_record_builds_a_host_valid_first_revision(
    scope: Scope, key: str, retention: str
) -> None:
    record = make_record(
        scope=scope,
        scope_key=key,
        record_type=RecordType.CONVENTION,
        title="t",
        content="c",
        tags=["a"],
        provenance=Provenance(kind=ProvenanceKind.AGENT, note="n"),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="s")],
        now=1764000000000,
    )
    assert UUID_ID.match(record.id)
    assert (record.createdAt, record.updatedAt, record.useCount) == (1764000000000,) * 2 + (0,)
    assert record.status is Status.ACTIVE
    assert record.contentHash == content_hash("c")
    g = record.governance
    assert (g.revision, g.verification, g.retention.value) == (
        1,
        Verification.UNVERIFIED,
        retention,
    )
    assert parse_line(record.to_line(), Location(scope, key)) == record
    out = json.loads(record.to_line())
    assert "lastUsedAt" not in out and "verifiedAt" not in out["governance"]


def test_make_record_verified_gets_verified_by_user_and_a_conflict_group() -> None:
    record = make_record(
        scope=Scope.PROJECT,
        scope_key=ROOT,
        record_type=RecordType.FACT,
        title="t",
        content="c",
        tags=[],
        provenance=Provenance(kind=ProvenanceKind.USER),
        origin=Origin.USER_AUTHORED,
        source_refs=[],
        verification=Verification.VERIFIED,
        verified_at=5,
        conflict_group="conflict:" + "0" * 24,
        record_id="memory:given",
    )
    assert record.id == "memory:given"
    g = json.loads(record.to_line())["governance"]
    assert (g["verifiedAt"], g["verifiedBy"]) == (5, "user")
    assert g["conflictGroup"] == "conflict:" + "0" * 24


def test_make_record_refuses_what_the_host_would_refuse() -> None:
    def build(**kw: Any) -> Record:
        args: dict[str, Any] = dict(
            scope=Scope.PROJECT,
            scope_key=ROOT,
            record_type=RecordType.FACT,
            title="t",
            content="c",
            tags=[],
            provenance=Provenance(kind=ProvenanceKind.AGENT),
            origin=Origin.MODEL_SUGGESTED,
            source_refs=[SourceRef(kind="session", id="s")],
        )
        return make_record(**(args | kw))

    for bad in (
        {"source_refs": []},
        {"title": "x" * 257},
        {"tags": ["t"] * 33},
        {"content": "a\x00"},
        {"source_refs": [SourceRef(kind="file", id="a\nb")]},
    ):
        with pytest.raises(StoreError) as err:
            build(**bad)
        assert err.value.code == "INVALID_RECORD", bad
    with pytest.raises(StoreError) as err:
        build(source_refs=[{"kind": "record", "id": "m"}])
    assert err.value.code == "INVALID_RECORD"


def test_content_hash_is_sha256_of_the_utf8_content() -> None:
    assert content_hash("") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert content_hash("é") == "sha256:" + sha256_hex("é")
    # A lone surrogate is hashed as U+FFFD, as node encodes it.
    assert content_hash("a\ud800") == content_hash("a\ufffd")


# ----------------------------------------------------------------------------- fast paths


def _line_with(**changes: Any) -> bytes:
    obj = good()
    for key, value in changes.items():
        target, _, field = key.rpartition("__")
        (obj[target] if target else obj)[field] = value
    obj["contentHash"] = content_hash(obj["content"])
    return line(obj)


@pytest.mark.parametrize(
    "raw",
    [
        _line_with(title=" leading space"),
        _line_with(content="\tindented"),
        _line_with(title="ünïcode title", content="naïve — 😀"),
        _line_with(content="a\\b \u2028 \t\r\n"),
        _line_with(governance__conflictGroup=1.5, governance__reviewNote=[1e20, {"x": None}]),
        _line_with(newField={"nested": [1, 2.5, "three"]}),
        _line_with(content="NaN and Infinity in words"),
    ],
    ids=["space", "tab", "unicode", "escapes", "floats", "unknown", "words"],
)
def test_the_fast_path_and_the_hosts_order_agree_on_unusual_valid_lines(
    raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = parse_line(raw, PROJECT)
    monkeypatch.setattr(model, "FAST_PATH", False)
    slow = parse_line(raw, PROJECT)
    assert isinstance(fast, Record) and fast.to_json() == slow.to_json()


# Characters where the text rules have an edge: JS whitespace, controls (C0, DEL, C1), a
# character of each UTF-8 length, and what JSON escapes.
_EDGE_CHARS = " \t\n\r\x0b\x00\x01\x1f\x7f\x80\x9f\xa0\u2028\ufeff" + 'aZ!~"\\' + "é€😀"


def _edge_text(limit: int) -> st.SearchStrategy[str]:
    """Short strings of edge characters, or one character repeated to around a byte limit."""
    near_limit = st.builds(
        lambda ch, n, tail: ch * n + tail,
        st.sampled_from("aé€😀"),
        st.sampled_from(
            sorted(
                {
                    limit // 4 - 1,
                    limit // 4 + 1,
                    limit // 3,
                    limit // 2,
                    limit - 1,
                    limit,
                    limit + 1,
                }
            )
        ),
        st.text(st.sampled_from(_EDGE_CHARS), max_size=2),
    )
    # Mostly inside a valid text, so that the edge character alone decides.
    framed = st.builds(
        lambda head, body, tail: head + body + tail,
        st.sampled_from(["", "a"]),
        st.text(st.sampled_from(_EDGE_CHARS), max_size=4),
        st.sampled_from(["", "z"]),
    )
    return st.one_of(framed, near_limit)


_EDGE_FIELDS = {  # field -> (its byte limit, how to set it in a record)
    "title": (model.MAX_TITLE_BYTES, lambda obj, v: obj.update(title=v)),
    "content": (model.MAX_CONTENT_BYTES, lambda obj, v: obj.update(content=v)),
    "id": (model.MAX_ID_BYTES, lambda obj, v: obj.update(id=v)),
    "tag": (model.MAX_TAG_BYTES, lambda obj, v: obj.update(tags=["db", v])),
    "note": (model.MAX_NOTE_BYTES, lambda obj, v: obj["provenance"].update(note=v)),
    "sessionId": (model.MAX_ID_BYTES, lambda obj, v: obj["provenance"].update(sessionId=v)),
    "sourceRef": (
        model.MAX_ID_BYTES,
        lambda obj, v: obj["governance"]["sourceRefs"][0].update(id=v),
    ),
}


@st.composite
def _edge_records(draw: st.DrawFn) -> bytes:
    """A valid record with one or two of its texts replaced by edge text."""
    obj = good()
    for name in draw(st.lists(st.sampled_from(sorted(_EDGE_FIELDS)), min_size=1, max_size=2)):
        limit, put = _EDGE_FIELDS[name]
        put(obj, draw(_edge_text(limit)))
    obj["contentHash"] = content_hash(obj["content"])
    return line(obj)


def _verdict(raw: bytes) -> object:
    try:
        parsed = parse_line(raw, PROJECT)
    except RecordInvalid as exc:
        return ("invalid", str(exc), exc.reason)
    return parsed.to_json() if isinstance(parsed, Record) else parsed


def _both_verdicts(raw: bytes) -> tuple[object, object]:
    fast = _verdict(raw)
    model.FAST_PATH = False
    try:
        return fast, _verdict(raw)
    finally:
        model.FAST_PATH = True


def test_the_fast_path_and_the_hosts_order_agree_on_each_edge_character_in_each_text() -> None:
    # Every edge character alone, first, inside and last, in every text the host checks.
    differ = []
    for name, (_, put) in _EDGE_FIELDS.items():
        for ch in _EDGE_CHARS:
            for text in (ch, ch + "a", "a" + ch + "z", "a" + ch):
                obj = good()
                put(obj, text)
                obj["contentHash"] = content_hash(obj["content"])
                fast, slow = _both_verdicts(line(obj))
                if fast != slow:
                    differ.append((name, text, fast, slow))
    assert differ == []


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=_edge_records())
def test_the_fast_path_and_the_hosts_order_agree_on_every_text_rule(raw: bytes) -> None:
    # The fast path leaves the text rules to patterns in Rust and UTF-8 sizes to a check of
    # non-ASCII lines; the host-order path applies each rule as the host does.
    fast, slow = _both_verdicts(raw)
    assert fast == slow


def _records_for_json() -> list[Record]:
    records: list[Record] = []
    for raw in fixture_lines():
        try:
            parsed = parse_line(raw)
        except RecordInvalid:
            continue
        if isinstance(parsed, Record):
            records.append(parsed)
    for raw in (
        _line_with(title="ünïcode \u2028 title", content='quotes " and \\ and \t\r\n'),
        _line_with(governance__conflictGroup=1e16, governance__reviewedAt=[0.5]),
        _line_with(extra={"a": 1.0}),
        _line_with(provenance__extra=True),
    ):
        records.append(parse_line(raw))
    # A lone surrogate, which only the json module can print (escaped).
    surrogate = good() | {"content": "\ud800 x"}
    surrogate["contentHash"] = content_hash(surrogate["content"])
    records.append(record_from_json(surrogate))
    return records


def test_records_json_prints_what_the_json_module_prints() -> None:
    records = _records_for_json()
    assert any(r.is_legacy for r in records)
    expected = json.dumps([r.to_json() for r in records], ensure_ascii=False, indent=2)
    assert model.records_json(records) == expected
    for record in records:
        one = json.dumps([record.to_json()], ensure_ascii=False, indent=2)
        assert model.records_json([record]) == one
    assert model.records_json([]) == "[]"


def test_a_line_checked_once_is_not_parsed_again_but_still_checked_for_its_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = make_record(
        scope=Scope.PROJECT,
        scope_key=ROOT,
        record_type=RecordType.FACT,
        title="Checked once",
        content="built here",
        tags=[],
        provenance=Provenance(kind=ProvenanceKind.AGENT),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="s1")],
    )
    calls: list[bytes] = []
    real = model.parse_line
    monkeypatch.setattr(
        model, "parse_line", lambda raw, loc=None: calls.append(raw) or real(raw, loc)
    )
    assert model.checked_line(record, PROJECT) == record.to_line()
    assert calls == []
    with pytest.raises(StoreError) as err:
        model.checked_line(record, Location(Scope.PROJECT, OTHER_ROOT))
    assert err.value.code == "INVALID_RECORD"
    calls.clear()
    record.title = "Changed since"  # another line: checked again
    model.checked_line(record, PROJECT)
    assert calls == [record.to_line()]
