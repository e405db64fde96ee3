"""Start-up benchmark (issue 35): the app's first frame and every CLI command's start, each
side by side with its floor or peer in the same run. Not a test (no asserts on time).

Run:  python tests/benchmarks/bench_startup.py [--pairs 9] [--peers DIR] [--markdown FILE]

Whole processes, as a user or git runs them: the installed ``dsh-memory`` and
``dsh-memory-tui`` of this interpreter's environment, bytecode cached (``installed_bytecode``).

- the app's first frame (a 2-record store, a real pseudo-terminal, until the newest record's
  title is on screen) vs a bare Textual app (one Static) and visidata on the same file
  (installed from PyPI into a throwaway virtualenv; ``--peers DIR`` keeps it between runs);
- ``dsh-memory --version`` and ``--help`` vs ``python -c pass``;
- commands that read records (``list --json``, ``propose``, ``merge-file`` of empty files) vs
  ``python -c "import pydantic"``;
- ``merge-file`` as git's driver on 7 MiB sides vs ``git merge-file`` of the same three files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_app import BARE_TEXTUAL, terminal_first_frame  # noqa: E402
from sidebyside import (  # noqa: E402
    Sample,
    Table,
    interleaved,
    median,
    ratio_text,
    ratios,
    run_process,
    seconds,
    visidata,
)
from storegen import fill, installed_bytecode, paths  # noqa: E402

BIN = Path(sys.executable).parent
PYTHON = sys.executable


def program(name: str) -> list[str]:
    """The installed console script, as a user runs it (else ``python -m``)."""
    script = BIN / name
    if script.exists():
        return [str(script)]
    return [PYTHON, "-m", "dsh_memory_tui" if name == "dsh-memory-tui" else "dsh_memory_tui.cli"]


def store_args(p) -> list[str]:
    return ["--home", str(p.home), "--workspace", str(p.workspace), "--user", "alice"]


def first_frame(table: Table, tmp: Path, pairs: int, peers: Path | None) -> None:
    small = paths(tmp / "frame")
    file = small.project_file()
    fill(file, count=2)
    lines = file.path.read_bytes().splitlines()
    newest = json.loads(lines[-1])["title"]
    vd = visidata(tmp, peers / "vd-venv" if peers else None)
    bare = BARE_TEXTUAL.format(imports="")
    runs = {
        "ours": ([*program("dsh-memory-tui"), *store_args(small)], newest),
        "bare": ([PYTHON, "-c", bare], "a bare Textual frame"),
        # visidata's title column is 20 cells wide: the first record's title, cut.
        "vd": ([vd, str(file.path)], json.loads(lines[0])["title"][:17]),
    }

    def job(name: str):
        argv, needle = runs[name]
        return lambda: Sample(*terminal_first_frame(argv, needle))

    got = interleaved({name: job(name) for name in runs}, pairs)
    extra = [a.wall - b.wall for a, b in zip(got["ours"], got["bare"], strict=True)]
    table.add(
        "app's first frame, 2-record store (real terminal) / a bare Textual app",
        seconds(got["ours"]),
        f"bare Textual {seconds(got['bare'])}",
        f"+{median(extra) * 1000:.0f} ms ({min(extra) * 1000:.0f}-{max(extra) * 1000:.0f}); "
        f"{ratio_text(ratios(got['ours'], got['bare']))}",
        "<= bare + 150 ms",
        median(extra) <= 0.150,
    )
    to_vd = ratios(got["ours"], got["vd"])
    table.add(
        "app's first frame / visidata's, same file",
        seconds(got["ours"]),
        f"visidata {seconds(got['vd'])}",
        f"{ratio_text(to_vd)}; CPU {ratio_text(ratios(got['ours'], got['vd'], cpu=True))}",
        "<= 0.80x",
        median(to_vd) <= 0.80,
    )


def cli_starts(table: Table, tmp: Path, pairs: int) -> None:
    store = paths(tmp / "cli")
    fill(store.project_file(), count=2)
    empty = tmp / "empty"
    empty.mkdir()
    for name in ("base", "ours", "theirs"):
        (empty / name).write_bytes(b"")
    cli = [*program("dsh-memory"), *store_args(store)]
    propose = [*cli, "propose", "--scope", "project", "--type", "fact", "--title"]
    propose += ["Tests run on sqlite", "--content", "CI runs them.", "--source-ref", "session:b"]
    merge = [*cli, "merge-file", *(str(empty / n) for n in ("base", "ours", "theirs"))]
    jobs = {
        "python": [PYTHON, "-c", "pass"],
        "pydantic": [PYTHON, "-c", "import pydantic"],
        "--version": [*program("dsh-memory"), "--version"],
        "--help": [*program("dsh-memory"), "--help"],
        "list --json": [*cli, "list", "--scope", "project", "--json"],
        "propose": propose,
        "merge-file": merge,
    }
    got = interleaved(
        {
            name: (lambda argv=argv: run_process(argv, cwd=store.workspace))
            for name, argv in jobs.items()
        },
        pairs,
    )
    for name, floor, label in (
        ("--version", "python", "`python -c pass`"),
        ("--help", "python", "`python -c pass`"),
        ("list --json", "pydantic", '`python -c "import pydantic"`'),
        ("propose", "pydantic", '`python -c "import pydantic"`'),
        ("merge-file", "pydantic", '`python -c "import pydantic"`'),
    ):
        what = "a 2-record store" if name in ("list --json", "propose") else "no store read"
        if name == "merge-file":
            what = "empty files, as git's driver"
        by = ratios(got[name], got[floor])
        table.add(
            f"`dsh-memory {name}` start ({what})",
            f"{seconds(got[name])}; CPU {seconds(got[name], cpu=True)}",
            f"{label} {seconds(got[floor])}",
            f"{ratio_text(by)}; CPU {ratio_text(ratios(got[name], got[floor], cpu=True))}",
            "<= 1.50x",
            median(by) <= 1.50,
        )


def merge_driver(table: Table, tmp: Path, pairs: int) -> None:
    from bench_team import build

    root = tmp / "merge"
    root.mkdir()
    base, ours, theirs, _, _ = build(root, 7.0, 120)
    workspace = root / "alice"  # the merging clone (build's location)
    workspace.mkdir()
    original = ours.read_bytes()
    cli = [*program("dsh-memory"), "--home", str(root / "home"), "--workspace", str(workspace)]
    git = shutil.which("git") or "git"

    def ours_job() -> Sample:
        ours.write_bytes(original)
        return run_process([*cli, "merge-file", str(base), str(ours), str(theirs)], cwd=workspace)

    def git_job() -> Sample:
        ours.write_bytes(original)
        # git's own three-way merge of text; its status is the number of conflicts.
        return run_process([git, "merge-file", str(ours), str(base), str(theirs)], check=False)

    got = interleaved({"ours": ours_job, "git": git_job}, pairs)
    mib = len(original) / 1024 / 1024
    by = ratios(got["ours"], got["git"])
    table.add(
        f"`dsh-memory merge-file` as git's driver, {mib:.1f} MiB sides",
        f"{seconds(got['ours'])}; CPU {seconds(got['ours'], cpu=True)}",
        f"`git merge-file` {seconds(got['git'])}",
        f"{ratio_text(by)}; CPU {ratio_text(ratios(got['ours'], got['git'], cpu=True))}",
        "(a reference: merging by record id validates every line git copies as text)",
        None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9, help="interleaved pairs (at least 7)")
    parser.add_argument("--peers", type=Path, help="keep the peers' installs here between runs")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument(
        "--only", choices=("frame", "cli", "merge"), help="one section (default: all)"
    )
    args = parser.parse_args()
    table = Table("Start-up", "python tests/benchmarks/bench_startup.py")
    tmp = Path(tempfile.mkdtemp(prefix="dsh-bench-startup-"))
    installed_bytecode(tmp)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    table.begin()
    try:
        if args.only in (None, "frame"):
            first_frame(table, tmp, args.pairs, args.peers)
        if args.only in (None, "cli"):
            cli_starts(table, tmp, args.pairs)
        if args.only in (None, "merge"):
            merge_driver(table, tmp, args.pairs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table.end(args.markdown)


if __name__ == "__main__":
    main()
