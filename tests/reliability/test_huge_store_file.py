"""A store file far past the host's 8 MiB cap (a sparse multi-GiB file): every reader (the
store's views through ``list``, ``show``, ``payload`` and MCP's text, ``check``, ``compact``,
``export``, the app's preview and load) reads none of it past ``jsonl.MAX_READ_BYTES`` and
says so, in bounded memory, while the other files' records are served as usual. Each command
runs in a fresh process that reports the bytes it read (``/proc/self/io``) and its peak memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT

from dsh_memory_tui.jsonl import MAX_READ_BYTES
from dsh_memory_tui.model import Scope
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures

HUGE = 3 << 30  # 3 GiB, sparse: no disk used
# What one command may read and add to its process's peak memory: the other files, the
# imports it had not made yet, never the huge file (which was read whole: 10.5 GB for 2 GiB).
MAX_READ = 16 << 20
MAX_MORE_MB = 100
DEADLINE_S = 120  # a hang guard only

_CHILD = """
import contextlib, io, json, resource, sys
from pathlib import Path

def rchar():
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])

what, argv = sys.argv[1], sys.argv[2:]
from dsh_memory_tui import cli
from dsh_memory_tui.store import MemoryStore, preview
before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
before = rchar()
out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    if what == "cli":
        code = cli.main(argv)
    else:  # the app's first frame, then its load (MemoryApp's two reads of the store)
        store = MemoryStore.open(argv[0], argv[1], "alice")
        first = preview.newest_records(store.files(), store.clock())
        print(len(first), len(store.records()))
        print("\\n".join(store.unread_files()), file=sys.stderr)
        code = 0
print(json.dumps({
    "code": code,
    "out": (out.flush(), out.buffer.getvalue().decode())[1],
    "err": err.getvalue(),
    "read": rchar() - before,
    "more_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before_mb,
}))
"""


def huge_store(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace whose project file holds two records, then zeros to 3 GiB (sparse), and a
    user file with one verified record."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    store = MemoryStore.open(home, workspace, "alice")
    store.create("project", "fact", "Buried", "In the huge file")
    store.create("project", "fact", "Buried too", "In the huge file as well")
    kept = store.create("user", "fact", "Kept", "In the user file").id
    store.verify(kept)
    project = store.file_for(Scope.PROJECT).path
    with open(project, "r+b") as f:
        f.truncate(HUGE)
    return home, workspace, project


def run(what: str, *argv: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, what, *argv],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return out


COMMANDS: list[tuple[list[str], int, str]] = [
    (["list"], 0, "Kept"),
    (["list", "--scope", "project", "--json"], 0, "[]"),
    (["payload"], 0, "## Kept"),
    (["check"], 1, "oversized"),
    (["check", "--repair"], 1, "oversized"),
    (["compact", "--scope", "project"], 1, "STORE_TOO_LARGE"),
    (["export", "--out", "OUT"], 0, "wrote 1 record"),
    (["create", "--scope", "project", "--type", "fact", "--title", "t", "--content", "c"], 1, ""),
]


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc")
def test_a_multi_gib_store_file_is_not_read_and_every_reader_says_so(
    tmp_path: Path, figures: Figures
) -> None:
    """A sparse 3 GiB project file beside a user file: list, list --json, payload, check,
    check --repair, compact, export and a write each read at most 16 MiB and add at most
    100 MB to their process's peak memory; reads go on (the user file's record is listed,
    served and exported) with one warning naming the file and the limit; check and compact
    say why they leave it (exit 1); a write is refused (STORE_TOO_LARGE); the file is
    untouched. The app's preview and load read it no more than the CLI does."""
    home, workspace, project = huge_store(tmp_path)
    base = ["--home", str(home), "--workspace", str(workspace), "--user", "alice"]
    limit = f"{MAX_READ_BYTES >> 20} MiB"
    for args, code, shown in COMMANDS:
        args = [a.replace("OUT", str(tmp_path / "bundle.json")) for a in args]
        got = run("cli", *base, *args, cwd=workspace)
        where = (args, got["err"][-600:])
        assert got["code"] == code, where
        assert shown in got["out"] + got["err"], where
        assert str(project) in got["err"] and limit in got["err"], where
        assert "Traceback" not in got["err"], where
        assert got["read"] < MAX_READ, (args, got["read"])
        assert got["more_mb"] < MAX_MORE_MB, (args, got["more_mb"])
        figures.add("commands over a 3 GiB file")
        figures.add("bytes read by them, all", got["read"])
    app = run("app", str(home), str(workspace), cwd=workspace)
    assert app["out"].split() == ["1", "1"] and str(project) in app["err"], app
    assert app["read"] < MAX_READ and app["more_mb"] < MAX_MORE_MB, app
    bundle = json.loads((tmp_path / "bundle.json").read_bytes())
    assert [r["title"] for r in bundle["records"]] == ["Kept"]
    assert project.stat().st_size == HUGE
    with open(project, "rb") as f:
        assert b"Buried too" in f.read(4096)  # still there, as it was


async def test_the_app_opens_beside_a_multi_gib_file_and_says_it_is_not_read(
    tmp_path: Path, figures: Figures
) -> None:
    """The real app (Textual's pilot) on the same store: it opens, the Project tab's banner
    names the file and the limit, the User tab lists its record, and writes to the project
    file are refused while the file is left as it was."""
    from app.helpers import SIZE, goto, screen_text, table_titles, wait_for

    from dsh_memory_tui.app.app import MemoryApp

    home, workspace, project = huge_store(tmp_path)
    app = MemoryApp(MemoryStore.open(home, workspace, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "project")
        await wait_for(pilot, lambda: "this program reads" in screen_text(app), what="banner")
        assert table_titles(app, "project") == []
        await goto(pilot, app, "user")
        await wait_for(pilot, lambda: table_titles(app, "user") == ["Kept"], what="the user tab")
    assert project.stat().st_size == HUGE
    figures.add("app runs beside a 3 GiB file")
