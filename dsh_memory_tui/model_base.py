"""The base of the record's models and the fields sets they share: the lower half of the fence
around pydantic-core (``model_fast`` is the upper half; nothing else touches it).

The models are plain classes validated and serialized by pydantic-core, pydantic's Rust core,
alone: a command that reads records never imports pydantic itself (``from pydantic import
BaseModel`` cost 1.5x ``import pydantic``, and building four models from their annotations as
much again). ``OpenModel`` gives them the part of pydantic's ``BaseModel`` API the package uses
(keyword construction validated as pydantic does it, ``model_validate``, ``model_dump``,
``model_dump_json``, ``model_copy``, ``model_fields_set``, equality), with the same semantics;
each class's core schema is made from its annotations as pydantic would make it
(``tests/test_model_base.py`` compares the two), and a pydantic model may hold one as a field.

- a loaded model's field values live in its instance ``__dict__`` (``values``), which the rule
  checks read directly, and an unset field can be put there without being marked set
  (``set_unset``: an older host's record gets its legacy governance and is still written back
  as it was);
- models of one shape share one fields set (``FrozenFields``, refusing mutation; ``thaw`` gives
  a model its own before anything changes it, which ``OpenModel`` does on every assignment
  and copy): a set per object was most of a loaded record's memory. Models with no unknown
  field share one empty extras dict (``NO_EXTRA``, refusing mutation, thawed alike), and the
  texts that repeat across records (scopeKey, session ids, tags, source refs) are one string
  each (``sys.intern``): ~600 of a loaded record's ~3,200 bytes.

Knows no record: ``share_fields`` walks a record's parts by the names the host gives them.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable, Mapping
from copy import copy, deepcopy
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, dataclass_transform

from pydantic_core import SchemaSerializer, SchemaValidator, ValidationError

__all__ = ["Bounds", "OpenModel", "ValidationError", "mark_set", "set_unset", "share_fields"]


@dataclass(frozen=True, slots=True)
class Bounds:
    """An integer field's range, both ends included, checked in Rust (``Annotated[int,
    Bounds(0, 9)]``); ``strict``: only an integer, never a float, string or boolean."""

    ge: int
    le: int
    strict: bool = False


class FrozenFields(set[str]):
    """A fields set shared by loaded models of one shape: it refuses to change (``thaw`` the
    model first), so a change to one record can never show in another.
    """

    __slots__ = ()

    def _refuse(self, *args: Any) -> Any:
        raise TypeError("a shared fields set cannot change: thaw the model first")

    add = discard = remove = pop = clear = update = _refuse
    difference_update = intersection_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse  # type: ignore[assignment]


class FrozenExtras(dict[str, Any]):
    """The empty extras dict shared by loaded models without unknown fields: it refuses to
    change (``thaw`` the model first)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a shared extras dict cannot change: thaw the model first")

    __setitem__ = __delitem__ = setdefault = pop = popitem = clear = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]


NO_EXTRA = FrozenExtras()
_setattr = object.__setattr__
_intern = sys.intern
_MISSING: Any = object()


# ------------------------------------------------------------------------- the core schema


def field_schema(annotation: Any) -> dict[str, Any]:
    """The core schema pydantic makes for a field of type ``annotation`` (the types a record
    uses: str, int with ``Bounds``, Any, a ``StrEnum``, a Literal, a list, another model)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(annotation)
        schema = field_schema(base)
        for item in metadata:
            if not isinstance(item, Bounds) or schema["type"] != "int":
                raise TypeError(f"unsupported annotation {annotation!r}")
            schema.update(ge=item.ge, le=item.le)
            if item.strict:
                schema["strict"] = True
        return schema
    if origin is Literal:
        return {"type": "literal", "expected": list(typing.get_args(annotation))}
    if origin is list:
        return {"type": "list", "items_schema": field_schema(typing.get_args(annotation)[0])}
    if annotation is str:
        return {"type": "str"}
    if annotation is int:
        return {"type": "int"}
    if annotation is Any:
        return {"type": "any"}
    if isinstance(annotation, type) and issubclass(annotation, OpenModel):
        return annotation.core_schema
    if (
        isinstance(annotation, type)
        and issubclass(annotation, Enum)
        and issubclass(annotation, str)
    ):
        return {"type": "enum", "cls": annotation, "members": list(annotation), "sub_type": "str"}
    raise TypeError(f"unsupported annotation {annotation!r}")


def _model_schema(cls: type[OpenModel]) -> dict[str, Any]:
    """``cls``'s core schema from its own annotations, as pydantic makes it for a model with
    ``extra="allow"``; a field's default is taken off the class (as pydantic does)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: dict[str, Any] = {}
    for name in cls.__dict__.get("__annotations__", {}):
        if typing.get_origin(hints[name]) is ClassVar:
            continue
        schema = field_schema(hints[name])
        default = cls.__dict__.get(name, _MISSING)
        if default is not _MISSING:
            schema = {"type": "default", "schema": schema, "default": default}
            delattr(cls, name)
        fields[name] = {"type": "model-field", "schema": schema}
    return {
        "type": "model",
        "cls": cls,
        "schema": {
            "type": "model-fields",
            "fields": fields,
            "model_name": cls.__name__,
            "computed_fields": [],
        },
        "custom_init": False,
        "root_model": False,
        "config": {"title": cls.__name__, "extra_fields_behavior": "allow"},
    }


# ------------------------------------------------------------------------------ the models


@dataclass_transform(kw_only_default=True)
class OpenModel:
    """The base of every model of a record. A newer host may add fields anywhere: they are
    kept (``model_extra``) and written back unchanged. Loaded records share one frozen fields
    set per shape (``share_fields``); assignment and copies thaw it first.

    Each subclass declares its fields as annotations (with a default: optional), and gets its
    ``core_schema``, ``core_validator`` and ``core_serializer`` when the class is made.
    """

    __slots__ = (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )

    core_schema: ClassVar[dict[str, Any]]
    core_validator: ClassVar[SchemaValidator]
    core_serializer: ClassVar[SchemaSerializer]
    field_names: ClassVar[frozenset[str]]

    if TYPE_CHECKING:  # set by pydantic-core (or ``_copy``), never by a constructor argument

        @property
        def __pydantic_fields_set__(self) -> set[str]: ...
        @property
        def __pydantic_extra__(self) -> dict[str, Any]: ...
        @property
        def __pydantic_private__(self) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        schema = _model_schema(cls)
        cls.core_schema = schema
        cls.field_names = frozenset(schema["schema"]["fields"])
        cls.core_validator = SchemaValidator(schema)  # type: ignore[arg-type]
        cls.core_serializer = SchemaSerializer(schema)  # type: ignore[arg-type]

    def __init__(self, /, **data: Any) -> None:
        """Validated as pydantic validates a model's keyword arguments (lax: ``"user"`` for
        ``ProvenanceKind.USER``). Raises ``ValidationError``."""
        self.core_validator.validate_python(data, self_instance=self)

    @classmethod
    def model_validate(cls, obj: Any, *, strict: bool | None = None) -> Self:
        """``obj`` (a dict, or a model of this class as it is) validated. ``ValidationError``."""
        return cls.core_validator.validate_python(obj, strict=strict)  # type: ignore[no-any-return]

    @classmethod
    def model_validate_json(cls, data: str | bytes, *, strict: bool | None = None) -> Self:
        """JSON text validated (pydantic-core's reader). ``ValidationError``."""
        return cls.core_validator.validate_json(data, strict=strict)  # type: ignore[no-any-return]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """So a pydantic model may hold this model as a field (a bundle's records)."""
        return deepcopy(cls.core_schema)

    @property
    def model_fields_set(self) -> set[str]:
        """The fields given (in the line, or to the constructor) or assigned since."""
        return self.__pydantic_fields_set__

    @property
    def model_extra(self) -> dict[str, Any]:
        """The fields this class does not declare, kept as they came."""
        return self.__pydantic_extra__

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        exclude_unset: bool = False,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        """The model as a dict (``mode="json"``: JSON's types only). Raises
        ``PydanticSerializationError`` (a ``ValueError``) on what JSON cannot hold."""
        return self.core_serializer.to_python(  # type: ignore[no-any-return]
            self, mode=mode, exclude_unset=exclude_unset, exclude_none=exclude_none
        )

    def model_dump_json(
        self, *, indent: int | None = None, exclude_unset: bool = False, exclude_none: bool = False
    ) -> str:
        """The model as JSON text (a ``ValueError`` on a lone surrogate, as pydantic)."""
        return self.core_serializer.to_json(
            self, indent=indent, exclude_unset=exclude_unset, exclude_none=exclude_none
        ).decode()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy (``deep``: of every value too) with ``update``'s fields set, unvalidated;
        an unknown name in ``update`` goes to the extras."""
        copied = self.__deepcopy__() if deep else self.__copy__()
        if update:
            fields = self.field_names
            for name, value in update.items():
                if name in fields:
                    copied.__dict__[name] = value
                else:
                    copied.__pydantic_extra__[name] = value
            copied.__pydantic_fields_set__.update(update)
        return copied

    def __copy__(self) -> Self:
        """A shallow copy with its own fields set and extras (never the shared ones)."""
        cls = type(self)
        copied = cls.__new__(cls)
        _setattr(copied, "__dict__", copy(self.__dict__))
        _setattr(copied, "__pydantic_extra__", dict(self.__pydantic_extra__))
        _setattr(copied, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        _setattr(copied, "__pydantic_private__", None)
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        memo = {} if memo is None else memo
        cls = type(self)
        copied = cls.__new__(cls)
        memo[id(self)] = copied
        _setattr(copied, "__dict__", deepcopy(self.__dict__, memo))
        _setattr(copied, "__pydantic_extra__", deepcopy(dict(self.__pydantic_extra__), memo))
        _setattr(copied, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        _setattr(copied, "__pydantic_private__", None)
        return copied

    def __setattr__(self, name: str, value: Any) -> None:
        # As pydantic: a field is set and marked set; a property is its setter; any other
        # name is an unknown field, kept in the extras (and marked set).
        thaw(self)
        if name in self.field_names:
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)
        elif isinstance(getattr(type(self), name, None), property):
            _setattr(self, name, value)
        else:
            self.__pydantic_extra__[name] = value
            self.__pydantic_fields_set__.add(name)

    if not TYPE_CHECKING:  # mypy would then allow any attribute

        def __getattr__(self, name: str) -> Any:
            # Only called when the attribute is not found: an unknown field's value.
            try:
                extra = object.__getattribute__(self, "__pydantic_extra__")
            except AttributeError:
                extra = None
            if extra and name in extra:
                return extra[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpenModel):
            return NotImplemented
        return (
            type(self) is type(other)
            and (self.__pydantic_extra__ or {}) == (other.__pydantic_extra__ or {})
            and self.__dict__ == other.__dict__
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as pydantic's models

    def __iter__(self) -> typing.Iterator[tuple[str, Any]]:
        """So ``dict(model)`` works (the fields, then the unknown ones), as pydantic's."""
        yield from self.__dict__.items()
        yield from self.__pydantic_extra__.items()

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={value!r}" for name, value in self)
        return f"{type(self).__name__}({args})"

    def __getstate__(self) -> dict[str, Any]:
        return {
            "__dict__": self.__dict__,
            "__pydantic_extra__": dict(self.__pydantic_extra__),
            "__pydantic_fields_set__": set(self.__pydantic_fields_set__),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        _setattr(self, "__dict__", state["__dict__"])
        _setattr(self, "__pydantic_extra__", state["__pydantic_extra__"])
        _setattr(self, "__pydantic_fields_set__", state["__pydantic_fields_set__"])
        _setattr(self, "__pydantic_private__", None)


# ----------------------------------------------------------------- shared fields sets

_SHAPES: dict[frozenset[str], FrozenFields] = {}
_MAX_SHAPES = 4096  # unknown fields make new shapes; past this, objects keep their own set
_LAST_SHAPE: dict[type, FrozenFields] = {}  # most records of a file have the same shape

# A model's field values, as pydantic-core keeps them (one C call; the rule checks read many).
values: Callable[[OpenModel], dict[str, Any]] = vars


def thaw(model: OpenModel) -> None:
    """Give ``model`` its own fields set (before anything changes or copies it)."""
    if type(model.__pydantic_fields_set__) is FrozenFields:
        _setattr(model, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    if type(model.__pydantic_extra__) is FrozenExtras:  # itself, or a copy of it
        _setattr(model, "__pydantic_extra__", {})


def mark_set(model: OpenModel, *names: str) -> None:
    """Count ``names`` as set on ``model`` (written by ``exclude_unset`` dumps)."""
    thaw(model)
    model.__pydantic_fields_set__.update(names)


def set_unset(model: OpenModel, name: str, value: Any) -> None:
    """Put ``value`` in the field ``name`` without marking it set, so a dump that leaves out
    unset fields writes the model back as it was read.
    """
    model.__dict__[name] = value


def _share(model: OpenModel) -> None:
    fields = model.__pydantic_fields_set__
    shared = _LAST_SHAPE.get(type(model))
    if shared is None or fields != shared:
        key = frozenset(fields)
        shared = _SHAPES.get(key)
        if shared is None:
            if len(_SHAPES) >= _MAX_SHAPES:
                return
            shared = _SHAPES[key] = FrozenFields(key)
        _LAST_SHAPE[type(model)] = shared
    _setattr(model, "__pydantic_fields_set__", shared)


def share_fields(record: OpenModel) -> bool:
    """Make a record just read from a line share its models' fields sets with the records of
    its shape (its own, its provenance's, its governance's and its source refs'). False when
    the record has no governance (an older host's: ``model_fast.loaded`` fills it in).
    """
    # The usual model has the shape of the one of its class before it: one set comparison.
    last = _LAST_SHAPE
    shared = last.get(type(record))
    if shared is not None and record.__pydantic_fields_set__ == shared:
        _setattr(record, "__pydantic_fields_set__", shared)
    else:
        _share(record)
    if not record.__pydantic_extra__:
        _setattr(record, "__pydantic_extra__", NO_EXTRA)
    d = record.__dict__
    d["scopeKey"] = _intern(d["scopeKey"])
    tags = d["tags"]
    for i, tag in enumerate(tags):
        tags[i] = _intern(tag)
    prov = d["provenance"]
    shared = last.get(type(prov))
    if shared is not None and prov.__pydantic_fields_set__ == shared:
        _setattr(prov, "__pydantic_fields_set__", shared)
    else:
        _share(prov)
    if not prov.__pydantic_extra__:
        _setattr(prov, "__pydantic_extra__", NO_EXTRA)
    p = prov.__dict__
    if type(p.get("sessionId")) is str:
        p["sessionId"] = _intern(p["sessionId"])
    gov = d["governance"]
    if gov is None:
        return False
    shared = last.get(type(gov))
    if shared is not None and gov.__pydantic_fields_set__ == shared:
        _setattr(gov, "__pydantic_fields_set__", shared)
    else:
        _share(gov)
    if not gov.__pydantic_extra__:
        _setattr(gov, "__pydantic_extra__", NO_EXTRA)
    refs = gov.__dict__["sourceRefs"]
    shared = last.get(type(refs[0])) if refs else None
    for ref in refs:
        if shared is not None and ref.__pydantic_fields_set__ == shared:
            _setattr(ref, "__pydantic_fields_set__", shared)
        else:
            _share(ref)
            shared = last.get(type(ref))
        if not ref.__pydantic_extra__:
            _setattr(ref, "__pydantic_extra__", NO_EXTRA)
        r = ref.__dict__
        r["id"] = _intern(r["id"])  # the kind is a Literal: one of five strings already
    return True
