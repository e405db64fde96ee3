"""Hostile command lines: ``dsh-memory`` as a real process over records holding lone surrogates
(host-valid JSON; our own CLI stores one from a byte that is not UTF-8 typed in an argument)
and times past the year 9999, with arguments that are not UTF-8 and with settings that are
wrong. Nothing ends in a traceback: text goes out as UTF-8 (a lone surrogate escaped or as
U+FFFD, said), a wrong setting stops every command before it does anything, and the app ignores
a settings file it cannot read with a warning.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from hostile_records import hostile_record, write_records
from interop.corpus import make_case_dirs

from dsh_memory_tui import cli
from dsh_memory_tui.model import MAX_SAFE_INTEGER, content_hash
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures

TIMEOUT_S = 60
BIG_TIME = MAX_SAFE_INTEGER  # a safe integer the host takes: the year 287,396


def dsh(home: Path, workspace: Path, *args: str | bytes, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """``dsh-memory`` as a real process, its output piped (bytes)."""
    cmd: list[str | bytes] = [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(home)]
    cmd += ["--workspace", str(workspace), "--user", "alice", *args]
    return subprocess.run(
        cmd,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT_S,
        cwd=workspace,
        # Strict UTF-8 output, as in a UTF-8 locale (C.UTF-8 would write a surrogate's byte).
        env={
            **os.environ,
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONIOENCODING": "utf-8",
            **(env or {}),
        },
    )


def surrogate_store(tmp_path: Path) -> tuple[MemoryStore, str]:
    """A project file with one verified record holding a lone surrogate in its id, title,
    content and tag, and times past the year 9999; returns the store and the id."""
    dirs = make_case_dirs(tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = "memory:odd:\udcff"
    record = hostile_record(store, rid, "Odd \udcff title", "-", tags=["t\ud800"])
    record["content"] = "Odd \udcff content"
    record["contentHash"] = content_hash(record["content"])
    record["createdAt"] = record["updatedAt"] = BIG_TIME
    governance = record["governance"]
    governance.update(verification="verified", verifiedAt=BIG_TIME, verifiedBy="user")
    write_records(store, [record])
    return MemoryStore.open(dirs.home, dirs.workspace, "alice"), rid


READING = [
    ["list"],
    ["list", "--json"],
    ["list", "--all"],
    ["show", "memory:odd:"],
    ["show", "memory:odd:", "--history"],
    ["show", "memory:odd:", "--json"],
    ["payload"],
    ["payload", "--json"],
    ["lint", "--all"],
    ["lint", "--all", "--json"],
    ["sources"],
    ["queue"],
    ["queue", "--json", "--derived"],
    ["check"],
    ["audit"],
    ["audit", "--json"],
]


def test_every_reading_command_prints_a_lone_surrogate_and_a_far_time_as_utf8(
    tmp_path: Path, figures: Figures
) -> None:
    """Every command that prints records, piped: exit 0, no traceback, output that is UTF-8
    (the surrogate escaped as ``\\udcff``, or U+FFFD in what an agent is sent, said), and
    the time past 9999 shown as its milliseconds."""
    store, rid = surrogate_store(tmp_path)
    home, workspace = store.paths.home, store.paths.workspace
    for args in READING:
        done = dsh(home, workspace, *args)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, (args, done.stderr)
        text = done.stdout.decode("utf-8")  # strict: what went out is UTF-8
        figures.add("commands")
        if args[0] == "payload":
            assert "Odd \ufffd title" in text and "sent as \ufffd" in text, text
        elif args[0] in ("list", "show"):
            assert "\\udcff" in text, (args, text)
    shown = dsh(home, workspace, "show", "memory:odd:").stdout.decode()
    assert f"{BIG_TIME} ms (past 9999)" in shown
    exported = dsh(home, workspace, "export", "--out", str(tmp_path / "out.json"))
    assert exported.returncode == 0, exported.stderr
    bundle = json.loads((tmp_path / "out.json").read_bytes())
    assert bundle["records"][0]["id"] == rid  # escaped in the file, as JSON.stringify writes


WRITING = [
    ["pin", "memory:odd:"],
    ["unpin", "memory:odd:"],
    ["edit", "memory:odd:", "--base-revision", "3", "--title", "Odd \udcff retitled"],
    ["copy", "memory:odd:", "--to-scope", "user"],
    ["archive", "memory:odd:"],
    ["restore", "memory:odd:"],
    ["compact"],
    ["check", "--repair"],
    ["forget", "memory:odd:"],
]


def test_every_writing_command_on_a_record_holding_a_lone_surrogate_ends_cleanly(
    tmp_path: Path, figures: Figures
) -> None:
    """Pin, unpin, edit, copy, archive, restore, compact, check --repair and forget of the
    record whose id, title, tag and content hold a lone surrogate: each exits 0 and prints
    the id it wrote as ``\udcff`` (strict UTF-8 output: ``print`` raised after the write);
    forget erases it (its line named the id escaped: it raised before)."""
    store, rid = surrogate_store(tmp_path)
    home, workspace = store.paths.home, store.paths.workspace
    for args in WRITING:
        done = dsh(home, workspace, *args)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, (args, done.stderr)
        figures.add("commands")
        if args[0] not in ("compact", "check"):
            assert done.stdout.decode("utf-8").splitlines()[-1].startswith("memory:"), args
    assert done.stdout.decode().splitlines()[-1] == "memory:odd:\\udcff"
    data = (workspace / ".dsh" / "workspace-memory" / "records.jsonl").read_bytes()
    assert b"Odd \\udcff" not in data and data.count(b"\n") == 1  # only the tombstone


def test_a_payload_piped_sends_a_lone_surrogate_as_a_replacement_character(
    tmp_path: Path,
) -> None:
    """``dsh-memory payload | ...``: the bytes the server sends, UTF-8, the record's facts
    saying a lone surrogate was sent as U+FFFD."""
    store, _ = surrogate_store(tmp_path)
    done = dsh(store.paths.home, store.paths.workspace, "payload")
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8")
    assert "## Odd \ufffd title" in text and "Odd \ufffd content" in text
    assert "4 lone surrogates (not Unicode) sent as \ufffd" in text  # id, title, tag, content


def test_a_file_name_that_is_not_utf8_is_an_invalid_citation(tmp_path: Path) -> None:
    """``--cite`` naming a file whose name is not UTF-8 (it exists): INVALID_CITATION, exit
    1, nothing written."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    name = os.fsdecode(b"f\xff.py")
    (workspace / name).write_text("x = 1\n")
    for cite in (name, f"{name}:1-1"):
        done = dsh(
            home,
            workspace,
            "create",
            "--scope",
            "project",
            "--type",
            "fact",
            "--title",
            "t",
            "--content",
            "c",
            "--cite",
            cite,
        )
        assert done.returncode == 1, done.stderr
        assert (
            done.stderr.startswith(b"error[INVALID_CITATION]: ") and b"Traceback" not in done.stderr
        )
    assert not (workspace / ".dsh" / "workspace-memory" / "records.jsonl").exists()


def test_an_export_to_a_path_that_is_not_utf8_is_written_and_audited(tmp_path: Path) -> None:
    """The bundle is written under the name given; the audit entry names it (escaped)."""
    store, _ = surrogate_store(tmp_path)
    out = tmp_path / os.fsdecode(b"bundle-\xff.json")
    done = dsh(store.paths.home, store.paths.workspace, "export", "--out", str(out))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert out.exists()
    audit = store.paths.home / "audit" / "audit.jsonl"
    [entry] = [json.loads(line) for line in audit.read_bytes().splitlines()]
    assert entry["path"] == str(out)


# ----------------------------------------------------------------------------- settings

# Arguments that parse, for every command (a new command must be added here).
COMMAND_ARGS: dict[str, list[str]] = {
    "list": [],
    "show": ["x"],
    "create": ["--scope", "project", "--type", "fact", "--title", "t", "--content", "c"],
    "propose": ["--scope", "project", "--type", "fact", "--title", "t", "--content", "c"],
    "edit": ["x", "--base-revision", "1", "--title", "t"],
    **{name: ["x"] for name in ("verify", "reject", "reverify", "pin", "unpin", "archive")},
    **{name: ["x"] for name in ("restore", "forget", "keep")},
    "merge": ["x", "y"],
    "lint": [],
    "adopt": [],
    "copy": ["x", "--to-scope", "user"],
    "export": ["--out", "OUT/bundle.json"],
    "import": ["OUT/bundle.json", "--scope", "project"],
    "compact": [],
    "sources": [],
    "queue": [],
    "check": ["--repair"],
    "merge-file": ["OUT/a", "OUT/b", "OUT/c"],
    "git": ["install"],
    "auto-write": ["--events", "OUT/events.jsonl"],
    "demo": ["OUT/demo"],
    "payload": [],
    "audit": [],
    "mcp": [],
}
BAD_SETTINGS = {
    "DSH_AUDIT_MAX_BYTES": "abc",
    "DSH_MCP_BUDGET_BYTES": "5",
    "DSH_LOCK_TIMEOUT": "nan",
    "DSH_AUDIT": "false",
    "DSH_SESSION_ID": "a|b",
}


def test_every_command_is_covered() -> None:
    parser = cli.build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) == set(COMMAND_ARGS)


@pytest.mark.parametrize("name", sorted(BAD_SETTINGS))
def test_a_wrong_setting_stops_every_command_before_it_does_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, figures: Figures
) -> None:
    """Each wrong ``DSH_*`` setting, with every command (in process): exit 2, one
    ``error[USAGE]`` line naming it, and nothing written anywhere (no home, no bundle, no
    demo, no store); before, ``DSH_AUDIT_MAX_BYTES=abc dsh-memory export`` wrote the bundle
    and then failed."""
    workspace = tmp_path / "workspace"
    (tmp_path / "OUT").mkdir()
    workspace.mkdir()
    store = MemoryStore.open(tmp_path / "home", workspace, "alice")
    made = store.create("project", "fact", "Kept", "As it was")
    files = sorted(p for p in tmp_path.rglob("*"))
    snapshot = {p: p.read_bytes() for p in files if p.is_file()}
    monkeypatch.setenv(name, BAD_SETTINGS[name])
    monkeypatch.chdir(workspace)
    for command, args in COMMAND_ARGS.items():
        argv = ["--home", str(tmp_path / "home"), "--workspace", str(workspace), command]
        argv += [a.replace("OUT", str(tmp_path / "OUT")) for a in args]
        argv = [a.replace("x", made.id) if a == "x" else a for a in argv]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(argv)
        assert code == 2, (command, err.getvalue())
        assert err.getvalue().startswith("error[USAGE]: ") and name in err.getvalue(), command
        figures.add("commands stopped")
    assert sorted(tmp_path.rglob("*")) == files
    assert {p: p.read_bytes() for p in files if p.is_file()} == snapshot


# ----------------------------------------------------------------------------- the app


def test_a_theme_file_nested_too_deep_is_ignored_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A settings file of 60,000 ``[``: the app starts on its default theme and says why
    (before: a RecursionError traceback at launch)."""
    from dsh_memory_tui.app.app import MemoryApp
    from dsh_memory_tui.app.main import apply_theme
    from dsh_memory_tui.settings import SETTINGS_NAME

    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    (home / SETTINGS_NAME).write_text("[" * 60_000)
    app = MemoryApp(MemoryStore.open(home, workspace, "alice"), watch=False)
    assert apply_theme(app, home, None) == "textual-dark"
    assert "warning: the saved theme is ignored" in capsys.readouterr().err


def test_the_merge_driver_installs_for_a_workspace_whose_path_is_not_utf8(
    tmp_path: Path,
) -> None:
    """``git install``, ``status`` and ``uninstall`` in a workspace at ``w\\xff`` inside a git
    repository: each exits 0 (install raised writing the attributes), the pattern holds the
    path's own bytes, and git applies it."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=TIMEOUT_S)
    workspace = tmp_path / os.fsdecode(b"w\xff")
    workspace.mkdir()
    for action in ("install", "status"):
        done = dsh(tmp_path / "home", workspace, "git", action)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, (action, done.stderr)
    attributes = tmp_path / ".git" / "info" / "attributes"
    assert b"w\xff/.dsh/workspace-memory/shared.jsonl" in attributes.read_bytes()
    assert b"git merges shared.jsonl by record id" in done.stdout
    done = dsh(tmp_path / "home", workspace, "git", "uninstall")
    assert done.returncode == 0, done.stderr
    assert b"w\xff" not in attributes.read_bytes()
