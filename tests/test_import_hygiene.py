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


@pytest.mark.parametrize(
    "module",
    ["host_rules.py", "model_base.py", "record.py", "model_fast.py", "model.py", "js_json.py"],
)
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
        "tree_sitter",
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


# ------------------------------------------------------------------ the graph of imports


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports when it runs: at its
    top or in a function, but not under ``if TYPE_CHECKING`` (only the type checker reads
    those). ``from . import x`` names the submodule ``x``, not the package."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        typing_only = {
            id(sub)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for sub in ast.walk(node)
        }
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - max(node.level - 1, 0)]
                mod = ".".join(base + [node.module or ""]).strip(".") if node.level else node.module
                for alias in node.names:
                    sub = f"{mod}.{alias.name}"
                    edges.add(sub if sub in modules else str(mod))
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_in_the_package_at_run_time():
    assert cycles(runtime_imports()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


MODEL_ROOMS = ("host_rules", "model_base", "record", "model_fast", "model")


@pytest.mark.parametrize("room", MODEL_ROOMS)
def test_the_model_rooms_import_only_the_rooms_below_them(room: str):
    """host_rules (no pydantic) <- model_base <- record <- model_fast <- model."""
    graph = runtime_imports()
    above = {f"dsh_memory_tui.{r}" for r in MODEL_ROOMS[MODEL_ROOMS.index(room) + 1 :]}
    assert graph[f"dsh_memory_tui.{room}"] & above == set()


def test_the_hosts_rules_need_no_pydantic():
    assert not {n.split(".")[0] for n in imported_modules(PACKAGE / "host_rules.py")} & {
        "pydantic",
        "pydantic_core",
    }
