"""The fence around pydantic's internals (``model_fast``): the fast path falls back to the plain
validator when its own cannot be built or does not hold, loaded records' shared fields sets
refuse change, and no other module reaches into pydantic.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO_ROOT, plain_line_validator

from dsh_memory_tui import model, model_fast
from dsh_memory_tui.model import Location, Record, RecordInvalid, Scope, parse_line, sha256_hex

CORPUS = REPO_ROOT / "tests" / "host-corpus" / "validation.jsonl"
FIXTURE_RECORDS = REPO_ROOT / "tests/fixtures/host/workspace/.dsh/workspace-memory/records.jsonl"
ROOT = "root:" + sha256_hex("/home/dev/projects/acme-api")
PROJECT = Location(Scope.PROJECT, ROOT)


def _corpus_lines() -> list[tuple[bytes, Location]]:
    """Every line of the host's validation corpus, with the file it was judged in."""
    out = []
    for text in CORPUS.read_text(encoding="utf-8").split("\n"):
        if not text:
            continue
        case = json.loads(text)
        location = Location(Scope(case["scope"]), case["scopeKey"])
        out.append((case["line"].encode("utf-8", "surrogatepass"), location))
    return out


def _verdict(raw: bytes, location: Location) -> object:
    try:
        parsed = parse_line(raw, location)
    except RecordInvalid as exc:
        return ("invalid", exc.reason)
    return parsed.to_json() if isinstance(parsed, Record) else parsed


def _fixture_lines() -> list[bytes]:
    text = FIXTURE_RECORDS.read_text(encoding="utf-8").replace("__ROOT_ID__", ROOT)
    return [line.encode() for line in text.splitlines() if line.strip()]


def test_the_constrained_line_validator_is_built_under_the_pinned_pydantic() -> None:
    assert model_fast.validator_kind() == "constrained"


def test_a_schema_layout_the_build_does_not_know_gives_the_plain_validator_and_same_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases = _corpus_lines() + [(raw, PROJECT) for raw in _fixture_lines()]
    assert len(cases) > 100
    constrained = [_verdict(raw, loc) for raw, loc in cases]
    with plain_line_validator(monkeypatch):
        plain = [_verdict(raw, loc) for raw, loc in cases]
        fast_on_plain = sum(
            1 for raw, loc in cases if model.usual_run([raw], 0, loc)[0]
        )  # the fast path still decides the usual lines
    monkeypatch.setattr(model, "FAST_PATH", False)
    host_order = [_verdict(raw, loc) for raw, loc in cases]
    assert plain == host_order
    assert constrained == host_order
    assert fast_on_plain > 0
    assert model_fast.validator_kind() == "constrained"  # built again once the layout is back


def test_a_line_validator_that_takes_what_it_should_refuse_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pydantic that builds the schema but ignores the added limits and patterns.
    monkeypatch.setattr(model_fast, "_build_line_validator", lambda: model_fast.plain_validator)
    model_fast.reset_line_validator()
    try:
        assert model_fast.validator_kind() == "plain"
        obj = json.loads(_fixture_lines()[2])
        obj["title"] = " leading space"  # valid to the host; the constrained one refuses it
        record = parse_line(json.dumps(obj).encode(), PROJECT)
        assert isinstance(record, Record) and record.title == " leading space"
        obj["title"] = "t" * 300  # over 256 bytes: invalid, whichever path decides
        with pytest.raises(RecordInvalid, match="title"):
            parse_line(json.dumps(obj).encode(), PROJECT)
    finally:
        monkeypatch.undo()
        model_fast.reset_line_validator()
    assert model_fast.validator_kind() == "constrained"


def test_a_loaded_records_shared_fields_set_refuses_to_change() -> None:
    raw = _fixture_lines()[2]
    a, b = parse_line(raw, PROJECT), parse_line(raw, PROJECT)
    assert isinstance(a, Record) and isinstance(b, Record)
    assert a.model_fields_set is b.model_fields_set  # one set per shape
    for change in (
        lambda s: s.add("lastUsedAt"),
        lambda s: s.update({"lastUsedAt"}),
        lambda s: s.discard("title"),
        lambda s: s.clear(),
    ):
        with pytest.raises(TypeError, match="shared fields set"):
            change(a.model_fields_set)
    assert "title" in b.model_fields_set and "lastUsedAt" not in b.model_fields_set
    a.lastUsedAt = 5  # assignment thaws first
    assert "lastUsedAt" in a.model_fields_set and "lastUsedAt" not in b.model_fields_set
    assert parse_line(raw, PROJECT).to_line() == raw + b"\n"


def test_loaded_records_share_their_repeated_parts_and_an_unknown_field_goes_to_one() -> None:
    raw = _fixture_lines()[2]
    a, b = parse_line(raw, PROJECT), parse_line(raw, PROJECT)
    assert isinstance(a, Record) and isinstance(b, Record)
    assert a.__pydantic_extra__ is b.__pydantic_extra__ == {}  # one empty extras dict
    assert a.governance.__pydantic_extra__ is b.provenance.__pydantic_extra__
    assert a.scopeKey is b.scopeKey and a.id is not b.id  # repeated texts: one string
    with pytest.raises(TypeError, match="shared extras dict"):
        a.__pydantic_extra__["x"] = 1
    a.newerHostField = [1]  # type: ignore[attr-defined]  # assignment thaws first
    a.governance.reviewNote = "kept"
    assert a.__pydantic_extra__ == {"newerHostField": [1]} and b.__pydantic_extra__ == {}
    assert b.to_line() == raw + b"\n"
    assert b'"newerHostField":[1]' in a.to_line()
    copied = b.model_copy(update={"other": 2})
    assert copied.__pydantic_extra__ == {"other": 2} and b.__pydantic_extra__ == {}


# The fence's two halves: the models' base and shared fields sets, and the fast path.
FENCE = ("model_base.py", "model_fast.py")
_INTERNALS = re.compile(r"__pydantic_|pydantic_core|core_schema|SchemaValidator")


def test_no_module_but_the_fence_touches_pydantics_internals() -> None:
    package = REPO_ROOT / "dsh_memory_tui"
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{n}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if path.name not in FENCE
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _INTERNALS.search(line)
    ]
    assert offenders == []


def test_a_reader_that_keeps_a_repeated_keys_first_value_turns_the_fast_path_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pydantic before 2.11 kept the first value; JSON.parse keeps the last.
    cases = _corpus_lines()
    monkeypatch.setattr(model, "FAST_PATH", False)
    host_order = [_verdict(raw, loc) for raw, loc in cases]
    monkeypatch.setattr(model, "FAST_PATH", True)
    monkeypatch.setattr(model_fast, "_last_key_wins", lambda validate: False)
    model_fast.reset_line_validator()
    try:
        assert model_fast.validator_kind() == "off"
        assert not any(model.usual_run([raw], 0, loc)[0] for raw, loc in cases)
        assert [_verdict(raw, loc) for raw, loc in cases] == host_order
    finally:
        monkeypatch.undo()
        model_fast.reset_line_validator()
    assert model_fast.validator_kind() == "constrained"
