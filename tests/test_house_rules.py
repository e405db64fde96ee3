"""The house's size rules (issue 28): no module over 1,200 lines, so that each file keeps one
job a reader can hold.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "dsh_memory_tui"
MAX_MODULE_LINES = 1_200


def test_no_module_is_over_1200_lines():
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
