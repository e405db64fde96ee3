"""The host's transitions table (``host-corpus/transitions.json``) replayed through our library
and our command line; with ``DSH_HOST_SRC``, the host reading what we wrote. Then the host's
edit rules, "keep this version" of host-written conflict groups, an expired record on a fixed
clock, and a moved project adopted (and the host seeing its records again).

Where we deliberately differ (docs/host.md: every action on a forgotten record is refused; the
host's INELIGIBLE pin is our INVALID_TRANSITION; forget writes a placeholder tombstone; an edit
trims the title, keeps the status and writes nothing when nothing changed) the replay asserts
our answer, not the host's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_memory_tui import cli
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.governance import (
    Action,
    forgotten_error,
    is_erased,
    refusal,
    tombstone,
    tombstone_title,
    transition,
)
from dsh_memory_tui.model import Location, Record, Scope, parse_line
from dsh_memory_tui.store import MemoryStore

from .corpus import REPO_ROOT, CaseDirs, make_case_dirs
from .transitions import (
    COMMAND_ACTIONS,
    NOW,
    Case,
    all_cases,
    expected_outcome,
    line,
    outcome,
    transitions,
)

CASES = all_cases()
IDS = [c.name for c in CASES]
COMMAND_CASES = [c for c in CASES if c.action in COMMAND_ACTIONS]


def _record(case: Case, root: str = "root:" + "ab" * 32) -> Record:
    parsed = parse_line(line(case.with_root(root)), Location(Scope.PROJECT, root))
    assert isinstance(parsed, Record), parsed
    return parsed


def _ours(record: Record, action: str, now: int) -> Record:
    """Our answer to ``action``: the transition, or our forget's tombstone."""
    if action == "forget":
        if is_erased(record):
            raise forgotten_error(record)
        return tombstone(record, now)  # a record the host forgot: its kept text is erased
    return transition(record, Action(action), now)


# ----------------------------------------------------------------------------- the library


def test_the_corpus_is_complete() -> None:
    data = transitions()
    assert len(data["matrix"]) == 24 * 9 and len(data["legacy"]) == 4 * 9
    assert len(CASES) == 252


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_library_gives_the_hosts_transition(case: Case) -> None:
    """``governance.transition`` (and our forget) on the starting record, at the host's fixed
    time: the host's pure result, or our documented refusal."""
    record = _record(case)
    if case.action != "forget":
        allowed = refusal(record, Action(case.action), NOW) is None
        assert allowed is case.we_allow, (case.name, case.difference)
    if case.our_code is not None:
        with pytest.raises(StoreError) as err:
            _ours(record, case.action, NOW)
        assert err.value.code == case.our_code
        assert "\n" not in err.value.message and record.id in err.value.message
        if case.host_allows:
            assert case.difference is not None  # a refusal the host would not make: documented
        return
    new = _ours(record, case.action, NOW)
    if case.erases:
        _assert_erased(record.to_json(), new.to_json())
        return
    assert outcome(new.to_json()) == {k: case.pure[k] for k in ("status", "governance", "useCount")}


def _assert_erased(before: dict[str, Any], after: dict[str, Any]) -> None:
    """A record the host forgot (its text kept), forgotten by us: our tombstone, next revision."""
    assert after["status"] == "forgotten" and after["tags"] == []
    assert after["title"] == tombstone_title(before["id"])
    assert before["content"] not in after["content"] and before["title"] not in after["content"]
    assert after["governance"]["revision"] == before["governance"]["revision"] + 1
    assert "pinnedAt" not in after["governance"]


# ----------------------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def cli_store(tmp_path_factory: pytest.TempPathFactory) -> CaseDirs:
    """One project file holding every starting record (each case has its own id)."""
    dirs = make_case_dirs(tmp_path_factory.mktemp("transitions"))
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True)
    data.write_bytes(b"".join(line(c.with_root(dirs.root_id)) for c in CASES))
    data.chmod(0o600)
    return dirs


def _cli(dirs: CaseDirs, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(
        ["--home", str(dirs.home), "--workspace", str(dirs.workspace), "--user", "alice", *args]
    )
    out, err = capsys.readouterr()
    return rc, out, err


def _lines_of(dirs: CaseDirs, record_id: str) -> list[dict[str, Any]]:
    data = dirs.scope_path("project").read_bytes()
    return [json.loads(raw) for raw in data.splitlines() if f'"{record_id}"'.encode() in raw]


@pytest.mark.parametrize("case", COMMAND_CASES, ids=[c.name for c in COMMAND_CASES])
def test_the_cli_gives_the_hosts_transition(
    case: Case, cli_store: CaseDirs, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dsh-memory <action> ID`` on the starting record: exit 0 and the line the host's
    ``domain.govern`` appends, or exit 1 with ``error[CODE]: why`` and nothing written."""
    before = _lines_of(cli_store, case.id)
    t0 = MemoryStore.open(cli_store.home, cli_store.workspace, "alice").clock()
    rc, out, err = _cli(cli_store, capsys, case.action, case.id)
    if case.erases and before[-1]["title"] == tombstone_title(case.id):
        # Every rewrite of ours erases what the host's forget kept: an earlier case's did.
        assert rc == 1 and err.startswith("error[FORGOTTEN]: ") and "text is erased" in err
        assert _lines_of(cli_store, case.id) == before
        return
    t1 = MemoryStore.open(cli_store.home, cli_store.workspace, "alice").clock()
    after = _lines_of(cli_store, case.id)
    if case.our_code is not None:
        assert rc == 1, (out, err)
        assert err.startswith(f"error[{case.our_code}]: ") and err.count("\n") == 1, err
        assert after == before  # nothing appended
        return
    assert rc == 0, err
    assert out.splitlines()[-1] == case.id
    assert len(after) == (1 if case.action == "forget" else len(before) + 1)  # forget erases
    new = after[-1]
    if case.erases:
        _assert_erased(before[-1], new)
        return
    assert outcome(new) == expected_outcome(case.domain, new, t0, t1)
    if case.action in ("verify", "reject", "reverify"):
        assert new["governance"]["reviewedBy"] == "alice"  # our review extra, host-ignored


def test_a_refused_command_is_one_line_from_a_real_process(fixture_home: Any) -> None:
    """The real executable: exit 1, ``error[INVALID_TRANSITION]: ...`` on one stderr line."""
    home, ws = fixture_home
    decision = "memory:user:decision:f768064f958507ad239eed24c2c063fe"  # verified already
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh_memory_tui.cli",
            "--home",
            str(home),
            "--workspace",
            str(ws),
            "--user",
            "alice",
            "verify",
            decision,
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": ""},
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error[INVALID_TRANSITION]: cannot verify " + decision)
    assert done.stderr.count("\n") == 1


def test_the_host_reads_every_transition_we_wrote(dirs: CaseDirs, host: Any) -> None:
    """Every allowed action written by our store, then the host's own ``open()``: no warning,
    and each record in exactly the state ``domain.govern`` would have left it."""
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True)
    data.write_bytes(b"".join(line(c.with_root(dirs.root_id)) for c in COMMAND_CASES))
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    t0 = store.clock()
    allowed = [c for c in COMMAND_CASES if c.our_code is None]
    for case in allowed:
        if case.erases and is_erased(store.get(case.id)):
            continue  # every rewrite of ours erases what the host's forget kept: done already
        if case.action == "forget":
            store.forget(case.id)
        else:
            store.apply(case.action, case.id)
    t1 = store.clock()
    seen = host.run("list", "--full", home=dirs.home, workspace=dirs.workspace)
    assert seen["warnings"] == [] and not seen["readOnly"]
    by_id = {r["id"]: r for r in seen["records"]}
    assert len(by_id) == len(COMMAND_CASES)
    for case in allowed:
        got = by_id[case.id]
        if case.erases:
            _assert_erased(case.with_root(dirs.root_id), got)
            continue
        assert outcome(got) == expected_outcome(case.domain, got, t0, t1), case.name
    for case in COMMAND_CASES:
        if case.our_code is None:
            continue
        start = case.with_root(dirs.root_id)
        if case.record["status"] == "forgotten":  # refused, and its kept text erased by a forget
            _assert_erased(start, by_id[case.id])
        else:  # refused: the host still sees the starting record
            assert by_id[case.id] == start, case.name


# ----------------------------------------------------------------------------- edits


EDIT_DIFFERENCES = {
    # docs/host.md: an edit keeps the status (the host makes it active) ...
    "archived record edited without status -> status becomes active": "status kept",
    # ... a forgotten record cannot be edited ...
    "forgotten record edited -> status becomes active": "FORGOTTEN",
    # ... an edit that changes nothing writes nothing (the host bumps the revision) ...
    "verified+pinned, nothing changed -> stays verified, pins kept, revision + 1": "nothing",
    # ... and titles are trimmed (JS trim), so a trailing space is no change.
    "verified+pinned, title differs only in trailing space -> stale": "nothing",
    "verified agent record edited keeping its provenance, nothing changed -> stays verified": (
        "nothing"
    ),
}
_EDITABLE = ("title", "content", "type", "tags")


def _edit_cases() -> list[dict[str, Any]]:
    out = []
    for case in transitions()["editRules"]:
        draft, initial = case.get("draft", {}), case.get("initial")
        if initial is None or "result" not in case or draft.get("id") != initial["id"]:
            continue  # creates, and the errors of the host's own protocol
        if "governance" in draft or draft.get("provenance") != initial["provenance"]:
            continue  # what a draft carries besides the fields an edit has
        if draft.get("expectedRevision") is None:
            continue
        out.append(case)
    return out


EDIT_CASES = _edit_cases()


def test_the_edit_rules_replayed_are_the_ones_an_edit_can_express() -> None:
    assert len(EDIT_CASES) >= 14, [c["case"] for c in EDIT_CASES]


@pytest.mark.parametrize("case", EDIT_CASES, ids=[c["case"][:60] for c in EDIT_CASES])
def test_an_edit_follows_the_hosts_rules(
    case: dict[str, Any], dirs: CaseDirs, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dsh-memory edit`` with the fields the host's draft changed: the host's result (a
    verified record becomes stale and loses its pin), or our documented answer."""
    initial, draft = case["initial"], case["draft"]
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True)
    data.write_bytes(line({**initial, "scopeKey": dirs.root_id}))
    args = ["edit", initial["id"], "--base-revision", str(draft["expectedRevision"])]
    for name in _EDITABLE:
        if draft.get(name) != initial.get(name):
            values = draft[name] if name == "tags" else [draft[name]]
            for value in values:
                args += [f"--{name[:-1] if name == 'tags' else name}", value]
    if len(args) == 4:  # nothing differs: send the title as it is
        args += ["--title", draft["title"]]
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    t0 = store.clock()
    rc, out, err = _cli(dirs, capsys, *args)
    t1 = store.clock()
    lines = [json.loads(raw) for raw in data.read_bytes().splitlines()]
    ours = EDIT_DIFFERENCES.get(case["case"])
    if ours == "FORGOTTEN":
        assert rc == 1 and err.startswith("error[FORGOTTEN]: ") and len(lines) == 1
        return
    assert rc == 0, err
    if ours == "nothing":
        assert len(lines) == 1  # no line written
        return
    assert len(lines) == case["fileLines"]
    new = lines[-1]
    want = case["result"]
    if ours == "status kept":
        want = {**want, "status": initial["status"]}
    assert outcome(new) == expected_outcome(want, new, t0, t1)
    for name in ("title", "content", "type", "tags", "createdAt", "lastUsedAt", "contentHash"):
        assert new.get(name) == want.get(name), name


# ----------------------------------------------------------------------------- keep


def _host_propose(host: Any, dirs: CaseDirs, title: str, content: str) -> str:
    return str(host.propose(title, content, home=dirs.home, workspace=dirs.workspace)["id"])


def test_keep_this_version_of_a_host_written_conflict_group(
    dirs: CaseDirs, host: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three host proposals of one title (the host writes their conflict group); one verified
    by the host. ``dsh-memory keep`` on the third: it is verified, the unverified rival
    rejected, the verified one archived, in one write; the host then sees exactly that."""
    first = _host_propose(host, dirs, "Lint with ruff", "CI runs ruff check.")
    second = _host_propose(host, dirs, "lint with Ruff ", "CI runs flake8.")
    third = _host_propose(host, dirs, "Lint with ruff", "CI runs ruff check and ruff format.")
    host.run("govern", first, "verify", home=dirs.home, workspace=dirs.workspace)
    data = dirs.scope_path("project")
    before = len(data.read_bytes().splitlines())
    rc, out, err = _cli(dirs, capsys, "show", third)
    assert rc == 0 and "conflict:     conflict:" in out and "(2 other active versions)" in out
    rc, out, err = _cli(dirs, capsys, "keep", third)
    assert rc == 0, err
    assert out.splitlines()[-1] == third
    assert f"rejected: {second}" in out and f"archived: {first}" in out
    assert len(data.read_bytes().splitlines()) == before + 3  # one append of three lines
    seen = {
        r["id"]: r
        for r in host.run("list", "--full", home=dirs.home, workspace=dirs.workspace)["records"]
    }
    assert (seen[third]["status"], seen[third]["governance"]["verification"]) == (
        "active",
        "verified",
    )
    assert seen[third]["governance"]["verifiedBy"] == "user"
    assert (seen[second]["status"], seen[second]["governance"]["verification"]) == (
        "active",
        "rejected",
    )
    assert (seen[first]["status"], seen[first]["governance"]["verification"]) == (
        "archived",
        "verified",
    )
    active = host.run("list", "--active", home=dirs.home, workspace=dirs.workspace)
    assert {r["id"] for r in active["records"]} == {second, third}
    rc, out, err = _cli(dirs, capsys, "keep", first)  # archived now: nothing to keep
    assert rc == 1 and err.startswith("error[INVALID_TRANSITION]: cannot keep ")


def test_keep_without_a_rival_is_refused(dirs: CaseDirs) -> None:
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("project", "fact", "Alone", "No other version.").id
    with pytest.raises(StoreError) as err:
        store.keep(rid)
    assert err.value.code == "INVALID_TRANSITION"
    assert "no other active, unrejected version" in err.value.message


# ----------------------------------------------------------------------------- expiry


def test_an_expired_record_on_a_fixed_clock(
    dirs: CaseDirs, capsys: pytest.CaptureFixture[str]
) -> None:
    """A verified, pinned record whose expiresAt passed three days ago: shown stale and
    unpinned, "expired 3 days ago"; pin refused, reverify allowed (and, as the host's, its past
    expiresAt makes it read stale again)."""
    day = 86_400_000
    now = 1_800_000_000_000
    record = {
        "schemaVersion": 1,
        "id": "memory:e",
        "scope": "project",
        "scopeKey": dirs.root_id,
        "type": "decision",
        "title": "Use Postgres 16",
        "content": "Until the upgrade.",
        "tags": [],
        "provenance": {"kind": "user"},
        "createdAt": now - 30 * day,
        "updatedAt": now - 30 * day,
        "lastUsedAt": now - 2 * 3_600_000,
        "useCount": 7,
        "contentHash": "",
        "status": "active",
        "governance": {
            "origin": "user-authored",
            "sourceRefs": [],
            "verification": "verified",
            "verifiedAt": now - 30 * day,
            "verifiedBy": "user",
            "confidence": "high",
            "revision": 2,
            "pinnedAt": now - 30 * day,
            "pinnedBy": "user",
            "expiresAt": now - 3 * day,
            "retention": "project-delete",
        },
    }
    from .transitions import content_hash

    record["contentHash"] = content_hash(record["content"])
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True)
    data.write_bytes(line(record))
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice", clock=lambda: now)
    seen = store.get("memory:e")
    assert seen.governance.verification.value == "stale" and not seen.governance.pinned
    assert seen.governance.revision == 3  # the host's view: revision + 1
    from dsh_memory_tui.present import facts_text, record_facts

    text = facts_text(record_facts(seen, now))
    assert "expires:      expired 3 days ago" in text and "shown stale" in text
    assert "confidence:   high" in text
    assert "used:         7 times, last 2 hours ago" in text
    with pytest.raises(StoreError) as err:
        store.apply("pin", "memory:e")
    assert err.value.code == "INVALID_TRANSITION"
    again = store.apply("reverify", "memory:e", base_revision=3)
    assert again.governance.revision == 4 and again.governance.verifiedAt == now
    assert store.get("memory:e").governance.verification.value == "stale"  # expiresAt is past
    assert data.read_bytes().count(b"\n") == 2


# ----------------------------------------------------------------------------- adopt


def _move(src: CaseDirs, dst: CaseDirs) -> None:
    """The project moved: its .dsh folder is now in ``dst``'s workspace."""
    shutil.copytree(src.workspace / ".dsh", dst.workspace / ".dsh", dirs_exist_ok=True)


def test_a_moved_projects_records_are_adopted_and_the_host_sees_them(
    tmp_path: Path, host: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The host writes records (one with history) at the old path; the project moves; the
    host shows nothing there any more. ``dsh-memory adopt``: one rewrite, each line under the
    new rootId, history kept; the host then lists them again."""
    old, new = make_case_dirs(tmp_path / "old"), make_case_dirs(tmp_path / "new")
    a = _host_propose(host, old, "Release checklist", "Tag, build, publish.")
    b = host.run(
        "create",
        "--type",
        "decision",
        "--title",
        "Use Postgres",
        "--content",
        "16 in production.",
        home=old.home,
        workspace=old.workspace,
    )["id"]
    host.run("govern", a, "verify", home=old.home, workspace=old.workspace)
    host.run(
        "edit", a, "--content", "Tag, build, sign, publish.", home=old.home, workspace=old.workspace
    )
    before = {
        r["id"]: r
        for r in host.run("list", "--full", home=old.home, workspace=old.workspace)["records"]
    }
    _move(old, new)
    moved = host.run("list", "--full", home=new.home, workspace=new.workspace)
    assert moved["records"] == []  # the host hides another root's lines
    data = new.scope_path("project")
    lines_before = data.read_bytes().splitlines()
    rc, out, err = _cli(new, capsys, "adopt")
    assert rc == 0, err
    assert f"{len(lines_before)} line(s) of {old.root_id} adopted" in out
    lines_after = data.read_bytes().splitlines()
    assert len(lines_after) == len(lines_before)  # every line kept: the history too
    assert all(json.loads(raw)["scopeKey"] == new.root_id for raw in lines_after)
    assert data.with_name("records.jsonl.bak").read_bytes().splitlines() == lines_before
    seen = {
        r["id"]: r
        for r in host.run("list", "--full", home=new.home, workspace=new.workspace)["records"]
    }
    assert set(seen) == {a, b}
    for rid, record in seen.items():
        assert {**record, "scopeKey": old.root_id} == before[rid]
    history = json.loads(_cli(new, capsys, "show", a, "--history", "--json")[1])
    assert [h["governance"]["revision"] for h in history] == [1, 2, 3]
    assert _cli(new, capsys, "adopt")[1] == ""  # nothing left to adopt
