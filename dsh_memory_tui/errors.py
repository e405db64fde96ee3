"""The one error type every layer raises, with a stable code."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Every code a :class:`StoreError` carries. They are part of the CLI's and the MCP server's
    interface (``error[CODE]: message``): add codes, never rename one."""

    INVALID_RECORD = "INVALID_RECORD"
    INVALID_TRANSITION = "INVALID_TRANSITION"
    NOT_FOUND = "NOT_FOUND"
    FORGOTTEN = "FORGOTTEN"
    READ_ONLY_SCOPE = "READ_ONLY_SCOPE"
    READ_ONLY_RECORD = "READ_ONLY_RECORD"
    SHARED_WRITE_UNCONFIRMED = "SHARED_WRITE_UNCONFIRMED"
    REVISION_CONFLICT = "REVISION_CONFLICT"
    STORE_TOO_LARGE = "STORE_TOO_LARGE"
    UNSAFE_PATH = "UNSAFE_PATH"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    LOCK_TIMEOUT = "LOCK_TIMEOUT"
    LOCK_LOST = "LOCK_LOST"
    LOCK_FAILED = "LOCK_FAILED"
    WRITE_FAILED = "WRITE_FAILED"
    READ_FAILED = "READ_FAILED"
    BUNDLE_INVALID = "BUNDLE_INVALID"
    INVALID_CITATION = "INVALID_CITATION"
    MISSING_EXTRA = "MISSING_EXTRA"
    USAGE = "USAGE"
    SCOPE_NOT_SERVED = "SCOPE_NOT_SERVED"
    INVALID_EVENT = "INVALID_EVENT"
    AMBIGUOUS_ID = "AMBIGUOUS_ID"
    CONFLICT_MARKERS = "CONFLICT_MARKERS"
    GIT_FAILED = "GIT_FAILED"
    REASON_REQUIRED = "REASON_REQUIRED"
    HOST_CANNOT_OPEN = "HOST_CANNOT_OPEN"


class StoreError(Exception):
    """A failure a user can act on: a stable ``code`` (an :class:`ErrorCode`) and a one-line
    ``message``."""

    def __init__(self, code: ErrorCode | str, message: str) -> None:
        code = ErrorCode(code)
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = " ".join(message.split())

    def __str__(self) -> str:
        return f"error[{self.code}]: {self.message}"
