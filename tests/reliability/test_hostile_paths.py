"""6. Hostile paths: symlinks and FIFOs where the store's files should be, directories others
can write to, and every umask."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui import jsonl
from dsh_memory_tui.bundle import export_bundle
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures
from .harness import Site, neighbours, regular_files, run_in_child

HANG_DEADLINE_S = 30
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


class _FixedSecrets:
    """``secrets`` as jsonl sees it, with a predictable temporary-name suffix."""

    def token_hex(self, n: int) -> str:
        return FIXED_HEX


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
        jsonl.secrets = _FixedSecrets()  # type: ignore[assignment]
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
