"""Where records live (SPEC 2): scope -> file, DSH_HOME, the acting user. Path arithmetic only."""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ErrorCode, StoreError
from .model import Location, Scope, session_file_stem, session_scope_key, user_id_problem

MEMORY_DIR = "workspace-memory"
DEFAULT_LOCK_TIMEOUT = 5.0
MAX_LOCK_TIMEOUT = 3600.0  # an hour: past that a wait is a hang


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """``--home``, else ``DSH_HOME``, else ``~/.dsh``."""
    value = home or os.environ.get("DSH_HOME") or "~/.dsh"
    return Path(value).expanduser().absolute()


def resolve_workspace(workspace: str | os.PathLike[str] | None = None) -> Path:
    """``--workspace``, else the current directory, resolved to an absolute path."""
    return Path(workspace or os.getcwd()).expanduser().resolve()


def resolve_user(user: str | None = None) -> str:
    """``--user``, else ``DSH_USER_ID``, else the login name. ``USAGE`` for an id the host
    refuses (blank, over 256 characters, ``/``, ``\\`` or a control character).
    """
    value = user or os.environ.get("DSH_USER_ID")
    if not value:
        import getpass  # here: it loads termios, and --user or DSH_USER_ID need neither

        try:
            value = getpass.getuser()
        except (KeyError, OSError):
            value = str(os.getuid())
    problem = user_id_problem(value)
    if problem is not None:
        raise StoreError(ErrorCode.USAGE, f"user id {value!r} {problem}")
    return value


def workspace_root_id(workspace: Path) -> str:
    """The host's id of a workspace: ``root:`` + sha256 of its canonical (real) path."""
    canonical = os.path.realpath(workspace)
    return "root:" + hashlib.sha256(os.fsencode(canonical)).hexdigest()


def shown_path(path: Path | str) -> str:
    """A path as text a terminal can show: bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def host_cannot_open(workspace: Path) -> str | None:
    """Why the host cannot open ``workspace`` (its path, or its real path, is not UTF-8: node
    reads it as text and fails PROJECT_UNAVAILABLE, "Process working directory is
    unavailable"), or None when it can.
    """
    for path in (workspace, Path(os.path.realpath(workspace))):
        try:
            os.fsencode(path).decode("utf-8")
        except UnicodeDecodeError:
            return f"{shown_path(path)} is not valid UTF-8"
    return None


def lock_timeout() -> float:
    raw = os.environ.get("DSH_LOCK_TIMEOUT")
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= MAX_LOCK_TIMEOUT:
        raise StoreError(
            ErrorCode.USAGE,
            f"DSH_LOCK_TIMEOUT={raw!r} is not a number of seconds from 0 to {MAX_LOCK_TIMEOUT:g}",
        )
    return value


@dataclass(frozen=True, slots=True)
class StoreFile:
    """One store file: where it is, which scope it holds, and the scopeKey our writes use."""

    path: Path
    scope: Scope
    scope_key: str | None  # None for a session file found on disk whose key is not known yet
    root: Path | None = None  # the home or workspace: no directory below it may be a symlink

    @property
    def location(self) -> Location:
        return Location(self.scope, self.scope_key, self.path.stem)

    @property
    def label(self) -> str:
        return str(self.path)


@dataclass(frozen=True, slots=True)
class StorePaths:
    """The home, the workspace and the acting user: everything a store needs to find its files."""

    home: Path
    workspace: Path
    user_id: str
    # The workspace's rootId: the scopeKey of project and shared-project records.
    root_id: str = ""

    def __post_init__(self) -> None:
        if not self.root_id:
            object.__setattr__(self, "root_id", workspace_root_id(self.workspace))

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

    def session_file(self, session_id: str, root: str | None = None) -> StoreFile:
        """A session's file; ``root`` defaults to this workspace's rootId."""
        key = session_scope_key(session_id, root or self.root_id)
        path = self.sessions_dir / f"{session_file_stem(key)}.jsonl"
        return StoreFile(path, Scope.SESSION, key, self.home)

    def session_file_at(self, path: Path) -> StoreFile:
        """A session file found on disk; its scopeKey is learned from its records."""
        return StoreFile(path, Scope.SESSION, None, self.home)

    def project_file(self) -> StoreFile:
        path = self.workspace_memory_dir / "records.jsonl"
        return StoreFile(path, Scope.PROJECT, self.root_id, self.workspace)

    def shared_file(self) -> StoreFile:
        path = self.workspace_memory_dir / "shared.jsonl"
        return StoreFile(path, Scope.SHARED, self.root_id, self.workspace)

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
        raise StoreError(ErrorCode.USAGE, "session scope needs a session id and a root id")

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
