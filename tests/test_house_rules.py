"""The house's size rules (issue 28): no module over 1,200 lines and no class over 800, so
that each file and each class keeps one job a reader can hold.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "dsh_memory_tui"
MAX_MODULE_LINES = 1_200
MAX_CLASS_LINES = 800


def test_no_module_is_over_1200_lines():
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_class_is_over_800_lines():
    long = {
        f"{path.relative_to(PACKAGE)}:{node.name}": lines
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and (lines := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_CLASS_LINES
    }
    assert long == {}
