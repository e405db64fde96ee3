"""The one way the package runs git: one environment, one timeout, one error.

- ``run``: a git command's output, or ``StoreError(GIT_FAILED)`` naming the command and git's
  last line of complaint (or that it did not finish in ``TIMEOUT`` seconds).
- ``attempt``: the same, or None where a caller only wants "git could not tell" (not a
  repository, a key not set, git not installed).
- ``Blobs``: many objects read through one ``git cat-file --batch`` process, not one
  ``git show`` each.

Every command runs with ``LC_ALL=C`` (messages we may quote are git's own), no pager, no
prompt for credentials, no optional locks (a read never blocks a teammate's ``git commit``),
and ``-c`` overrides for the user settings that would change what we parse (colours, quoted
paths, signatures in ``log``). The repository is found from ``cwd`` alone: the variables
that point git elsewhere (``GIT_DIR``, ``GIT_INDEX_FILE``... set when we run inside a hook or a
merge driver) are dropped. The user's config is otherwise kept: it holds ``safe.directory``.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import IO

from .errors import ErrorCode, StoreError

# Generous: a cold cache on a big repository, a slow disk, a machine at load 10. A command
# that takes longer is stuck (a lock held, a filesystem gone), not slow.
TIMEOUT = 120.0

_OVERRIDES = (
    "core.quotepath=off",
    "core.pager=cat",
    "color.ui=never",
    "log.showSignature=false",
    "diff.noprefix=false",
    "i18n.logOutputEncoding=UTF-8",
)
_TYPES = (b"blob", b"tree", b"commit", b"tag")
# Variables with which git finds a repository other than the one at ``cwd``.
_ELSEWHERE = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


def environment(index: Path | None = None) -> dict[str, str]:
    """The environment every git command of the package runs in; ``index``: a copy of the
    index to use instead of the repository's (``GIT_INDEX_FILE``)."""
    env = {k: v for k, v in os.environ.items() if k not in _ELSEWHERE}
    if index is not None:
        env["GIT_INDEX_FILE"] = os.fspath(index)
    env.update(
        LC_ALL="C",
        LANGUAGE="C",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        GIT_OPTIONAL_LOCKS="0",
    )
    return env


def command(*args: str) -> list[str]:
    """``git`` with the package's overrides, then ``args``."""
    out = ["git", "--no-pager"]
    for setting in _OVERRIDES:
        out += ["-c", setting]
    return [*out, *args]


def _name(args: tuple[str, ...]) -> str:
    return "git " + (args[0] if args else "")


def run(
    cwd: Path,
    *args: str,
    input: bytes | None = None,
    timeout: float = TIMEOUT,
    index: Path | None = None,
) -> bytes:
    """``git args`` in ``cwd``: its standard output. ``GIT_FAILED`` when git is not installed,
    exits non-zero (git's last line of complaint in the message) or does not finish in
    ``timeout`` seconds (said in the message). ``index``: as ``environment``.
    """
    try:
        done = subprocess.run(
            command(*args),
            cwd=cwd,
            input=input if input is not None else b"",  # never the caller's own stdin
            capture_output=True,
            timeout=timeout,
            env=environment(index),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise StoreError(
            ErrorCode.GIT_FAILED, f"{_name(args)} did not finish in {timeout:g} s"
        ) from None
    except OSError as exc:
        raise StoreError(
            ErrorCode.GIT_FAILED, f"{_name(args)}: cannot run git: {exc.strerror or exc}"
        ) from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise StoreError(
            ErrorCode.GIT_FAILED,
            f"{_name(args)}: {why[-1] if why else f'exit status {done.returncode}'}",
        )
    return done.stdout


def attempt(
    cwd: Path, *args: str, input: bytes | None = None, index: Path | None = None
) -> bytes | None:
    """``run``, or None wherever ``run`` raises (the caller goes on without git's answer)."""
    try:
        return run(cwd, *args, input=input, index=index)
    except StoreError:
        return None


def text(cwd: Path, *args: str) -> str | None:
    """``attempt``'s output as text, stripped of surrounding space (git paths may not be
    UTF-8: those are decoded as the file system would, ``os.fsdecode``)."""
    out = attempt(cwd, *args)
    return None if out is None else os.fsdecode(out).strip()


def toplevel(path: Path) -> Path | None:
    """The top of the working tree holding ``path`` (a directory), or None outside one."""
    top = text(path, "rev-parse", "--show-toplevel")
    return Path(top) if top else None


class Blobs:
    """Objects read through one ``git cat-file --batch`` process, one request at a time, so
    a caller may stop at the first it wants (``with Blobs(repo) as blobs: blobs.read(spec)``).
    A request taking longer than ``TIMEOUT`` kills the process (``GIT_FAILED``).
    """

    def __init__(self, cwd: Path, timeout: float = TIMEOUT) -> None:
        self.cwd = cwd
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self.requests = 0  # how many objects were asked for (a test bounds the work)

    def __enter__(self) -> Blobs:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            try:
                self._process = subprocess.Popen(
                    command("cat-file", "--batch"),
                    cwd=self.cwd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=environment(),
                )
            except OSError as exc:
                raise StoreError(
                    ErrorCode.GIT_FAILED, f"git cat-file: cannot run git: {exc.strerror or exc}"
                ) from None
        return self._process

    def read(self, spec: str, max_bytes: int | None = None) -> bytes | None:
        """The object ``spec`` names (``commit:path``, a blob's id), or None when there is
        none, or when it is larger than ``max_bytes`` (skipped unread). ``GIT_FAILED`` when
        git cannot be run, stops, or does not answer in time.
        """
        if "\n" in spec or "\r" in spec:
            return None  # one request is one line
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        self.requests += 1
        timer = threading.Timer(self.timeout, process.kill)
        timer.start()
        try:
            process.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
            process.stdin.flush()
            return _answer(process.stdout, max_bytes)
        except (OSError, ValueError):
            self.close()
            raise StoreError(
                ErrorCode.GIT_FAILED,
                f"git cat-file stopped, or did not answer in {self.timeout:g} s",
            ) from None
        finally:
            timer.cancel()

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=self.timeout)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        finally:
            if process.stdout is not None:
                process.stdout.close()


def _answer(out: IO[bytes], max_bytes: int | None) -> bytes | None:
    """One answer of ``cat-file --batch``: ``<id> <type> <size>`` then the content and a
    newline, or ``<spec> missing`` (or ``ambiguous``) alone. ValueError when git stopped.
    """
    header = out.readline()
    if not header.endswith(b"\n"):
        raise ValueError("git cat-file stopped")
    parts = header.split()
    if len(parts) != 3 or parts[1] not in _TYPES or not parts[2].isdigit():
        return None  # missing, ambiguous, or a name git could not take
    size = int(parts[2])
    if max_bytes is not None and size > max_bytes:
        left = size + 1
        while left:
            chunk = out.read(min(left, 1 << 20))
            if not chunk:
                raise ValueError("git cat-file stopped")
            left -= len(chunk)
        return None
    data = out.read(size + 1)
    if len(data) != size + 1:
        raise ValueError("git cat-file stopped")
    return data[:-1]
