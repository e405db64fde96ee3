"""The one error type every layer raises, with a stable code."""

from __future__ import annotations


class StoreError(Exception):
    """A failure a user can act on: a stable ``code`` and a one-line ``message``.

    Codes: INVALID_RECORD, NOT_FOUND, READ_ONLY_SCOPE, READ_ONLY_RECORD, FORGOTTEN,
    SHARED_WRITE_UNCONFIRMED, REVISION_CONFLICT, STORE_TOO_LARGE, UNSAFE_PATH, LOCK_TIMEOUT,
    WRITE_FAILED, READ_FAILED, BUNDLE_INVALID, USAGE.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = " ".join(message.split())

    def __str__(self) -> str:
        return f"error[{self.code}]: {self.message}"
