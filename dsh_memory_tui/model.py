"""The memory record (schemaVersion 1): models, enumerations, the host's validation, hashing, ids.

No I/O here. ``parse_line`` (a line of a file) and ``record_from_json`` (a bundle entry) are the
one place the host's rules live (SPEC 4: its ``validateRecord`` and ``validateGovernance``, rule
for rule and limit for limit, with the host's message for each). A line gets the same verdict
here as in the host (``tests/interop`` replays the host's own verdicts).

The rooms below it, each importing only those under it: ``host_rules`` (no pydantic: the
enumerations, limits, text rules, ids and hashes), ``model_base`` (the models' base and their
shared fields sets), ``record`` (the models and the other verdicts on a line), ``model_fast``.
This module is their public face: ``from .model import Record, Scope, parse_line`` is how the
rest of the package takes any of them.

Two paths give one verdict: ``model_fast`` (the fast path, and the only module that uses
pydantic's internals) parses the usual line in Rust and checks what types cannot say; any line
it doubts goes to ``_validate_value``, which follows the host's order of checks over
``loads_js`` output (JSON as JSON.parse reads it, at any depth) and says which rule broke.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from . import model_fast as _fast
from .errors import ErrorCode, StoreError
from .host_rules import (
    AUDIENCE_BY_SCOPE,
    CONTENT_CONTROL,
    HASH,
    JS_WHITESPACE,
    MAX_CONTENT_BYTES,
    MAX_ID_BYTES,
    MAX_NOTE_BYTES,
    MAX_RECOVERY_JOINS,
    MAX_SAFE_INTEGER,
    MAX_SCOPE_KEY_BYTES,
    MAX_SOURCE_REFS,
    MAX_TAG_BYTES,
    MAX_TAGS,
    MAX_TITLE_BYTES,
    NOT_JS_SPACE,
    ORIGIN_BY_PROVENANCE,
    RETENTION_BY_SCOPE,
    SCHEMA_VERSION,
    SOURCE_REF_KINDS,
    TEXT_CONTROL,
    Origin,
    ProvenanceKind,
    RecordType,
    Retention,
    Scope,
    SourceRefKind,
    Status,
    Verification,
    blank,
    conflict_group_for,
    content_hash,
    content_ok,
    import_id,
    is_root_id,
    js_trim,
    new_id,
    now_ms,
    random_hex,
    safe_int,
    session_file_stem,
    session_scope_key,
    sha256_hex,
    text_ok,
    title_key,
    user_id_problem,
    utf8,
    utf8_len,
    well_formed,
)
from .js_json import decode_js, dumps_js, loads_js
from .model_fast import ValidationError
from .record import (
    ForeignLine,
    FutureLine,
    Governance,
    Location,
    Provenance,
    Record,
    RecordInvalid,
    Revision,
    SafeInt,
    SchemaVersion,
    SourceRef,
    effective,
    expired_view,
    is_expired,
    legacy_governance,
)

__all__ = [
    "AUDIENCE_BY_SCOPE",
    "JS_WHITESPACE",
    "MAX_CONTENT_BYTES",
    "MAX_ID_BYTES",
    "MAX_NOTE_BYTES",
    "MAX_RECOVERY_JOINS",
    "MAX_SAFE_INTEGER",
    "MAX_SCOPE_KEY_BYTES",
    "MAX_SOURCE_REFS",
    "MAX_TAG_BYTES",
    "MAX_TAGS",
    "MAX_TITLE_BYTES",
    "ORIGIN_BY_PROVENANCE",
    "RETENTION_BY_SCOPE",
    "SCHEMA_VERSION",
    "SOURCE_REF_KINDS",
    "ForeignLine",
    "FutureLine",
    "Governance",
    "Location",
    "Origin",
    "Parsed",
    "ParsedLine",
    "Provenance",
    "ProvenanceKind",
    "Record",
    "RecordInvalid",
    "RecordType",
    "Retention",
    "Revision",
    "SafeInt",
    "SchemaVersion",
    "Scope",
    "SourceRef",
    "SourceRefKind",
    "Status",
    "Verification",
    "as_entry",
    "blank",
    "checked",
    "checked_line",
    "conflict_group_for",
    "content_hash",
    "content_ok",
    "effective",
    "escape_string_controls",
    "expired_view",
    "import_id",
    "is_expired",
    "is_root_id",
    "js_trim",
    "legacy_governance",
    "make_record",
    "new_id",
    "next_revision",
    "now_ms",
    "parse_entries",
    "parse_line",
    "parse_lines",
    "parse_text",
    "random_hex",
    "record_from_json",
    "records_json",
    "recover_multiline",
    "safe_int",
    "session_file_stem",
    "session_scope_key",
    "sha256_hex",
    "slow_entry",
    "text_ok",
    "title_key",
    "usual_run",
    "user_id_problem",
    "utf8",
    "utf8_len",
    "well_formed",
    "validate_record",
]


def records_json(records: Sequence[Record]) -> str:
    """``json.dumps([r.to_json() for r in records], ensure_ascii=False, indent=2)``, byte for
    byte (what ``list --json`` prints), with runs of the usual records serialized by pydantic
    in Rust: the same layout and escapes, ~50x faster than the json module's indenting encoder.
    A record it might print otherwise (an older host's record, whose governance ``to_json``
    fills in; a float or a container or an unknown field where any value is allowed, whose
    spelling could differ; a lone surrogate) is printed by the json module.
    """
    parts: list[str] = []
    run: list[Record] = []

    def flush() -> None:
        if not run:
            return
        try:
            text = _fast.record_list().to_json(run, indent=2, exclude_unset=True).decode()
        except (ValueError, TypeError):  # a lone surrogate in a string
            parts.extend(_indented_json(r) for r in run)
        else:
            parts.append(text[2:-2])  # the records without the list's "[\n" and "\n]"
        run.clear()

    for record in records:
        if _fast.plain_json(record):
            run.append(record)
        else:
            flush()
            parts.append(_indented_json(record))
    flush()
    return "[\n" + ",\n".join(parts) + "\n]" if parts else "[]"


def _indented_json(record: Record) -> str:
    """One record as an item of an indent-2 list (the json module's layout)."""
    text = dumps_js(record.to_json(), indent=2)
    return "  " + text.replace("\n", "\n  ")  # JSON strings hold no raw newline


# ----------------------------------------------------------------------------- validation

# Tests turn it off to hold the fast path to the same verdicts as ``_validate_value``.
FAST_PATH = True


def _js_string(value: Any) -> str | None:
    """String(value) for the values a hash test can meet; None when it cannot be a hash."""
    if type(value) is str:
        return value
    if type(value) is list:
        parts = [_js_string(v) if v is not None else "" for v in value]
        return None if any(p is None for p in parts) else ",".join(parts)  # type: ignore[arg-type]
    return None


_SCOPES = tuple(s.value for s in Scope)
_TYPES = tuple(t.value for t in RecordType)
_STATUSES = tuple(s.value for s in Status)
_KINDS = tuple(k.value for k in ProvenanceKind)
_ORIGINS = tuple(o.value for o in Origin)
_VERIFICATIONS = tuple(v.value for v in Verification)
_RETENTIONS = tuple(r.value for r in Retention)


def _need_text(value: Any, max_bytes: int, label: str) -> None:
    if not text_ok(value, max_bytes):
        raise RecordInvalid(f"{label} is invalid", _text_detail(value, max_bytes))


def _text_detail(value: Any, max_bytes: int) -> str:
    if type(value) is not str:
        return "not a string" if value is not None else "null"
    if NOT_JS_SPACE.search(value) is None:
        return "blank"
    if TEXT_CONTROL.search(value):
        return "contains a control character"
    return f"over {max_bytes} UTF-8 bytes"


def _need_int(obj: dict[str, Any], key: str, label: str) -> None:
    value = safe_int(obj[key])
    if value is None:
        raise RecordInvalid(f"{label} is invalid", "not a safe integer >= 0")
    obj[key] = value


def _is_object(value: Any) -> bool:
    # JavaScript's `value && typeof value === "object"`: arrays pass too, even empty ones.
    return isinstance(value, (dict, list))


def _js_safe_integer(value: Any) -> TypeGuard[int | float]:
    """Number.isSafeInteger: negative values included, booleans and strings not."""
    if type(value) is int:
        return abs(value) <= MAX_SAFE_INTEGER
    return type(value) is float and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER


def _validate_governance(value: Any) -> dict[str, Any]:
    if not _is_object(value):
        raise RecordInvalid("Memory governance is invalid")
    g = value if isinstance(value, dict) else {}
    if (
        g.get("origin") not in _ORIGINS
        or g.get("verification") not in _VERIFICATIONS
        or g.get("retention") not in _RETENTIONS
    ):
        raise RecordInvalid("Memory governance enum is invalid")
    refs = g.get("sourceRefs")
    if not isinstance(refs, list) or len(refs) > MAX_SOURCE_REFS:
        raise RecordInvalid("Memory source references are invalid", "at most 32")
    for ref in refs:
        if not _is_object(ref):
            raise RecordInvalid("Memory source reference is invalid")
        r = ref if isinstance(ref, dict) else {}
        if r.get("kind") not in SOURCE_REF_KINDS:
            raise RecordInvalid(
                "Memory source reference kind is invalid",
                f"{r.get('kind')!r} is not one of {', '.join(SOURCE_REF_KINDS)}",
            )
        _need_text(r.get("id"), MAX_ID_BYTES, "Memory source reference id")
        if "contentHash" in r:
            text = _js_string(r["contentHash"])
            if text is None or not HASH.fullmatch(text):
                raise RecordInvalid("Memory source reference hash is invalid")
    if g["origin"] != "user-authored" and not refs:
        raise RecordInvalid("Non-user Memory requires a source reference")
    revision = safe_int(g.get("revision"))
    if revision is None or revision < 1:
        raise RecordInvalid("Memory revision is invalid", "a safe integer >= 1")
    g["revision"] = revision
    if "confidence" in g and g["confidence"] not in ("low", "medium", "high"):
        raise RecordInvalid("Memory confidence is invalid")
    if "verifiedBy" in g and g["verifiedBy"] not in ("user", "trusted-tool"):
        raise RecordInvalid("Memory verifiedBy is invalid")
    for key in ("verifiedAt", "expiresAt", "pinnedAt"):
        if key in g:
            _need_int(g, key, f"Memory {key}")
    if "pinnedBy" in g and g["pinnedBy"] != "user":
        raise RecordInvalid("Memory pinnedBy is invalid")
    if "pinnedAt" in g and "pinnedBy" not in g:
        raise RecordInvalid("Pinned Memory requires an actor")
    if g["verification"] == "verified" and "verifiedAt" not in g:
        raise RecordInvalid("Verified Memory requires a timestamp")
    return g


def _not_this_files(obj: Any, location: Location | None) -> Parsed | None:
    """The verdict on a line that is not one of this file's schemaVersion 1 records: another
    scopeKey's (a ``ForeignLine``; a teammate's record as its own host judges it), another
    schemaVersion's (a ``FutureLine``); None for any other line."""
    if isinstance(obj, dict) and location is not None:
        key = obj.get("scopeKey")
        if obj.get("scope") == location.scope.value and type(key) is str:
            if not location.owns(key):
                return ForeignLine(key, _str_or_none(obj.get("id")), _str_or_none(obj.get("title")))
            if location.teammate(key):
                # Another clone's line: its author's host judges it; one it refuses is kept
                # byte for byte like any foreign line, never quarantined by us.
                rid, title = _str_or_none(obj.get("id")), _str_or_none(obj.get("title"))
                try:
                    return _validate_value(obj, Location(location.scope, key))
                except RecordInvalid:
                    return ForeignLine(key, rid, title)
    if _is_object(obj):
        version = obj.get("schemaVersion") if isinstance(obj, dict) else None
        if version != SCHEMA_VERSION or type(version) is bool:
            if not _js_safe_integer(version):
                raise RecordInvalid("Memory record schema is invalid", "schemaVersion is not 1")
            return FutureLine(
                int(version),
                _str_or_none(obj.get("id")),
                _str_or_none(obj.get("title")),
                _str_or_none(obj.get("scopeKey")),
            )
    return None


def _validate_value(obj: Any, location: Location | None) -> Parsed:
    """The host's verdict on a parsed JSON value, in the host's order of checks."""
    other = _not_this_files(obj, location)
    if other is not None:
        return other
    if not isinstance(obj, dict):
        raise RecordInvalid("Memory record must be an object")
    obj["schemaVersion"] = SCHEMA_VERSION
    _need_text(obj.get("id"), MAX_ID_BYTES, "Memory id")
    scope, key = obj.get("scope"), obj.get("scopeKey")
    if scope not in _SCOPES or (
        location is not None
        and (scope != location.scope.value or not (type(key) is str and location.owns(key)))
    ):
        raise RecordInvalid(
            "Memory record scope does not match this store",
            f"scope {scope!r}" + (f", file of scope {location.scope.value}" if location else ""),
        )
    _need_text(obj.get("scopeKey"), MAX_SCOPE_KEY_BYTES, "Memory scope key")
    if obj.get("type") not in _TYPES:
        raise RecordInvalid("Memory type is invalid", f"{obj.get('type')!r}")
    _need_text(obj.get("title"), MAX_TITLE_BYTES, "Memory title")
    if not content_ok(obj.get("content")):
        raise RecordInvalid("Memory content is invalid", _content_detail(obj.get("content")))
    tags = obj.get("tags")
    if not isinstance(tags, list) or len(tags) > MAX_TAGS:
        raise RecordInvalid("Memory tags are invalid", "a list of at most 32")
    for tag in tags:
        _need_text(tag, MAX_TAG_BYTES, "Memory tag")
    prov = obj.get("provenance")
    if not _is_object(prov):
        raise RecordInvalid("Memory provenance is invalid")
    p = prov if isinstance(prov, dict) else {}
    if p.get("kind") not in _KINDS:
        raise RecordInvalid("Memory provenance kind is invalid")
    if "sessionId" in p:
        _need_text(p["sessionId"], MAX_ID_BYTES, "Memory provenance session")
    if "note" in p:
        _need_text(p["note"], MAX_NOTE_BYTES, "Memory provenance note")
    if "eventSeq" in p:
        _need_int(p, "eventSeq", "Memory provenance event")
    for key in ("createdAt", "updatedAt"):
        if key not in obj:
            _missing(key)
        _need_int(obj, key, f"Memory {key}")
    if obj["updatedAt"] < obj["createdAt"]:
        raise RecordInvalid("Memory timestamps are invalid", "updatedAt is before createdAt")
    if "lastUsedAt" in obj:
        _need_int(obj, "lastUsedAt", "Memory lastUsedAt")
    if "useCount" not in obj:
        _missing("useCount")
    _need_int(obj, "useCount", "Memory useCount")
    if obj.get("status") not in _STATUSES:
        raise RecordInvalid("Memory status is invalid")
    _need_text(obj.get("contentHash"), 80, "Memory content hash")
    h = obj["contentHash"]
    if not HASH.fullmatch(h) or h != content_hash(obj["content"]):
        raise RecordInvalid("Memory content hash is invalid", "not the sha256 of the content")
    if "governance" in obj:
        obj["governance"] = _validate_governance(obj["governance"])
    return _fast.loaded(Record.model_validate(obj))


def _missing(key: str) -> None:
    raise RecordInvalid(f"Memory {key} is invalid", "missing")


def _content_detail(value: Any) -> str:
    if type(value) is not str:
        return "not a string"
    if NOT_JS_SPACE.search(value) is None:
        return "blank"
    if CONTENT_CONTROL.search(value):
        return "contains a control character other than tab, LF, CR"
    return f"over {MAX_CONTENT_BYTES} UTF-8 bytes"


def _str_or_none(value: Any) -> str | None:
    return value if type(value) is str else None


def parse_line(line: bytes, location: Location | None = None) -> Record | FutureLine | ForeignLine:
    """The host's verdict on one physical line (newline excluded or included).

    Returns a validated ``Record``, a ``FutureLine`` or a ``ForeignLine``; raises
    ``RecordInvalid`` (``reason``, ``host_message``) for a line the host quarantines.
    """
    result = _usual_line(line, location) if FAST_PATH else None
    return result if result is not None else _parse_any(line, location)


def _usual_line(line: bytes, location: Location | None) -> Record | ForeignLine | None:
    """``parse_line``'s verdict on the usual line, or None when the host-order path must
    decide.
    """
    run, _ = usual_run([line], 0, location)
    return run[0] if run else None


def usual_run(
    lines: list[bytes], i: int, location: Location | None
) -> tuple[list[Record | ForeignLine], int]:
    """The fast path over ``lines[i:]``, in one loop (a loaded file is ~all usual lines): the
    verdicts of the usual lines from ``i`` on, blank lines skipped, and the index of the first
    line it cannot decide (``len(lines)`` when none), which the host-order path then takes.
    A usual line is decided by Rust (the record's validator with the host's text rules) and
    the few rules its types cannot say.
    """
    if not FAST_PATH:
        return [], i
    return _fast.usual_run(lines, i, location)


def _parse_any(line: bytes, location: Location | None) -> Record | FutureLine | ForeignLine:
    """``parse_line`` in the host's order of checks: any line, with the host's message."""
    try:
        value = loads_js(js_trim(decode_js(line)))
    except (ValueError, RecursionError):
        raise RecordInvalid("Memory record is invalid", "not valid JSON", not_json=True) from None
    return _validate_value(value, location)


def parse_text(text: str, location: Location | None = None) -> Record | FutureLine | ForeignLine:
    """``parse_line`` for text that is already one JSON document (a recovered record)."""
    try:
        value = loads_js(text)
    except (ValueError, RecursionError):
        raise RecordInvalid("Memory record is invalid", "not valid JSON") from None
    return _validate_value(value, location)


def escape_string_controls(text: str) -> str:
    """Raw LF, CR and TAB inside JSON strings written as escapes (the host's recovery of a
    record whose content was written with raw newlines).
    """
    out: list[str] = []
    in_string = escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif in_string and ch == "\\":
            escaped = True
        elif ch == '"':
            in_string = not in_string
        elif in_string and ch in "\n\r\t":
            ch = "\\n" if ch == "\n" else "\\r" if ch == "\r" else "\\t"
        out.append(ch)
    return "".join(out)


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def recover_multiline(lines: list[str], start: int) -> tuple[Any, int] | None:
    """The host's recovery of a record spread over physical lines: join the next lines (at
    most 32 more) until the text, its in-string controls escaped, parses as a JSON object or
    array. Returns the value and the index of the last line used, or None.
    """
    buffer = lines[start]
    for index in range(start + 1, len(lines)):
        if index - start > MAX_RECOVERY_JOINS or _utf16_len(buffer) > MAX_CONTENT_BYTES:
            return None
        buffer = f"{buffer}\n{lines[index]}"
        try:
            value = loads_js(escape_string_controls(buffer))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, (dict, list)):
            return value, index
    return None


Parsed = Record | FutureLine | ForeignLine


@dataclass(slots=True)
class ParsedLine:
    """One entry of a file as the host reads it: usually one physical line, or several for
    a recovered record. ``first``/``last`` index physical lines (0-based).
    """

    first: int
    last: int
    raw: bytes  # the physical lines joined with LF, without a final newline
    result: Parsed | RecordInvalid
    recovered: bool = False

    def warning_code(self, n_lines: int, ends_with_newline: bool) -> str:
        """The host's warning for this entry of a file of ``n_lines`` physical lines."""
        r = self.result
        if isinstance(r, FutureLine):
            return "UNSUPPORTED_SCHEMA"
        if not isinstance(r, RecordInvalid):
            return "RECOVERED_LINE" if self.recovered else ""
        # Only a line that was JSON can be "truncated"; a torn non-JSON line is corrupt.
        if not r.not_json and self.last == n_lines - 1 and not ends_with_newline:
            return "TRUNCATED_LINE"
        return r.warning_code

    @property
    def quarantine_text(self) -> str:
        """What the host writes as ``raw`` in ``.corrupt`` (newline included)."""
        text = decode_js(self.raw)
        return (text if self.recovered else js_trim(text)) + "\n"


def parse_lines(lines: list[bytes], location: Location | None) -> list[ParsedLine]:
    """Every entry of ``lines`` (physical lines without their LF; the last one is what follows
    the file's last LF, often empty), as the host's ``open()`` reads them: blank lines skipped,
    a line that is not JSON recovered with the lines after it when it can be.
    """
    return [as_entry(lines, i, result) for i, result in parse_entries(lines, location)]


def as_entry(lines: list[bytes], i: int, result: Parsed | ParsedLine) -> ParsedLine:
    """A ``parse_entries`` item as ``parse_lines`` gives it: always a ``ParsedLine``."""
    return result if isinstance(result, ParsedLine) else ParsedLine(i, i, lines[i], result)


def parse_entries(
    lines: list[bytes], location: Location | None
) -> Iterator[tuple[int, Parsed | ParsedLine]]:
    """``parse_lines`` without its ``ParsedLine`` for the usual line: ``(index, result)`` for
    a line the fast path decided, ``(index, entry)`` for any other entry (an invalid or
    recovered one, or one decided in the host's order). A whole file's load takes
    ``usual_run`` and ``slow_entry`` itself.
    """
    n = len(lines)
    i = 0
    while i < n:
        raw = lines[i]
        if raw[:1] != b"{" and blank(raw):
            i += 1
            continue
        result = _usual_line(raw, location)
        if result is not None:
            yield i, result
            i += 1
            continue
        entry = slow_entry(lines, i, location)
        yield i, entry
        i = entry.last + 1


def slow_entry(lines: list[bytes], i: int, location: Location | None) -> ParsedLine:
    """The entry that starts at line ``i`` in the host's order of checks."""
    raw = lines[i]
    try:
        return ParsedLine(i, i, raw, _parse_any(raw, location))
    except RecordInvalid as exc:
        if not exc.not_json or i + 1 >= len(lines):
            return ParsedLine(i, i, raw, exc)
        failure = exc
    window = [decode_js(line) for line in lines[i : i + MAX_RECOVERY_JOINS + 2]]
    got = recover_multiline(window, 0)
    if got is None:
        return ParsedLine(i, i, raw, failure)
    value, last = got
    result: Parsed | RecordInvalid
    try:
        result = _validate_value(value, location)
    except RecordInvalid as exc:
        result = exc
    return ParsedLine(i, i + last, b"\n".join(lines[i : i + last + 1]), result, True)


def validate_record(record: Record, location: Location | None = None) -> Record:
    """The host's verdict on a record pydantic already parsed (strict types): the record with
    its legacy governance filled in, or ``RecordInvalid``.
    """
    if _fast.fast_ok(record) and (
        location is None or (record.scope is location.scope and location.owns(record.scopeKey))
    ):
        return _fast.fill_legacy(record)
    result = _validate_value(loads_js(record.to_line().decode()), location)
    if not isinstance(result, Record):
        raise RecordInvalid("Memory record scope does not match this store")
    return result


def record_from_json(obj: Any, location: Location | None = None) -> Record:
    """Validate an already-parsed JSON object (a bundle entry) as a schemaVersion 1 record,
    with exactly the rules of ``parse_line``. Raises ``RecordInvalid``.
    """
    try:
        copied = loads_js(dumps_js(obj))
    except (TypeError, ValueError, RecursionError):
        raise RecordInvalid("Memory record is invalid", "not JSON") from None
    result = _validate_value(copied, location)
    if not isinstance(result, Record):
        raise RecordInvalid(
            "Memory record schema is unsupported"
            if isinstance(result, FutureLine)
            else "Memory record scope does not match this store"
        )
    return result


# Lines this process built and the host's rules accepted, so the write that follows need not
# parse them again: a verdict depends on the bytes alone, and on the file's scope and scopeKey,
# which ``checked_line`` compares apart. Small: a record is written soon after it is built.
_VALID_LINES: dict[bytes, None] = {}
_MAX_VALID_LINES = 64


def checked(record: Record, location: Location | None = None) -> Record:
    """The host's verdict on a record about to be written: a failure is a StoreError."""
    checked_line(record, location)
    return record


def checked_line(record: Record, location: Location | None = None) -> bytes:
    """The line to write for ``record`` (``to_line``), after the host's verdict on it in a
    file of ``location``: ``StoreError(INVALID_RECORD)`` when the host would refuse it. A
    line ``checked`` accepted moments ago is not parsed again.
    """
    line = record.to_line()
    if line in _VALID_LINES and (
        location is None or (record.scope is location.scope and location.owns(record.scopeKey))
    ):
        return line
    try:
        result = parse_line(line, location)
    except RecordInvalid as exc:
        raise StoreError(ErrorCode.INVALID_RECORD, exc.reason) from None
    if not isinstance(result, Record):
        raise StoreError(ErrorCode.INVALID_RECORD, "the record does not belong in this file")
    if len(_VALID_LINES) >= _MAX_VALID_LINES:
        del _VALID_LINES[next(iter(_VALID_LINES))]
    _VALID_LINES[line] = None
    return line


def make_record(
    *,
    scope: Scope,
    scope_key: str,
    record_type: RecordType,
    title: str,
    content: str,
    tags: list[str],
    provenance: Provenance,
    origin: Origin,
    source_refs: list[SourceRef],
    record_id: str | None = None,
    verification: Verification = Verification.UNVERIFIED,
    verified_at: int | None = None,
    retention: Retention | None = None,
    conflict_group: str | None = None,
    now: int | None = None,
    check: bool = True,
) -> Record:
    """Build a complete, host-valid revision-1 record. Raises ``StoreError(INVALID_RECORD)``.
    ``check=False``: the host's verdict is left to the caller, who takes it for the file the
    record goes to (``checked_line``, as ``MemoryStore.add`` does), so its line is made once.
    """
    ts = now_ms() if now is None else now
    gov: dict[str, Any] = {
        "origin": origin,
        "sourceRefs": source_refs,
        "verification": verification,
    }
    if verified_at is not None:
        gov["verifiedAt"] = verified_at
        gov["verifiedBy"] = "user"
    gov["revision"] = 1
    if conflict_group is not None:
        gov["conflictGroup"] = conflict_group
    gov["retention"] = retention or RETENTION_BY_SCOPE[scope]
    try:
        record = Record(
            schemaVersion=1,
            id=record_id or new_id(),
            scope=scope,
            scopeKey=scope_key,
            type=record_type,
            title=title,
            content=content,
            tags=tags,
            provenance=provenance,
            createdAt=ts,
            updatedAt=ts,
            useCount=0,
            contentHash=content_hash(content),
            status=Status.ACTIVE,
            governance=Governance(**gov),
        )
    except ValidationError as exc:
        raise StoreError(ErrorCode.INVALID_RECORD, _first_error(exc)) from None
    return checked(record) if check else record


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "line"
    return f"{where}: {err['msg']}"


def next_revision(
    record: Record,
    now: int,
    changes: dict[str, Any] | None = None,
    governance: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
) -> Record:
    """The record's next revision: ``changes`` to top-level fields, ``governance`` to its own,
    governance fields in ``drop`` removed.

    The id and createdAt stay; revision is one higher; updatedAt never goes backwards.
    Unknown fields are carried over unchanged.
    """
    data = record.model_dump(exclude_unset=True)
    data.update(changes or {})
    data["updatedAt"] = max(now, record.updatedAt)
    if changes and "content" in changes:
        data["contentHash"] = content_hash(changes["content"])
    gov = record.governance.model_dump(exclude_unset=True)
    for key in drop:
        gov.pop(key, None)
    gov.update(governance or {})
    gov["revision"] = record.governance.revision + 1
    data["governance"] = gov
    try:
        return checked(Record.model_validate(data))
    except ValidationError as exc:
        raise StoreError(ErrorCode.INVALID_RECORD, _first_error(exc)) from None
