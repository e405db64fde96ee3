"""Setting git up to merge the shared file with our driver, in the workspace's repository
(``install``, ``uninstall``, ``status``).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import git
from ..errors import ErrorCode, StoreError
from ..jsonl import write_atomic

DRIVER = "dsh-memory"
SHARED_PATH = ".dsh/workspace-memory/shared.jsonl"  # in the workspace (paths.shared_file)


@dataclass(frozen=True, slots=True)
class GitStatus:
    """Whether the workspace's repository merges the shared file with our driver."""

    repository: Path | None
    attribute: bool  # the shared file has merge=dsh-memory (info/attributes or .gitattributes)
    driver: str | None  # merge.dsh-memory.driver in the repository's config
    runnable: bool  # that driver's program exists
    diff: bool = False  # the shared file has diff=dsh-memory and its textconv is set

    @property
    def installed(self) -> bool:
        return self.attribute and self.driver is not None and self.runnable

    def summary(self) -> str:
        if self.repository is None:
            return "not in a git repository"
        if self.installed:
            readable = "" if self.diff else " (diffs are raw JSON: dsh-memory git install)"
            return "git merges shared.jsonl by record id" + readable
        missing = []
        if not self.attribute:
            missing.append("the merge attribute")
        if self.driver is None:
            missing.append("the driver in the repository's config")
        elif not self.runnable:
            missing.append("a driver program that exists")
        return "git merge driver not set up (" + ", ".join(missing) + "): dsh-memory git install"


def _program() -> str:
    return f"{shlex.quote(sys.executable)} -m dsh_memory_tui.cli"


def driver_command() -> str:
    """The driver as git runs it: this Python, by its absolute path, so git finds it even when
    dsh-memory is not on git's PATH.
    """
    return f"{_program()} merge-file %O %A %B %P"


def textconv_command() -> str:
    """The diff driver's textconv: a version of the shared file as readable records."""
    return f"{_program()} git textconv"


def _repository(workspace: Path) -> Path | None:
    return git.toplevel(workspace)


def _glob_escaped(path: str) -> str:
    return "".join("\\" + ch if ch in "\\*?[" else ch for ch in path)


def _shared_pattern(top: Path, workspace: Path, suffix: str = "") -> str:
    """The shared file's path from the repository's top as a pattern matching it alone (its
    glob characters escaped), ``suffix`` added unescaped."""
    rel = os.path.relpath(workspace / SHARED_PATH, top)
    return "/" + _glob_escaped(Path(rel).as_posix()) + suffix


def _attribute_line(top: Path, workspace: Path) -> str:
    """Our line of ``info/attributes``: quoted in C style when the path holds a space (an
    unquoted pattern ends at the first one)."""
    pattern = _shared_pattern(top, workspace)
    if any(ch in pattern for ch in ' \t"') or "\\" in pattern:
        pattern = '"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{pattern} merge={DRIVER} diff={DRIVER}"


def _legacy_line(top: Path, workspace: Path) -> str:
    """The line an earlier install committed to ``.gitattributes``."""
    rel = os.path.relpath(workspace / SHARED_PATH, top)
    return f"/{Path(rel).as_posix()} merge={DRIVER}"


def _ignore_line(top: Path, workspace: Path) -> str:
    """Our line of ``info/exclude``: the shared file's backup, quarantine, lock and
    temporaries are this clone's, never committed."""
    return _shared_pattern(top, workspace, ".*")


def _git_file(top: Path, name: str) -> Path:
    """A file of the repository's own directory (shared by its worktrees)."""
    where = git.text(top, "rev-parse", "--git-path", name)
    if not where:
        raise StoreError(ErrorCode.GIT_FAILED, f"{top}: git does not say where {name} is")
    return top / where


def _attr(top: Path, workspace: Path, name: str) -> str | None:
    shared = os.path.relpath(workspace / SHARED_PATH, top)
    got = git.text(top, "check-attr", name, "--", shared)
    return got.rsplit(": ", 1)[-1] if got else None


def status(workspace: Path) -> GitStatus:
    top = _repository(workspace)
    if top is None:
        return GitStatus(None, False, None, False)
    attribute = _attr(top, workspace, "merge") == DRIVER
    driver = git.text(top, "config", "--get", f"merge.{DRIVER}.driver")
    runnable = False
    if driver:
        try:
            program = shlex.split(driver)[0]
        except ValueError:
            program = ""
        runnable = bool(program) and os.access(program, os.X_OK)
    diff = _attr(top, workspace, "diff") == DRIVER and bool(
        git.text(top, "config", "--get", f"diff.{DRIVER}.textconv")
    )
    return GitStatus(top, attribute, driver or None, runnable, diff)


def install(workspace: Path) -> GitStatus:
    """Set the driver up in this clone, writing nothing git tracks (so nothing blocks a pull):
    the shared file's line in the repository's ``info/attributes`` (``merge=`` and ``diff=``,
    added once), its backup and temporaries in ``info/exclude``, and ``merge.dsh-memory.*``
    and ``diff.dsh-memory.textconv`` in its config. ``GIT_FAILED`` outside a repository.
    """
    top = _repository(workspace)
    if top is None:
        raise StoreError(ErrorCode.GIT_FAILED, f"{workspace} is not in a git repository")
    _add_line(_git_file(top, "info/attributes"), _attribute_line(top, workspace))
    _add_line(_git_file(top, "info/exclude"), _ignore_line(top, workspace))
    git.run(top, "config", f"merge.{DRIVER}.name", "dsh-memory: shared memory by record id")
    git.run(top, "config", f"merge.{DRIVER}.driver", driver_command())
    git.run(top, "config", f"diff.{DRIVER}.textconv", textconv_command())
    return status(workspace)


def uninstall(workspace: Path) -> GitStatus:
    """Undo ``install`` (and an earlier install's line in ``.gitattributes``)."""
    top = _repository(workspace)
    if top is None:
        raise StoreError(ErrorCode.GIT_FAILED, f"{workspace} is not in a git repository")
    _drop_line(_git_file(top, "info/attributes"), _attribute_line(top, workspace))
    _drop_line(_git_file(top, "info/exclude"), _ignore_line(top, workspace))
    _drop_line(top / ".gitattributes", _legacy_line(top, workspace))
    for section in (f"merge.{DRIVER}", f"diff.{DRIVER}"):
        git.attempt(top, "config", "--remove-section", section)  # absent: nothing to do
    return status(workspace)


def _add_line(path: Path, line: str) -> None:
    text = _read_text(path)
    if line not in text.splitlines():
        sep = "" if not text or text.endswith("\n") else "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_text(path, text + sep + line + "\n")


def _drop_line(path: Path, line: str) -> None:
    text = _read_text(path)
    kept = [x for x in text.splitlines() if x != line]
    if len(kept) != len(text.splitlines()):
        _write_text(path, "".join(x + "\n" for x in kept))


def _write_text(path: Path, text: str) -> None:
    """A git file replaced atomically, readable as git's own files are (0644, not the
    store's 0600)."""
    write_atomic(path, os.fsencode(text))  # a path that is not UTF-8: its own bytes, as git
    try:
        os.chmod(path, 0o644)
    except OSError as exc:
        raise StoreError(ErrorCode.WRITE_FAILED, f"cannot set the mode of {path}: {exc}") from None


def _read_text(path: Path) -> str:
    try:
        return os.fsdecode(path.read_bytes())  # git's patterns are bytes: any of them kept
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(ErrorCode.READ_FAILED, f"cannot read {path}: {exc}") from None
