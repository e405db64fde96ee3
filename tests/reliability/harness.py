"""The machinery of the reliability suite.

- ``Worker``: a real forked process that reports to its parent, one JSON line per message, on a
  pipe. A child writes ``ack`` only after the store call returned, so an acknowledged write is
  one the store reported done; the parent can SIGKILL it at any moment.
- ``FaultyOS`` and ``KillingOS``: stand-ins for the ``os`` module as ``dsh_memory_tui.jsonl``
  and ``dsh_memory_tui.lock`` see it (the two layers that touch the disk: the safe file and
  the host's lock protocol). They count calls and fail, shorten or SIGKILL on the Nth one;
  everything else is the real ``os``.
- ``expire_killed_lock``: what a SIGKILL of a lock holder leaves (its ``.lock``, which both
  programs respect for 60 s), checked, then aged past the 60 s.
- ``Site``: a home and a workspace under a temporary root.
- Independent oracles (``compacted``, ``scrubbed``) that say what a file must hold after a
  compaction or a forget, without calling the store.
- ``Scenario``: one write operation on a prepared store, with its state before and after a
  clean run, shared by the fault and the kill-at-every-call tests.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import select
import shutil
import signal
import stat
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from conftest import wait_for

from dsh_memory_tui import jsonl, lock
from dsh_memory_tui.store import MemoryStore

SOAK = os.environ.get("DSH_SOAK") == "1"

# A fixed clock makes two runs of the same operation write the same bytes.
FIXED_NOW = 1_900_000_000_000


def scaled(ci: int, soak: int) -> int:
    """``ci`` normally, ``soak`` under DSH_SOAK=1."""
    return soak if SOAK else ci


# --------------------------------------------------------------------------- processes


class Emit:
    """The child's end of the report pipe: one JSON object per line, written with a single
    ``os.write`` (unbuffered, so a message written before a kill is never lost)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __call__(self, **message: Any) -> None:
        os.write(self.fd, (json.dumps(message, separators=(",", ":")) + "\n").encode())


class Gate:
    """A start line for several workers: they block in ``wait`` until the parent ``open``s it."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()

    def wait(self) -> None:
        """In a child: drop the inherited write end, then block until every write end is gone."""
        with contextlib.suppress(OSError):
            os.close(self._write)
        os.read(self._read, 1)

    def open(self) -> None:
        """In the parent: let every waiting worker go."""
        os.close(self._write)
        os.close(self._read)


class Worker:
    """A forked process running ``target(emit)``; its messages arrive in ``messages``.

    Every worker not yet reaped is in ``Worker.running``; the suite's conftest kills them when
    a test ends, so a failing test never leaves a process behind.
    """

    running: ClassVar[set[Worker]] = set()

    def __init__(self, target: Callable[[Emit], None]) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never return into the test runner
            status = 0
            try:
                os.close(read_fd)
                target(Emit(write_fd))
            except BaseException:
                status = 1
                with contextlib.suppress(BaseException):
                    Emit(write_fd)(error=traceback.format_exc()[-3000:])
            os._exit(status)
        os.close(write_fd)
        Worker.running.add(self)
        self.pid = pid
        self.fd = read_fd
        self.messages: list[dict[str, Any]] = []
        self.eof = False
        self.status: int | None = None
        self._buffer = b""

    def fileno(self) -> int:
        return self.fd

    def pump(self, timeout: float) -> None:
        """Read what the child has written (waiting at most ``timeout`` seconds for it)."""
        if self.eof:
            return
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            self._read_available()

    def _read_available(self) -> None:
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.eof = True
            os.close(self.fd)
            return
        self._buffer += chunk
        *complete, self._buffer = self._buffer.split(b"\n")
        self.messages.extend(json.loads(line) for line in complete)

    def wait_for(self, condition: Callable[[Worker], bool], deadline_s: float = 60) -> None:
        """Pump until ``condition(self)`` holds; fails at the deadline or if the child ended."""

        def pump() -> None:
            if self.eof:
                raise AssertionError(f"worker ended before the condition held: {self.errors()}")
            self.pump(0.5)

        wait_for(lambda: condition(self), "the worker to get there", deadline_s, pause=pump)

    def acks(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if "ack" in m]

    def errors(self) -> list[str]:
        return [m["error"] for m in self.messages if "error" in m]

    def kill(self) -> None:
        """SIGKILL the child and reap it; everything it wrote to the pipe is read."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.join()

    def join(self, deadline_s: float = 120) -> int:
        """Read to the end of the pipe and reap the child; returns its wait status."""
        end = time.monotonic() + deadline_s
        while not self.eof:
            left = end - time.monotonic()
            if left <= 0:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                raise AssertionError(f"worker {self.pid} still running after {deadline_s} s")
            self.pump(min(left, 0.5))
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)
            Worker.running.discard(self)
        return self.status

    @classmethod
    def kill_all(cls) -> int:
        """SIGKILL and reap every worker still running; returns how many there were."""
        left = list(cls.running)
        for worker in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(worker.pid, 0)
            if not worker.eof:
                os.close(worker.fd)
                worker.eof = True
            cls.running.discard(worker)
        return len(left)

    @property
    def killed(self) -> bool:
        return self.status is not None and os.WIFSIGNALED(self.status)


def pump_all(workers: list[Worker], done: Callable[[], bool], deadline_s: float) -> None:
    """Read every worker's pipe until ``done()`` or all pipes ended; fails at the deadline."""

    def read() -> None:
        live = [w for w in workers if not w.eof]
        ready, _, _ = select.select(live, [], [], 0.5)
        for worker in ready:
            worker._read_available()

    def finished() -> bool:
        return done() or all(w.eof for w in workers)

    wait_for(finished, "the workers to finish", deadline_s, pause=read)


def run_in_child(target: Callable[[], dict[str, Any] | None], deadline_s: float = 60) -> Worker:
    """Run ``target`` in a forked process; its returned dict is sent as one message."""

    def body(emit: Emit) -> None:
        emit(**(target() or {"done": True}))

    worker = Worker(body)
    worker.join(deadline_s)
    assert not worker.errors(), worker.errors()
    return worker


# --------------------------------------------------------------------------- the os stand-ins


class FaultyOS:
    """``os`` for ``dsh_memory_tui.jsonl`` and ``.lock``, except that the ``nth`` call of
    ``call`` fails (and, if ``persistent``, every later one too).

    ``kind`` is an errno name (``ENOSPC``, ``EIO``) raised as ``OSError``, or ``short``: the
    write really writes only half of its buffer and returns that count (a short write); when
    persistent, the disk is then full and later writes raise ENOSPC.
    """

    def __init__(self, call: str, kind: str, nth: int, persistent: bool) -> None:
        self._call, self._kind, self._nth, self._persistent = call, kind, nth, persistent
        self.calls = 0
        self.fired = 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name != self._call:
            return real

        def faulty(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls < self._nth or (self.calls > self._nth and not self._persistent):
                return real(*args, **kwargs)
            self.fired += 1
            if self._kind == "short":
                if self.fired == 1:
                    fd, data = args
                    return real(fd, bytes(data[: max(1, len(data) // 2)]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            code = getattr(errno, self._kind)
            raise OSError(code, os.strerror(code))

        return faulty


# Every call by which the store changes something on disk, plus the opens of reads.
MUTATING_CALLS = frozenset(
    {
        "open",
        "write",
        "fsync",
        "fdatasync",
        "replace",
        "rename",
        "ftruncate",
        "unlink",
        "mkdir",
        "chmod",
        "fchmod",
    }
)


class KillingOS:
    """``os`` for ``dsh_memory_tui.jsonl`` and ``.lock``, except that the process SIGKILLs
    itself just before its ``nth`` call of any of ``calls`` (after telling ``emit`` which call
    that was).
    """

    def __init__(
        self,
        nth: int,
        emit: Emit,
        calls: frozenset[str] = MUTATING_CALLS,
        only: Callable[[tuple[Any, ...]], bool] | None = None,
    ) -> None:
        """``only``, if given, picks which of those calls count (by their arguments)."""
        self._nth, self._emit, self._calls, self._only = nth, emit, calls, only
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name not in self._calls:
            return real

        def killing(*args: Any, **kwargs: Any) -> Any:
            if self._only is not None and not self._only(args):
                return real(*args, **kwargs)
            self.calls += 1
            if self.calls == self._nth:
                self._emit(killed_at=name, n=self.calls)
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return killing


@contextlib.contextmanager
def store_os(stand_in: object) -> Iterator[None]:
    """Let ``dsh_memory_tui.jsonl`` and ``dsh_memory_tui.lock`` (every call by which the store
    touches the disk, its lock file included) see ``stand_in`` as their ``os`` for a while."""
    jsonl.os = stand_in  # type: ignore[assignment]
    lock.os = stand_in  # type: ignore[attr-defined]
    try:
        yield
    finally:
        jsonl.os = os
        lock.os = os  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- the lock


STALE_LOCK_S = 60  # the host's (and our) staleness of a lock file, by its mtime


def pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def expire_killed_lock(data_path: Path, *killed: int) -> bool:
    """After SIGKILLing the writers ``killed``: their lock, if one was held, is still there.

    Nobody unlinks the lock of a killed holder: the file stays, naming the dead pid (or empty,
    if the kill came between its creation and the write of the pid). Both programs leave it
    alone until its mtime is 60 s old (the host refuses at once, "busy"; we wait and fail with
    LOCK_TIMEOUT), then break it. This checks the lock is one of the killed writers' (so a
    live writer's lock is never aged), then backdates its mtime past the 60 s, as if that
    minute had passed: the next writer breaks it. Returns whether there was one.
    """
    path = neighbours(data_path)["lock"]
    try:
        content = path.read_bytes()
        age = time.time() - os.lstat(path).st_mtime
    except FileNotFoundError:
        return False
    assert not any(pid_running(pid) for pid in killed), "a 'killed' writer is running"
    if age > STALE_LOCK_S:
        # Aged already: an earlier killed writer's, which this one was killed before breaking.
        pid = int(content or b"0")
        assert not pid or not pid_running(pid), f"{path}: a running pid {pid} in a stale lock"
        return True
    names = {b""} | {f"{pid}\n".encode() for pid in killed}
    assert content in names, f"{path} holds {content!r}, not a killed writer's pid {killed}"
    old = time.time() - STALE_LOCK_S - 1
    os.utime(path, (old, old), follow_symlinks=False)
    return True


# --------------------------------------------------------------------------- sites and files


@dataclass(frozen=True)
class Site:
    """A DSH_HOME and a workspace under ``root`` (the home is created by the store)."""

    root: Path

    @classmethod
    def create(cls, root: Path) -> Site:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(root, 0o700)
        (root / "ws").mkdir(mode=0o700, exist_ok=True)
        return cls(root)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    def store(self, user: str = "alice", clock: Callable[[], int] | None = None) -> MemoryStore:
        extra: dict[str, Any] = {"clock": clock} if clock else {}
        return MemoryStore.open(self.home, self.workspace, user, **extra)

    @property
    def project(self) -> Path:
        return self.workspace / ".dsh" / "workspace-memory" / "records.jsonl"

    @property
    def user_file(self) -> Path:
        return self.home / "workspace-memory" / "user.jsonl"

    def store_dirs(self) -> list[Path]:
        return [self.workspace / ".dsh", self.home]


def read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def complete_lines(data: bytes | None) -> list[bytes]:
    """The newline-terminated lines of ``data`` (without their newlines)."""
    if not data:
        return []
    end = data.rfind(b"\n") + 1
    return data[:end].split(b"\n")[:-1]


def neighbours(path: Path) -> dict[str, Path]:
    return {
        "data": path,
        "bak": path.with_name(path.name + ".bak"),
        "corrupt": path.with_name(path.name + ".corrupt"),
        "lock": path.with_name(path.name + ".lock"),
    }


def temporaries(directory: Path) -> list[Path]:
    """Temporaries the store left in ``directory`` (``.<name>.<pid>.<hex>.tmp``)."""
    try:
        return sorted(p for p in directory.iterdir() if p.name.endswith(".tmp"))
    except FileNotFoundError:
        return []


def regular_files(*roots: Path) -> list[Path]:
    """Every regular file under ``roots`` (links are not followed)."""
    out: list[Path] = []
    for root in roots:
        for directory, _dirs, files in os.walk(root):
            for name in files:
                path = Path(directory, name)
                if stat.S_ISREG(os.lstat(path).st_mode):
                    out.append(path)
    return sorted(out)


def files_containing(needle: bytes, *roots: Path) -> list[Path]:
    return [p for p in regular_files(*roots) if needle in p.read_bytes()]


# --------------------------------------------------------------------------- oracles


def _obj(line: bytes) -> dict[str, Any]:
    return json.loads(line)


def compacted(data: bytes, own: Callable[[dict[str, Any]], bool] = lambda obj: True) -> bytes:
    """What a compaction of ``data`` (valid lines only) must leave: for each own id its last
    line (the host's current state: the last valid line of an id wins), every other line as
    it is, in order."""
    lines = complete_lines(data)
    objs = [_obj(line) for line in lines]
    last = {obj["id"]: index for index, obj in enumerate(objs) if own(obj)}
    kept = [
        line
        for index, (line, obj) in enumerate(zip(lines, objs, strict=True))
        if not own(obj) or last[obj["id"]] == index
    ]
    return b"".join(line + b"\n" for line in kept)


def scrubbed(data: bytes, record_id: str) -> bytes:
    """``data`` without any line of ``record_id``."""
    return b"".join(
        line + b"\n" for line in complete_lines(data) if _obj(line).get("id") != record_id
    )


_TOMBSTONE_TITLE = re.compile(r"Forgotten memory [0-9a-f]{12}")


def is_tombstone(obj: dict[str, Any]) -> bool:
    """A host-valid forgotten record: status forgotten, a placeholder title (``Forgotten
    memory <12 hex>``) and content with its hash, no tags, no pin, review note or conflict
    group. (Whether the content holds anything of the record: the callers look for its text.)
    """
    gov = obj["governance"]
    content = obj["content"]
    return (
        obj["status"] == "forgotten"
        and bool(_TOMBSTONE_TITLE.fullmatch(obj["title"]))
        and isinstance(content, str)
        and bool(content.strip())
        and obj["contentHash"] == "sha256:" + hashlib.sha256(content.encode()).hexdigest()
        and obj["tags"] == []
        and not {"pinnedAt", "pinnedBy", "reviewNote", "conflictGroup"} & set(gov)
    )


def is_tombstone_of(line: bytes, record_id: str, revision: int) -> bool:
    obj = _obj(line)
    return (
        obj["id"] == record_id and is_tombstone(obj) and obj["governance"]["revision"] == revision
    )


def max_revision(data: bytes, record_id: str) -> int:
    return max(
        _obj(line)["governance"]["revision"]
        for line in complete_lines(data)
        if _obj(line).get("id") == record_id
    )


# --------------------------------------------------------------------------- scenarios

# The ids this store makes (the host's): ``memory:<uuid4>``, ``memory:import:<uuid4>``.
_ID = re.compile(
    rb"memory:(?:import:)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)


def _normalise_ids(data: bytes | None, known: frozenset[bytes]) -> bytes | None:
    """Replace ids not in ``known`` (made by this run) by a placeholder."""
    if data is None:
        return None
    return _ID.sub(lambda m: m.group(0) if m.group(0) in known else b"memory:NEW", data)


@dataclass(frozen=True)
class State:
    """The data file and its backup and quarantine, as bytes (None: absent)."""

    data: bytes | None
    bak: bytes | None
    corrupt: bytes | None
    temporaries: int

    @classmethod
    def of(cls, path: Path, known: frozenset[bytes]) -> State:
        files = neighbours(path)

        def norm(key: str) -> bytes | None:
            return _normalise_ids(read_or_none(files[key]), known)

        # An empty file holds no line: the same state as no file at all.
        return cls(
            norm("data") or None,
            norm("bak") or None,
            norm("corrupt") or None,
            len(temporaries(path.parent)),
        )


@dataclass
class Scenario:
    """One write operation on a store prepared by ``build`` (which returns the context the
    operation needs, such as a record id). ``scope`` names the file it writes.
    """

    name: str
    scope: str
    build: Callable[[MemoryStore, Path], dict[str, Any]]
    run: Callable[[MemoryStore, dict[str, Any]], Any]
    # States other than "before" and "after" that a failure may leave (quarantine steps).
    intermediate: Callable[[State, State], dict[str, list[bytes | None]]] = field(
        default=lambda before, after: {}
    )


@dataclass
class Prepared:
    """A scenario built once in ``template``; ``fresh()`` copies it to the same place for
    each trial (the same paths, so two runs write the same bytes)."""

    scenario: Scenario
    site: Site
    template: Path
    context: dict[str, Any]
    known: frozenset[bytes]
    before: State
    after: State

    def fresh(self) -> Site:
        if self.site.root.exists():
            shutil.rmtree(self.site.root)
        shutil.copytree(self.template, self.site.root, symlinks=True)
        return self.site

    def path(self) -> Path:
        return self.site.project if self.scenario.scope == "project" else self.site.user_file

    def state(self) -> State:
        return State.of(self.path(), self.known)

    def run(self, store: MemoryStore | None = None) -> Any:
        store = store or self.site.store(clock=lambda: FIXED_NOW)
        return self.scenario.run(store, self.context)

    def allowed(self) -> dict[str, list[bytes | None]]:
        """For each file, the states a failed or killed run may leave it in."""
        extra = self.scenario.intermediate(self.before, self.after)
        return {
            key: [getattr(self.before, key), getattr(self.after, key), *extra.get(key, [])]
            for key in ("data", "bak", "corrupt")
        }

    def violations(self, state: State) -> list[str]:
        """Which files are in none of their allowed states."""
        allowed = self.allowed()
        return [
            f"{key}: {_describe(getattr(state, key), allowed[key])}"
            for key in ("data", "bak", "corrupt")
            if getattr(state, key) not in allowed[key]
        ]


def _describe(got: bytes | None, allowed: list[bytes | None]) -> str:
    sizes = [None if a is None else len(a) for a in allowed]
    size = None if got is None else len(got)
    tail = None if got is None else got[-80:]
    return f"{size} bytes (allowed sizes {sizes}), ends {tail!r}"


def prepare(scenario: Scenario, root: Path) -> Prepared:
    """Build ``scenario`` at ``root/site``, keep a template copy, and record the state before
    and after one clean run of its operation."""
    site = Site.create(root / "site")
    context = scenario.build(site.store(), site.root)
    template = root / "template"
    shutil.copytree(site.root, template, symlinks=True)
    path = site.project if scenario.scope == "project" else site.user_file
    known = frozenset(_ID.findall(read_or_none(path) or b""))
    before = State.of(path, known)
    prepared = Prepared(scenario, site, template, context, known, before, before)
    prepared.fresh()
    prepared.run()
    prepared.after = State.of(path, known)
    assert prepared.after != before, f"{scenario.name}: a clean run changed nothing"
    return prepared


def _base(store: MemoryStore, n: int = 6, edits: int = 2) -> list[str]:
    """``n`` project records, each edited ``edits`` times (so there is history)."""
    ids = []
    for i in range(n):
        rid = store.create("project", "fact", f"base {i}", f"base content {i}").id
        for e in range(edits):
            store.edit(rid, e + 1, content=f"base content {i} edit {e}")
        ids.append(rid)
    return ids


def _build_plain(store: MemoryStore, root: Path) -> dict[str, Any]:
    return {"ids": _base(store)}


def _build_quarantine(store: MemoryStore, root: Path) -> dict[str, Any]:
    ids = _base(store)
    path = store.file_for("project").path
    lines = complete_lines(path.read_bytes())
    lines.insert(3, b'{"schemaVersion": 1, "id": "not a record"}')
    tail = lines[-1][:57]  # a writer that crashed mid-line
    path.write_bytes(b"".join(line + b"\n" for line in lines) + tail)
    return {"ids": ids}


SCENARIOS = [
    Scenario(
        "create in a new file",
        "user",
        lambda store, root: {},
        lambda store, ctx: store.create("user", "preference", "new title", "new content"),
    ),
    Scenario(
        "append",
        "project",
        _build_plain,
        lambda store, ctx: store.create("project", "fact", "appended", "appended content"),
    ),
    Scenario(
        "edit",
        "project",
        _build_plain,
        lambda store, ctx: store.edit(ctx["ids"][2], 3, content="edited content"),
    ),
    Scenario(
        "quarantine then append",
        "project",
        _build_quarantine,
        # One atomic rewrite quarantines the corrupt line and the torn tail (to .corrupt,
        # first) and appends: no committed step between the old and the new state.
        lambda store, ctx: store.create("project", "fact", "after repair", "after repair"),
    ),
    Scenario(
        "compact",
        "project",
        _build_plain,
        lambda store, ctx: store.compact(store.file_for("project")),
    ),
    Scenario(
        "forget",
        "project",
        _build_plain,
        lambda store, ctx: store.forget(ctx["ids"][1]),
    ),
]


def assert_next_write_succeeds(site: Site, path: Path, note: str) -> None:
    """After any failure or crash (and ``expire_killed_lock`` after a kill): the store loads,
    a new write succeeds and leaves no ``.lock``, the file ends with a newline and every
    complete line in it is a valid record."""
    store = site.store()
    scope = "project" if path == site.project else "user"
    store.create(scope, "fact", f"next write {note}", f"next write {note} {time.time_ns()}")
    assert not neighbours(path)["lock"].exists(), "a write left its .lock behind"
    data = path.read_bytes()
    assert data.endswith(b"\n"), f"{path} does not end with a newline"
    view = MemoryStore.open(site.home, site.workspace, "alice").view(store.file_for(scope))
    view.refresh()
    assert not view.corrupt, f"corrupt lines after the next write: {view.corrupt}"
    assert not view.torn


def iter_ids(data: bytes | None) -> Iterable[str]:
    for line in complete_lines(data):
        with contextlib.suppress(ValueError):
            obj = json.loads(line)
            if isinstance(obj, dict) and isinstance(obj.get("id"), str):
                yield obj["id"]
