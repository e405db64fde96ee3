"""The shell examples of README.md and docs/*.md run as written (issue 37, item 5).

Every ```sh block is one of two kinds. A block the docs mark runnable, with an HTML comment on
the line before it, runs in bash in a new temporary directory (a workspace), with ``HOME`` and
``TMPDIR`` there and ``dsh-memory`` on the ``PATH``:

- ``<!-- example: runs -->``: as it is;
- ``<!-- example: runs after: CMD -->``: after CMD (what a reader has already: a file to cite,
  a demo store, a git repository), in the same shell;
- ``<!-- example: continues -->``: after the runnable block before it in the same file, in its
  shell (a reader goes on where the last block left off).

Every command must exit 0. In a transcript (``$ `` lines), the lines under a command are what it
prints, compared line by line: runs of spaces as one, a date and time, a uuid and any run of 8
or more hex digits (ids, hashes: they depend on the directory) stand for any other, and ``…``
for anything. A command with no lines under it is not compared. Any other block is listed in
``SKIPPED`` with the reason it cannot run here; a new block that is neither fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$", re.M | re.S)
MARKER = re.compile(r"<!-- example: (?P<kind>runs|continues)(?: after: (?P<setup>.*?))? -->")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(?P<end>\w+)\1")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEX = re.compile(r"(?<![0-9a-z])[0-9a-f]{8,}(?![0-9a-z])")
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")

# The blocks that do not run here, by file and first line, with why.
SKIPPED = {
    (
        "README.md",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && dsh-memory-tui "
        "--demo",
    ): "installs the package (the suite runs in that install) and opens the app, which "
    "tests/app drives through Textual's pilot",
    (
        "README.md",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && ruff check",
    ): "the whole suite and its checks: .ci/run runs exactly this command",
    (
        "README.md",
        "dsh-memory-tui [--home DIR] [--workspace DIR] [--user ID] [--session ID] [--demo] "
        "[--no-watch]",
    ): "a synopsis, not a command",
    (
        "docs/autowriter.md",
        "$ dsh-memory auto-write --events events.jsonl --follow &",
    ): "a follower started in the background and killed at once: in a script the kill lands "
    "before Python has started (a reader types slower); tests/test_autowriter.py follows a log "
    "and stops a follower for real",
    (
        "docs/autowriter.md",
        "python tests/benchmarks/bench_autowriter.py",
    ): "a benchmark: minutes of a busy machine",
    ("docs/bundles.md", "python tests/benchmarks/bench_bundle.py"): "a benchmark",
    (
        "docs/mcp.md",
        "dsh-memory mcp [--session ID]",
    ): "a synopsis; the server it starts talks on stdio (tests/test_mcp.py runs it with the "
    "real client)",
    ("docs/mcp.md", "dsh-memory payload [--session ID]"): "a synopsis, not a command",
    (
        "README.md",
        "$ dsh-memory queue            # after a merge",
    ): "the queue after two clones' branches were merged: tests/test_queue.py and "
    "tests/app/test_review_reasons.py make that merge for real and read `queue --json`",
    ("docs/reliability.md", "python -m pytest -q tests/reliability"): "runs a part of the suite",
    (
        "docs/reliability.md",
        "DSH_RELIABILITY_REPORT=/tmp/reliability.json python -m pytest -q tests/reliability",
    ): "runs a part of the suite",
    ("docs/store.md", "python -m pytest -q tests/test_model.py"): "runs a part of the suite",
    ("docs/store.md", "python tests/benchmarks/bench_store.py"): "a benchmark",
    ("docs/team.md", "#!/bin/sh"): "a hook's body: git runs it before a commit "
    "(tests/test_team_git.py commits through such hooks)",
    ("docs/team.md", "set -o pipefail"): "the CI gate's step, which tests/test_team_ci.py runs "
    "(its <!-- ci-gate --> marker) against a repository with a pull request's history",
}


@dataclass(frozen=True)
class Block:
    """One ```sh block: where it is, its text, and its marker (``None``: not marked)."""

    file: str
    line: int
    body: str
    kind: str | None
    setup: str | None

    @property
    def first_line(self) -> str:
        return self.body.splitlines()[0] if self.body else ""

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}"


def shell_blocks() -> list[Block]:
    """Every ```sh (``bash``, ``console``, ``shell``) block of the README and docs/, in order."""
    blocks = []
    for path in DOCS:
        text = path.read_text()
        for fence in FENCE.finditer(text):
            if fence["lang"] not in ("sh", "bash", "console", "shell"):
                continue
            before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = MARKER.fullmatch(before.strip())
            blocks.append(
                Block(
                    str(path.relative_to(REPO_ROOT)),
                    text[: fence.start()].count("\n") + 2,
                    fence["body"],
                    marker["kind"] if marker else None,
                    marker["setup"] if marker else None,
                )
            )
    return blocks


def skip_reason(block: Block) -> str | None:
    for (file, first), why in SKIPPED.items():
        if block.file == file and block.first_line.startswith(first):
            return why
    return None


def chains() -> list[list[Block]]:
    """The runnable blocks, each with the blocks that continue it."""
    out: list[list[Block]] = []
    for block in shell_blocks():
        if block.kind == "runs":
            out.append([block])
        elif block.kind == "continues":
            assert out and out[-1][0].file == block.file, f"{block.name} continues nothing"
            out[-1].append(block)
    return out


@dataclass
class Step:
    """One command of a block and the lines the docs say it prints (None: not said)."""

    command: str
    expected: list[str] | None


def steps(body: str) -> list[Step]:
    """A transcript's commands and their outputs; a block without ``$`` lines: every line (with
    its ``\\`` continuations) a command whose output the docs do not show."""
    lines = body.splitlines()
    transcript = any(line.startswith("$ ") for line in lines)
    out: list[Step] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if transcript and not line.startswith("$ "):
            if out and not line.lstrip().startswith("#"):  # a comment-only line says, not prints
                expected = out[-1].expected
                out[-1].expected = [*(expected or []), line]
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        command = line[2:] if transcript else line
        while command.rstrip().endswith("\\") and i < len(lines):
            command += "\n" + lines[i]
            i += 1
        heredoc = HEREDOC.search(command)
        if heredoc:
            while i < len(lines):
                command += "\n" + lines[i]
                i += 1
                if lines[i - 1] == heredoc["end"]:
                    break
        out.append(Step(command, None))
    return out


def script(chain: list[Block]) -> tuple[str, list[tuple[Block, Step]]]:
    """One bash script for ``chain``: each command between markers that carry its number and
    exit code; and the steps, numbered."""
    numbered: list[tuple[Block, Step]] = []
    parts = ["exec 2>&1"]
    for block in chain:
        if block.setup:
            parts.append(block.setup)
        for step in steps(block.body):
            n = len(numbered)
            numbered.append((block, step))
            parts += [f"printf '\\n\\036{n}\\n'", step.command, f"printf '\\n\\037{n} %d\\n' $?"]
    return "\n".join(parts) + "\n", numbered


def normalized(line: str) -> str:
    line = TIME.sub("<time>", HEX.sub("<hex>", UUID.sub("<uuid>", line)))
    return " ".join(line.split())


def matches(expected: str, got: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in normalized(expected).split("…"))
    return re.fullmatch(pattern, normalized(got)) is not None


def run(chain: list[Block], tmp: Path) -> None:
    bin_dir, home, work = tmp / "bin", tmp / "home", tmp / "work"
    for d in (bin_dir, home, work):
        d.mkdir()
    shim = bin_dir / "dsh-memory"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dsh_memory_tui.cli "$@"\n')
    shim.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "PYTHONPATH": str(REPO_ROOT),
        "DSH_USER_ID": "alice",
        "LC_ALL": "C.UTF-8",
    }
    text, numbered = script(chain)
    done = subprocess.run(
        ["bash", "-c", text], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    output = done.stdout
    for n, (block, step) in enumerate(numbered):
        where = f"{block.name}: `{step.command.splitlines()[0]}`"
        start, end = output.find(f"\n\036{n}\n"), output.find(f"\n\037{n} ")
        assert start >= 0 and end > start, f"{where} did not finish:\n{output[-2000:]}"
        printed = output[start + len(f"\n\036{n}\n") : end]
        code = int(output[end:].split(None, 2)[1])
        assert code == 0, f"{where} exited {code}:\n{printed}"
        if step.expected is None:
            continue
        got = printed.rstrip("\n").splitlines()
        assert len(got) == len(step.expected), f"{where} printed:\n{printed}"
        for want, line in zip(step.expected, got, strict=True):
            assert matches(want, line), f"{where}: {line!r} is not {want!r}"


EVERY = shell_blocks()
RUNNABLE = chains()


def test_every_shell_example_is_run_or_skipped_with_a_reason():
    unaccounted = [b.name for b in EVERY if b.kind is None and skip_reason(b) is None]
    assert unaccounted == [], "mark each runnable (<!-- example: runs -->) or say why not here"
    both = [b.name for b in EVERY if b.kind is not None and skip_reason(b) is not None]
    assert both == []
    stale = [
        key
        for key in SKIPPED
        if not any(b.file == key[0] and b.first_line.startswith(key[1]) for b in EVERY)
    ]
    assert stale == []


def test_the_docs_name_no_path_of_one_machine():
    machine = re.compile(r"(?<![\w.])/(?:work|root|Users/\w+|home/(?!dev/|me/)\w+)/")
    venv = re.compile(r"(?<![\w.~])/(?!path/to/)[\w./-]*venv/bin/")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in DOCS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if machine.search(line) or venv.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    "block", [b for b in EVERY if b.kind is None], ids=lambda b: b.name.replace("/", "-")
)
def test_a_shell_example_that_does_not_run_here_says_why(block: Block):
    pytest.skip(skip_reason(block) or "not marked: see the test above")


@pytest.mark.parametrize("chain", RUNNABLE, ids=lambda c: c[0].name.replace("/", "-"))
def test_a_shell_example_runs_as_written(chain: list[Block], tmp_path: Path):
    run(chain, tmp_path)
