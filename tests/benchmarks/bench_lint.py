"""Review evidence benchmark: risk flags and near-duplicates (``dsh_memory_tui.lint``) for a
morning queue of 1,000 proposals against a store of 7,000 records, as the app computes them in
a worker thread (off the UI thread), and per appended record as the live view does. Not a test
(no asserts on time); the floors of precision and recall are held by tests/lint.

Run:  python tests/benchmarks/bench_lint.py [--records 7000] [--proposals 1000] [--rounds 3]

Targets (issue 26): everything for 1,000 proposals <= 1 s; one appended record <= 5 ms.
Baseline of the same run: ``json.loads`` of the same records' lines (what any reader pays to
see them at all), so the ratios say what the evidence costs on top of reading.

The text: titles and contents drawn from the words of a realistic project's records
(tests/lint/distinct_records.txt) and pseudo-words, Zipf-distributed like prose; one proposal
in ten rewords a stored record (a near-duplicate), one in ten carries a text of the labelled
set (secrets, personal data, instructions, links).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from lint.labelled import LABELLED  # noqa: E402

from dsh_memory_tui import lint  # noqa: E402
from dsh_memory_tui.model import (  # noqa: E402
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    SourceRef,
    make_record,
)

DISTINCT = REPO / "tests" / "lint" / "distinct_records.txt"


def vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    words = sorted(set(re.findall(r"[A-Za-z]{3,}", DISTINCT.read_text(encoding="utf-8"))))
    syllables = ["ka", "lo", "mi", "ter", "sun", "ve", "ra", "do", "pex", "ul", "stor", "ing"]
    while len(words) < size:
        words.append("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    rng.shuffle(words)
    return words


def zipf_weights(n: int, s: float = 0.9) -> list[float]:
    """Cumulative Zipf weights over ``n`` ranks: low ranks are drawn far more often, as the
    content words of prose are."""
    out, total = [], 0.0
    for rank in range(1, n + 1):
        total += 1.0 / rank**s
        out.append(total)
    return out


def sentence(rng: random.Random, words: list[str], n: int, cum: list[float]) -> str:
    return " ".join(rng.choices(words, cum_weights=cum, k=n))


def record(i: int, title: str, content: str) -> Record:
    return make_record(
        scope=Scope.PROJECT,
        scope_key="root:" + "0" * 64,
        record_type=list(RecordType)[i % 4],
        title=title[:200],
        content=content,
        tags=[],
        provenance=Provenance(kind=ProvenanceKind.AGENT, note="memory proposal"),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="bench")],
        record_id=f"memory:bench-{i}",
        now=1_764_000_000_000 + i,
        check=False,
    )


def corpus(n_records: int, n_proposals: int, seed: int = 7) -> tuple[list[Record], list[Record]]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    cum = zipf_weights(len(words))

    def text(lo: int, hi: int) -> str:
        return sentence(rng, words, rng.randint(lo, hi), cum)

    stored = [record(i, text(4, 9), text(20, 45)) for i in range(n_records)]
    proposals = []
    for j in range(n_proposals):
        i = n_records + j
        if j % 10 == 0:  # a reworded copy of a stored record
            src = stored[rng.randrange(n_records)]
            t = src.title.split()
            rng.shuffle(t)
            c = src.content.split()
            del c[rng.randrange(len(c))]
            proposals.append(record(i, " ".join(t).upper(), " ".join(c) + "."))
        elif j % 10 == 1:  # a labelled text
            labelled, _ = LABELLED[j // 10 % len(LABELLED)]
            proposals.append(record(i, text(4, 6), labelled))
        else:
            proposals.append(record(i, text(4, 9), text(20, 45)))
    return stored, proposals


def evidence(stored: list[Record], proposals: list[Record]) -> tuple[int, int]:
    """What the app's worker computes for a queue: the index of everything seen, then each
    proposal's flags and near-duplicates."""
    index = lint.NearDuplicates([*stored, *proposals])
    flagged = near = 0
    for p in proposals:
        flagged += bool(lint.record_flags(p))
        near += bool(index.similar(p))
    return flagged, near


def in_worker(fn, *args):
    """Run ``fn`` in a thread, as the app's worker does; (result, wall seconds)."""
    out: list = []
    start = time.perf_counter()
    t = threading.Thread(target=lambda: out.append(fn(*args)))
    t.start()
    t.join()
    return out[0], time.perf_counter() - start


def cold() -> None:
    lint.flags.cache_clear()
    lint.fingerprint.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=7000)
    parser.add_argument("--proposals", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--appends", type=int, default=200)
    args = parser.parse_args()

    stored, proposals = corpus(args.records, args.proposals)
    lines = [r.to_line() for r in [*stored, *proposals]]

    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, float("inf")), seconds)

    counts = (0, 0)
    for _ in range(args.rounds):
        start = time.perf_counter()
        for line in lines:
            json.loads(line)
        keep("baseline: json.loads of every line", time.perf_counter() - start)

        cold()
        start = time.perf_counter()
        for p in proposals:
            lint.record_flags(p)
        keep(f"flags of {len(proposals)} proposals", time.perf_counter() - start)

        cold()
        start = time.perf_counter()
        index = lint.NearDuplicates([*stored, *proposals])
        keep(f"index of {len(stored) + len(proposals)} records", time.perf_counter() - start)
        start = time.perf_counter()
        for p in proposals:
            index.similar(p)
        keep(f"near-duplicates of {len(proposals)} proposals", time.perf_counter() - start)

        cold()
        counts, wall = in_worker(evidence, stored, proposals)
        keep("all of it, cold, in a worker thread", wall)

        # The live view: one record appended, indexed, flagged and compared.
        cold()
        index = lint.NearDuplicates(stored)
        worst = 0.0
        start = time.perf_counter()
        for p in proposals[: args.appends]:
            t0 = time.perf_counter()
            index.update(p)
            lint.record_flags(p)
            index.similar(p)
            worst = max(worst, time.perf_counter() - t0)
        keep("per appended record (mean)", (time.perf_counter() - start) / args.appends)
        keep("per appended record (worst)", worst)

    base = best["baseline: json.loads of every line"]
    print(f"{args.records} stored records, {args.proposals} proposals, best of {args.rounds}")
    print(f"{'':44} {'ms':>9} {'x baseline':>11}")
    for name, seconds in best.items():
        print(f"{name:44} {seconds * 1000:9.2f} {seconds / base:11.2f}")
    print(f"proposals flagged: {counts[0]}, with a near-duplicate: {counts[1]}")
    total = best["all of it, cold, in a worker thread"]
    append = best["per appended record (worst)"]
    print(f"target <= 1000 ms for all: {'met' if total <= 1 else 'MISSED'} ({total * 1000:.0f} ms)")
    print(
        f"target <= 5 ms per appended record: {'met' if append <= 0.005 else 'MISSED'}"
        f" (worst {append * 1000:.2f} ms)"
    )

    print(f"\nlabelled set: {len(LABELLED)} texts")
    print(f"{'kind':12} {'precision':>9} {'recall':>7} {'texts':>6}")
    for kind in lint.FLAG_KINDS:
        tp = fp = fn = 0
        for text, expected in LABELLED:
            got = kind in lint.kinds(lint.flags("t", text))
            want = kind in expected
            tp, fp, fn = tp + (got and want), fp + (got and not want), fn + (want and not got)
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        print(f"{kind:12} {p:9.3f} {r:7.3f} {tp + fn:6}")


if __name__ == "__main__":
    main()
