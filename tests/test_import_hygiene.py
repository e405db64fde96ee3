"""Layering (STYLE.md): nothing outside ``dsh_memory_tui.app`` imports textual, and model.py
does no I/O. Checked in a fresh interpreter so other tests' imports do not hide a violation.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "dsh_memory_tui"


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_module_outside_the_app_imports_textual():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "app" not in path.relative_to(PACKAGE).parts
        and any(n.split(".")[0] in ("textual", "rich") for n in imported_modules(path))
    ]
    assert offenders == []


def test_library_and_cli_load_without_textual():
    code = (
        "import sys\n"
        "import dsh_memory_tui.store, dsh_memory_tui.cli, dsh_memory_tui.bundle, "
        "dsh_memory_tui.autowriter, dsh_memory_tui.demo\n"
        "assert 'textual' not in sys.modules, 'textual was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)


def test_the_apps_action_rules_and_flags_load_without_textual():
    """``app/actions.py`` and ``app/state.py`` are tested without the app: they stay pure."""
    code = (
        "import sys\n"
        "import dsh_memory_tui.app.actions, dsh_memory_tui.app.state\n"
        "assert 'textual' not in sys.modules, 'textual was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)


@pytest.mark.parametrize("module", ["model.py", "js_json.py"])
def test_the_record_model_and_its_json_reader_touch_no_disk(module: str):
    forbidden = {"os", "pathlib", "shutil", "io", "tempfile", "filelock"}
    assert not imported_modules(PACKAGE / module) & forbidden


def test_the_cli_imports_only_what_its_commands_share():
    """``dsh-memory`` pays at start only for what every command needs: the app, the MCP SDK
    and the modules of single commands (export/import, auto-write, demo, mcp) load when their
    command runs, and logging only with DSH_DEBUG.
    """
    lazy = (
        "textual",
        "rich",
        "mcp",
        "watchfiles",
        "logging",
        "dsh_memory_tui.app",
        "dsh_memory_tui.mcp",
        "dsh_memory_tui.bundle",
        "dsh_memory_tui.autowriter",
        "dsh_memory_tui.demo",
    )
    code = (
        "import sys\n"
        "import dsh_memory_tui.cli\n"
        f"loaded = [m for m in {lazy!r} if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)
