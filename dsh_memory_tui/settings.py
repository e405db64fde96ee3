"""Settings: the app's remembered choices (the theme), and the check of every setting read
from the environment.

``<DSH_HOME>/dsh-memory-tui.json``, 0600, replaced atomically. It is a convenience: a file
that is missing, unreadable or not what we wrote reads as no settings (``Settings.problem``
says why, for a warning), and a failed save is reported by the caller, never fatal.
Textual-free (the app and its command line both use it).

``check_environment``: every ``DSH_*`` variable a command may read, checked before it does
anything (``dsh-memory`` and ``dsh-memory-tui`` call it first), so that a wrong one is refused
at once rather than after a bundle was written or a server started.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreError
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


def check_environment() -> None:
    """Every setting a command may read from the environment, checked now:
    ``DSH_LOCK_TIMEOUT``, ``DSH_MCP_BUDGET_BYTES``, ``DSH_AUDIT_MAX_BYTES``, ``DSH_AUDIT``
    (``on`` or ``off``) and ``DSH_SESSION_ID``. ``StoreError(USAGE)`` naming the first wrong one.
    (``DSH_HOME`` and ``DSH_USER_ID`` are checked where the store is opened, first too.)
    """
    from .agent_view import budget_bytes
    from .audit import audit_setting, max_bytes_setting
    from .paths import lock_timeout

    lock_timeout()
    budget_bytes()
    max_bytes_setting()
    audit_setting()
    if os.environ.get(SESSION_ENV):
        from .mcp import session_id_for

        session_id_for(None)
