"""Reads refuse what writes refuse: a store directory that is a symlink (a cloned project's
``.dsh`` pointing at another project's) would otherwise show, list and export that project's
records as ours."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.store import MemoryStore


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
