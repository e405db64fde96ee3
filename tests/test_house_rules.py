"""The house's size rules (issue 28, issue 33): no module over 1,200 lines, no class over 800
and no function over 80, so that each file, class and function keeps one job a reader can hold.
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


MAX_FUNCTION_LINES = 80


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's own lines: from its ``def`` to its end, less its docstring and the
    functions and classes defined in it (each of them is measured on its own). Decorators are
    not counted: a command's arguments are declared in its decorator (``cli.command``)."""
    lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    for sub in ast.walk(node):
        if sub is not node and isinstance(
            sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            first = min([sub.lineno, *(d.lineno for d in sub.decorator_list)])
            lines -= set(range(first, (sub.end_lineno or sub.lineno) + 1))
    doc = node.body[0]
    if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
        lines -= set(range(doc.lineno, (doc.end_lineno or doc.lineno) + 1))
    return len(lines)


def test_no_function_is_over_80_lines():
    long = {
        f"{path.relative_to(PACKAGE)}:{node.name}": lines
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (lines := function_lines(node)) > MAX_FUNCTION_LINES
    }
    assert long == {}


def test_a_function_is_measured_without_its_docstring_and_inner_functions():
    source = 'def f():\n    """doc\n    more"""\n    def g():\n        return 1\n    return g\n'
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.FunctionDef) and function_lines(node) == 2
