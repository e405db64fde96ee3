"""The fast path, and every use of pydantic-core but the models' own, in one module.

``model`` says what a record is and gives the host's verdict in the host's order of checks.
This module makes the usual verdict cheap (with ``model_base``, the fence's lower half, the
only code that touches pydantic-core):

- a loaded record shares its models' fields sets (``model_base`` keeps them) and an older
  host's record gets its legacy governance, unset (``loaded``);
- the line validator is ``Record``'s core schema with the host's limits added in Rust.

When the line validator cannot be built or does not refuse what it was built to refuse, the
plain validator takes its place with the same contract (``validator_kind`` says which):
slower, never another verdict.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import SchemaSerializer, SchemaValidator

from .host_rules import (
    CONTENT_CONTROL,
    HASH,
    JS_WHITESPACE,
    MAX_CONTENT_BYTES,
    MAX_ID_BYTES,
    MAX_NOTE_BYTES,
    MAX_SAFE_INTEGER,
    MAX_SCOPE_KEY_BYTES,
    MAX_SOURCE_REFS,
    MAX_TAG_BYTES,
    MAX_TAGS,
    MAX_TITLE_BYTES,
    NOT_JS_SPACE,
    TEXT_CONTROL,
    Origin,
    Verification,
    blank,
    utf8_len,
)
from .model_base import OpenModel, ValidationError, set_unset, share_fields
from .record import (
    ForeignLine,
    Record,
    SourceRef,
    legacy_governance,
)

if TYPE_CHECKING:
    from .record import Location

LineValidator = Callable[..., Record]  # (line, *, strict)


def loaded(record: Record) -> Record:
    """A record just read from a line, ready to keep: its models share their fields sets
    (a small set is still 216 bytes, as much as a source ref's other parts), and an older
    host's record gets its legacy governance (unset: the line is written back as it was).
    """
    if not share_fields(record):
        set_unset(record, "governance", legacy_governance(record))
    return record


def fill_legacy(record: Record) -> Record:
    """An older host's record (no governance in its line) with its legacy governance, unset."""
    if record.__dict__["governance"] is None:
        set_unset(record, "governance", legacy_governance(record))
    return record


# ----------------------------------------------------------------------- line validator

# The record's own validator, straight from Rust: ``model_validate_json`` adds a Python call.
plain_validator: LineValidator = Record.core_validator.validate_json

# The host's text rules as patterns Rust checks: a first character that is neither JavaScript
# whitespace (so the string is not blank) nor a control character, and no control character
# after it (content may hold tab, LF and CR).
_JS_SPACE_CLASS = "".join("\\" + c if c in "\\]^-[" else c for c in JS_WHITESPACE)
_TEXT_PATTERN = "^[^" + _JS_SPACE_CLASS + "\\x00-\\x1f\\x7f][^\\x00-\\x1f\\x7f]*$"
_CONTENT_PATTERN = (
    "^[^" + _JS_SPACE_CLASS + "\\x00-\\x1f\\x7f][^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]*$"
)
_HASH_PATTERN = "^sha256:[0-9a-f]{64}$"

_VALIDATE_LINE: LineValidator | None = None  # line_validator(), once built
Kind = Literal["constrained", "plain", "off"]
_KIND: Kind | None = None
# The line validator is built once, by whichever thread asks first (the app loads in one).
_SCHEMA_BUILD = threading.Lock()


def core_schema(cls: type[OpenModel]) -> dict[str, Any]:
    """A copy of ``cls``'s core schema, to change."""
    return copy.deepcopy(cls.core_schema)


def line_validator() -> LineValidator:
    """``Record``'s own validator with what the host's text rules imply added in Rust: at most
    as many characters as the rule allows bytes (a UTF-8 character is at least one byte), a
    first character that is neither whitespace nor a control character, at most 32 tags and
    source refs, a source ref's hash as a string of the hash's form, only finite JSON where
    any value is kept. A line that fails one may still be valid to the host (a title starting
    with a space is): it only goes the host-order path. What passes leaves the rule checks
    little to do. The records it makes are plain ``Record``s.
    """
    global _VALIDATE_LINE, _KIND
    with _SCHEMA_BUILD:
        if _VALIDATE_LINE is None:
            try:
                validate = _build_line_validator()
            except Exception:  # noqa: BLE001 (another pydantic's layout: the plain validator)
                validate = None
            if validate is not None and _constraints_hold(validate):
                _VALIDATE_LINE, _KIND = validate, "constrained"
            elif _last_key_wins(plain_validator):
                _VALIDATE_LINE, _KIND = _checked_plain, "plain"
            else:  # a reader that gives JSON another meaning: the host-order path decides all
                _VALIDATE_LINE, _KIND = _decides_nothing, "off"
        return _VALIDATE_LINE


def validator_kind() -> Kind:
    """Which line validator the fast path uses: "plain" when the constrained one could not be
    built (same verdicts, slower); "off" when pydantic's reader does not read JSON as
    JSON.parse does (a repeated key's last value), so every line goes the host-order path.
    """
    line_validator()
    assert _KIND is not None  # noqa: S101 (set by line_validator)
    return _KIND


def reset_line_validator() -> None:
    """Forget the line validator; the next use builds it again."""
    global _VALIDATE_LINE, _KIND
    with _SCHEMA_BUILD:
        _VALIDATE_LINE = _KIND = None


def _build_line_validator() -> LineValidator:
    schema = core_schema(Record)

    def fields(model_schema: dict[str, Any]) -> dict[str, Any]:
        while model_schema["type"] != "model":
            model_schema = model_schema["schema"]  # "default" wrappers of optional fields
        return model_schema["schema"]["fields"]  # type: ignore[no-any-return]

    def text(field: dict[str, Any], max_chars: int, pattern: str = _TEXT_PATTERN) -> None:
        inner = field["schema"]
        inner = inner["schema"] if inner["type"] == "default" else inner
        if inner["type"] != "str":
            raise TypeError(f"not a string schema: {inner['type']}")
        inner.update(max_length=max_chars, pattern=pattern)

    top = fields(schema)
    for name, limit in (
        ("id", MAX_ID_BYTES),
        ("scopeKey", MAX_SCOPE_KEY_BYTES),
        ("title", MAX_TITLE_BYTES),
    ):
        text(top[name], limit)
    text(top["content"], MAX_CONTENT_BYTES, _CONTENT_PATTERN)
    tags = top["tags"]["schema"]
    tags["max_length"] = MAX_TAGS
    text({"schema": tags["items_schema"]}, MAX_TAG_BYTES)
    prov = fields(top["provenance"]["schema"])
    text(prov["sessionId"], MAX_ID_BYTES)
    text(prov["note"], MAX_NOTE_BYTES)
    refs = fields(top["governance"]["schema"])["sourceRefs"]["schema"]
    refs["max_length"] = MAX_SOURCE_REFS
    ref = fields(refs["items_schema"])
    text(ref["id"], MAX_ID_BYTES)
    # Present, it must be a hash (String(value) of anything else is not one, but an array
    # of one hash is: such a line goes the slow path).
    ref["contentHash"]["schema"]["schema"] = {"type": "str", "pattern": _HASH_PATTERN}
    # Rust's reader takes NaN and Infinity (and 1e400 as Infinity), which are not JSON: where
    # any value is kept (the untyped fields, unknown fields at every level) only finite JSON
    # passes; a line with one goes the host-order path, which refuses it.
    _finite_json_anywhere(schema)
    schema = {"type": "definitions", "schema": schema, "definitions": [_FINITE_JSON]}
    # No cache of short strings: looking each one up cost ~15% of a load (the file's
    # repeated tags and session ids then take a few hundred bytes more per record).
    validator = SchemaValidator(schema, {"cache_strings": "keys"})  # type: ignore[arg-type]
    return validator.validate_json  # type: ignore[no-any-return]


_FINITE_REF = {"type": "definition-ref", "schema_ref": "dsh-finite-json"}
# Any JSON value but a non-finite number, each kept as the reader made it (an int stays an
# int, 1.0 a float, an object's keys in their order).
_FINITE_JSON = {
    "type": "union",
    "ref": "dsh-finite-json",
    "choices": [
        {"type": "none"},
        {"type": "str"},
        {"type": "bool", "strict": True},
        {"type": "int", "strict": True},
        {"type": "float", "strict": True, "allow_inf_nan": False},
        {"type": "list", "items_schema": _FINITE_REF},
        {"type": "dict", "keys_schema": {"type": "str"}, "values_schema": _FINITE_REF},
    ],
}


def _finite_json_anywhere(schema: Any) -> None:
    """Every ``any`` in ``schema`` (a core schema, changed in place) and every model's
    unknown fields take ``_FINITE_JSON`` instead.
    """
    if isinstance(schema, list):
        for item in schema:
            _finite_json_anywhere(item)
    elif isinstance(schema, dict):
        if schema.get("type") == "any":
            schema.clear()
            schema.update(_FINITE_REF)
            return
        if schema.get("type") == "model-fields":
            schema["extras_schema"] = _FINITE_REF
        for value in schema.values():
            _finite_json_anywhere(value)


_PROBE = (
    b'{"schemaVersion":1,"id":"x","scope":"user","scopeKey":"u","type":"fact","title":"t",'
    b'"content":"c\\t\\n\\r","tags":["t"],"provenance":{"kind":"user","sessionId":"s","note":"n"},'
    b'"createdAt":0,"updatedAt":0,"useCount":0,"contentHash":"h","status":"active",'
    b'"governance":{"origin":"user-authored","sourceRefs":[{"kind":"url","id":"i",'
    b'"contentHash":"sha256:' + b"0" * 64 + b'"}],"verification":"unverified","revision":1,'
    b'"retention":"user-managed"}}'
)


def _constraints_hold(validate: LineValidator) -> bool:
    """True if ``validate`` takes a usual line, makes a plain ``Record`` of it, reads a
    repeated key as JSON.parse does, and refuses what ``line_validator`` added rules against.
    """
    try:
        if type(validate(_PROBE, strict=True)) is not Record or not _last_key_wins(validate):
            return False
    except ValidationError:
        return False
    for needle, bad in (
        (b'"title":"t"', b'"title":"' + b"t" * (MAX_TITLE_BYTES + 1) + b'"'),
        (b'"id":"x"', b'"id":" x"'),
        (b'"tags":["t"]', b'"tags":["' + b"t" * (MAX_TAG_BYTES + 1) + b'"]'),
        (b'"note":"n"', b'"note":"\\t"'),
        (b'"note":"n"', b'"note":"n\\n"'),
        (b'"id":"x"', b'"id":"x\x7f"'),
        (b'"content":"c', b'"content":"c\\u0001'),
        (b'"content":"c', b'"content":"c\\u007f'),
        (b'"id":"i"', b'"id":""'),
        (b'"contentHash":"sha256:', b'"contentHash":"sha257:'),
        (b'"title":"t"', b'"title":"t","x":[{"y":NaN}]'),
        (b'"useCount":0', b'"useCount":0,"x":-Infinity'),
    ):
        try:
            validate(_PROBE.replace(needle, bad), strict=True)
        except ValidationError:
            continue
        return False
    return True


def _last_key_wins(validate: LineValidator) -> bool:
    """True if ``validate`` keeps a repeated key's last value (JSON.parse does; pydantic's
    reader kept the first before 2.11)."""
    twice = _PROBE.replace(b'"title":"t"', b'"title":"first","title":"t"')
    try:
        return bool(validate(twice, strict=True).title == "t")
    except ValidationError:
        return False


def _decides_nothing(line: bytes, strict: bool = True) -> Record:
    """The "off" line validator: every line goes the host-order path."""
    raise ValidationError.from_exception_data("Record", [])


def _checked_plain(line: bytes, strict: bool = True) -> Record:
    """The line validator's contract kept with the plain validator: what ``fast_ok`` doubts
    is refused, so ``usual_run`` may trust what passes.
    """
    record: Record = plain_validator(line, strict=strict)
    if not fast_ok(record, line) or line.find(b"NaN") >= 0 or line.find(b"Infinity") >= 0:
        raise ValidationError.from_exception_data("Record", [])
    return record


@functools.cache
def record_list() -> SchemaSerializer:
    """The serializer of a list of records (built on first use: only listing commands)."""
    return SchemaSerializer({"type": "list", "items_schema": Record.core_schema})  # type: ignore[arg-type]


# -------------------------------------------------------------------------- the usual run


def usual_run(
    lines: list[bytes], i: int, location: Location | None
) -> tuple[list[Record | ForeignLine], int]:
    """The fast path over ``lines[i:]`` (``model.usual_run`` says what it returns)."""
    out: list[Record | ForeignLine] = []
    n = len(lines)
    validate = _VALIDATE_LINE or line_validator()
    append = out.append
    scope, key = (location.scope, location.scope_key) if location is not None else (None, None)
    while i < n:
        raw = lines[i]
        if raw[:1] != b"{" and blank(raw):
            i += 1
            continue
        try:
            record = validate(raw, strict=True)
        except ValidationError:
            break
        d = record.__dict__
        if location is not None:
            if d["scope"] is not scope:
                break  # the host-order path says why
            if d["scopeKey"] != key and not location.owns(d["scopeKey"]):
                append(ForeignLine(d["scopeKey"], d["id"], d["title"]))
                i += 1
                continue
        if not _rules_ok(d) or not (raw.isascii() or _utf8_sizes_ok(d)):
            break
        append(loaded(record))
        i += 1
    return out, i


# ------------------------------------------------------------------------- the rule checks

_sha256 = hashlib.sha256
_USER_AUTHORED = Origin.USER_AUTHORED
_VERIFIED = Verification.VERIFIED


def _bytes_ok(value: str, max_bytes: int) -> bool:
    # isascii() is O(1) on a str: then characters are bytes. A character is at most 4 bytes.
    n = len(value)
    return n <= max_bytes // 4 or (
        n <= max_bytes and (value.isascii() or utf8_len(value) <= max_bytes)
    )


def _hash_ok(content: str, expected: str) -> bool:
    try:
        return bool(expected == "sha256:" + _sha256(content.encode()).hexdigest())
    except UnicodeEncodeError:  # a lone surrogate: the host-order path hashes it as node does
        return False


def fast_ok(record: Record, line: bytes | None = None) -> bool:
    """True if the host accepts this pydantic-parsed record (strict types and integer ranges
    already hold). False means "ask the host-order path", not "invalid": it knows the rule and
    its message. ``line``: the bytes it was parsed from, which can rule out control characters.
    """
    d = record.__dict__
    if not _rules_ok(d):
        return False
    refs = d["governance"].__dict__["sourceRefs"] if d["governance"] is not None else ()
    for ref in refs:
        h = ref.__dict__["contentHash"]
        if (h is not None or "contentHash" in ref.__pydantic_fields_set__) and not (
            type(h) is str and HASH.fullmatch(h)
        ):
            return False
    if line is not None and line.isascii() and line.find(b"\\") < 0 and line.find(b"\x7f") < 0:
        return _plain_texts_ok(d, refs) or _texts_ok(d, refs, line)
    return _texts_ok(d, refs, line)


def _rules_ok(d: dict[str, Any]) -> bool:
    """The rules no field's type can say: timestamps in order, the content's hash, a source
    for every non-user record, a time for a verification and an actor for a pin.
    """
    if d["updatedAt"] < d["createdAt"] or not _hash_ok(d["content"], d["contentHash"]):
        return False
    gov = d["governance"]
    if gov is None:
        return True
    g = gov.__dict__
    return (
        len(g["sourceRefs"]) <= MAX_SOURCE_REFS
        and (g["sourceRefs"] or g["origin"] is _USER_AUTHORED)
        and (g["verifiedAt"] is not None or g["verification"] is not _VERIFIED)
        and (g["pinnedAt"] is None or g["pinnedBy"] is not None)
    )


def _utf8_sizes_ok(d: dict[str, Any]) -> bool:
    """The host's limits in UTF-8 bytes, for a line that is not ASCII (the line validator
    checked them as characters, and every other text rule; ``_bytes_ok`` encodes only a
    text that is not ASCII and over a quarter of its limit).
    """
    p = d["provenance"].__dict__
    session, note, gov = p["sessionId"], p["note"], d["governance"]
    return (
        _bytes_ok(d["content"], MAX_CONTENT_BYTES)
        and _bytes_ok(d["title"], MAX_TITLE_BYTES)
        and _bytes_ok(d["id"], MAX_ID_BYTES)
        and _bytes_ok(d["scopeKey"], MAX_SCOPE_KEY_BYTES)
        and (session is None or _bytes_ok(session, MAX_ID_BYTES))
        and (note is None or _bytes_ok(note, MAX_NOTE_BYTES))
        and all(_bytes_ok(tag, MAX_TAG_BYTES) for tag in d["tags"])
        and (
            gov is None
            or all(_bytes_ok(r.__dict__["id"], MAX_ID_BYTES) for r in gov.__dict__["sourceRefs"])
        )
    )


def _plain_texts_ok(d: dict[str, Any], refs: list[SourceRef] | tuple[()]) -> bool:
    """The text rules for a line of ASCII without an escape or a DEL (the usual line): every
    string is its bytes and holds no control character (raw ones are not JSON), and one that
    starts above space (``s >= "!"``) is not blank (ASCII's JS whitespace is space and below).
    False: ask ``_texts_ok`` (a string that starts with a space may still be valid).
    """
    title, rid, key, content, tags = d["title"], d["id"], d["scopeKey"], d["content"], d["tags"]
    p = d["provenance"].__dict__
    session, note = p["sessionId"], p["note"]
    if not (
        len(title) <= MAX_TITLE_BYTES
        and len(rid) <= MAX_ID_BYTES
        and len(key) <= MAX_SCOPE_KEY_BYTES
        and len(content) <= MAX_CONTENT_BYTES
        and min(title, rid, key, content) >= "!"
        and len(tags) <= MAX_TAGS
        and (not tags or (max(map(len, tags)) <= MAX_TAG_BYTES and min(tags) >= "!"))
        and (session is None or (len(session) <= MAX_ID_BYTES and session >= "!"))
        and (note is None or (len(note) <= MAX_NOTE_BYTES and note >= "!"))
    ):
        return False
    for ref in refs:
        ref_id = ref.__dict__["id"]
        if len(ref_id) > MAX_ID_BYTES or ref_id < "!":
            return False
    return True


def _noneblank(texts: list[str | None]) -> bool:
    return all(t is None or NOT_JS_SPACE.search(t) for t in texts)


def _texts_ok(d: dict[str, Any], refs: list[SourceRef] | tuple[()], line: bytes | None) -> bool:
    """The text rules of any record: UTF-8 byte limits, not blank after JS ``trim``, no control
    characters (looked for only when ``line`` is unknown or has an escape or a DEL).
    """
    content, title, rid, key, tags = d["content"], d["title"], d["id"], d["scopeKey"], d["tags"]
    p = d["provenance"].__dict__
    session, note = p["sessionId"], p["note"]
    ref_ids = [r.id for r in refs]
    if not (
        len(tags) <= MAX_TAGS
        and len(title) <= MAX_TITLE_BYTES
        and (title.isascii() or _bytes_ok(title, MAX_TITLE_BYTES))
        and len(rid) <= MAX_ID_BYTES
        and (rid.isascii() or _bytes_ok(rid, MAX_ID_BYTES))
        and len(key) <= MAX_SCOPE_KEY_BYTES
        and (key.isascii() or _bytes_ok(key, MAX_SCOPE_KEY_BYTES))
        and len(content) <= MAX_CONTENT_BYTES
        and (len(content) <= MAX_CONTENT_BYTES // 4 or _bytes_ok(content, MAX_CONTENT_BYTES))
        and (
            not tags
            or max(map(len, tags)) <= MAX_TAG_BYTES // 4
            or all(_bytes_ok(t, MAX_TAG_BYTES) for t in tags)
        )
        and (
            not ref_ids
            or max(map(len, ref_ids)) <= MAX_ID_BYTES // 4
            or all(_bytes_ok(i, MAX_ID_BYTES) for i in ref_ids)
        )
        and (session is None or _bytes_ok(session, MAX_ID_BYTES))
        and (note is None or _bytes_ok(note, MAX_NOTE_BYTES))
    ):
        return False
    # Blank: every string that starts with a printable ASCII (or C1) character is not blank
    # (JS whitespace is space and below, or U+00A0 and above). A list's smallest and largest
    # strings bound the first characters of all of them.
    if not (
        " " < title[:1] < "\xa0"
        and " " < rid[:1] < "\xa0"
        and " " < key[:1] < "\xa0"
        and " " < content[:1] < "\xa0"
        and (not tags or (min(tags)[:1] > " " and max(tags)[:1] < "\xa0"))
        and (not ref_ids or (min(ref_ids)[:1] > " " and max(ref_ids)[:1] < "\xa0"))
        and (session is None or " " < session[:1] < "\xa0")
        and (note is None or " " < note[:1] < "\xa0")
    ) and not _noneblank([rid, key, title, content, *tags, *ref_ids, session, note]):
        return False
    # A decoded string can hold a control character only if the line has an escape (raw
    # control characters are not JSON) or a DEL.
    return not (
        (line is None or line.find(b"\\") >= 0 or line.find(b"\x7f") >= 0)
        and (
            TEXT_CONTROL.search(
                " ".join([rid, key, title, *tags, *ref_ids, session or "", note or ""])
            )
            or CONTENT_CONTROL.search(content)
        )
    )


# ------------------------------------------------------------------------ listing as JSON


def _simple(value: Any) -> bool:
    return (
        value is None
        or type(value) is str
        or type(value) is bool
        or (type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER)
    )


def plain_json(record: Record) -> bool:
    """True if pydantic prints ``record`` as the json module prints its ``to_json()``: its
    governance is in its line, no unknown field, and the fields of any type hold a string,
    a safe integer, a boolean or nothing.
    """
    g = record.__dict__["governance"]
    if (
        record.__pydantic_extra__
        or "governance" not in record.__pydantic_fields_set__
        or g.__pydantic_extra__
        or record.__dict__["provenance"].__pydantic_extra__
    ):
        return False
    d = g.__dict__
    if not (
        _simple(d["conflictGroup"])
        and _simple(d["reviewedBy"])
        and _simple(d["reviewedAt"])
        and _simple(d["reviewNote"])
    ):
        return False
    for ref in d["sourceRefs"]:
        if ref.__pydantic_extra__ or not _simple(ref.__dict__["contentHash"]):
            return False
    return True


def json_in_rust(obj: Any, indent: int) -> str | None:
    """``obj`` (plain data: strings, integers, booleans, None, lists, dicts) as indented JSON
    serialized in Rust (the same text as the json module's, faster); None when pydantic-core
    cannot (a lone surrogate)."""
    from pydantic_core import PydanticSerializationError, to_json

    try:
        return to_json(obj, indent=indent).decode()
    except PydanticSerializationError:
        return None
