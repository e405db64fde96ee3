"""An error a new user meets names what to type next (issue 37, item 4), run as real processes:
the flags a proposal needs, the command line that confirms a shared write, a command's own
usage for a flag put in the wrong place, and the budget's minimum where the README says it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, run_cli

from dsh_memory_tui.agent_view import DEFAULT_BUDGET_BYTES, MIN_BUDGET_BYTES

SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"  # unverified, shared-project
NEW = ("--scope", "project", "--type", "fact", "--title", "Use ruff", "--content", "CI runs it")
Home = tuple[Path, Path]


def cli(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(home[0], home[1], *args)


def run_as_typed(command_line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command_line`` (``dsh-memory ...``, as an error printed it) run as a user would."""
    words = shlex.split(command_line)
    assert words[0] == "dsh-memory"
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "dsh_memory_tui.cli", *words[1:]],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_a_proposal_without_a_source_names_the_flags_that_give_one(fixture_home: Home):
    records = fixture_home[1] / ".dsh/workspace-memory/records.jsonl"
    before = records.read_bytes()
    result = cli(fixture_home, "propose", *NEW)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "error[INVALID_RECORD]: Non-user Memory requires a source reference: "
    )
    for flag in ("--source-ref KIND:ID", "--cite PATH[:START-END]", "--session ID"):
        assert flag in result.stderr
    assert records.read_bytes() == before
    for given in (("--source-ref", "url:https://example.com"), ("--session", "s1")):
        assert cli(fixture_home, "propose", *NEW, *given).returncode == 0


def test_an_unconfirmed_shared_write_prints_the_command_that_confirms_it(fixture_home: Home):
    refused = cli(fixture_home, "verify", SHARED[:20])
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    said = refused.stderr.strip()
    assert said.startswith("error[SHARED_WRITE_UNCONFIRMED]: ")
    again = said[said.index(": dsh-memory ") + 2 :]
    assert again.endswith(f"verify {SHARED[:20]} --yes-shared")
    confirmed = run_as_typed(again, cwd=fixture_home[1])
    assert confirmed.returncode == 0, confirmed.stderr
    assert confirmed.stdout.splitlines()[-1] == SHARED


def test_a_commands_flag_before_its_name_is_shown_where_it_goes(fixture_home: Home):
    result = cli(fixture_home, "--yes-shared", "verify", SHARED)
    assert result.returncode == 2
    first, *usage = result.stderr.splitlines()
    assert first.startswith("error[USAGE]: dsh-memory verify: --yes-shared goes after")
    assert "usage: dsh-memory verify" in usage[0] and "[--yes-shared]" in "\n".join(usage)
    moved = run_as_typed(first[first.rindex(": dsh-memory ") + 2 :], cwd=fixture_home[1])
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.splitlines()[-1] == SHARED


def test_an_unknown_flag_after_a_command_prints_that_commands_usage(fixture_home: Home):
    result = cli(fixture_home, "verify", SHARED, "--bogus")
    assert result.returncode == 2
    first, *usage = result.stderr.splitlines()
    assert first == "error[USAGE]: dsh-memory verify: unrecognized arguments: --bogus"
    assert usage[0].startswith("usage: dsh-memory verify ")


def test_a_budget_under_the_minimum_says_the_minimum_the_readme_states(dirs: Home):
    result = cli(dirs, "payload", "--budget-bytes", "500")
    assert result.returncode == 2
    assert f"at least {MIN_BUDGET_BYTES} " in result.stderr
    assert f"the default is {DEFAULT_BUDGET_BYTES}" in result.stderr
    readme = (REPO_ROOT / "README.md").read_text()
    reference = readme[readme.index("## The command line") :]
    entry = reference[reference.index("  payload ") :].split("\n  audit ")[0]
    assert re.search(rf"at least {MIN_BUDGET_BYTES}\b", entry)
    assert str(DEFAULT_BUDGET_BYTES) in entry


def test_a_source_reference_of_an_unknown_kind_names_the_kinds(fixture_home: Home):
    records = fixture_home[1] / ".dsh/workspace-memory/records.jsonl"
    before = records.read_bytes()
    result = cli(fixture_home, "propose", *NEW, "--source-ref", "manual:1")
    assert result.returncode == 2, result.stderr
    assert "unknown kind 'manual' (choose from event, file, import, session, url)" in result.stderr
    assert "Traceback" not in result.stderr and records.read_bytes() == before
