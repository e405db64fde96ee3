"""6. Hostile paths: symlinks and FIFOs where the store's files should be, directories others
can write to, and every umask; reads refuse what writes refuse (a store directory that is a
symlink would show, list and export another project's records as ours); paths and settings the
system cannot use are one error line."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, run_cli

from dsh_memory_tui import jsonl
from dsh_memory_tui.bundle import export_bundle
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures
from .harness import Site, neighbours, regular_files, run_in_child

HANG_DEADLINE_S = 120  # a hang guard, generous for a busy machine
FIXED_HEX = "0badc0de"

WRITES: dict[str, Callable[[MemoryStore, str], Any]] = {
    "create": lambda s, rid: s.create("project", "fact", "hostile", "hostile content"),
    "edit": lambda s, rid: s.edit(rid, 2, content="hostile edit"),
    "verify": lambda s, rid: s.verify(rid),
    "forget": lambda s, rid: s.forget(rid),
    "compact": lambda s, rid: s.compact(s.file_for("project")),
}


def _prepare(site: Site) -> str:
    """Project records with history, and a corrupt line: every write then has to touch the
    data file, its lock, its .corrupt and its .bak."""
    store = site.store()
    rid = store.create("project", "fact", "target", "target content").id
    store.edit(rid, 1, content="target content v2")
    store.create("project", "fact", "other", "other content")
    store.compact(store.file_for("project"))
    with site.project.open("ab") as f:
        f.write(b'{"not": "a record"}\n')
    return rid


def _tree(root: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under ``root`` (or ``root`` itself): its bytes (a link: its target) and mode."""
    out: dict[str, tuple[bytes | str, int]] = {}
    paths = [root] if not root.is_dir() or root.is_symlink() else [root, *root.rglob("*")]
    for path in paths:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out[str(path)] = (os.readlink(path), st.st_mode)
        elif stat.S_ISREG(st.st_mode):
            out[str(path)] = (path.read_bytes(), st.st_mode)
        else:
            out[str(path)] = ("", st.st_mode)
    return out


def _run_ops(site: Site, rid: str, plant: Callable[[], None] | None = None) -> dict[str, Any]:
    """In a child (so a hang is caught by the deadline): each write, a read, and
    ``check(repair=True)``; returns each one's error code (None: it succeeded)."""

    def body() -> dict[str, Any]:
        jsonl.temp_suffix = lambda: FIXED_HEX  # a predictable temporary name
        if plant:
            plant()
        codes: dict[str, Any] = {}
        for name, op in WRITES.items():
            try:
                op(site.store(), rid)
                codes[name] = None
            except StoreError as exc:
                codes[name] = exc.code
        try:
            site.store().records("project")
            codes["read"] = None
        except StoreError as exc:
            codes["read"] = exc.code
        report = site.store().check(repair=True)
        codes["repair"] = sorted(
            {
                p.kind
                for p in report.problems
                if p.path.parent == site.project.parent and not p.repaired
            }
        )
        return codes

    return run_in_child(body, HANG_DEADLINE_S).messages[-1]


def _hostile_target(kind: str, site: Site, outside: Path) -> tuple[Path, Path]:
    """Where to put the hostile entry, and a real target outside holding a valid copy."""
    files = neighbours(site.project)
    if kind in ("directory", "parent directory"):
        path = site.project.parent if kind == "directory" else site.workspace / ".dsh"
        target = outside / "dir-copy"
        shutil.copytree(path, target, symlinks=True)
        return path, target
    target = outside / f"victim-{kind}"
    target.write_bytes(site.project.read_bytes())
    os.chmod(target, 0o644)
    if kind == "temporary":
        return site.project.parent / f".records.jsonl.{{pid}}.{FIXED_HEX}.tmp", target
    return files[kind], target


KINDS = ["data", "lock", "bak", "corrupt", "temporary", "directory", "parent directory"]


@pytest.mark.parametrize("kind", KINDS)
def test_symlink_in_place_of_a_store_path_is_refused_and_target_unchanged(
    kind: str, tmp_path: Path, figures: Figures
) -> None:
    """A symlink at the data file, .lock, .bak, .corrupt, a temporary, the store directory or
    a directory above it (`<workspace>/.dsh`), pointing at a valid copy of the data outside:
    every write is refused with UNSAFE_PATH,
    check --repair reports it unsafe and repairs nothing, the target and the link are
    unchanged, and nothing hangs.
    """
    site = Site.create(tmp_path / "site")
    rid = _prepare(site)
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    path, target = _hostile_target(kind, site, outside)
    if kind in ("directory", "parent directory"):
        shutil.rmtree(path)
    elif kind != "temporary":
        path.unlink(missing_ok=True)
    plant = None
    if kind == "temporary":

        def plant() -> None:
            for name in ("records.jsonl", "records.jsonl.bak"):
                link = site.project.parent / f".{name}.{os.getpid()}.{FIXED_HEX}.tmp"
                link.symlink_to(target)

    else:
        path.symlink_to(target)
    before = _tree(target)
    link_before = _tree(path) if kind != "temporary" else {}

    codes = _run_ops(site, rid, plant)

    for name in WRITES:
        assert codes[name] == "UNSAFE_PATH", (kind, name, codes[name])
        figures.add("writes refused")
    assert codes["repair"] == ["unsafe"], codes["repair"]
    if kind == "data":
        assert codes["read"] == "UNSAFE_PATH"
    assert _tree(target) == before, "the link's target changed"
    if kind != "temporary":
        assert _tree(path) == link_before, "the link changed"
    figures.add("targets unchanged")


@pytest.mark.parametrize("kind", ["data", "lock", "bak", "corrupt", "temporary"])
def test_fifo_in_place_of_a_store_file_is_refused_without_hanging(
    kind: str, tmp_path: Path, figures: Figures
) -> None:
    """A FIFO at the data file, .lock, .bak, .corrupt or a temporary: no read or write blocks
    on it (each finishes within the deadline), every write is UNSAFE_PATH, and reading a FIFO
    data file is UNSAFE_PATH too.
    """
    site = Site.create(tmp_path / "site")
    rid = _prepare(site)
    path = neighbours(site.project).get(kind)
    plant = None
    if kind == "temporary":

        def plant() -> None:
            for name in ("records.jsonl", "records.jsonl.bak"):
                os.mkfifo(site.project.parent / f".{name}.{os.getpid()}.{FIXED_HEX}.tmp", 0o600)

    else:
        assert path is not None
        path.unlink(missing_ok=True)
        os.mkfifo(path, 0o600)

    codes = _run_ops(site, rid, plant)

    for name in WRITES:
        assert codes[name] == "UNSAFE_PATH", (kind, name, codes[name])
        figures.add("writes refused without hanging")
    if kind == "data":
        assert codes["read"] == "UNSAFE_PATH"
    assert codes["repair"] == ["unsafe"], codes["repair"]


@pytest.mark.parametrize("mode", [0o777, 0o707, 0o703, 0o702])
def test_store_directory_writable_by_others_is_refused(
    mode: int, tmp_path: Path, figures: Figures
) -> None:
    """A store directory that every user can write to (and not sticky): every write is
    UNSAFE_PATH and no file in it changes. (A group-writable one is accepted by design: a
    project checked out under umask 002 has them.)"""
    site = Site.create(tmp_path / "site")
    rid = _prepare(site)
    os.chmod(site.project.parent, mode)
    before = _tree(site.project.parent)

    codes = _run_ops(site, rid)

    for name in WRITES:
        assert codes[name] == "UNSAFE_PATH", (oct(mode), name, codes[name])
        figures.add("writes refused")
    assert _tree(site.project.parent) == before


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_every_file_is_0600_and_every_directory_0700_whatever_the_umask(
    umask: int, tmp_path: Path, figures: Figures
) -> None:
    """Under umask 000, 022 and 077, every file the store makes (records of all four scopes,
    .lock, .bak, .corrupt, an export) is 0600 and every directory it makes is 0700. The
    .lock exists only while held (the host's protocol unlinks it): its mode is taken then,
    from the lock the store's writer takes, and no write leaves one behind."""
    site = Site.create(tmp_path / "site")
    out = tmp_path / "out"
    out.mkdir(mode=0o700)

    def body() -> dict[str, Any]:
        os.umask(umask)
        store = site.store()
        store.create("project", "fact", "p", "p")
        store.create("shared-project", "fact", "s", "s", confirm_shared=True)
        store.create("user", "fact", "u", "u")
        store.create("session", "fact", "x", "x", session=("sess", None))
        with site.project.open("ab") as f:
            f.write(b"garbage\n")
        store.create("project", "fact", "q", "q")  # quarantine: .corrupt and .bak
        store.compact(store.file_for("user"))
        export_bundle(store, out / "bundle.json")
        with store.view(store.file_for("user")).safe.locked() as held:
            lock_mode = stat.S_IMODE(os.lstat(held.path).st_mode)
        return {"lock_mode": lock_mode}

    lock_mode = run_in_child(body).messages[-1]["lock_mode"]
    assert lock_mode == 0o600, oct(lock_mode)
    files = [*regular_files(site.home, site.workspace / ".dsh"), out / "bundle.json"]
    assert not [p for p in files if p.name.endswith(".lock")], "a write left its .lock behind"
    dirs = [site.home, *[p for p in site.home.rglob("*") if p.is_dir()]]
    dirs += [
        site.workspace / ".dsh",
        *[p for p in (site.workspace / ".dsh").rglob("*") if p.is_dir()],
    ]
    suffixes = {p.name.rsplit(".", 1)[-1] for p in files}
    assert {"jsonl", "bak", "corrupt", "json"} <= suffixes, suffixes
    wrong = {
        str(p): oct(stat.S_IMODE(p.stat().st_mode))
        for p in files
        if stat.S_IMODE(p.stat().st_mode) != 0o600
    }
    wrong |= {
        str(p): oct(stat.S_IMODE(p.stat().st_mode))
        for p in dirs
        if stat.S_IMODE(p.stat().st_mode) != 0o700
    }
    assert not wrong, wrong
    figures.add("files checked", len(files))
    figures.add("directories checked", len(dirs))


# ------------------------------------------------------------------ user errors, not tracebacks

_CLI_CHILD = """
import contextlib, io, json, os, sys, traceback
from dsh_memory_tui import autowriter, bundle, cli  # noqa: F401 (imported before a setuid)
job = json.loads(sys.argv[1])
def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except BaseException:
            rc = "raised"
            traceback.print_exc()
    return [rc, err.getvalue()]
if job["uid"] is not None:
    # Every lazy import first (the interpreter's files are not readable by the other user).
    for argv in job["warm_up"]:
        run(argv)
    os.setgroups([])
    os.setgid(job["uid"])
    os.setuid(job["uid"])
print(json.dumps([run(argv) for argv in job["commands"]]))
"""

NOBODY = 65534


def _commands(home: str, ws: str, outside: Path) -> list[list[str]]:
    """Every kind of command, each on ``home`` and ``ws``; files it reads are in ``outside``."""
    where = ["--home", home, "--workspace", ws, "--user", "alice"]
    return [
        [*where, *args]
        for args in (
            ["list"],
            ["list", "--json"],
            ["show", "memory:x"],
            ["create", "--scope", "project", "--type", "fact", "--title", "t", "--content", "c"],
            ["create", "--scope", "user", "--type", "fact", "--title", "t", "--content", "c"],
            ["export", "--out", str(outside / "out.json")],
            ["import", str(outside / "bundle.json"), "--scope", "project", "--dry-run"],
            ["import", str(outside / "bundle.json"), "--scope", "user"],
            ["check"],
            ["compact"],
            ["auto-write", "--events", str(outside / "events.jsonl")],
        )
    ]


SITUATIONS = [
    "another user's store",
    "--workspace is a file",
    "--home is a file",
    "--workspace of 5,000 characters",
    "--home of 5,000 characters",
    "a .dsh symlink loop",
    "a .dsh symlink to a store",
    "DSH_LOCK_TIMEOUT=nan",
    "DSH_LOCK_TIMEOUT=1e400",
]


@pytest.mark.parametrize("situation", SITUATIONS)
def test_a_user_error_is_one_error_line_never_a_traceback(situation: str, figures: Figures) -> None:
    """Every command (list, list --json, show, create in project and user, export, import and
    its dry run, check, compact, auto-write) run by another Unix user on a store it cannot
    read, with --workspace or --home naming a file or 5,000 characters long, with a `.dsh`
    that is a symlink loop or a link to another store, and with DSH_LOCK_TIMEOUT=nan or 1e400:
    none raises; each either does what the situation leaves possible (a project write with a
    home that is a file) or fails with `error[CODE]: message` first on stderr and exit 1 or 2
    (check lists what it cannot read and exits 1); nothing is written through the link or
    into the other user's store.
    """
    # Not under tmp_path: the other user must reach the bundle and events files.
    root = Path(tempfile.mkdtemp(prefix="dsh-user-errors-"))
    try:
        os.chmod(root, 0o755)
        site = Site.create(root / "site")
        os.chmod(site.root, 0o755)
        store = site.store()
        store.create("project", "fact", "Secret", "Project secret.")
        store.create("user", "fact", "Mine", "User secret.")
        outside = root / "outside"
        outside.mkdir(mode=0o755)
        export_bundle(store, outside / "bundle.json", scopes=["project"])
        event = {  # a session's file write: auto-write has a digest to write
            "sessionId": "s-user-errors",
            "rootId": store.paths.root_id,
            "seq": 1,
            "cwd": str(site.workspace),
            "tool": "write_file",
            "ok": True,
            "files": [{"path": "out/report.md", "op": "create"}],
        }
        (outside / "events.jsonl").write_text(json.dumps(event) + "\n")
        for path in (outside / "bundle.json", outside / "events.jsonl"):
            os.chmod(path, 0o644)
        home, ws = str(site.home), str(site.workspace)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent.parent)}
        uid = None
        if situation == "another user's store":
            if os.geteuid() == 0:
                uid = NOBODY  # the store is root's, 0600 files in 0700 directories
            else:  # as its owner, a store made unreadable
                for directory in (site.project.parent, site.user_file.parent):
                    os.chmod(directory, 0)
        elif situation.startswith("--workspace is"):
            ws = str(outside / "bundle.json")
        elif situation.startswith("--home is"):
            home = str(outside / "bundle.json")
        elif situation.startswith("--workspace of"):
            ws = str(root / ("w" * 5000))
        elif situation.startswith("--home of"):
            home = "/".join([str(root), *["h" * 200] * 25])
        elif situation == "a .dsh symlink loop":
            ws = str(root / "loop")
            os.mkdir(ws)
            os.symlink(".dsh", Path(ws) / ".dsh")
        elif situation == "a .dsh symlink to a store":
            ws = str(root / "linked")
            os.mkdir(ws)
            os.symlink(site.workspace / ".dsh", Path(ws) / ".dsh")
        else:
            env["DSH_LOCK_TIMEOUT"] = situation.partition("=")[2]
        before = site.project.read_bytes()
        commands = _commands(home, ws, outside)
        scratch = root / "scratch"
        job = {
            "uid": uid,
            "commands": commands,
            "warm_up": _commands(str(scratch / "h"), str(scratch), outside),
        }
        scratch.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", _CLI_CHILD, json.dumps(job)],
            capture_output=True,
            text=True,
            timeout=HANG_DEADLINE_S,
            env=env,
            cwd=root,
        )
        assert done.returncode == 0, done.stderr
        results = json.loads(done.stdout)
        for directory in (site.project.parent, site.user_file.parent):
            os.chmod(directory, 0o700)
        if situation in ("another user's store", "a .dsh symlink to a store"):
            assert site.project.read_bytes() == before
    finally:
        for directory in (site.project.parent, site.user_file.parent):
            if directory.exists():
                os.chmod(directory, 0o700)
        shutil.rmtree(root, ignore_errors=True)
    for argv, (rc, err) in zip(commands, results, strict=True):
        command = argv[6]
        assert rc != "raised" and "Traceback" not in err, (command, err)
        if command == "check" and rc == 1 and not err:
            continue  # its report lists what it could not read
        if rc == 0:
            figures.add("commands that did what they could")
            continue
        assert rc in (1, 2), (command, rc, err)
        assert err.startswith("error[") and "]: " in err.splitlines()[0], (command, err)
        figures.add("user errors refused with one line")


# ------------------------------------------------------------------ reads refuse what writes refuse


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """``other`` holds a secret; ``ours/.dsh`` is a symlink to ``other/.dsh``."""
    home, other, ours = tmp_path / "home", tmp_path / "other", tmp_path / "ours"
    other.mkdir()
    ours.mkdir()
    MemoryStore.open(home, other, "alice").create("project", "fact", "Secret", "Other's secret.")
    os.symlink(other / ".dsh", ours / ".dsh")
    return home, ours


def test_the_library_refuses_to_read_through_a_linked_store_directory(
    linked: tuple[Path, Path],
) -> None:
    home, ours = linked
    store = MemoryStore.open(home, ours, "alice")
    with pytest.raises(StoreError) as err:
        store.records("project")
    assert err.value.code == "UNSAFE_PATH" and ".dsh" in err.value.message


@pytest.mark.parametrize(
    "args", [["list"], ["list", "--json"], ["export", "--out", "b.json"], ["check"]]
)
def test_the_cli_refuses_it_with_one_line_and_exit_1(
    linked: tuple[Path, Path], args: list[str]
) -> None:
    home, ours = linked
    done = run_cli(home, ours, *args)
    assert done.returncode == 1, done
    assert "Secret" not in done.stdout and "Traceback" not in done.stderr
    if args[0] != "check":
        assert done.stderr.startswith("error[UNSAFE_PATH]: ")
    assert not (ours / "b.json").exists()


def test_a_store_directory_linked_to_itself_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    os.symlink(".dsh", ws / ".dsh")
    done = run_cli(home, ws, "list")
    assert done.returncode == 1 and done.stderr.startswith("error[UNSAFE_PATH]: ")


def test_the_app_exits_1_with_the_error_before_drawing(linked: tuple[Path, Path]) -> None:
    home, ours = linked
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh_memory_tui",
            "--home",
            str(home),
            "--workspace",
            str(ours),
            "--user",
            "alice",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error[UNSAFE_PATH]: ") and "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["nan", "1e400", "-1", "soon"])
def test_a_lock_timeout_that_is_not_a_finite_number_of_seconds_is_a_usage_error(
    tmp_path: Path, value: str
) -> None:
    done = run_cli(tmp_path / "home", tmp_path, "list", env={"DSH_LOCK_TIMEOUT": value})
    assert done.returncode == 2 and done.stderr.startswith("error[USAGE]: DSH_LOCK_TIMEOUT=")


def test_a_home_that_is_a_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    done = run_cli(tmp_path / "afile", tmp_path, "list")
    assert done.returncode == 1 and done.stderr.startswith("error[UNSAFE_PATH]: ")


def test_a_path_too_long_for_the_system_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh_memory_tui.cli",
            "--home",
            str(tmp_path / "home"),
            "--workspace",
            str(tmp_path / ("x" * 5000)),
            "--user",
            "alice",
            "list",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 2 and done.stderr.startswith("error[USAGE]: ")
    assert "Traceback" not in done.stderr
