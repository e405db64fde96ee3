"""A store that cannot be read at start: one line, status 1, from the command and the app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .helpers import (
    SIZE,
    make_app,
    symlinked_records,
    wait_for,
)


def test_a_startup_store_error_is_one_line_and_status_1(fixture_home, tmp_path):
    home, ws = fixture_home
    data = symlinked_records(ws, tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "dsh_memory_tui.app.main", "--home", str(home)]
        + ["--workspace", str(ws), "--user", "alice", "--no-watch"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert out.returncode == 1
    assert out.stderr.startswith(f"error[UNSAFE_PATH]: {data}: ")
    assert "Traceback" not in out.stderr + out.stdout


async def test_a_store_error_while_the_app_starts_exits_with_it(fixture_home, tmp_path):
    home, ws = fixture_home
    symlinked_records(ws, tmp_path)
    app = make_app(home, ws)  # main.py reads the store first; the app must not rely on it
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.return_code is not None, what="the exit")
    assert app.return_code == 1
    assert app.startup_error is not None and app.startup_error.code == "UNSAFE_PATH"
