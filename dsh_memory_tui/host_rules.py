"""The host's rules about a record that need no pydantic: its vocabulary (the enumerations),
its limits, its text rules and patterns, and how it makes ids and hashes.

The lowest room of the model: ``record`` (the pydantic models), ``model_fast`` (the fast path)
and ``model`` (the host's verdict in its order of checks) all take these from here. No I/O.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

SCHEMA_VERSION = 1
MAX_TITLE_BYTES = 256
MAX_CONTENT_BYTES = 64 * 1024
MAX_TAGS = 32
MAX_TAG_BYTES = 64
MAX_ID_BYTES = 256
MAX_SCOPE_KEY_BYTES = 512
MAX_NOTE_BYTES = 512
MAX_SOURCE_REFS = 32
MAX_SAFE_INTEGER = 2**53 - 1
# The host joins at most this many further physical lines to recover a record (33 in all).
MAX_RECOVERY_JOINS = 32


class Scope(StrEnum):
    SESSION = "session"
    PROJECT = "project"
    SHARED = "shared-project"
    USER = "user"


class RecordType(StrEnum):
    DECISION = "decision"
    PREFERENCE = "preference"
    CONVENTION = "convention"
    FACT = "fact"


class Status(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    FORGOTTEN = "forgotten"


class Origin(StrEnum):
    USER_AUTHORED = "user-authored"
    IMPORTED = "imported"
    DERIVED = "derived"
    MODEL_SUGGESTED = "model-suggested"


class Verification(StrEnum):
    UNVERIFIED = "unverified"
    VERIFIED = "verified"
    REJECTED = "rejected"
    STALE = "stale"


class Retention(StrEnum):
    SESSION_END = "session-end"
    PROJECT_DELETE = "project-delete"
    USER_MANAGED = "user-managed"


class ProvenanceKind(StrEnum):
    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    IMPORT = "import"


SOURCE_REF_KINDS = ("session", "event", "file", "url", "import")
SourceRefKind = Literal["session", "event", "file", "url", "import"]

RETENTION_BY_SCOPE = {
    Scope.SESSION: Retention.SESSION_END,
    Scope.PROJECT: Retention.PROJECT_DELETE,
    Scope.SHARED: Retention.PROJECT_DELETE,
    Scope.USER: Retention.USER_MANAGED,
}

# The origin a *new* record of each provenance kind gets (SPEC 6).
ORIGIN_BY_PROVENANCE = {
    ProvenanceKind.USER: Origin.USER_AUTHORED,
    ProvenanceKind.AGENT: Origin.MODEL_SUGGESTED,
    ProvenanceKind.TOOL: Origin.DERIVED,
    ProvenanceKind.IMPORT: Origin.IMPORTED,
}

# Who sees a record kept in each scope (the copy dialog and the docs say this).
AUDIENCE_BY_SCOPE = {
    Scope.SESSION: "this session only",
    Scope.PROJECT: "every session in this project, on this machine",
    Scope.SHARED: "everyone sharing this project (the file is committed with it)",
    Scope.USER: "every project of this user",
}

# JavaScript's String.prototype.trim() removes exactly these (WhiteSpace and LineTerminator).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
NOT_JS_SPACE = re.compile(f"[^{re.escape(JS_WHITESPACE)}]")
TEXT_CONTROL = re.compile("[\x00-\x1f\x7f]")
CONTENT_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
HASH = re.compile("sha256:[0-9a-f]{64}")


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def utf8_len(text: str) -> int:
    """UTF-8 bytes as node counts them (a lone surrogate is U+FFFD, three bytes)."""
    try:
        return len(text.encode())
    except UnicodeEncodeError:
        return len(text.encode("utf-8", "surrogatepass"))


def utf8(text: str) -> bytes:
    """UTF-8 as node encodes a string (a lone surrogate becomes U+FFFD)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return well_formed(text).encode()


def well_formed(text: str) -> str:
    """``text`` as UTF-8 can carry it: each lone surrogate (valid in the host's JSON, which no
    UTF-8 encoder writes) replaced by U+FFFD, as node encodes it; a pair stays one character.
    The same size in UTF-8 bytes as ``utf8_len`` counts."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def text_ok(value: Any, max_bytes: int) -> bool:
    """The host's ``text()`` rule: a string, not blank after trim, at most ``max_bytes`` UTF-8
    bytes, no C0 control character or DEL.
    """
    return (
        type(value) is str
        and TEXT_CONTROL.search(value) is None
        and NOT_JS_SPACE.search(value) is not None
        and (len(value) * 4 <= max_bytes or utf8_len(value) <= max_bytes)
    )


def content_ok(value: Any, max_bytes: int = MAX_CONTENT_BYTES) -> bool:
    """The host's ``contentText()``: like ``text_ok`` but tab, LF and CR are allowed."""
    return (
        type(value) is str
        and CONTENT_CONTROL.search(value) is None
        and NOT_JS_SPACE.search(value) is not None
        and (len(value) * 4 <= max_bytes or utf8_len(value) <= max_bytes)
    )


def safe_int(value: Any) -> int | None:
    """``value`` as an int if it is a JavaScript safe integer >= 0 (``1e3``, ``1.0`` and ``-0``
    included, as JSON.parse gives them), else None.
    """
    if type(value) is int:
        return value if 0 <= value <= MAX_SAFE_INTEGER else None
    if type(value) is float and value.is_integer() and -1 < value <= MAX_SAFE_INTEGER:
        return int(value)
    return None


def user_id_problem(user_id: str) -> str | None:
    """Why ``user_id`` cannot name a user profile (the host's rule), or None."""
    if not user_id.strip(JS_WHITESPACE):
        return "is blank"
    if len(user_id.encode("utf-16-le", "surrogatepass")) // 2 > 256:
        return "is longer than 256 characters"
    if re.search("[\\\\/\x00-\x1f\x7f]", user_id):
        return "contains '/', '\\\\' or a control character"
    if utf8_len(user_id) > MAX_SCOPE_KEY_BYTES:
        return "is longer than 512 UTF-8 bytes"
    return None


# hashlib, uuid and secrets are loaded by the first hash or id made, not with the vocabulary
# (`dsh-memory --help` takes the enumerations from here).


def content_hash(content: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(utf8(content)).hexdigest()


def now_ms() -> int:
    import time

    return time.time_ns() // 1_000_000


def new_id() -> str:
    """A new record id, as the host makes them (``memory:<uuid>``)."""
    import uuid

    return f"memory:{uuid.uuid4()}"


def import_id() -> str:
    """The id of an imported record, as the host's import makes them."""
    import uuid

    return f"memory:import:{uuid.uuid4()}"


def random_hex(n_bytes: int = 16) -> str:
    import secrets

    return secrets.token_hex(n_bytes)


def session_scope_key(session_id: str, root_id: str) -> str:
    return f"{session_id}|{root_id}"


def sha256_hex(text: str) -> str:
    import hashlib

    return hashlib.sha256(utf8(text)).hexdigest()


def session_file_stem(scope_key: str) -> str:
    """A session file's name without ``.jsonl``: the first 32 hex of sha256(scopeKey)."""
    return sha256_hex(scope_key)[:32]


def conflict_group_for(title: str) -> str:
    """The host's conflict group of a title (trim + lower case)."""
    return "conflict:" + sha256_hex(js_trim(title).lower())[:24]


def title_key(title: str) -> str:
    """Titles that the host compares as equal have the same key."""
    return js_trim(title).lower()


_ROOT_ID = re.compile(r"root:[0-9a-f]{64}")


def is_root_id(key: str) -> bool:
    """``root:`` + sha256 hex: the host's id of a workspace (another clone's, in a team)."""
    return len(key) == 69 and _ROOT_ID.fullmatch(key) is not None


def blank(raw: bytes) -> bool:
    """True for a line the host skips: nothing but JavaScript whitespace."""
    from .js_json import decode_js  # here: the vocabulary (`dsh-memory --help`) needs no JSON

    return not js_trim(decode_js(raw))
