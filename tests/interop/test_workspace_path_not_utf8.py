"""The premise of ``tests/test_workspace_path_not_utf8.py``, from the host's own code: it cannot
open a workspace whose path is not UTF-8 (so we refuse to write memory there that it would never
show)."""

from __future__ import annotations

import os
from pathlib import Path

from .host import HostHarness


def test_the_host_cannot_open_a_workspace_whose_path_is_not_utf8(
    tmp_path: Path, host: HostHarness
) -> None:
    ws = tmp_path / os.fsdecode(b"project-\xff\xfe")
    ws.mkdir()
    for command in ("ids", "open-warnings"):
        got = host.run(command, home=tmp_path / "home", workspace=ws, check=False)
        assert got["rc"] == 1 and got["error"]["code"] == "PROJECT_UNAVAILABLE", got
