"""Where records live (SPEC 2): scope -> file, DSH_HOME, the acting user. Path arithmetic only."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreError
from .model import Location, Scope, session_scope_key, sha256_hex

MEMORY_DIR = "workspace-memory"
DEFAULT_LOCK_TIMEOUT = 5.0


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """``--home``, else ``DSH_HOME``, else ``~/.dsh``."""
    value = home or os.environ.get("DSH_HOME") or "~/.dsh"
    return Path(value).expanduser().absolute()


def resolve_workspace(workspace: str | os.PathLike[str] | None = None) -> Path:
    """``--workspace``, else the current directory, resolved to an absolute path."""
    return Path(workspace or os.getcwd()).expanduser().resolve()


def resolve_user(user: str | None = None) -> str:
    """``--user``, else ``DSH_USER_ID``, else the login name."""
    value = user or os.environ.get("DSH_USER_ID")
    if not value:
        try:
            value = getpass.getuser()
        except (KeyError, OSError):
            value = str(os.getuid())
    return value


def lock_timeout() -> float:
    raw = os.environ.get("DSH_LOCK_TIMEOUT")
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise StoreError("USAGE", f"DSH_LOCK_TIMEOUT={raw!r} is not a number of seconds") from None
    return max(value, 0.0)


@dataclass(frozen=True, slots=True)
class StoreFile:
    """One store file: where it is, which scope it holds, and the scopeKey our writes use."""

    path: Path
    scope: Scope
    scope_key: str | None  # None for a session file found on disk whose key is not known yet
    root: Path | None = None  # the home or workspace: no directory below it may be a symlink

    @property
    def location(self) -> Location:
        if self.scope is Scope.SESSION:
            return Location(self.scope, self.path.stem)
        return Location(self.scope)

    @property
    def label(self) -> str:
        return str(self.path)


@dataclass(frozen=True, slots=True)
class StorePaths:
    """The home, the workspace and the acting user: everything a store needs to find its files."""

    home: Path
    workspace: Path
    user_id: str

    @classmethod
    def resolve(
        cls,
        home: str | os.PathLike[str] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        user: str | None = None,
    ) -> StorePaths:
        return cls(resolve_home(home), resolve_workspace(workspace), resolve_user(user))

    @property
    def home_memory_dir(self) -> Path:
        return self.home / MEMORY_DIR

    @property
    def sessions_dir(self) -> Path:
        return self.home_memory_dir / "sessions"

    @property
    def workspace_memory_dir(self) -> Path:
        return self.workspace / ".dsh" / MEMORY_DIR

    @property
    def workspace_key(self) -> str:
        return str(self.workspace)

    def session_file(self, session_id: str, root_id: str) -> StoreFile:
        key = session_scope_key(session_id, root_id)
        return StoreFile(self.sessions_dir / f"{sha256_hex(key)}.jsonl", Scope.SESSION, key,
                         self.home)

    def session_file_at(self, path: Path) -> StoreFile:
        """A session file found on disk; its scopeKey is learned from its records."""
        return StoreFile(path, Scope.SESSION, None, self.home)

    def project_file(self) -> StoreFile:
        path = self.workspace_memory_dir / "records.jsonl"
        return StoreFile(path, Scope.PROJECT, self.workspace_key, self.workspace)

    def shared_file(self) -> StoreFile:
        path = self.workspace_memory_dir / "shared.jsonl"
        return StoreFile(path, Scope.SHARED, self.workspace_key, self.workspace)

    def user_file(self) -> StoreFile:
        return StoreFile(self.home_memory_dir / "user.jsonl", Scope.USER, self.user_id, self.home)

    def scope_file(self, scope: Scope) -> StoreFile:
        """The file of a non-session scope."""
        if scope is Scope.PROJECT:
            return self.project_file()
        if scope is Scope.SHARED:
            return self.shared_file()
        if scope is Scope.USER:
            return self.user_file()
        raise StoreError("USAGE", "session scope needs a session id and a root id")

    def session_paths(self) -> list[Path]:
        """Every session file under the home, sorted by name (no I/O beyond a listing)."""
        try:
            return sorted(p for p in self.sessions_dir.glob("*.jsonl"))
        except OSError:
            return []

    def watch_dirs(self) -> list[Path]:
        """The directories holding store files (what a watcher should watch)."""
        return [self.sessions_dir, self.home_memory_dir, self.workspace_memory_dir]


def is_data_file(path: Path | str) -> bool:
    """True for a store file (not its .lock, .bak, .corrupt or a temporary)."""
    return str(path).endswith(".jsonl")
