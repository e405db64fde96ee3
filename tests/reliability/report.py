"""Print the reliability table (markdown) from the figures of the last run.

    python tests/reliability/report.py [REPORT.json]

The file defaults to ``$DSH_RELIABILITY_REPORT``, else ``<tmpdir>/dsh-reliability-report.json``
(what ``pytest tests/reliability`` writes). Parametrized cases of one test are summed into one
row; a row's result says how many of its cases passed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HEADLINES = [
    ("kills survived", "SIGKILLs survived"),
    ("faults injected", "I/O faults injected"),
    ("disk-full failures (WRITE_FAILED)", "real disk-full failures (RLIMIT_FSIZE)"),
    ("files fuzzed", "fuzzed store files"),
    ("damaged lines", "damaged lines"),
    ("bundles imported", "fuzzed bundles imported"),
    ("bundles refused whole", "fuzzed bundles refused whole"),
    ("steps checked", "model steps checked"),
    ("appends", "concurrent appends"),
    ("edits landed", "concurrent edits"),
    ("writes refused", "hostile-path writes refused"),
]


def _default_path() -> Path:
    env = os.environ.get("DSH_RELIABILITY_REPORT")
    return Path(env) if env else Path(tempfile.gettempdir()) / "dsh-reliability-report.json"


def _rows(tests: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for nodeid, test in tests.items():
        name = nodeid.split("::", 1)[-1].split("[", 1)[0]
        row = rows.setdefault(
            name,
            {
                "area": test["area"],
                "test": name,
                "proves": test["proves"],
                "figures": Counter(),
                "cases": 0,
                "passed": 0,
                "seconds": 0.0,
            },
        )
        row["figures"].update(test["figures"])
        row["cases"] += 1
        row["passed"] += test["outcome"] == "passed"
        row["seconds"] += test["seconds"]
    return sorted(rows.values(), key=lambda row: row["area"])  # areas are numbered


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: dict[str, Any]) -> str:
    rows = _rows(report["tests"])
    total: Counter[str] = Counter()
    for row in rows:
        total.update(row["figures"])
    seconds = sum(row["seconds"] for row in rows)
    failed = [row for row in rows if row["passed"] != row["cases"]]
    out = [
        f"Last run: {report['finished']}, {report['mode']} mode, "
        f"{sum(r['cases'] for r in rows)} tests in {seconds:.0f} s, "
        + ("all passed." if not failed else f"{len(failed)} test(s) FAILED."),
        "",
        "| headline | figure |",
        "|---|---:|",
    ]
    out += [f"| {label} | {total[key]:,} |" for key, label in HEADLINES if key in total]
    out += [
        "",
        "| area | what was tried, and what held | figures | result | s |",
        "|---|---|---|---|---:|",
    ]
    for row in rows:
        figures = ", ".join(f"{k}: {v:,}" for k, v in row["figures"].items())
        result = (
            "held"
            if row["passed"] == row["cases"]
            else (f"**FAILED** ({row['cases'] - row['passed']} of {row['cases']})")
        )
        cases = f" ({row['cases']} cases)" if row["cases"] > 1 else ""
        out.append(
            f"| {_cell(row['area'].split(':')[0])} | `{row['test']}`{cases}: "
            f"{_cell(row['proves'])} | {_cell(figures)} | {result} | {row['seconds']:.1f} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else _default_path()
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        print(f"{path}: no report; run `pytest tests/reliability` first", file=sys.stderr)
        return 1
    sys.stdout.write(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
