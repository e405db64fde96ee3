"""Host refusals while we write: the host gives up at once when it finds the lock held ("Memory
store is busy"), so every moment we hold it can cost a host write. Not a test (no asserts).

The real host (``tests/host-harness``; its build in ``$DSH_HOST_BUILD``, default
``${TMPDIR:-/tmp}/dsh-host-build``) appends proposals every 10 ms
(``host.mjs append-loop N --delay-ms 10``) while our store does 100 verifies, one at a time, and
then one batch verify of 150 records, all on the same project file. Printed per mode: the host's
attempts, its refusals, and how long our writes took. Modes, measured in the same run:

- ``host alone``: no writes of ours (refusals must be 0: the baseline);
- ``ours, decided under the lock``: every write decided with the lock held (what we did before;
  ``writer._OPTIMISTIC_TRIES = 0``, the fallback path);
- ``ours``: decided first, the lock held only to append (target: 0 refusals).

Run:  python tests/benchmarks/bench_host_refusals.py [--rounds 3] [--verifies 100] [--batch 150]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_memory_tui.model import Scope, SourceRef  # noqa: E402
from dsh_memory_tui.store import MemoryStore, writer  # noqa: E402

HOST_MJS = Path(__file__).resolve().parents[1] / "host-harness" / "host.mjs"


def build_dir() -> Path:
    return Path(
        os.environ.get("DSH_HOST_BUILD")
        or Path(os.environ.get("TMPDIR") or tempfile.gettempdir()) / "dsh-host-build"
    )


def one_round(mode: str, verifies: int, batch: int, host_writes: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        store = MemoryStore.open(home, ws, "bench")
        refs = [SourceRef(kind="url", id="https://example.com/bench")]
        ids = [
            store.propose(Scope.PROJECT, "fact", f"ours {n}", f"ours: {n}", source_refs=refs).id
            for n in range(verifies + batch)
        ]
        go = Path(tmp) / "go"
        cmd = ["node", str(HOST_MJS), "append-loop", str(host_writes), "--delay-ms", "10"]
        cmd += ["--wait-for", str(go), "--home", str(home), "--workspace", str(ws), "--raw"]
        env = {**os.environ, "DSH_HOST_BUILD": str(build_dir())}
        host = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)  # let node start and open the store before the first write of ours
        go.touch()
        spent = 0.0
        if mode != "host alone":
            saved = writer._OPTIMISTIC_TRIES
            writer._OPTIMISTIC_TRIES = 0 if mode == "ours, decided under the lock" else saved
            try:
                started = time.perf_counter()
                for rid in ids[:verifies]:
                    store.verify(rid)
                store.apply_many("verify", ids[verifies:])
                spent = time.perf_counter() - started
            finally:
                writer._OPTIMISTIC_TRIES = saved
        out, err = host.communicate(timeout=600)
        if host.returncode != 0:
            raise SystemExit(f"host.mjs failed ({host.returncode}): {out.decode()}{err.decode()}")
        summary = json.loads(out)
        busy = sum(n for key, n in summary["errors"].items() if "busy" in key)
        left = len(store.records(Scope.PROJECT, include_inactive=True))
        return {
            "attempted": summary["attempted"],
            "refused": summary["failed"],
            "busy": busy,
            "ours_s": spent,
            "records": left,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--verifies", type=int, default=100)
    parser.add_argument("--batch", type=int, default=150)
    parser.add_argument(
        "--host-writes", type=int, default=300, help="host appends per round (every 10 ms)"
    )
    args = parser.parse_args()
    if not (build_dir() / "lib").is_dir():
        raise SystemExit(f"no host build in {build_dir()}: see tests/host-harness/README.md")
    modes = ["host alone", "ours, decided under the lock", "ours"]
    print(
        f"host: {args.host_writes} appends, one every 10 ms; ours: {args.verifies} verifies, "
        f"then a batch of {args.batch}; {args.rounds} round(s) per mode, interleaved"
    )
    totals = {m: {"attempted": 0, "refused": 0, "busy": 0, "ours_s": 0.0} for m in modes}
    for _ in range(args.rounds):
        for mode in modes:
            got = one_round(mode, args.verifies, args.batch, args.host_writes)
            for key in ("attempted", "refused", "busy"):
                totals[mode][key] += got[key]  # type: ignore[operator]
            totals[mode]["ours_s"] += got["ours_s"]  # type: ignore[operator]
    print(f"{'mode':32} {'host writes':>11} {'refused':>8} {'per 1000':>9} {'our writes s':>13}")
    for mode in modes:
        t = totals[mode]
        per = 1000 * t["refused"] / max(1, t["attempted"])
        print(
            f"{mode:32} {t['attempted']:>11} {t['refused']:>8} {per:>9.1f} "
            f"{t['ours_s'] / args.rounds:>13.2f}"
        )


if __name__ == "__main__":
    main()
