"""The base of the record's models and the fields sets they share: the lower half of the fence
around pydantic's internals (``model_fast`` is the upper half; nothing else touches them).

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
from collections.abc import Callable
from typing import Any, Self

from pydantic import BaseModel, ConfigDict


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
_set_extra = BaseModel.__pydantic_extra__.__set__  # type: ignore[union-attr]
_intern = sys.intern

_SHAPES: dict[frozenset[str], FrozenFields] = {}
_MAX_SHAPES = 4096  # unknown fields make new shapes; past this, objects keep their own set
_LAST_SHAPE: dict[type, FrozenFields] = {}  # most records of a file have the same shape
_set_fields = BaseModel.__pydantic_fields_set__.__set__  # type: ignore[attr-defined]

# A model's field values, as pydantic keeps them (one C call; the rule checks read many).
values: Callable[[BaseModel], dict[str, Any]] = vars


def thaw(model: BaseModel) -> None:
    """Give ``model`` its own fields set (before anything changes or copies it)."""
    fields = model.__pydantic_fields_set__
    if type(fields) is FrozenFields:
        object.__setattr__(model, "__pydantic_fields_set__", set(fields))
    if type(model.__pydantic_extra__) is FrozenExtras:  # itself, or a copy of it
        _set_extra(model, {})


def mark_set(model: BaseModel, *names: str) -> None:
    """Count ``names`` as set on ``model`` (written by ``exclude_unset`` dumps)."""
    thaw(model)
    model.__pydantic_fields_set__.update(names)


def set_unset(model: BaseModel, name: str, value: Any) -> None:
    """Put ``value`` in the field ``name`` without marking it set, so a dump that leaves out
    unset fields writes the model back as it was read.
    """
    model.__dict__[name] = value


def _share(model: BaseModel) -> None:
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
    object.__setattr__(model, "__pydantic_fields_set__", shared)


def share_fields(record: BaseModel) -> bool:
    """Make a record just read from a line share its models' fields sets with the records of
    its shape (its own, its provenance's, its governance's and its source refs'). False when
    the record has no governance (an older host's: ``model_fast.loaded`` fills it in).
    """
    # The usual model has the shape of the one of its class before it: one set comparison.
    last = _LAST_SHAPE
    shared = last.get(type(record))
    if shared is not None and record.__pydantic_fields_set__ == shared:
        _set_fields(record, shared)
    else:
        _share(record)
    if not record.__pydantic_extra__:
        _set_extra(record, NO_EXTRA)
    d = record.__dict__
    d["scopeKey"] = _intern(d["scopeKey"])
    tags = d["tags"]
    for i, tag in enumerate(tags):
        tags[i] = _intern(tag)
    prov = d["provenance"]
    shared = last.get(type(prov))
    if shared is not None and prov.__pydantic_fields_set__ == shared:
        _set_fields(prov, shared)
    else:
        _share(prov)
    if not prov.__pydantic_extra__:
        _set_extra(prov, NO_EXTRA)
    p = prov.__dict__
    if type(p.get("sessionId")) is str:
        p["sessionId"] = _intern(p["sessionId"])
    gov = d["governance"]
    if gov is None:
        return False
    shared = last.get(type(gov))
    if shared is not None and gov.__pydantic_fields_set__ == shared:
        _set_fields(gov, shared)
    else:
        _share(gov)
    if not gov.__pydantic_extra__:
        _set_extra(gov, NO_EXTRA)
    refs = gov.__dict__["sourceRefs"]
    shared = last.get(type(refs[0])) if refs else None
    for ref in refs:
        if shared is not None and ref.__pydantic_fields_set__ == shared:
            _set_fields(ref, shared)
        else:
            _share(ref)
            shared = last.get(type(ref))
        if not ref.__pydantic_extra__:
            _set_extra(ref, NO_EXTRA)
        r = ref.__dict__
        r["id"] = _intern(r["id"])  # the kind is a Literal: one of five strings already
    return True


class OpenModel(BaseModel):
    """The base of every model of a record. A newer host may add fields anywhere: they are
    kept and written back unchanged. Loaded records share one frozen fields set per shape
    (``share_fields``); assignment and copies thaw it first.
    """

    model_config = ConfigDict(extra="allow")

    def __setattr__(self, name: str, value: Any) -> None:
        thaw(self)
        super().__setattr__(name, value)

    def __copy__(self) -> Self:
        copied = super().__copy__()
        thaw(copied)
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        thaw(copied)
        return copied
