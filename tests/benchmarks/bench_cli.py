"""``dsh-memory list --json`` of an 8 MiB file beside the host's own code listing it (issue 35).
Not a test (no asserts on time).

Run:  DSH_HOST_SRC=<the host plugin's git dir> DSH_HOST_BUILD=/tmp/dsh-host-build \\
        python tests/benchmarks/bench_cli.py [--pairs 9] [--markdown FILE]

Whole processes, stdout to /dev/null, bytecode cached as an installed program has it:

- ours: the installed ``dsh-memory list --scope project --all --json`` of an 8 MiB project file
  (the realistic records ``bench_store.py`` builds);
- the peer: the host's code in node listing the same file (``tests/host-harness/host.mjs list
  --full``: its ``open()``, every record as indent-2 JSON; the harness is built in
  ``$DSH_HOST_BUILD`` when missing). Without ``DSH_HOST_SRC``: one python process that
  ``json.loads`` each line and ``json.dumps`` the list (a floor, not the target's peer).

The target compares CPU time (user + system of the whole process), steadier than wall time on
a shared machine: ours <= 1.0x the host's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_startup import program  # noqa: E402
from bench_store import build_file  # noqa: E402
from sidebyside import Table, interleaved, median, ratio_text, ratios, run_process, seconds  # noqa: E402
from storegen import MIB, installed_bytecode  # noqa: E402

from dsh_memory_tui.jsonl import MAX_STORE_BYTES  # noqa: E402

JSON_FLOOR = (
    "import json, sys\n"
    "lines = open(sys.argv[1], 'rb').read().split(b'\\n')[:-1]\n"
    "sys.stdout.write(json.dumps([json.loads(l) for l in lines], ensure_ascii=False, indent=2))\n"
)


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


def measure_list(table: Table, base: Path, pairs: int) -> None:
    workspace, home = base / "ws", base / "home"
    path = build_file(workspace, MAX_STORE_BYTES, 1100)
    ours = [*program("dsh-memory"), "--home", str(home), "--workspace", str(workspace)]
    ours += ["--user", "alice", "list", "--scope", "project", "--all", "--json"]
    host = host_command(home, workspace)
    if host is not None:
        peer_name, (peer, env) = "the host's node code (`host.mjs list --full`)", host
    else:
        peer_name, peer, env = "python json.loads + json.dumps (no DSH_HOST_SRC)", None, None
        peer = [sys.executable, "-c", JSON_FLOOR, str(path)]
    got = interleaved(
        {"ours": lambda: run_process(ours), "peer": lambda: run_process(peer, env=env)}, pairs
    )
    cpu = ratios(got["ours"], got["peer"], cpu=True)
    table.add(
        f"`dsh-memory list --json` of {path.stat().st_size / MIB:.1f} MiB, whole process, CPU",
        f"CPU {seconds(got['ours'], cpu=True)}; wall {seconds(got['ours'])}",
        f"{peer_name}: CPU {seconds(got['peer'], cpu=True)}; wall {seconds(got['peer'])}",
        f"CPU {ratio_text(cpu)}; wall {ratio_text(ratios(got['ours'], got['peer']))}",
        "<= 1.00x (CPU)" if host is not None else "(the host's code is the target's peer)",
        median(cpu) <= 1.0 if host is not None else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9, help="interleaved pairs (at least 7)")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dsh-bench-cli-"))
    installed_bytecode(base)
    table = Table("Listing", "python tests/benchmarks/bench_cli.py")
    table.begin()
    try:
        measure_list(table, base, args.pairs)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    table.end(args.markdown)


if __name__ == "__main__":
    main()
