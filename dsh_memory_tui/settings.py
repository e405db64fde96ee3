"""The app's remembered choices (the theme): one small JSON file under the home.

``<DSH_HOME>/dsh-memory-tui.json``, 0600, replaced atomically. It is a convenience: a file
that is missing, unreadable or not what we wrote reads as no settings, and a failed save is
reported by the caller, never fatal. Textual-free (the app and its command line both use it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreError
from .jsonl import ensure_dir, read_file, write_atomic

SETTINGS_NAME = "dsh-memory-tui.json"
# Larger than any file we write: anything bigger is not ours, and is not read whole.
MAX_SETTINGS_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Settings:
    theme: str | None = None


def settings_path(home: Path) -> Path:
    return home / SETTINGS_NAME


def load_settings(home: Path) -> Settings:
    """The settings saved under ``home``; ``Settings()`` when there are none we can use."""
    try:
        got = read_file(settings_path(home))
    except StoreError:
        return Settings()
    if got is None or len(got[1]) > MAX_SETTINGS_BYTES:
        return Settings()
    try:
        data = json.loads(got[1])
    except ValueError:
        return Settings()
    theme = data.get("theme") if isinstance(data, dict) else None
    return Settings(theme=theme if isinstance(theme, str) and theme else None)


def save_settings(home: Path, settings: Settings) -> None:
    """Write ``settings`` under ``home`` (created 0700 if missing). Raises ``UNSAFE_PATH`` or
    ``WRITE_FAILED``; the earlier file is then unchanged."""
    ensure_dir(home)
    data = json.dumps({"theme": settings.theme}, indent=2) + "\n"
    write_atomic(settings_path(home), data.encode())
