"""Any CLI command taking an ID takes a unique prefix of it (or of its last ``:`` part); an
ambiguous prefix is an error naming the candidates. ``list`` on a terminal fits its width."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import uuid
from pathlib import Path

from conftest import REPO_ROOT, run_cli

from dsh_memory_tui.ids import candidates, short_ids
from dsh_memory_tui.store import MemoryStore


def propose(home: Path, workspace: Path, title: str) -> str:
    done = run_cli(
        home, workspace, "propose", "--scope", "project", "--type", "fact",
        "--title", title, "--content", f"{title} content", "--source-ref", "session:s1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def test_a_unique_prefix_of_the_ids_last_part_names_the_record(alice_store: MemoryStore):
    home, workspace = alice_store.paths.home, alice_store.paths.workspace
    rid = propose(home, workspace, "Prefix me")
    short = short_ids(alice_store.known_ids())[rid]
    assert rid.endswith(short) is False and rid.rpartition(":")[2].startswith(short)
    done = run_cli(home, workspace, "verify", short, "--reason", "typed short")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == rid  # the whole id, as every write prints it
    assert run_cli(home, workspace, "show", rid[:-3]).stdout.startswith("title:        Prefix me")


def test_an_ambiguous_prefix_is_an_error_listing_the_candidates(alice_store: MemoryStore):
    home, workspace = alice_store.paths.home, alice_store.paths.workspace
    done = run_cli(home, workspace, "show", "memory:")
    ids = sorted(alice_store.known_ids())
    assert done.returncode == 1
    assert done.stderr.startswith(f"error[AMBIGUOUS_ID]: memory: is the start of {len(ids)} ")
    assert ids[0] in done.stderr and "type more of it" in done.stderr
    assert done.stdout == ""


def test_no_match_is_not_found_and_an_empty_prefix_matches_nothing(alice_store: MemoryStore):
    home, workspace = alice_store.paths.home, alice_store.paths.workspace
    done = run_cli(home, workspace, "show", "zzzz-no-such")
    assert (done.returncode, done.stderr.split(":")[0]) == (1, "error[NOT_FOUND]")
    assert candidates("", alice_store.known_ids()) == []


def test_short_ids_each_resolve_to_their_own_record_alone():
    ids = [f"memory:{uuid.uuid4()}" for _ in range(500)]
    ids += [f"memory:user:fact:{uuid.uuid4().hex}" for _ in range(500)]
    # Near misses: tails that share long prefixes, a tail that is another's prefix, a bare id.
    ids += ["memory:aaaaaaa1", "memory:aaaaaaa2", "aaaaaaa1x", "memory:import:aaaaaaa1zz"]
    short = short_ids(ids)
    for rid in ids:
        assert candidates(short[rid], ids) == [rid], (rid, short[rid])
    assert all(len(s) >= 7 for s in short.values())


def list_on_a_terminal(home: Path, workspace: Path, columns: int) -> list[str]:
    """``dsh-memory list`` with its stdout on a pseudo-terminal ``columns`` wide."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(home)]
        + ["--workspace", str(workspace), "--user", "alice", "list"],
        stdout=follower,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    return out.decode().replace("\r\n", "\n").splitlines()


def test_list_on_a_narrow_terminal_fits_with_short_ids_that_commands_take(
    alice_store: MemoryStore,
):
    home, workspace = alice_store.paths.home, alice_store.paths.workspace
    wide = run_cli(home, workspace, "list").stdout.splitlines()  # a pipe: everything, whole
    assert max(len(line) for line in wide) > 80
    lines = list_on_a_terminal(home, workspace, 80)
    assert len(lines) == len(wide)
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].split()[0] == "ID" and "ORIGIN" not in lines[0]  # it made room
    assert "TITLE" in lines[0]
    short = lines[1].split()[0]
    done = run_cli(home, workspace, "show", short, "--json")
    assert done.returncode == 0 and wide[1].split()[0] in done.stdout


def test_list_on_a_wide_terminal_is_the_whole_table(alice_store: MemoryStore):
    home, workspace = alice_store.paths.home, alice_store.paths.workspace
    wide = run_cli(home, workspace, "list").stdout.splitlines()
    assert list_on_a_terminal(home, workspace, 400) == wide


# ------------------------------------------------------------ every command that takes an ID


def _prefix(home: Path, workspace: Path, rid: str) -> str:
    """A unique prefix of ``rid``'s last part, shorter than the whole id."""
    short = short_ids(MemoryStore.open(home, workspace, "alice").known_ids())[rid]
    assert short != rid and len(short) < len(rid.rpartition(":")[2])
    return short


def _ok(home: Path, workspace: Path, *args: str) -> str:
    done = run_cli(home, workspace, *args)
    assert done.returncode in (0, 1) and "error[" not in done.stderr, (args, done.stderr)
    return done.stdout


# Each command that names a record, run on a prefix: the argv after the command's name, with
# "{a}" ... for the prefixes of the records below, and what its output must then say.
PREFIX_RUNS: dict[str, tuple[list[str], str]] = {
    "show": (["{a}"], "title:        Alpha"),
    "edit": (["{a}", "--base-revision", "1", "--title", "Alpha two"], "revision 2"),
    "verify": (["{a}", "--reason", "checked"], "active, verified"),
    "pin": (["{a}"], "revision 4"),
    "unpin": (["{a}"], "revision 5"),
    "archive": (["{a}"], "archived, verified"),
    "restore": (["{a}"], "active, verified"),
    "reject": (["{b}"], "active, rejected"),
    "copy": (["{c}", "--to-scope", "user"], "memory:"),
    "lint": (["{c}"], "1 record(s) checked"),
    "sources": (["{d}"], "changed"),
    "reverify": (["{d}"], "active, verified"),
    "keep": (["{e}"], "kept: verified"),
    "merge": (["{g}", "{h}"], "merged: revision"),
    "audit": (["--record", "{d}"], "entr"),
    "check": (["--repair", "--accept", "{b}", "--reason", "seen"], "history holds: nothing"),
    "forget": (["{a}"], "forgotten"),
}


def test_every_command_that_names_a_record_takes_a_unique_prefix(dirs):
    from dsh_memory_tui.cli import COMMANDS

    assert set(PREFIX_RUNS) == {c.name for c in COMMANDS.values() if c.record_dests}, (
        "a command that names a record is missing from PREFIX_RUNS"
    )
    home, workspace = dirs
    (workspace / "code.py").write_text("x = 1\n")
    ids = {key: propose(home, workspace, title) for key, title in zip(
        "abcgh", ["Alpha", "Beta", "Gamma", "Merge keep", "Merge other"], strict=True)}  # fmt: skip
    for key in "ef":  # two versions of one title: a conflict group
        ids[key] = _ok(home, workspace, "propose", "--scope", "project", "--type", "fact",
            "--title", "Twin", "--content", f"version {key}", "--source-ref", "session:s1",
        ).splitlines()[-1]  # fmt: skip
    ids["d"] = _ok(home, workspace, "create", "--scope", "project", "--type", "fact",
        "--title", "Cited", "--content", "x is one", "--cite", "code.py:1-1",
    ).splitlines()[-1]  # fmt: skip
    _ok(home, workspace, "verify", ids["d"])
    (workspace / "code.py").write_text("x = 2\n")
    _ok(home, workspace, "sources", "--mark-stale")
    prefixes = {key: _prefix(home, workspace, rid) for key, rid in ids.items()}
    for name, (argv, said) in PREFIX_RUNS.items():
        done = run_cli(home, workspace, name, *(a.format(**prefixes) for a in argv))
        assert "error[" not in done.stderr, (name, done.stderr)
        assert said in done.stdout, (name, done.stdout)
        if name not in ("show", "lint", "sources", "audit", "check"):  # a write: its id last
            known = MemoryStore.open(home, workspace, "alice").known_ids()
            assert done.stdout.splitlines()[-1] in known, (name, done.stdout)


def test_a_prefix_that_names_no_record_or_several_is_refused_by_every_such_command(dirs):
    from dsh_memory_tui.cli import COMMANDS

    home, workspace = dirs
    propose(home, workspace, "One")
    propose(home, workspace, "Two")
    for name, (argv, _) in PREFIX_RUNS.items():
        for typed, code in (("zzzz-none", "NOT_FOUND"), ("memory:", "AMBIGUOUS_ID")):
            given = [typed if "{" in a else a for a in argv]
            done = run_cli(home, workspace, name, *given)
            assert done.returncode == 1, (name, done.stdout)
            assert done.stderr.startswith(f"error[{code}]: "), (name, done.stderr)
    assert all(COMMANDS[name].record_dests for name in PREFIX_RUNS)


async def test_audit_of_a_served_record_by_its_prefix_names_its_servings(dirs):
    """Issue 32 item 7: the prefix was taken as a whole id, so the answer was "never served"."""
    from test_mcp import client, ok

    home, workspace = dirs
    rid = run_cli(home, workspace, "create", "--scope", "project", "--type", "fact",
        "--title", "Served", "--content", "served to an agent").stdout.splitlines()[-1]  # fmt: skip
    assert run_cli(home, workspace, "verify", rid).returncode == 0
    async with client(home, workspace, "--session", "s1") as session:
        await ok(session, "workspace_memory_list")
    done = run_cli(home, workspace, "audit", "--record", _prefix(home, workspace, rid))
    assert done.returncode == 0, done.stderr
    assert "served once to 1 session (s1)" in done.stdout
    assert "never served" not in done.stdout
    assert done.stdout.splitlines()[-1].startswith("1 entry in ")


def test_audit_takes_the_prefix_of_a_record_only_the_audit_log_names(dirs):
    """A record served from another workspace (or compacted away) is still in the log."""
    from dsh_memory_tui.audit import AuditLog, served_entry

    home, workspace = dirs
    log = AuditLog(home)
    entry = served_entry(client=("codex", "0.5"), session="s9", asked={"tool": "x"},
                         records=[], cut=0, size=1, at=1)  # fmt: skip
    log.append({**entry, "records": [{"id": "memory:elsewhere-0123456789", "revision": 1}]})
    done = run_cli(home, workspace, "audit", "--record", "elsewhere-01", "--json")
    assert done.returncode == 0, done.stderr
    assert [e["session"] for e in json.loads(done.stdout)] == ["s9"]
