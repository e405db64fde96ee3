"""Figures for the reliability report.

Each test takes the ``figures`` fixture and counts what it tried (kills survived, faults
injected, examples run...). At the end of the session every test's figures, outcome, duration
and first docstring line are written as JSON to ``$DSH_RELIABILITY_REPORT`` (default
``<tmpdir>/dsh-reliability-report.json``); ``tests/reliability/report.py`` prints the table.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .harness import SOAK, Worker

_RESULTS: dict[str, dict[str, Any]] = {}
_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


def report_path() -> Path:
    default = Path(tempfile.gettempdir()) / "dsh-reliability-report.json"
    return Path(os.environ.get("DSH_RELIABILITY_REPORT") or default)


class Figures(dict[str, int]):
    """Named counters of what a test tried."""

    def add(self, name: str, n: int = 1) -> None:
        self[name] = self.get(name, 0) + n


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[_CALL_REPORT] = report


@pytest.fixture(autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    """A test that fails half way must not leave its worker processes running."""
    yield
    Worker.kill_all()


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[Figures]:
    found = Figures()
    started = time.monotonic()
    yield found
    node = request.node
    report = node.stash.get(_CALL_REPORT, None)
    doc = (getattr(node.function, "__doc__", None) or "").strip()
    module_doc = (node.module.__doc__ or "").strip()
    _RESULTS[node.nodeid] = {
        "area": module_doc.splitlines()[0] if module_doc else node.module.__name__,
        "test": node.name,
        "proves": " ".join(doc.split("\n\n")[0].split()),
        "figures": dict(found),
        "outcome": report.outcome if report else "error",
        "seconds": round(time.monotonic() - started, 2),
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _RESULTS:
        return
    payload = {
        "mode": "soak" if SOAK else "ci",
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        "tests": _RESULTS,
    }
    path = report_path()
    path.write_text(json.dumps(payload, indent=2) + "\n")
