"""What a command loads before it does its work (issue 35): each module a command does not need
is loaded on first use, so `dsh-memory --version` starts like python itself and a command
that reads records like python importing pydantic (tests/benchmarks/bench_startup.py times
them): it loads pydantic's Rust core, never pydantic. Each case is a real process: the modules
it holds when its command is done.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

# Never loaded by a command that does not use them: the agent's side and its SDK, the app, risk
# flags and near-duplicates, citations, bundles, git.
ON_FIRST_USE = (
    "mcp",
    "textual",
    "detect_secrets",
    "dsh_memory_tui.mcp",
    "dsh_memory_tui.app",
    "dsh_memory_tui.lint",
    "dsh_memory_tui.sources",
    "dsh_memory_tui.bundle",
    "dsh_memory_tui.git",
    "dsh_memory_tui.demo",
    "dsh_memory_tui.autowriter",
)
# Nor by a command that reads or writes records: pydantic itself (the record's models are
# pydantic-core's), the audit log and the agent's view (whose settings every command checks
# first: `settings.check_environment` reads them itself), the team's history and set-up.
RECORD_COMMANDS = (
    "pydantic",
    "dsh_memory_tui.audit",
    "dsh_memory_tui.agent_view",
    "dsh_memory_tui.team.chain",
    "dsh_memory_tui.team.history",
    "dsh_memory_tui.team.setup",
    "dsh_memory_tui.team.clones",
)
# Nor by a command that reads no record: the record model (pydantic-core), the store, and
# what only they use (dataclasses: its introspection is a third of a bare python's start;
# shutil, whose compression modules argparse's terminal width would load).
RECORDS = (
    "pydantic_core",
    "dsh_memory_tui.model",
    "dsh_memory_tui.store",
    "dataclasses",
    "shutil",
    "secrets",
)

_CHILD = """
import json, sys
out, argv = sys.argv[1], sys.argv[2:]
from dsh_memory_tui.cli import main
try:
    code = main(argv)
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
sys.exit(code)
"""


def _modules_after(tmp_path: Path, *args: str) -> set[str]:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(out.read_text()))


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_load_no_record_model_and_nothing_heavy(tmp_path: Path, flag: str):
    assert _loaded(_modules_after(tmp_path, flag), ON_FIRST_USE + RECORD_COMMANDS + RECORDS) == []


def test_propose_loads_the_store_and_nothing_it_does_not_use(tmp_path: Path):
    store = ["--home", str(tmp_path / "home"), "--workspace", str(tmp_path), "--user", "alice"]
    modules = _modules_after(
        tmp_path,
        *store,
        "propose",
        "--scope",
        "project",
        "--type",
        "fact",
        "--title",
        "Tests run on sqlite",
        "--content",
        "CI runs them.",
        "--source-ref",
        "session:s1",
    )
    assert "dsh_memory_tui.store" in modules  # it did write
    assert _loaded(modules, (*ON_FIRST_USE, *RECORD_COMMANDS, "dsh_memory_tui.team")) == []


def test_list_json_loads_the_store_and_nothing_it_does_not_use(tmp_path: Path):
    store = ["--home", str(tmp_path / "home"), "--workspace", str(tmp_path), "--user", "alice"]
    modules = _modules_after(tmp_path, *store, "list", "--scope", "project", "--json")
    assert "dsh_memory_tui.store" in modules and "pydantic_core" in modules
    assert _loaded(modules, (*ON_FIRST_USE, *RECORD_COMMANDS, "dsh_memory_tui.team")) == []


def test_the_merge_driver_loads_the_merge_and_nothing_else_heavy(tmp_path: Path):
    for name in ("base", "ours", "theirs"):
        (tmp_path / name).write_bytes(b"")
    store = ["--home", str(tmp_path / "home"), "--workspace", str(tmp_path)]
    modules = _modules_after(tmp_path, *store, "merge-file", "base", "ours", "theirs")
    assert "dsh_memory_tui.team.merge" in modules
    assert _loaded(modules, (*ON_FIRST_USE, *RECORD_COMMANDS, "subprocess")) == []


def test_the_apps_first_frame_needs_no_agent_side_bundle_or_secret_detector():
    # What `dsh-memory-tui` imports before its first frame is drawn: the app's modules. Risk
    # flags, citations, the audit log and git still load with them (the app's restructure is
    # where they move behind the first frame).
    code = (
        "import json, sys\n"
        "import dsh_memory_tui.app.main, dsh_memory_tui.app.app\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    modules = set(json.loads(done.stdout))
    heavy = ("mcp", "detect_secrets", "dsh_memory_tui.mcp", "dsh_memory_tui.bundle")
    assert _loaded(modules, (*heavy, "dsh_memory_tui.demo", "dsh_memory_tui.autowriter")) == []
