"""Shared test helpers (a stable interface other test modules rely on).

- ``fixture_home`` -> ``(home, workspace)``: writable copies of ``tests/fixtures/host`` under
  ``tmp_path`` (a ``DSH_HOME`` and a workspace root), installed like a host-corpus case: its
  placeholders (``__ROOT_ID__``...) get the copy's values and ``sessions/session-<id>.jsonl``
  its real name. Tests never write to the fixtures.
- ``alice_store`` -> a ``MemoryStore`` on those copies, acting as user ``alice``.
- ``finish(proc)`` waits for a process to end and returns its stderr (killed if it hangs).
- ``run_cli(home, workspace, *args, user="alice", input=None, env=None)`` runs
  ``dsh-memory --home HOME --workspace WS --user USER ARGS...`` in this process (its
  ``main``, with the environment, working directory, stdin and pipes of a real run) and returns
  a ``CompletedProcess`` (text, stdout and stderr captured); ``run_cli_process`` runs it as a
  real subprocess, for tests of the process itself.
- ``plain_line_validator(monkeypatch)``: within it, the fast path runs on the plain validator,
  as under a pydantic whose schema layout the constrained build does not know.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from interop.corpus import CORPUS, install_tree, make_case_dirs, scope_key_sha16

from dsh_memory_tui import model_fast
from dsh_memory_tui.store import MemoryStore

FIXTURES = Path(__file__).parent / "fixtures"
HOST_FIXTURES = FIXTURES / "host"
REPO_ROOT = Path(__file__).parent.parent
CLI_TIMEOUT_S = 60


FIXTURE_SESSION = ("session-abc", None)  # its root: the copy's workspace rootId


def pytest_configure(config: pytest.Config) -> None:
    """The host corpus is what the interop tests check against: without it, one clear line."""
    if not CORPUS.is_dir():
        raise pytest.UsageError(
            f"the host corpus is not at {CORPUS}: the checkout is incomplete (it is part of the "
            "repository)"
        )


@pytest.fixture
def fixture_home(tmp_path: Path) -> tuple[Path, Path]:
    """Copies of the host fixture tree: ``(home, workspace)``, both writable."""
    dirs = make_case_dirs(tmp_path / "host")
    dirs.mapping["__SCOPEKEY_SHA16__"] = scope_key_sha16(f"session-abc|{dirs.root_id}")
    install_tree(HOST_FIXTURES / "home", dirs.home, dirs)
    install_tree(HOST_FIXTURES / "workspace", dirs.workspace, dirs)
    return dirs.home, dirs.workspace


@pytest.fixture
def alice_store(fixture_home: tuple[Path, Path]) -> MemoryStore:
    """A MemoryStore on the fixture copies, acting as ``alice``."""
    home, workspace = fixture_home
    return MemoryStore.open(home, workspace, "alice")


def _cli_argv(
    home: Path | str, workspace: Path | str, user: str, args: tuple[str, ...]
) -> list[str]:
    return ["--home", str(home), "--workspace", str(workspace), "--user", user, *args]


def run_cli_process(
    home: Path | str,
    workspace: Path | str,
    *args: str,
    user: str = "alice",
    input: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``dsh-memory`` as a real subprocess on ``home`` and ``workspace`` as ``user``: for
    tests of the process itself (its exit status from the interpreter, signals, real pipes and
    their encodings, what it imports). ``env`` adds to (or overrides) the current environment.
    """
    cmd = [sys.executable, "-m", "dsh_memory_tui.cli", *_cli_argv(home, workspace, user, args)]
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    return subprocess.run(
        cmd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=CLI_TIMEOUT_S,
        cwd=str(workspace) if Path(workspace).is_dir() else None,
    )


def run_cli(
    home: Path | str,
    workspace: Path | str,
    *args: str,
    user: str = "alice",
    input: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``dsh-memory ARGS`` on ``home`` and ``workspace`` as ``user``, run in this process
    (``dsh_memory_tui.cli.main``) as ``run_cli_process`` runs it in a new one: ``env`` applied
    to the environment, the workspace as the working directory, ``input`` (else nothing) on
    file descriptor 0, stdout and stderr as UTF-8 pipes give them (stdout strict, stderr
    backslashreplace, read back with universal newlines), an uncaught exception printed as a
    traceback with status 1. Everything is restored after. A process start costs ~0.3 s; most
    tests are about what the command does, not the process.
    """
    import io
    import logging
    import tempfile
    import traceback
    from contextlib import ExitStack

    from dsh_memory_tui.cli import main

    argv = _cli_argv(home, workspace, user, args)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(
        io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True
    )
    logger = logging.getLogger("dsh_memory_tui")
    root = logging.getLogger()
    with ExitStack() as stack:
        stack.enter_context(_environment(env or {}))
        if Path(workspace).is_dir():
            stack.enter_context(_working_directory(Path(workspace)))
        stdin = stack.enter_context(tempfile.TemporaryFile())
        stdin.write((input or "").encode())
        stdin.seek(0)
        stack.enter_context(_file_descriptor(0, stdin.fileno()))
        saved = (sys.stdin, sys.stdout, sys.stderr, logger.level, list(root.handlers))
        fd0 = stack.enter_context(open(0, "rb", closefd=False))
        sys.stdin = io.TextIOWrapper(fd0, encoding="utf-8")
        sys.stdout, sys.stderr = out, err
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            traceback.print_exc(file=err)
            code = 1
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved[0], saved[1], saved[2]
            logger.setLevel(saved[3])
            root.handlers[:] = saved[4]
    return subprocess.CompletedProcess(
        ["dsh-memory", *argv], int(code or 0), _pipe_text(out), _pipe_text(err)
    )


def _pipe_text(stream: Any) -> str:
    """What ``subprocess.run(text=True)`` reads from a pipe the stream wrote to."""
    stream.flush()
    text = stream.buffer.getvalue().decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n")


@contextmanager
def _environment(changes: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    saved = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(saved)


@contextmanager
def _file_descriptor(fd: int, replacement: int) -> Iterator[None]:
    saved = os.dup(fd)
    os.dup2(replacement, fd)
    try:
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


# How long a test waits for another process or thread before it fails saying what it waited
# for: generous, so the suite passes at a load of 10 on two cores (a wait ends when it holds).
WAIT_S = 60.0


def finish(proc: subprocess.Popen) -> str | bytes:
    """Wait for ``proc`` to end (``WAIT_S`` at most) and return its stderr; killed, and the
    timeout raised, if it hangs."""
    try:
        _, err = proc.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return err


def wait_for(
    condition: Callable[[], object],
    what: str,
    timeout: float = WAIT_S,
    *,
    pause: Callable[[], object] | None = None,
) -> None:
    """Poll ``condition`` (another process or thread is working) until it holds; fail after
    ``timeout`` seconds saying what never happened. The one synchronous wait of the suite (the
    app's is ``tests/app/helpers.wait_for``). ``pause``: what to do between two looks instead
    of a 10 ms sleep (read a child's pipe, step a simulated host)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        if pause is None:
            time.sleep(0.01)
        else:
            pause()


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """An empty home and workspace: ``tmp_path/home``, ``tmp_path/workspace``."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    return home, workspace


def _renamed_layout(schema: Any) -> Any:
    """``schema`` with every ``fields`` key renamed: a layout the constrained build does not
    know, as another pydantic's could be."""
    if isinstance(schema, list):
        return [_renamed_layout(item) for item in schema]
    if isinstance(schema, dict):
        return {("members" if k == "fields" else k): _renamed_layout(v) for k, v in schema.items()}
    return schema


@contextmanager
def plain_line_validator(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fast path on the plain validator: the constrained build is made to fail on a
    schema layout it does not know (and is built again, as usual, after)."""
    real = model_fast.core_schema
    monkeypatch.setattr(model_fast, "core_schema", lambda cls: _renamed_layout(real(cls)))
    model_fast.reset_line_validator()
    try:
        assert model_fast.validator_kind() == "plain"
        yield
    finally:
        monkeypatch.setattr(model_fast, "core_schema", real)
        model_fast.reset_line_validator()
