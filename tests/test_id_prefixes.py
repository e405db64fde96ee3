"""Any CLI command taking an ID takes a unique prefix of it (or of its last ``:`` part); an
ambiguous prefix is an error naming the candidates. ``list`` on a terminal fits its width."""

from __future__ import annotations

import fcntl
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
