"""Fixtures of the interop tests: ``dirs`` (a case's home and workspace) and ``host`` (the real
host's code through host.mjs; the tests using it skip unless ``DSH_HOST_SRC`` is set)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .corpus import CaseDirs, make_case_dirs
from .host import HostHarness, default_build_dir, ensure_build


@pytest.fixture(scope="session")
def host() -> HostHarness:
    host_src = os.environ.get("DSH_HOST_SRC")
    if not host_src:
        pytest.skip("DSH_HOST_SRC is not set: no host plugin source to run the host's own code")
    build_dir = default_build_dir()
    ensure_build(host_src, build_dir)
    return HostHarness(build_dir)


@pytest.fixture
def dirs(tmp_path: Path) -> CaseDirs:
    return make_case_dirs(tmp_path)
