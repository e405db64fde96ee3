"""Every case of host-corpus/autowriter/: the same tool-result lines, flush by flush, give the
lines the host's ``writeAutoFact`` appended, byte for byte (clock values aside), and the same
final view of the session file.

With ``DSH_HOST_SRC`` set, the real host runs too: it writes the odd flushes and we the even
ones (and the other way round) on one session file, and the file ends as the host alone left it;
and the host opens every file we wrote without a warning.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui.autowriter import AutoWriter
from dsh_memory_tui.governance import display_conflict_groups
from dsh_memory_tui.model import effective, now_ms
from dsh_memory_tui.store import MemoryStore

from .corpus import AUTOWRITER, AUTOWRITER_SESSION, CaseDirs, corpus_json, make_case_dirs
from .host import HostHarness
from .hostform import host_form

CASES = sorted(p.name for p in AUTOWRITER.iterdir() if (p / "case.json").is_file())
SESSION_KEY = "home/workspace-memory/sessions/session-s-auto.jsonl"
_TIME = re.compile(rb'"(createdAt|updatedAt)":\d+')


def masked(data: bytes) -> bytes:
    """The lines with their clock values (createdAt, updatedAt) replaced by ``T``."""
    return _TIME.sub(rb'"\1":T', data)


def times(data: bytes) -> list[tuple[int, int]]:
    return [(r["createdAt"], r["updatedAt"]) for r in map(json.loads, data.splitlines())]


def load(case: str, dirs: CaseDirs) -> dict[str, Any]:
    result: dict[str, Any] = corpus_json(Path("autowriter", case, "case.json"), dirs)
    return result


class Ours:
    """Our auto-writer on a case's home and workspace: one ``dsh-memory auto-write --events``
    run per flush over the whole log so far, as host.mjs ran the host."""

    def __init__(self, dirs: CaseDirs) -> None:
        self.dirs = dirs
        self.store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
        self.file = self.store.paths.session_file(AUTOWRITER_SESSION, dirs.root_id)

    def flush(self, lines: list[str]) -> list[str]:
        writer = AutoWriter(self.store, clock=lambda: 0.0)
        for line in lines:
            writer.on_tool_result(line)
        return writer.flush_all()

    def data(self) -> bytes:
        return self.file.path.read_bytes() if self.file.path.exists() else b""


def expected_change(flush: dict[str, Any], dirs: CaseDirs) -> bytes:
    change = flush["changes"].get(dirs.text(SESSION_KEY), {})
    assert set(change) <= {"created", "appended"}, change
    return "".join(change.values()).encode()


@pytest.mark.parametrize("case", CASES)
def test_each_flush_appends_what_the_host_appended(case: str, tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    spec = load(case, dirs)
    ours = Ours(dirs)
    log: list[str] = []
    for flush in spec["flushes"]:
        log += flush["newInputLines"]
        before = ours.data()
        written = ours.flush(log)
        after = ours.data()
        assert after.startswith(before)
        appended = after[len(before) :]
        assert masked(appended) == masked(expected_change(flush, dirs)), f"flush {flush['flush']}"
        for created, updated in times(appended):
            assert created <= updated
        # The digest whose line was written is the one the host wrote first (and returned).
        if flush["linesWritten"]:
            assert written == [flush["cli"]["output"]["writtenId"]]
            assert written == [flush["linesWritten"][0]["id"]]
        else:
            assert written == []


@pytest.mark.parametrize("case", CASES)
def test_the_final_view_is_the_hosts(case: str, tmp_path: Path) -> None:
    dirs = make_case_dirs(tmp_path)
    spec = load(case, dirs)
    ours = Ours(dirs)
    log: list[str] = []
    for flush in spec["flushes"]:
        log += flush["newInputLines"]
        ours.flush(log)
    view = ours.store.view(ours.file)
    view.refresh()
    records = [effective(r, now_ms()) for r in view.current.values()]
    groups = display_conflict_groups(records)  # the host's domain shows them
    seen = [host_form(r, groups.get(r.id)) for r in records]
    expected = spec["finalView"]["records"]
    strip = ("createdAt", "updatedAt")
    assert [{k: v for k, v in r.items() if k not in strip} for r in seen] == [
        {k: v for k, v in r.items() if k not in strip} for r in expected
    ]
    assert (view.corrupt, view.future, view.torn) == ([], [], False)
    # The session file itself, where the host wrote one, is the same file (clock aside).
    if spec["files"]:
        host_file = AUTOWRITER / case / SESSION_KEY
        assert masked(ours.data()) == masked(dirs.text(host_file.read_text()).encode())


def test_a_long_running_writer_gives_the_same_lines_as_one_run_per_flush(tmp_path: Path) -> None:
    """Our writer in one process across the flushes (the debounce's way) writes the same."""
    for case in ("same-paths-later-seq", "seven-digests-prune", "digest-changes"):
        dirs = make_case_dirs(tmp_path / case)
        spec = load(case, dirs)
        store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
        writer = AutoWriter(store, clock=lambda: 0.0)
        for flush in spec["flushes"]:
            for line in flush["newInputLines"]:
                writer.on_tool_result(line)
            writer.flush_all()
        file = store.paths.session_file(AUTOWRITER_SESSION, dirs.root_id).path
        host_file = AUTOWRITER / case / SESSION_KEY
        assert masked(file.read_bytes()) == masked(dirs.text(host_file.read_text()).encode())


# ------------------------------------------------------------------ the real host


def host_flush(host: HostHarness, dirs: CaseDirs, lines: list[str], n: int) -> dict[str, Any]:
    events = dirs.tmp / f"events-{n}.jsonl"
    events.write_text("".join(line + "\n" for line in lines))
    return host.run(
        "autowrite",
        "--events",
        str(events),
        home=dirs.home,
        workspace=dirs.workspace,
        scope="session",
        session=AUTOWRITER_SESSION,
    )


@pytest.mark.parametrize("first", ["host", "ours"])
@pytest.mark.parametrize("case", CASES)
def test_the_host_and_we_take_turns_on_one_file(
    host: HostHarness, case: str, first: str, tmp_path: Path
) -> None:
    dirs = make_case_dirs(tmp_path)
    spec = load(case, dirs)
    ours = Ours(dirs)
    log: list[str] = []
    for n, flush in enumerate(spec["flushes"]):
        log += flush["newInputLines"]
        before = ours.data()
        if (n % 2 == 0) == (first == "host"):
            out = host_flush(host, dirs, log, n)
            assert out["writtenId"] == flush["cli"]["output"]["writtenId"]
        else:
            ours.flush(log)
        appended = ours.data()[len(before) :]
        assert masked(appended) == masked(expected_change(flush, dirs)), f"flush {flush['flush']}"
    seen = host.run(
        "open-warnings",
        home=dirs.home,
        workspace=dirs.workspace,
        scope="session",
        session=AUTOWRITER_SESSION,
    )
    assert (seen["warnings"], seen["readOnly"]) == ([], False)
    assert seen["records"] == len(spec["finalView"]["records"])


PATHS = (
    "a.txt",
    "b.md",
    "src/z.ts",
    "./src/z.ts",
    "src//z.ts",
    "src\\y.ts",
    "B.md",
    "é.txt",
    "e.txt",
    "dir/",
    ".",
    "/etc/passwd",
    "../up.txt",
    "a/../b.txt",
    "file:///x",
    "C:\\w.txt",
    " padded.txt ",
    "\\\\server\\share.txt",
    "__WORKSPACE__/abs.txt",
    "__WORKSPACE__",
    "x, y.txt",
    'quote".txt',
    "file-10.txt",
    "file-9.txt",
    "_u.txt",
    "-d.txt",
)


def random_log(seed: int, n: int) -> list[str]:
    """Tool-result lines with the paths and orders that test the host's rules: duplicates in
    one line, seqs out of order and repeated, failed results, seq 0, lines without files."""
    import random

    rng = random.Random(seed)
    lines = []
    for i in range(n):
        files = [
            {
                "path": rng.choice(PATHS),
                "op": rng.choice(["create", "modify", "delete"]),
                "artifact": rng.random() < 0.3,
            }
            for _ in range(rng.randint(0, 4))
        ]
        seq = max(0, i + rng.randint(-4, 1))
        lines.append(
            json.dumps(
                {
                    "sessionId": AUTOWRITER_SESSION,
                    "rootId": "__ROOT_ID__",
                    "seq": seq,
                    "cwd": "__WORKSPACE__",
                    "tool": "t",
                    "ok": rng.random() < 0.85,
                    "files": files,
                }
            )
        )
    return lines


def normalized(dirs: CaseDirs, data: bytes) -> bytes:
    """A case's session file with its own rootId, workspace and scope hash put back as
    placeholders (and clock values masked), so two homes' files compare."""
    text = masked(data).decode()
    for value, placeholder in (
        (dirs.root_id, "R"),
        (str(dirs.workspace), "W"),
        (dirs.mapping["__SCOPEKEY_SHA16__"], "S"),
    ):
        text = text.replace(value, placeholder)
    return text.encode()


def run_both(
    host: HostHarness, tmp_path: Path, runs: list[list[str]], between: Any = None
) -> tuple[bytes, bytes]:
    """Each run (template lines, whole log of that run) by the host in one home and by us in
    another; ``between(n, theirs, ours)`` runs after run ``n``. Both files, normalized."""
    theirs, mine = make_case_dirs(tmp_path / "host"), make_case_dirs(tmp_path / "ours")
    ours = Ours(mine)
    for n, lines in enumerate(runs):
        host_flush(host, theirs, [theirs.text(line) for line in lines], n)
        ours.flush([mine.text(line) for line in lines])
        if between is not None:
            between(n, theirs, ours)
    host_file = theirs.scope_path("session", f"{AUTOWRITER_SESSION}|{theirs.root_id}")
    host_data = host_file.read_bytes() if host_file.exists() else b""
    return normalized(mine, ours.data()), normalized(theirs, host_data)


@pytest.mark.parametrize("seed", range(12))
def test_random_logs_give_the_hosts_file(host: HostHarness, seed: int, tmp_path: Path) -> None:
    """The same random log, flushed as it grows (once twice over), by the host in one home and
    by us in another: the two session files are the same (clock values aside)."""
    log = random_log(seed, 20)
    mine, theirs = run_both(host, tmp_path, [log[:end] for end in (5, 10, 10, 15, 20)])
    assert mine == theirs


def line(seq: int, *files: tuple[str, str]) -> str:
    return json.dumps(
        {
            "sessionId": AUTOWRITER_SESSION,
            "rootId": "__ROOT_ID__",
            "seq": seq,
            "cwd": "__WORKSPACE__",
            "ok": True,
            "files": [{"path": path, "op": op} for path, op in files],
        }
    )


def test_a_repeat_of_an_archived_digest_is_merged_as_the_host_merges_it(
    host: HostHarness, tmp_path: Path
) -> None:
    log = [line(n, (f"f{n}.txt", "create")) for n in range(1, 9)]
    runs = [log[:n] for n in range(1, 9)] + [[line(20, ("f1.txt", "create"))]]
    mine, theirs = run_both(host, tmp_path, runs)
    assert mine == theirs
    assert mine.count(b'"status":"archived"') == 4


def test_a_verified_digest_merges_as_the_host_merges_it(host: HostHarness, tmp_path: Path) -> None:
    def verify(n: int, theirs: CaseDirs, ours: Ours) -> None:
        if n != 0:
            return
        (record_id,) = {json.loads(x)["id"] for x in ours.data().splitlines()}
        ours.store.verify(record_id)
        host.run(
            "govern",
            record_id.replace(
                ours.dirs.mapping["__SCOPEKEY_SHA16__"], theirs.mapping["__SCOPEKEY_SHA16__"]
            ),
            "verify",
            home=theirs.home,
            workspace=theirs.workspace,
            scope="session",
            session=AUTOWRITER_SESSION,
        )

    first = line(1, ("a.txt", "modify"))
    runs = [[first], [first, line(4, ("a.txt", "modify"))]]
    mine, theirs = run_both(host, tmp_path, runs, verify)
    drop = re.compile(rb',"(verifiedAt|reviewedBy|reviewedAt)":[^,}]+')
    assert drop.sub(b"", mine) == drop.sub(b"", theirs)
    assert mine.count(b'"verification":"verified"') == 2
