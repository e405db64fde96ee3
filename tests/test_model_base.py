"""The record's models on pydantic-core alone (``model_base.OpenModel``): the core schema made
from their annotations is the one pydantic makes from the same declarations, and the part of
pydantic's model API the package uses behaves as pydantic's does.
"""

from __future__ import annotations

import copy
import pickle
import typing
from typing import Any

import pydantic
import pytest

from dsh_memory_tui.model_base import Bounds, OpenModel
from dsh_memory_tui.record import Governance, Provenance, Record, SourceRef

MODELS = (SourceRef, Provenance, Governance, Record)


def _pydantic_twin(cls: type[OpenModel], twins: dict[str, type[pydantic.BaseModel]]) -> Any:
    """A pydantic model declared as ``cls`` is (its nested models' twins in ``twins``)."""

    def annotation(tp: Any) -> Any:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            base, *metadata = typing.get_args(tp)
            fields = [
                pydantic.Field(ge=m.ge, le=m.le, strict=m.strict or None)
                for m in metadata
                if isinstance(m, Bounds)
            ]
            return typing.Annotated[(annotation(base), *fields)]
        if origin is list:
            return list[annotation(typing.get_args(tp)[0])]  # type: ignore[misc]
        if isinstance(tp, type) and issubclass(tp, OpenModel):
            return twins[tp.__name__]
        return tp

    hints = typing.get_type_hints(cls, include_extras=True)
    defaults = {n: f["schema"] for n, f in cls.core_schema["schema"]["fields"].items()}
    fields: dict[str, Any] = {}
    for name in cls.__annotations__:
        if typing.get_origin(hints[name]) is typing.ClassVar:
            continue
        spec = defaults[name]
        default = spec["default"] if spec["type"] == "default" else ...
        fields[name] = (annotation(hints[name]), default)
    return pydantic.create_model(  # type: ignore[call-overload]
        cls.__name__, __config__=pydantic.ConfigDict(extra="allow"), **fields
    )


def _comparable(schema: Any) -> Any:
    """A core schema without what only pydantic's JSON schema and caches use."""
    if isinstance(schema, list):
        return [_comparable(item) for item in schema]
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key in ("metadata", "ref"):
                continue
            if key == "cls":
                value = value.__name__
            elif key == "config":
                value = {k: value[k] for k in ("title", "extra_fields_behavior")}
            out[key] = _comparable(value)
        return out
    return schema


def test_each_models_core_schema_is_the_one_pydantic_makes_from_the_same_declaration():
    twins: dict[str, type[pydantic.BaseModel]] = {}
    for cls in MODELS:
        twins[cls.__name__] = _pydantic_twin(cls, twins)
        assert _comparable(cls.core_schema) == _comparable(
            twins[cls.__name__].__pydantic_core_schema__
        ), cls.__name__


def _record() -> Record:
    return Record.model_validate_json(
        '{"schemaVersion":1,"id":"memory:1","scope":"project","scopeKey":"root:k",'
        '"type":"fact","title":"t","content":"c","tags":["a"],"provenance":{"kind":"agent",'
        '"sessionId":"s"},"createdAt":1,"updatedAt":2,"useCount":0,"contentHash":"h",'
        '"status":"active","governance":{"origin":"model-suggested","sourceRefs":[{"kind":'
        '"session","id":"s"}],"verification":"unverified","revision":1,'
        '"retention":"project-delete"},"newer":{"x":[1]}}',
        strict=True,
    )


def test_keyword_construction_is_validated_laxly_as_pydantics():
    prov = Provenance(kind="user")  # type: ignore[arg-type]
    assert prov.kind.value == "user" and prov.model_fields_set == {"kind"}
    assert prov.sessionId is None and prov.model_dump(exclude_unset=True) == {"kind": "user"}
    with pytest.raises(pydantic.ValidationError):
        Provenance(kind="robot")  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        Provenance(kind="user", eventSeq=-1)  # type: ignore[arg-type]


def test_copies_equality_and_unknown_fields_behave_as_pydantics():
    record = _record()
    assert record.newer == {"x": [1]}  # an unknown field reads as an attribute
    assert dict(record)["newer"] == {"x": [1]} and dict(record)["title"] == "t"
    copied = record.model_copy(update={"title": "u", "other": 1})
    assert copied.title == "u" and copied.model_extra == {"newer": {"x": [1]}, "other": 1}
    assert {"title", "other"} <= copied.model_fields_set and record.title == "t"
    assert copied != record and record.model_copy() == record
    deep = copy.deepcopy(record)
    assert deep == record and deep.tags is not record.tags
    assert pickle.loads(pickle.dumps(record)) == record
    with pytest.raises(AttributeError):
        _ = record.nothing_by_that_name
    assert "title='t'" in repr(record)


def test_a_pydantic_model_may_hold_records():
    class Holder(pydantic.BaseModel):
        records: list[Record]

    record = _record()
    held = Holder.model_validate_json(
        f'{{"records":[{record.model_dump_json(exclude_unset=True)}]}}'
    )
    assert held.records == [record] and type(held.records[0]) is Record
