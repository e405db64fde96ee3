"""CLI benchmark: whole processes, as a user or a script runs them. Not a test (no asserts on time).

Run:  /work/venv/bin/python tests/benchmarks/bench_cli.py [--rounds 7]
      DSH_HOST_SRC=<the host plugin's git dir> ... bench_cli.py   (compares with the host itself)

- ``dsh-memory list --json --all`` of an 8 MiB project file (the one bench_store.py builds),
  stdout to /dev/null. With ``DSH_HOST_SRC``, against the host listing the same file in node
  (``host.mjs list --full``: its ``open()``, every record as indent-2 JSON; the harness is built
  in ``$DSH_HOST_BUILD`` or ``${TMPDIR:-/tmp}/dsh-host-build`` when missing). Without it,
  against one python process that ``json.loads`` each line and ``json.dumps`` the list.
- ``dsh-memory propose`` into an empty store (a fresh home and workspace each round), against
  ``python -c pass``: what a writing command costs beyond starting python; and two floors,
  python importing pydantic, and python importing our record model.

Each figure is the best of interleaved rounds (the least disturbed by other processes): wall
time, and the processes' CPU time (user + system), steadier on a busy machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import build_file, print_table  # noqa: E402
from storegen import installed_bytecode  # noqa: E402

from dsh_memory_tui.jsonl import MAX_STORE_BYTES  # noqa: E402

OURS = [sys.executable, "-m", "dsh_memory_tui.cli"]
JSON_BASELINE = (
    "import json, sys\n"
    "lines = open(sys.argv[1], 'rb').read().split(b'\\n')[:-1]\n"
    "sys.stdout.write(json.dumps([json.loads(l) for l in lines], ensure_ascii=False, indent=2))\n"
)


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd`` (stdout discarded; a failure raises)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def best_of(rounds: int, runs: dict[str, tuple[list[str], dict[str, str] | None]]) -> dict:
    """Interleaved rounds of every command: the best wall and the best CPU time of each."""
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (cmd, env) in runs.items():
            wall, cpu = timed(cmd, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: (min(walls[name]), min(cpus[name])) for name in runs}


def host_command(home: Path, workspace: Path) -> tuple[list[str], dict[str, str]] | None:
    """The host's own listing of the project file, or None without ``DSH_HOST_SRC``."""
    host_src = os.environ.get("DSH_HOST_SRC")
    if not host_src:
        return None
    from tests.interop.host import HOST_MJS, default_build_dir, ensure_build

    build = default_build_dir()
    ensure_build(host_src, build)
    cmd = ["node", str(HOST_MJS), "list", "--full", "--home", str(home)]
    cmd += ["--workspace", str(workspace), "--scope", "project"]
    return cmd, {**os.environ, "DSH_HOST_BUILD": str(build)}


def measure_list(base: Path, rounds: int) -> tuple[str, dict]:
    workspace, home = base / "ws", base / "home"
    path = build_file(workspace, MAX_STORE_BYTES, 1100)
    ours = [*OURS, "--home", str(home), "--workspace", str(workspace), "--user", "alice"]
    ours += ["list", "--scope", "project", "--all", "--json"]
    host = host_command(home, workspace)
    if host is not None:
        baseline_name = "host (node host.mjs list --full)"
        baseline = host
    else:
        baseline_name = "python json.loads + json.dumps"
        baseline = ([sys.executable, "-c", JSON_BASELINE, str(path)], None)
    got = best_of(rounds, {"ours": (ours, None), baseline_name: baseline})
    return baseline_name, {"ours": got["ours"], "baseline": got[baseline_name], "path": path}


def measure_propose(base: Path, rounds: int) -> dict:
    def fresh() -> list[str]:
        site = Path(tempfile.mkdtemp(dir=base))
        (site / "ws").mkdir()
        return [
            *OURS,
            "--home",
            str(site / "home"),
            "--workspace",
            str(site / "ws"),
            "--user",
            "alice",
            "propose",
            "--scope",
            "project",
            "--type",
            "fact",
            "--title",
            "Tests run on sqlite",
            "--content",
            "The suite uses sqlite; CI runs it on every push.",
            "--source-ref",
            "session:bench",
        ]

    # What no writing command can go below while records are pydantic models: python, then
    # pydantic imported, then our record model built (every command that reads or writes a
    # record needs it).
    floors = {
        "pass": [sys.executable, "-c", "pass"],
        "pydantic": [sys.executable, "-c", "from pydantic import BaseModel"],
        "model": [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(REPO)!r}); import dsh_memory_tui.model",
        ],
    }
    walls: dict[str, list[float]] = {name: [] for name in ("ours", *floors)}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    for _ in range(rounds):
        for name in walls:
            # A new empty store each round, made before the clock.
            wall, cpu = timed(fresh() if name == "ours" else floors[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: (min(walls[name]), min(cpus[name])) for name in walls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of list (propose: 3x)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dsh-bench-cli-"))
    installed_bytecode(base)
    try:
        baseline_name, listing = measure_list(base, args.rounds)
        propose = measure_propose(base, args.rounds * 3)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    ms = 1000.0
    lw, lc = listing["ours"]
    bw, bc = listing["baseline"]
    pw, pc = propose["ours"]
    qw, qc = propose["pass"]
    rows = [
        (
            f"list --json of 8 MiB / {baseline_name}",
            f"{lw / bw:.2f}x (cpu {lc / bc:.2f}x)",
            "<= 1.00x" if baseline_name.startswith("host") else "",
            f"{lw * ms:.0f} ms vs {bw * ms:.0f} ms wall; cpu {lc * ms:.0f} ms vs {bc * ms:.0f} ms",
        ),
        (
            "propose into an empty store, whole process",
            f"{pw:.3f} s (cpu {pc:.3f} s)",
            "<= 0.120 s",
            f"python -c pass: {qw * ms:.0f} ms wall, cpu {qc * ms:.0f} ms "
            f"({pw / qw:.1f}x; cpu {pc / qc:.1f}x)",
        ),
        (
            "floor: python + `from pydantic import BaseModel`",
            f"{propose['pydantic'][0]:.3f} s",
            "",
            "any command that builds a pydantic model",
        ),
        (
            "floor: python + our record model imported",
            f"{propose['model'][0]:.3f} s",
            "",
            "any command that reads or writes a record",
        ),
    ]
    print_table(rows)


if __name__ == "__main__":
    main()
