"""Settings: the app's remembered choices (the theme), and the check of every setting read
from the environment.

``<DSH_HOME>/dsh-memory-tui.json``, 0600, replaced atomically. It is a convenience: a file
that is missing, unreadable or not what we wrote reads as no settings (``Settings.problem``
says why, for a warning), and a failed save is reported by the caller, never fatal.
Textual-free (the app and its command line both use it).

``check_environment``: every ``DSH_*`` variable a command may read, checked before it does
anything (``dsh-memory`` and ``dsh-memory-tui`` call it first), so that a wrong one is refused
at once rather than after a bundle was written or a server started. The readers of the agent
budget, the audit log's and the session's settings live here (``agent_view``, ``audit`` and
``mcp`` take them from here), so the check every command makes loads none of those modules.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ErrorCode, StoreError
from .host_rules import MAX_ID_BYTES, text_ok
from .jsonl import ensure_dir, read_file, write_atomic

SETTINGS_NAME = "dsh-memory-tui.json"
SESSION_ENV = "DSH_SESSION_ID"
# Larger than any file we write: anything bigger is not ours, and is not read whole.
MAX_SETTINGS_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Settings:
    theme: str | None = None
    problem: str | None = None  # why the file was not used, when there is one we ignored


def settings_path(home: Path) -> Path:
    return home / SETTINGS_NAME


def load_settings(home: Path) -> Settings:
    """The settings saved under ``home``; ``Settings()`` when there are none, with ``problem``
    set when there is a file we cannot use (damaged, too large, nested too deep, not ours).
    """
    path = settings_path(home)
    try:
        got = read_file(path, limit=MAX_SETTINGS_BYTES)  # anything larger is not ours
    except StoreError as exc:
        return Settings(problem=exc.message)
    if got is None:
        return Settings()
    try:
        data = json.loads(got[1])
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads
        return Settings(problem=f"{path} is not JSON we can read")
    theme = data.get("theme") if isinstance(data, dict) else None
    if theme is not None and not (isinstance(theme, str) and theme):
        return Settings(problem=f"{path} has no theme name")
    return Settings(theme=theme)


def save_settings(home: Path, settings: Settings) -> None:
    """Write ``settings`` under ``home`` (created 0700 if missing). Raises ``UNSAFE_PATH`` or
    ``WRITE_FAILED``; the earlier file is then unchanged."""
    ensure_dir(home)
    data = json.dumps({"theme": settings.theme}, indent=2) + "\n"
    write_atomic(settings_path(home), data.encode())


# ---------------------------------------------------------------- settings from the environment

BUDGET_ENV = "DSH_MCP_BUDGET_BYTES"
DEFAULT_BUDGET_BYTES = 32 * 1024  # about 8,000 tokens
MIN_BUDGET_BYTES = 1024  # room for the heading and the line naming what was cut
MAX_BYTES_ENV = "DSH_AUDIT_MAX_BYTES"
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
AUDIT_ENV = "DSH_AUDIT"  # "off": dsh-memory mcp writes no entries (it says so at its start)


def budget_bytes(value: object = None) -> int:
    """The agent budget: ``value`` (``--budget-bytes``), else ``DSH_MCP_BUDGET_BYTES``, else
    32 KiB. ``StoreError(USAGE)`` for anything but a whole number of at least 1024.
    """
    where = "--budget-bytes"
    if value is None:
        value, where = os.environ.get(BUDGET_ENV) or None, BUDGET_ENV
        if value is None:
            return DEFAULT_BUDGET_BYTES
    try:
        number = int(str(value).strip().replace("_", ""))
    except ValueError:
        number = -1
    if number < MIN_BUDGET_BYTES:
        raise StoreError(
            ErrorCode.USAGE,
            f"{where} {str(value)!r} is not a byte count of at least {MIN_BUDGET_BYTES} "
            f"(room for the heading and the line naming what was cut; the default is "
            f"{DEFAULT_BUDGET_BYTES})",
        )
    return number


def max_bytes_setting() -> int:
    """``DSH_AUDIT_MAX_BYTES`` (default 8 MiB): the size past which the audit log is rotated.
    ``StoreError(USAGE)`` for anything but a positive whole number.
    """
    value = os.environ.get(MAX_BYTES_ENV)
    if not value:
        return DEFAULT_MAX_BYTES
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise StoreError(ErrorCode.USAGE, f"{MAX_BYTES_ENV} {value!r} is not a byte count")
    return number


def audit_setting() -> bool:
    """``DSH_AUDIT``: False for ``off`` (``dsh-memory mcp`` writes no entries), True for
    ``on`` or unset. ``StoreError(USAGE)`` for anything else (a ``0`` or ``false`` that
    meant off must not leave the log on unsaid).
    """
    value = os.environ.get(AUDIT_ENV, "").strip().lower()
    if value not in ("", "on", "off"):
        raise StoreError(
            ErrorCode.USAGE, f"{AUDIT_ENV} {os.environ[AUDIT_ENV]!r} is not 'on' or 'off'"
        )
    return value != "off"


def session_id_for(session: str | None) -> str:
    """``--session``, else ``DSH_SESSION_ID``, else one made for this run (``mcp-<uuid>``).
    USAGE for an id the host cannot store (``session_id_setting``)."""
    import uuid

    return session_id_setting(session) or f"mcp-{uuid.uuid4()}"


def session_id_setting(session: str | None) -> str | None:
    """``--session``, else ``DSH_SESSION_ID``, else None. USAGE for an id the host cannot
    store (1-256 bytes, no control character or '|').
    """
    where = "--session"
    if not session and os.environ.get(SESSION_ENV):
        session, where = os.environ[SESSION_ENV], SESSION_ENV
    if session and (not text_ok(session, MAX_ID_BYTES) or "|" in session):
        raise StoreError(
            ErrorCode.USAGE,
            f"{where} {session!r} is not a usable session id (1-256 bytes, no control character "
            "or '|')",
        )
    return session or None


def check_environment() -> None:
    """Every setting a command may read from the environment, checked now:
    ``DSH_LOCK_TIMEOUT``, ``DSH_MCP_BUDGET_BYTES``, ``DSH_AUDIT_MAX_BYTES``, ``DSH_AUDIT``
    (``on`` or ``off``) and ``DSH_SESSION_ID``. ``StoreError(USAGE)`` naming the first wrong one.
    (``DSH_HOME`` and ``DSH_USER_ID`` are checked where the store is opened, first too.)
    """
    from .paths import lock_timeout

    lock_timeout()
    budget_bytes()
    max_bytes_setting()
    audit_setting()
    session_id_setting(None)
