"""The demo home and workspace (``build_demo``) and the live simulator (``run_live``)."""

from __future__ import annotations

import logging
import os
import re
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO_ROOT, WAIT_S, finish, wait_for

from dsh_memory_tui.autowriter import digest_id_prefix
from dsh_memory_tui.demo import DemoPaths, build_demo, is_demo, open_demo, run_live
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.model import Origin, Scope, Status, Verification, session_scope_key
from dsh_memory_tui.store import MemoryStore


@pytest.fixture
def demo(tmp_path: Path) -> DemoPaths:
    return build_demo(tmp_path / "demo")


@pytest.fixture
def alice(demo: DemoPaths) -> MemoryStore:
    return MemoryStore.open(demo.home, demo.workspace, demo.user)


def test_demo_paths(demo: DemoPaths, tmp_path: Path) -> None:
    assert demo.home == tmp_path / "demo" / "home"
    assert demo.workspace == (tmp_path / "demo" / "acme-api").resolve()
    assert (demo.user, demo.other_user) == ("alice", "bob")
    assert demo.session[0] and demo.session[1]


def test_project_records_are_decisions_conventions_and_facts_some_verified(
    alice: MemoryStore,
) -> None:
    records = alice.records(Scope.PROJECT)
    authored = [r for r in records if r.governance.origin is Origin.USER_AUTHORED]
    assert {r.type.value for r in authored} == {"decision", "convention", "fact"}
    assert sum(r.governance.verification is Verification.VERIFIED for r in authored) >= 3
    assert any(len(alice.history(r.id)) >= 3 for r in authored)  # a few revisions of history


def test_proposals_and_imports_wait_for_review(alice: MemoryStore) -> None:
    queue = alice.review_queue()
    proposals = [r for r in queue if r.governance.origin is Origin.MODEL_SUGGESTED]
    imported = [r for r in queue if r.governance.origin is Origin.IMPORTED]
    assert len(proposals) >= 4
    assert {r.scope for r in proposals} >= {Scope.PROJECT, Scope.SHARED, Scope.USER}
    assert len(imported) == 2
    for record in imported:
        assert re.fullmatch(r"memory:import:[0-9a-f-]{36}", record.id)  # as an import makes
        # The original record, named with a kind the host allows.
        (ref,) = record.governance.sourceRefs
        assert (ref.kind, ref.contentHash) == ("import", record.contentHash)
        assert ref.id.startswith("memory:") and ref.id != record.id


def test_shared_project_records(alice: MemoryStore) -> None:
    shared = alice.records(Scope.SHARED)
    assert len(shared) >= 2
    assert any(r.governance.verification is Verification.VERIFIED for r in shared)


def test_one_archived_and_one_rejected_record(alice: MemoryStore) -> None:
    records = alice.records(Scope.PROJECT, include_inactive=True)
    assert [r.status for r in records].count(Status.ARCHIVED) == 1
    rejected = [r for r in records if r.governance.verification is Verification.REJECTED]
    assert len(rejected) == 1
    assert rejected[0].governance.reviewNote


def test_bob_profile_is_in_the_file_but_invisible_to_alice(
    demo: DemoPaths, alice: MemoryStore
) -> None:
    mine = alice.records(Scope.USER, include_inactive=True)
    assert mine and all(r.scopeKey == "alice" for r in mine)
    bob = MemoryStore.open(demo.home, demo.workspace, demo.other_user)
    theirs = bob.records(Scope.USER)
    assert len(theirs) == 2 and all(r.scopeKey == "bob" for r in theirs)
    raw = (demo.home / "workspace-memory" / "user.jsonl").read_text()
    assert raw.count('"scopeKey":"bob"') == 2
    assert alice.view(alice.paths.user_file()).other_profile_lines == 2


def test_two_sessions_hold_auto_writer_digests(demo: DemoPaths, alice: MemoryStore) -> None:
    assert len(alice.paths.session_paths()) == 2
    digests = alice.records(Scope.SESSION, session=demo.session)
    prefix = digest_id_prefix(session_scope_key(*demo.session))
    assert len(digests) >= 2
    assert all(r.id.startswith(prefix) for r in digests)
    assert all(r.governance.origin is Origin.DERIVED for r in digests)
    assert all(r.content.startswith("Files touched: ") for r in digests)
    every = alice.records(Scope.SESSION)
    keys = {r.scopeKey for r in every}
    assert len(keys) == 2 and session_scope_key(*demo.session) in keys
    assert all(r.id.startswith(digest_id_prefix(r.scopeKey)) for r in every)


def test_project_file_ends_with_a_newer_schema_line_and_a_corrupt_line(
    alice: MemoryStore,
) -> None:
    view = alice.view(alice.paths.project_file())
    view.refresh()
    assert len(view.corrupt) == 1
    assert len(view.future) == 1
    assert view.future[0].schema_version == 2
    report = alice.check()
    assert [(p.kind, p.path.name) for p in report.problems] == [("corrupt", "records.jsonl")]


def test_demo_files_are_private(demo: DemoPaths) -> None:
    for base in (demo.home, demo.workspace):
        for directory, _dirs, files in os.walk(base):
            assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
            for name in files:
                assert stat.S_IMODE(os.stat(Path(directory, name)).st_mode) == 0o600, name


def test_demo_content_is_the_same_every_time(tmp_path: Path) -> None:
    def content(root: Path) -> list[tuple[str, ...]]:
        demo = build_demo(root)
        store = MemoryStore.open(demo.home, demo.workspace, demo.user)
        return sorted(
            (
                r.scope.value,
                r.type.value,
                r.title,
                r.content,
                r.status.value,
                r.governance.verification.value,
                str(r.governance.revision),
            )
            for r in store.records(include_inactive=True)
        )

    assert content(tmp_path / "one") == content(tmp_path / "two")


def test_demo_refuses_a_directory_already_in_use(demo: DemoPaths) -> None:
    with pytest.raises(StoreError) as caught:
        build_demo(demo.home.parent)
    assert caught.value.code == "USAGE"


class LiveThread:
    """``run_live`` in a thread, with whatever it raised kept for the test."""

    def __init__(self, demo: DemoPaths, interval_s: float) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(demo, interval_s))
        self.thread.start()

    def _run(self, demo: DemoPaths, interval_s: float) -> None:
        try:
            run_live(demo, interval_s=interval_s, stop=self.stop, rng_seed=11)
        except BaseException as exc:
            self.error = exc

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(timeout=WAIT_S)
        assert not self.thread.is_alive()
        assert self.error is None


def test_run_live_appends_proposals_and_session_digests(
    demo: DemoPaths, alice: MemoryStore
) -> None:
    queue_before = len(alice.review_queue())
    session_file = alice.paths.session_file(*demo.session).path
    digest_lines_before = session_file.read_text().count('"origin":"derived"')
    live = LiveThread(demo, interval_s=0.3)  # longer than half the debounce: digests go out
    try:
        wait_for(lambda: len(alice.review_queue()) >= queue_before + 2, "two live proposals")
        wait_for(
            lambda: session_file.read_text().count('"origin":"derived"') > digest_lines_before,
            "a live digest",
        )
    finally:
        live.finish()
    assert all(r.scopeKey == "alice" for r in alice.records(Scope.USER))
    raw = (demo.home / "workspace-memory" / "user.jsonl").read_text()
    assert raw.count('"scopeKey":"bob"') == 2  # bob's lines survive the live writes


def test_run_live_goes_on_through_store_errors(
    demo: DemoPaths, alice: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dsh_memory_tui.demo")
    for path in (alice.paths.user_file().path, alice.paths.session_file(*demo.session).path):
        path.unlink()
        path.mkdir(mode=0o700)  # not a regular file: every write there is UNSAFE_PATH
    live = LiveThread(demo, interval_s=0.02)
    try:
        wait_for(
            lambda: sum("live step skipped" in r.getMessage() for r in caplog.records) >= 3,
            "three failed live steps",
        )
    finally:
        live.finish()


def stop(proc: subprocess.Popen[str], signum: int) -> str:
    """Send ``signum`` and wait for the process to end; its stderr. Killed if it hangs."""
    proc.send_signal(signum)
    return finish(proc)  # type: ignore[return-value]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_cli_demo_builds_then_live_stops_cleanly_on_a_signal(tmp_path: Path, signum: int) -> None:
    root = tmp_path / "cli-demo"
    cmd = [sys.executable, "-m", "dsh_memory_tui.cli", "demo", str(root), "--live"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        assert lines[0].split() == ["demo", "home:", str(root / "home")]
        assert lines[3].startswith("appending live records")
        store = MemoryStore.open(root / "home", root / "acme-api", "alice")
        before = len(store.review_queue())
        wait_for(lambda: len(store.review_queue()) > before, "the first live proposal")
    finally:
        err = stop(proc, signum)
    assert proc.returncode == 0
    assert err == ""


def test_open_demo_attaches_to_the_demo_a_directory_holds(demo: DemoPaths) -> None:
    assert is_demo(demo.home.parent)
    assert open_demo(demo.home.parent) == demo


def test_open_demo_refuses_a_directory_without_one(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    assert not is_demo(tmp_path)
    with pytest.raises(StoreError) as caught:
        open_demo(tmp_path)
    assert caught.value.code == "USAGE"
    assert "holds no demo" in caught.value.message


def test_cli_demo_live_on_an_existing_demo_writes_into_it(demo: DemoPaths) -> None:
    # As a second shell does for the demo dsh-memory-tui --demo opened (its DIR is on screen).
    root = demo.home.parent
    store = MemoryStore.open(demo.home, demo.workspace, demo.user)
    before = len(store.review_queue())
    cmd = [sys.executable, "-m", "dsh_memory_tui.cli", "demo", str(root), "--live"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        assert lines[0].split() == ["demo", "home:", str(demo.home)]
        assert lines[3].startswith("appending live records")
        wait_for(lambda: len(store.review_queue()) > before, "a live proposal in the old demo")
    finally:
        err = stop(proc, signal.SIGINT)
    assert proc.returncode == 0
    assert err == ""


def test_the_demo_has_an_open_conflict_group(alice: MemoryStore) -> None:
    from dsh_memory_tui.governance import ConflictIndex

    records = alice.records(Scope.PROJECT)
    index = ConflictIndex(records)
    grouped = [r for r in records if index.group(r.id) is not None]
    assert len(grouped) == 2
    assert {r.governance.verification for r in grouped} == {
        Verification.VERIFIED,
        Verification.UNVERIFIED,
    }
