"""A thin runner of the real host's code: ``node tests/host-harness/host.mjs``.

Used only when ``DSH_HOST_SRC`` names the host plugin's git dir (the ``host`` fixture of
``conftest.py`` skips otherwise). ``ensure_build`` runs the harness's ``build.sh`` once when the
build dir (``$DSH_HOST_BUILD``, default ``${TMPDIR:-/tmp}/dsh-host-build``) has no build yet.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .corpus import HARNESS

HOST_MJS = HARNESS / "host.mjs"
BUILD_SH = HARNESS / "build.sh"
RUN_TIMEOUT_S = 120.0
BUILD_TIMEOUT_S = 900.0


class HostError(AssertionError):
    """host.mjs exited non-zero (``check=True``): its command, exit code, stdout and stderr."""


def default_build_dir() -> Path:
    build = os.environ.get("DSH_HOST_BUILD")
    if build:
        return Path(build)
    return Path(os.environ.get("TMPDIR") or tempfile.gettempdir()) / "dsh-host-build"


def is_built(build_dir: Path) -> bool:
    return (build_dir / "lib" / "src" / "domain" / "memory.js").is_file()


def ensure_build(host_src: str, build_dir: Path) -> None:
    """Run ``build.sh`` (DSH_HOST_SRC=host_src) unless ``build_dir`` already holds a build."""
    if is_built(build_dir):
        return
    env = {**os.environ, "DSH_HOST_SRC": host_src, "DSH_HOST_BUILD": str(build_dir)}
    done = subprocess.run(
        ["bash", str(BUILD_SH)], env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
    )
    if done.returncode != 0 or not is_built(build_dir):
        raise HostError(
            f"host build into {build_dir} failed (rc {done.returncode}):\n"
            f"{done.stdout}{done.stderr}"
        )


class HostHarness:
    """Runs host.mjs commands against a home and a workspace; each call is one node process."""

    def __init__(self, build_dir: Path) -> None:
        self.build_dir = Path(build_dir)

    def command(
        self,
        *args: str,
        home: Path | str,
        workspace: Path | str,
        scope: str = "project",
        user: str | None = None,
        session: str | None = None,
    ) -> list[str]:
        cmd = ["node", str(HOST_MJS), *args, "--home", str(home), "--workspace", str(workspace)]
        cmd += ["--scope", scope]
        if user is not None:
            cmd += ["--user", user]
        if session is not None:
            cmd += ["--session", session]
        return [*cmd, "--raw"]

    def env(self) -> dict[str, str]:
        return {**os.environ, "DSH_HOST_BUILD": str(self.build_dir)}

    def run(
        self,
        *args: str,
        home: Path | str,
        workspace: Path | str,
        scope: str = "project",
        user: str | None = None,
        session: str | None = None,
        check: bool = True,
        timeout: float = RUN_TIMEOUT_S,
    ) -> dict[str, Any]:
        """The command's JSON output. ``check``: raise ``HostError`` on a non-zero exit;
        otherwise ``{"rc": exit code, **output}`` (``stderr`` too when stdout is not JSON)."""
        cmd = self.command(
            *args, home=home, workspace=workspace, scope=scope, user=user, session=session
        )
        done = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise HostError(
                f"{' '.join(cmd)}\nexit {done.returncode}\nstdout: {done.stdout}\n"
                f"stderr: {done.stderr}"
            )
        try:
            output: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError:
            if check:
                raise HostError(f"{' '.join(cmd)}: no JSON on stdout\n{done.stdout}") from None
            return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
        return output if check else {"rc": done.returncode, **output}

    def propose(
        self,
        title: str,
        content: str,
        *,
        home: Path | str,
        workspace: Path | str,
        check: bool = True,
    ) -> dict[str, Any]:
        """A project proposal through the host's ``proposeMemory`` (a fact): its output."""
        return self.run(
            "propose",
            "--type",
            "fact",
            "--title",
            title,
            "--content",
            content,
            home=home,
            workspace=workspace,
            check=check,
        )
