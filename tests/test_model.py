"""The record (SPEC 3): enumerations, one readable reason per rule, legacy defaults, unknown
fields, newer-schema lines, ids. Pure functions: no files needed beyond reading fixtures.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui.model import (
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
    make_record,
    new_id,
    next_revision,
    parse_line,
    record_from_json,
    session_scope_key,
    sha256_hex,
)

FIXTURE_RECORDS = (
    Path(__file__).parent / "fixtures/host/workspace/.dsh/workspace-memory/records.jsonl"
)
PROJECT = Location(Scope.PROJECT)


def fixture_lines() -> list[bytes]:
    return FIXTURE_RECORDS.read_bytes().splitlines()


def good() -> dict[str, Any]:
    """A complete, valid project record as the host writes it (fixture line 3)."""
    return json.loads(fixture_lines()[2])


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def reason_of(obj: dict[str, Any] | bytes, location: Location | None = PROJECT) -> str:
    raw = obj if isinstance(obj, bytes) else line(obj)
    with pytest.raises(RecordInvalid) as err:
        parse_line(raw, location)
    return err.value.reason


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


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("type",), "note"),
        (("status",), "deleted"),
        (("scope",), "global"),
        (("governance", "origin"), "human"),
        (("governance", "verification"), "maybe"),
        (("governance", "retention"), "forever"),
        (("provenance", "kind"), "robot"),
    ],
)
def test_a_value_outside_its_enumeration_is_refused_naming_the_field(
    path: tuple[str, ...], value: str
) -> None:
    obj = good()
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    reason = reason_of(obj)
    assert reason.startswith(".".join(path) + ":")


# ---------------------------------------------------------------- validation rules


def _mutations() -> dict[str, Any]:
    def set_(path: str, value: Any) -> Any:
        def apply(obj: dict[str, Any]) -> None:
            *parents, last = path.split(".")
            for key in parents:
                obj = obj[key]
            obj[last] = value

        return apply

    def drop(path: str) -> Any:
        def apply(obj: dict[str, Any]) -> None:
            *parents, last = path.split(".")
            for key in parents:
                obj = obj[key]
            del obj[last]

        return apply

    return {
        "hash not sha256-prefixed hex": set_("contentHash", "md5:abc"),
        "hash in uppercase hex": set_("contentHash", "sha256:" + "A" * 64),
        "hash of other content": set_("contentHash", content_hash("something else")),
        "no sourceRefs for a non user-authored origin": set_("governance.sourceRefs", []),
        "verified without verifiedAt": set_("governance.verification", "verified"),
        "revision 0": set_("governance.revision", 0),
        "updatedAt before createdAt": set_("updatedAt", 1),
        "negative useCount": set_("useCount", -1),
        "a required field missing": drop("title"),
        "a number given as a string": set_("createdAt", "1764000120000"),
        "a boolean for a number": set_("useCount", True),
        "a boolean for schemaVersion": set_("schemaVersion", True),
        "schemaVersion 0": set_("schemaVersion", 0),
        "tags not a list of strings": set_("tags", [1]),
        "scope of another file": set_("scope", "user"),
    }


@pytest.mark.parametrize("name", list(_mutations()))
def test_each_broken_rule_is_refused_with_a_reason(name: str) -> None:
    obj = good()
    _mutations()[name](obj)
    assert reason_of(obj)


def test_every_rule_has_its_own_readable_reason() -> None:
    reasons = {}
    for name, mutate in _mutations().items():
        obj = good()
        mutate(obj)
        reasons[name] = reason_of(obj)
    reasons["not json"] = reason_of(b'{"schemaVersion":1,"id":')
    reasons["not an object"] = reason_of(b"[1, 2]")
    # Two ways to break the same rule (the hash's format) give the same reason.
    assert reasons.pop("hash in uppercase hex") == reasons["hash not sha256-prefixed hex"]
    assert len(set(reasons.values())) == len(reasons), reasons
    assert reasons["hash of other content"] == (
        "contentHash does not match the sha256 of the content"
    )
    assert "verifiedAt" in reasons["verified without verifiedAt"]
    assert "sourceRefs" in reasons["no sourceRefs for a non user-authored origin"]
    assert "revision" in reasons["revision 0"]
    assert "updatedAt" in reasons["updatedAt before createdAt"]
    assert "useCount" in reasons["negative useCount"]
    assert reasons["scope of another file"].startswith("scope 'user' does not match")
    assert reasons["not json"] == "not valid JSON"
    for reason in reasons.values():
        assert "\n" not in reason and len(reason) < 200


def test_verified_with_verified_at_is_valid() -> None:
    obj = good()
    obj["governance"] |= {"verification": "verified", "verifiedAt": obj["updatedAt"]}
    assert isinstance(parse_line(line(obj), PROJECT), Record)


def test_a_session_line_must_hash_to_its_file_name() -> None:
    key = session_scope_key("s1", "r1")
    rec = make_record(
        scope=Scope.SESSION, scope_key=key, record_type=RecordType.FACT, title="t",
        content="c", tags=[], provenance=Provenance(kind=ProvenanceKind.TOOL, sessionId="s1"),
        origin=Origin.DERIVED, source_refs=[SourceRef(kind="session", id="s1")],
    )
    assert parse_line(rec.to_line(), Location(Scope.SESSION, sha256_hex(key)))
    with pytest.raises(RecordInvalid, match="does not hash to this file's name"):
        parse_line(rec.to_line(), Location(Scope.SESSION, sha256_hex("other|key")))


def test_a_project_line_keeps_its_recorded_workspace_path() -> None:
    obj = good()
    obj["scopeKey"] = "/a/path/that/moved"
    assert isinstance(parse_line(line(obj), PROJECT), Record)


def test_record_from_json_applies_the_same_rules_as_parse_line() -> None:
    assert record_from_json(good(), PROJECT).id == good()["id"]
    for mutate in _mutations().values():
        obj = good()
        mutate(obj)
        with pytest.raises(RecordInvalid) as err:
            record_from_json(obj, PROJECT)
        assert err.value.reason == reason_of(obj)
    with pytest.raises(RecordInvalid, match="not a JSON object"):
        record_from_json(["a list"])


# ---------------------------------------------------------------- legacy records


@pytest.mark.parametrize(
    ("kind", "origin"),
    [("user", "user-authored"), ("agent", "model-suggested"), ("tool", "derived"),
     ("import", "imported")],
)
@pytest.mark.parametrize(
    ("scope", "retention"),
    [("project", "project-delete"), ("shared-project", "project-delete"),
     ("user", "user-managed")],
)
def test_a_record_without_governance_gets_the_defaults(
    kind: str, origin: str, scope: str, retention: str
) -> None:
    obj = good()
    del obj["governance"]
    obj["scope"] = scope
    obj["provenance"] = {"kind": kind, "sessionId": "sess-9", "eventSeq": 7}
    record = parse_line(line(obj), Location(Scope(scope)))
    assert isinstance(record, Record)
    g = record.governance
    assert g.origin.value == origin
    assert g.verification is Verification.UNVERIFIED
    assert g.revision == 1
    assert g.retention.value == retention
    assert [(r.kind, r.id) for r in g.sourceRefs] == [("session", "sess-9"), ("event", "7")]
    # Our tools write the full record: the defaults are in what --json prints.
    assert record.to_json()["governance"]["origin"] == origin


def test_a_legacy_record_then_follows_the_rules() -> None:
    obj = good()
    del obj["governance"]
    obj["provenance"] = {"kind": "agent"}  # model-suggested, and no source to derive a ref
    assert "sourceRefs" in reason_of(obj)
    obj["provenance"] = {"kind": "user"}  # user-authored needs none
    assert isinstance(parse_line(line(obj), PROJECT), Record)


def test_the_fixture_legacy_line_reads_with_defaults() -> None:
    record = parse_line(fixture_lines()[4], PROJECT)
    assert isinstance(record, Record)
    assert record.governance.origin is Origin.MODEL_SUGGESTED
    assert record.governance.retention is Retention.PROJECT_DELETE
    assert [(r.kind, r.id) for r in record.governance.sourceRefs] == [
        ("session", "sess-host"), ("event", "1"),
    ]


# ---------------------------------------------------------------- newer schema, unknown fields


def test_a_newer_schema_line_is_not_corrupt_but_a_future_line() -> None:
    parsed = parse_line(fixture_lines()[5], PROJECT)
    assert isinstance(parsed, FutureLine)
    assert parsed.schema_version == 2
    assert parsed.id == "memory:agent:fact:0f0e0d0c0b0a09080706050403020100"
    # Even one that breaks every rule of version 1.
    assert isinstance(parse_line(b'{"schemaVersion": 3, "whatever": true}'), FutureLine)


def test_valid_fixture_lines_serialize_back_byte_for_byte() -> None:
    for index in (0, 1, 2, 3):
        raw = fixture_lines()[index]
        record = parse_line(raw, PROJECT)
        assert isinstance(record, Record)
        assert record.to_line() == raw + b"\n"


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


# ---------------------------------------------------------------- revisions and ids


def test_next_revision_keeps_the_id_and_creation_and_never_goes_back_in_time() -> None:
    record = parse_line(line(good()), PROJECT)
    assert isinstance(record, Record)
    new = next_revision(record, record.updatedAt - 1000, {"content": "changed"})
    assert new.id == record.id
    assert new.createdAt == record.createdAt
    assert new.updatedAt == record.updatedAt
    assert new.governance.revision == record.governance.revision + 1
    assert new.contentHash == content_hash("changed")


ID_RE = re.compile(r"^memory:(user|agent|auto|import):(decision|preference|convention|fact):"
                   r"[0-9a-f]{32}$")


@pytest.mark.parametrize(
    ("origin", "source"),
    [(Origin.USER_AUTHORED, "user"), (Origin.MODEL_SUGGESTED, "agent"),
     (Origin.DERIVED, "auto"), (Origin.IMPORTED, "import")],
)
def test_make_record_ids_follow_the_pattern_and_name_their_source(
    origin: Origin, source: str
) -> None:
    refs = [] if origin is Origin.USER_AUTHORED else [SourceRef(kind="session", id="s")]
    ids = {
        make_record(
            scope=Scope.PROJECT, scope_key="/w", record_type=RecordType.CONVENTION, title="t",
            content="c", tags=[], provenance=Provenance(kind=ProvenanceKind.USER),
            origin=origin, source_refs=refs,
        ).id
        for _ in range(50)
    }
    assert len(ids) == 50
    for record_id in ids:
        assert ID_RE.match(record_id)
        assert record_id.split(":")[1] == source


def test_new_id_refuses_an_unknown_type() -> None:
    assert ID_RE.match(new_id("agent", "fact"))
    with pytest.raises(ValueError):
        new_id("agent", "note")


def test_content_hash_is_sha256_of_the_utf8_content() -> None:
    assert content_hash("") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert content_hash("é") == "sha256:" + sha256_hex("é")


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
    assert parse_line(raw, PROJECT).to_line() == raw + b"\n"
