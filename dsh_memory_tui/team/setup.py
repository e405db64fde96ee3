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
    attribute: bool  # .gitattributes gives the shared file merge=dsh-memory
    driver: str | None  # merge.dsh-memory.driver in the repository's config
    runnable: bool  # that driver's program exists

    @property
    def installed(self) -> bool:
        return self.attribute and self.driver is not None and self.runnable

    def summary(self) -> str:
        if self.repository is None:
            return "not in a git repository"
        if self.installed:
            return "git merges shared.jsonl by record id"
        missing = []
        if not self.attribute:
            missing.append(".gitattributes")
        if self.driver is None:
            missing.append("the driver in the repository's config")
        elif not self.runnable:
            missing.append("a driver program that exists")
        return "git merge driver not set up (" + ", ".join(missing) + "): dsh-memory git install"


def driver_command() -> str:
    """The driver as git runs it: this Python, by its absolute path, so git finds it even when
    dsh-memory is not on git's PATH.
    """
    return f"{shlex.quote(sys.executable)} -m dsh_memory_tui.cli merge-file %O %A %B %P"


def _repository(workspace: Path) -> Path | None:
    return git.toplevel(workspace)


def _attribute_line(top: Path, workspace: Path) -> str:
    rel = os.path.relpath(workspace / SHARED_PATH, top)
    return f"/{Path(rel).as_posix()} merge={DRIVER}"


def status(workspace: Path) -> GitStatus:
    top = _repository(workspace)
    if top is None:
        return GitStatus(None, False, None, False)
    shared = workspace / SHARED_PATH
    attr = git.text(top, "check-attr", "merge", "--", os.path.relpath(shared, top))
    attribute = attr is not None and attr.endswith(f": merge: {DRIVER}")
    driver = git.text(top, "config", "--get", f"merge.{DRIVER}.driver")
    runnable = False
    if driver:
        try:
            program = shlex.split(driver)[0]
        except ValueError:
            program = ""
        runnable = bool(program) and os.access(program, os.X_OK)
    return GitStatus(top, attribute, driver or None, runnable)


def install(workspace: Path) -> GitStatus:
    """Set the driver up: the shared file's line in the repository's ``.gitattributes``
    (added once) and ``merge.dsh-memory.*`` in its config. ``GIT_FAILED`` outside a
    repository.
    """
    top = _repository(workspace)
    if top is None:
        raise StoreError(ErrorCode.GIT_FAILED, f"{workspace} is not in a git repository")
    attributes = top / ".gitattributes"
    line = _attribute_line(top, workspace)
    text = _read_text(attributes)
    if line not in text.splitlines():
        sep = "" if not text or text.endswith("\n") else "\n"
        _write_attributes(attributes, text + sep + line + "\n")
    git.run(top, "config", f"merge.{DRIVER}.name", "dsh-memory: shared memory by record id")
    git.run(top, "config", f"merge.{DRIVER}.driver", driver_command())
    return status(workspace)


def uninstall(workspace: Path) -> GitStatus:
    """Undo ``install``: our line out of ``.gitattributes``, our section out of the config."""
    top = _repository(workspace)
    if top is None:
        raise StoreError(ErrorCode.GIT_FAILED, f"{workspace} is not in a git repository")
    attributes = top / ".gitattributes"
    text = _read_text(attributes)
    line = _attribute_line(top, workspace)
    kept = [x for x in text.splitlines() if x != line]
    if len(kept) != len(text.splitlines()):
        _write_attributes(attributes, "".join(x + "\n" for x in kept))
    git.attempt(top, "config", "--remove-section", f"merge.{DRIVER}")  # absent: nothing to do
    return status(workspace)


def _write_attributes(path: Path, text: str) -> None:
    """``.gitattributes`` replaced atomically, readable as a checked-out file is (0644, not
    the store's 0600: it is the project's, committed and read by every tool)."""
    write_atomic(path, text.encode())
    try:
        os.chmod(path, 0o644)
    except OSError as exc:
        raise StoreError(ErrorCode.WRITE_FAILED, f"cannot set the mode of {path}: {exc}") from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(ErrorCode.READ_FAILED, f"cannot read {path}: {exc}") from None
