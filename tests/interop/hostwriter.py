"""A writer that follows the TypeScript host's lock protocol exactly (``MemoryStore.withLock``
in the host's ``src/domain/memory-store.ts``), for racing our store against "the host" without
node. Standard library only; run it in its own process:

    python tests/interop/hostwriter.py --file F --scope S --scope-key K --count N --prefix P
        [--session-id ID] [--delay-ms D] [--hold-ms H] [--acks FILE] [--busy-log FILE]
        [--stale-ms MS] [--wait-for FILE] [--ready FILE]
    python tests/interop/hostwriter.py --compact --file F [--count N] [...]

Lock: ``open(<file>.lock, O_CREAT|O_EXCL|O_WRONLY, 0600)``, write ``<pid>\\n``, close. On EEXIST
stat the lock: younger than ``--stale-ms`` (default 60000) -> refused "busy" at once (the host
never waits); else unlink it and try once more (a second EEXIST is busy too). Under the lock one
host-valid proposal line is appended (O_APPEND, write, fsync, close; no check for a missing final
newline, like the host), or with ``--compact`` the file is rewritten as the host's compact()
does (temporary, fsync, file -> ``.bak``, temporary -> file); then the lock is unlinked.

Each acknowledged append writes ``<id>\\n`` to ``--acks`` after the lock is released; each busy
refusal writes ``<epoch ms> <lock file content>`` to ``--busy-log``. The last line on stdout is
``{"ok": n, "busy": n, "errors": {...}, "pid": pid}``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any, TextIO

STALE_MS = 60_000
HERE = Path(__file__).resolve()
RETENTION = {"session": "session-end", "user": "user-managed"}


class Busy(Exception):
    """The host's ``SAVE_FAILURE: Memory store is busy``."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def command(file: Path | str, *options: str) -> list[str]:
    """argv running this script on ``file`` with ``options`` (for subprocess)."""
    return [sys.executable, str(HERE), "--file", str(file), *options]


def proposal(scope: str, scope_key: str, session_id: str, title: str, content: str) -> str:
    """One record line as the host writes an agent proposal (its key order, compact JSON)."""
    t = now_ms()
    record: dict[str, Any] = {
        "schemaVersion": 1,
        "id": f"memory:{uuid.uuid4()}",
        "scope": scope,
        "scopeKey": scope_key,
        "type": "fact",
        "title": title,
        "content": content,
        "tags": [],
        "provenance": {"kind": "agent", "sessionId": session_id, "note": "memory proposal"},
        "createdAt": t,
        "updatedAt": t,
        "useCount": 0,
        "contentHash": "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest(),
        "status": "active",
        "governance": {
            "origin": "model-suggested",
            "sourceRefs": [{"kind": "session", "id": session_id}],
            "verification": "unverified",
            "revision": 1,
            "retention": RETENTION.get(scope, "project-delete"),
        },
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"


def read_lock(lock: str) -> str:
    try:
        with open(lock, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or "(empty)"
    except OSError:
        return "(gone)"


def acquire(file: str, stale_ms: int) -> None:
    """The host's withLock acquisition; raises ``Busy`` (carrying the lock's content seen)."""
    lock = f"{file}.lock"
    for attempt in range(2):
        try:
            os.makedirs(os.path.dirname(file) or ".", mode=0o700, exist_ok=True)
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            try:
                os.write(fd, f"{os.getpid()}\n".encode())
            finally:
                os.close(fd)
            return
        except FileExistsError:
            if attempt > 0:
                raise Busy(read_lock(lock)) from None
            try:
                info = os.stat(lock)
                if now_ms() - info.st_mtime_ns / 1e6 < stale_ms:
                    raise Busy(read_lock(lock)) from None
                os.unlink(lock)
            except OSError:
                pass  # the lock went away meanwhile: try again, as the host does


def release(file: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(f"{file}.lock")


def append_line(file: str, line: str) -> None:
    fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(file, 0o600)


def compact(file: str) -> None:
    """The host's compact() under the lock, keeping every line that parses as JSON."""
    try:
        with open(file, "rb") as handle:
            source = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        source = ""
    lines = []
    for line in source.split("\n"):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            continue
        lines.append(line)
    body = "\n".join(lines) + ("\n" if lines else "")
    temporary = f"{file}.{os.getpid()}.{uuid.uuid4()}.tmp"
    backup = f"{file}.bak"
    backup_created = False
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, body.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.rename(file, backup)
            backup_created = True
        except FileNotFoundError:
            pass
        os.rename(temporary, file)
        os.chmod(file, 0o600)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if backup_created:
            with contextlib.suppress(OSError):
                os.unlink(file)
            with contextlib.suppress(OSError):
                os.rename(backup, file)
        raise


def wait_for_file(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.001)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", required=True)
    parser.add_argument("--compact", action="store_true")
    parser.add_argument("--scope", choices=("project", "shared-project", "user", "session"))
    parser.add_argument("--scope-key")
    parser.add_argument("--session-id", default="hostwriter-session")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--prefix", default=f"hostwriter-{os.getpid()}")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="pause between attempts")
    parser.add_argument("--hold-ms", type=float, default=0.0, help="pause under the lock")
    parser.add_argument("--acks")
    parser.add_argument("--busy-log")
    parser.add_argument("--stale-ms", type=int, default=STALE_MS)
    parser.add_argument("--wait-for", help="start only once this file exists")
    parser.add_argument("--ready", help="written once started (before --wait-for)")
    args = parser.parse_args(argv)
    if not args.compact and (args.scope is None or args.scope_key is None):
        parser.error("--scope and --scope-key are required unless --compact")
    return args


def open_log(path: str | None) -> TextIO | None:
    return None if path is None else open(path, "a", encoding="utf-8")  # noqa: SIM115


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    ok = busy = 0
    errors: dict[str, int] = {}
    acks, busy_log = open_log(args.acks), open_log(args.busy_log)
    if args.ready:
        Path(args.ready).write_text(f"{os.getpid()}\n", encoding="utf-8")
    if args.wait_for:
        wait_for_file(args.wait_for)
    for i in range(args.count):
        written = None
        try:
            acquire(args.file, args.stale_ms)
        except Busy as refusal:
            busy += 1
            if busy_log is not None:
                busy_log.write(f"{now_ms()} {refusal.args[0]}\n")
                busy_log.flush()
        except OSError as error:
            key = f"lock: {type(error).__name__}: {error.strerror}"
            errors[key] = errors.get(key, 0) + 1
        else:
            try:
                if args.compact:
                    compact(args.file)
                    written = ""
                else:
                    line = proposal(
                        args.scope,
                        args.scope_key,
                        args.session_id,
                        f"{args.prefix} {i}",
                        f"{args.prefix} content {i}",
                    )
                    append_line(args.file, line)
                    written = json.loads(line)["id"]
                if args.hold_ms:
                    time.sleep(args.hold_ms / 1000)
            except OSError as error:
                key = f"write: {type(error).__name__}: {error.strerror}"
                errors[key] = errors.get(key, 0) + 1
            finally:
                release(args.file)
        if written is not None:
            ok += 1
            if acks is not None and written:
                acks.write(f"{written}\n")
                acks.flush()
        if args.delay_ms:
            time.sleep(args.delay_ms / 1000)
    for log in (acks, busy_log):
        if log is not None:
            log.close()
    print(json.dumps({"ok": ok, "busy": busy, "errors": errors, "pid": os.getpid()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
