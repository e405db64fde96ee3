"""Symbol citation benchmark: ``dsh-memory sources``'s check of 5,000 verified records citing
2,000 symbols (functions and methods) in 1,000 files of Python, TypeScript and Go. Not a test
(no asserts on time).

Run:  python tests/benchmarks/bench_symbols.py [--files 1000] [--symbols 2000] [--records 5000]

Prints, in one run on this machine (rounds interleaved; median and spread; CPU time):
- the baseline: reading and hashing each cited file once (the least any check can do);
- cold: a new ``Sources`` as a new process makes it (nothing in memory; the verdicts kept in
  the home when the citations were made, ``sources.verdicts``) checking every record: each
  file read and hashed, none parsed, as none changed since (target <= 3x the baseline);
- cold, nothing kept: the same with no kept verdicts (the first check after an older version
  or another program cited them): each file read and parsed once for all its symbols;
- warm: the same ``Sources`` checking them again, nothing changed: a stat per file (target
  <= 0.1x cold);
- touched: warm after 50 files were rewritten (only those read and parsed again).
The store's load is not timed (``bench_store``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_memory_tui import symbols  # noqa: E402
from dsh_memory_tui.model import (  # noqa: E402
    Origin,
    Provenance,
    ProvenanceKind,
    RecordType,
    Scope,
    make_record,
)
from dsh_memory_tui.paths import workspace_root_id  # noqa: E402
from dsh_memory_tui.sources import Citation, Sources, report, verdicts_path  # noqa: E402
from dsh_memory_tui.store import MemoryStore  # noqa: E402

ROUNDS = 5


def _python(i: int, n: int, rng: random.Random) -> tuple[str, list[str]]:
    body = [f'"""Module {i}."""\n\nimport os\n\n\nclass Worker{i}:\n']
    names = []
    for k in range(n):
        body.append(
            f"    def run{k}(self, a, b):\n        '''Run step {k}.'''\n"
            f"        x = a + b * {rng.randrange(100)}  # weight\n"
            f"        if x > {k}:\n            return os.path.join(str(x), 'p{k}')\n"
            f"        return [a, b, {k}]\n\n"
        )
        names.append(f"Worker{i}.run{k}")
    return "".join(body), names


def _typescript(i: int, n: int, rng: random.Random) -> tuple[str, list[str]]:
    body = [f"// module {i}\nimport {{ get }} from './net';\n\n"]
    names = []
    for k in range(n):
        body.append(
            f"export async function handle{k}(user: string, n: number): Promise<number> {{\n"
            f"  const r = await get(`/u/${{user}}/{k}`, {{ n, w: {rng.randrange(100)} }});\n"
            f"  return r.status === 200 ? n + {k} : -1;\n}}\n\n"
        )
        names.append(f"handle{k}")
    return "".join(body), names


def _go(i: int, n: int, rng: random.Random) -> tuple[str, list[str]]:
    body = [f'package pkg{i}\n\nimport "fmt"\n\ntype Client{i} struct{{ n int }}\n\n']
    names = []
    for k in range(n):
        body.append(
            f"// Fetch{k} fetches.\nfunc (c *Client{i}) Fetch{k}(url string) string {{\n"
            f'\tif c.n > {rng.randrange(100)} {{\n\t\treturn fmt.Sprintf("%s/{k}", url)\n\t}}\n'
            f"\treturn url\n}}\n\n"
        )
        names.append(f"Client{i}.Fetch{k}")
    return "".join(body), names


def make_tree(ws: Path, files: int, per_file: int, rng: random.Random) -> list[tuple[str, str]]:
    """``files`` source files (a third each Python, TypeScript, Go) of ``2 * per_file``
    definitions; the (path, symbol) of ``per_file`` of each."""
    cited = []
    makers = ((".py", _python), (".ts", _typescript), (".go", _go))
    for i in range(files):
        ext, make = makers[i % 3]
        rel = f"pkg{i % 20}/mod{i}{ext}"
        text, names = make(i, 2 * per_file, rng)
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
        # Written an hour ago, as a workspace's files are: a file modified within 2 s of a
        # check is read again at the next (``text.RACY_NS``), which is not what is measured.
        os.utime(ws / rel, ns=(time.time_ns(), time.time_ns() - 3600 * 10**9))
        cited += [(rel, name) for name in rng.sample(names, per_file)]
    return cited


def make_store(home: Path, ws: Path, cited: list[tuple[str, str]], records: int) -> MemoryStore:
    """``records`` verified project records, each citing one of ``cited`` (the refs made by a
    ``Sources`` as the store's, keeping their verdicts in the home), written as one file."""
    store = MemoryStore.open(home, ws, "bench")
    maker = store.sources
    refs = [maker.cite(Citation(path, symbol=name)) for path, name in cited]
    maker.keep_snapshots(refs)
    root = workspace_root_id(ws)
    data = store.file_for(Scope.PROJECT).path
    data.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(data, "w") as f:
        for n in range(records):
            record = make_record(
                scope=Scope.PROJECT,
                scope_key=root,
                record_type=RecordType.FACT,
                title=f"fact {n}",
                content=f"about {refs[n % len(refs)].id}",
                tags=[],
                provenance=Provenance(kind=ProvenanceKind.USER),
                origin=Origin.USER_AUTHORED,
                source_refs=[refs[n % len(refs)]],
                verification="verified",
                verified_at=1,
            )
            f.write(json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":")))
            f.write("\n")
    os.chmod(data, 0o600)
    return store


def timed(fn: Callable[[], object], setup: Callable[[], None] | None = None) -> float:
    if setup is not None:
        setup()
    t = time.process_time()  # CPU, steadier than wall time on a busy machine
    fn()
    return time.process_time() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--symbols", type=int, default=2000)
    parser.add_argument("--records", type=int, default=5000)
    args = parser.parse_args()
    rng = random.Random(34)
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        cited = make_tree(ws, args.files, max(1, args.symbols // args.files), rng)
        store = make_store(home, ws, cited, args.records)
        records = store.records()
        assert len(records) == args.records, len(records)
        paths = sorted({p for p, _ in cited})
        size = sum(os.path.getsize(ws / p) for p in paths)

        def hash_once() -> None:
            for rel in paths:
                with open(ws / rel, "rb") as f:
                    hashlib.sha256(f.read()).hexdigest()

        holder: dict[str, Sources] = {}
        kept = verdicts_path(store.paths.home_memory_dir, store.paths.root_id)

        def fresh() -> None:
            holder["s"] = Sources(ws, verdicts=kept)

        def unkept() -> None:
            holder["s"] = Sources(ws)

        def check() -> None:
            got = report(holder["s"], records)
            assert not any(rs.needs_review for rs in got)

        base, cold, warm, bare = [], [], [], []
        for _ in range(ROUNDS):  # interleaved: each round measures all four
            base.append(timed(hash_once))
            before = symbols.parses
            cold.append(timed(check, setup=fresh))
            parsed = symbols.parses - before
            warm.append(timed(check))
            before = symbols.parses
            bare.append(timed(check, setup=unkept))
            bare_parsed = symbols.parses - before
        touched = random.Random(1).sample(paths, 50)
        for rel in touched:
            text = (ws / rel).read_text()
            (ws / rel).unlink()
            (ws / rel).write_text(text + "\n")
        before = symbols.parses
        after_touch = timed(check)
        reparsed = symbols.parses - before

        def show(name: str, values: list[float]) -> str:
            med, low, high = (1000 * f(values) for f in (statistics.median, min, max))
            return f"{name}: {med:.0f} ms (spread {low:.0f}-{high:.0f})"

        print(
            f"{args.records} records citing {len(cited)} symbols in {len(paths)} files "
            f"({size / 1e6:.1f} MB)"
        )
        print(show("baseline: read + sha256 of each file once", base))
        print(show(f"cold: a new Sources, every record checked ({parsed} files parsed)", cold))
        print(show(f"cold, no verdict kept ({bare_parsed} files parsed)", bare))
        print(show("warm: checked again, nothing changed", warm))
        print(
            f"touched: 50 files rewritten, checked again: {after_touch * 1000:.0f} ms "
            f"({reparsed} files parsed)"
        )
        b, c, w, n = (statistics.median(v) for v in (base, cold, warm, bare))
        print(f"cold / baseline: {c / b:.1f}x (target <= 3x)")
        print(f"cold, no verdict kept / baseline: {n / b:.1f}x")
        print(f"warm / cold: {w / c:.3f}x (target <= 0.1x)")


if __name__ == "__main__":
    main()
