"""Citing a symbol (``PATH#NAME``), end to end, in a small git repository per language: the
store keeps a host-valid ``file`` ref; the state is ``ok`` wherever the symbol sits and
whatever its spacing and comments, ``moved`` to another file or a renamed one (found by name
and text), ``changed`` when its text changed (there too), ``missing`` when it is gone, and
"cannot parse now" (``unparsed``, never ``changed``) while its file has a syntax error in it;
the diff shows its old text against its new text wherever each is; re-verify takes it where it
is now.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from citing import commit_all, git, settled
from symbol_cases import CASES, IDS, Case

from dsh_memory_tui import symbols
from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import Verification
from dsh_memory_tui.sources import BROKEN, Citation, Sources, State
from dsh_memory_tui.store import MemoryStore


def _repo(tmp_path: Path, case: Case) -> tuple[MemoryStore, Path]:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (ws / case.path).parent.mkdir(parents=True)
    (ws / case.path).write_text(case.source)
    git(ws, "init", "-q", "-b", "main")
    commit_all(ws, "first")
    return MemoryStore.open(home, ws, "alice"), ws


def _write(ws: Path, rel: str, text: str) -> None:
    # A new inode each time, as an editor's save or git's checkout makes it.
    (ws / rel).unlink(missing_ok=True)
    (ws / rel).parent.mkdir(parents=True, exist_ok=True)
    (ws / rel).write_text(text)


def _cited(store: MemoryStore, case: Case) -> str:
    """A verified record citing the case's method; its id."""
    cite = f"{case.path}#{case.name}"
    rid = store.create("project", "fact", "how it fetches", "it gets the url", citations=[cite]).id
    store.verify(rid)
    return rid


def _check(store: MemoryStore, rid: str):
    (check,) = store.sources.checks(store.get(rid))
    return check


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_symbol_is_stored_as_a_host_file_ref_named_by_path_and_symbol(tmp_path, case):
    store, _ = _repo(tmp_path, case)
    (ref,) = store.get(_cited(store, case)).governance.sourceRefs
    assert (ref.kind, ref.id) == ("file", f"{case.path}#{case.name}")
    assert isinstance(ref.contentHash, str) and ref.contentHash.startswith("sha256:")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_whitespace_and_comment_edits_leave_a_symbol_ok(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, case.cosmetic)
    commit_all(ws, "reformat and comment")
    check = _check(store, rid)
    assert check.state is State.OK, check.why
    assert store.sources.holds(store.get(rid))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("edit", ["behaviour", "spaces_in_string"])
def test_a_token_changed_in_the_body_is_changed_and_the_diff_shows_it(tmp_path, case, edit):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, getattr(case, edit))
    commit_all(ws, "change the body")
    check = _check(store, rid)
    assert check.state is State.CHANGED, check.why
    assert not store.sources.holds(store.get(rid))
    diff = store.sources.diff(check)
    removed = [line for line in diff if line.startswith("-") and not line.startswith("---")]
    added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert removed and added, diff
    assert all(line[1:] in case.source for line in removed)
    assert all(line[1:] in getattr(case, edit) for line in added)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_syntax_error_inside_the_symbol_is_unparsed_never_changed(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, case.broken_inside)
    check = _check(store, rid)
    assert check.state is State.UNPARSED and check.state not in BROKEN, check.why
    assert "cannot parse now" in check.why and "syntax error at line" in check.why
    assert store.sources.holds(store.get(rid))
    _write(ws, case.path, case.behaviour)  # fixed, and changed meanwhile
    assert _check(store, rid).state is State.CHANGED


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_syntax_error_elsewhere_leaves_the_symbol_ok(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, case.broken_elsewhere)
    assert _check(store, rid).state is State.OK


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_an_ambiguous_name_is_refused_listing_its_candidates_and_nothing_is_written(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    _write(ws, case.path, case.duplicate)
    before = store.records("project")
    with pytest.raises(StoreError) as refused:
        store.create("project", "fact", "t", "c", citations=[f"{case.path}#{case.name}"])
    assert refused.value.code is ErrorCode.INVALID_CITATION
    assert "ambiguous" in refused.value.message and "2 definitions" in refused.value.message
    assert refused.value.message.count(f"{case.name} (") == 2
    assert store.records("project") == before


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_symbol_moved_to_another_file_in_a_refactoring_is_moved_not_an_alarm(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, case.moved_here)
    _write(ws, case.other_path, case.moved_there)
    commit_all(ws, "split the module")
    check = _check(store, rid)
    assert check.state is State.MOVED, check.why
    assert check.now is not None and check.now.path == case.other_path
    assert store.sources.holds(store.get(rid))


# Java's method moves to another class (Fetcher.fetch): changed there, it is another name.
SAME_NAME = [(c, i) for c, i in zip(CASES, IDS, strict=True) if i != ".java"]


@pytest.mark.parametrize("case", [c for c, _ in SAME_NAME], ids=[i for _, i in SAME_NAME])
def test_moved_then_changed_is_changed_with_the_diff_against_its_new_place(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, case.moved_here)
    changed = case.moved_there.replace('"a b"', '"a c"').replace("get(", "post(")
    assert changed != case.moved_there
    _write(ws, case.other_path, changed)
    check = _check(store, rid)
    assert check.state is State.CHANGED, check.why
    assert check.now is not None and check.now.path == case.other_path
    diff = store.sources.diff(check)
    assert f"+++ {case.other_path} (now)" in diff, diff


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_renamed_file_keeps_its_symbol(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    git(ws, "mv", case.path, case.other_path)
    commit_all(ws, "rename")
    check = _check(store, rid)
    assert check.state is State.MOVED, check.why
    assert check.now is not None and check.now.path == case.other_path


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_deleted_symbol_is_missing(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, case.moved_here)
    commit_all(ws, "drop it")
    assert _check(store, rid).state is State.MISSING


@pytest.mark.parametrize("case", CASES[:1] + CASES[4:5], ids=[".py", ".go"])
def test_reverify_takes_the_symbol_where_it_is_now(tmp_path, case):
    store, ws = _repo(tmp_path, case)
    rid = _cited(store, case)
    _write(ws, case.path, case.moved_here)
    _write(ws, case.other_path, case.moved_there.replace("get(", "post("))
    assert not store.sources.holds(store.get(rid))
    again = store.reverify_citations(rid)
    (ref,) = again.governance.sourceRefs
    assert ref.id == f"{case.other_path}#{case.name}"
    assert again.governance.verification is Verification.VERIFIED
    assert _check(store, rid).state is State.OK


def test_a_symbol_is_parsed_once_per_version_of_its_file_for_all_its_citations(tmp_path):
    case = CASES[0]
    store, ws = _repo(tmp_path, case)
    ids = [
        store.create("project", "fact", f"t{i}", f"c{i}", citations=[cite]).id
        for i, cite in enumerate([f"{case.path}#Client.fetch", f"{case.path}#helper"])
    ]
    for rid in ids:
        store.verify(rid)
    settled(ws / case.path)  # not read again for being just written (text.RACY_NS)
    sources = Sources(ws)  # a new engine: nothing read yet
    records = [store.get(rid) for rid in ids]
    before = symbols.parses
    for _ in range(3):
        assert all(sources.holds(r) for r in records)
    assert (sources.reads, symbols.parses - before) == (1, 1)
    _write(ws, case.path, case.cosmetic)
    settled(ws / case.path)
    assert all(sources.holds(r) for r in records)
    assert (sources.reads, symbols.parses - before) == (2, 2)


def test_a_symbol_of_a_language_with_no_grammar_is_refused_with_a_line_range_offered(tmp_path):
    store, ws = _repo(tmp_path, CASES[0])
    (ws / "lib.rb").write_text("def f\n  1\nend\n")
    with pytest.raises(StoreError) as refused:
        store.create("project", "fact", "t", "c", citations=["lib.rb#f"])
    assert refused.value.code is ErrorCode.INVALID_CITATION
    assert "cite a line range instead (lib.rb:START-END)" in refused.value.message


@pytest.mark.parametrize(
    "spec", ["a.py#", "a.py#Client..fetch", "a.py#fetch()", "a.py#a b", "/abs/a.py#f"]
)
def test_a_bad_symbol_citation_is_refused(spec):
    with pytest.raises(StoreError) as refused:
        Citation.parse(spec)
    assert refused.value.code is ErrorCode.INVALID_CITATION


def test_a_symbol_citation_parses_to_its_path_and_dotted_name():
    citation = Citation.parse("./src/net.py#Client.fetch")
    assert (citation.path, citation.symbol, citation.kind) == (
        "src/net.py",
        "Client.fetch",
        "symbol",
    )
    assert citation.ref_id == "src/net.py#Client.fetch"
    assert Citation.parse("web/a.js#Client.#secret").symbol == "Client.#secret"


def _cli(tmp_path: Path, ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DSH_HOME": str(tmp_path / "home"), "DSH_USER_ID": "alice"}
    return subprocess.run(
        [sys.executable, "-m", "dsh_memory_tui.cli", "--workspace", str(ws), *args],
        capture_output=True,
        text=True,
        env=env,
    )


def test_a_line_range_inside_one_method_gets_a_hint_naming_the_symbol(tmp_path):
    case = CASES[0]
    _, ws = _repo(tmp_path, case)
    new = ("create", "--scope", "project", "--type", "fact", "--title", "t", "--content")
    inside = _cli(tmp_path, ws, *new, "c1", "--cite", f"{case.path}:3-4")
    assert inside.returncode == 0, inside.stderr
    assert (
        f"hint: {case.path}:3-4 lies inside Client.fetch: cite {case.path}#Client.fetch instead"
    ) in inside.stderr
    across = _cli(tmp_path, ws, *new, "c2", "--cite", f"{case.path}:4-7")
    assert across.returncode == 0 and "hint" not in across.stderr


def test_the_cli_cites_a_method_sees_it_moved_then_changed_with_its_diff(tmp_path):
    """The user's story: cite a method, move it in a refactoring commit (``moved``, exit 0),
    change its body (``changed``, exit 1, the diff of its old text against its new)."""
    case = CASES[0]
    _, ws = _repo(tmp_path, case)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return _cli(tmp_path, ws, *args)

    made = cli(
        "create",
        "--scope",
        "project",
        "--type",
        "fact",
        "--title",
        "fetch",
        "--content",
        "fetch gets the url",
        "--cite",
        f"{case.path}#Client.fetch",
    )
    assert made.returncode == 0, made.stderr
    rid = made.stdout.split()[-1]
    assert cli("verify", rid).returncode == 0
    _write(ws, case.path, case.moved_here)
    _write(ws, case.other_path, case.moved_there)
    commit_all(ws, "move Client to its own module")
    moved = cli("sources", rid)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "moved" in moved.stdout and f"{case.other_path}#Client.fetch" in moved.stdout
    _write(ws, case.other_path, case.moved_there.replace("get(url", "post(url"))
    changed = cli("sources", rid)
    assert changed.returncode == 1
    assert "-        return get(url" in changed.stdout
    assert "+        return post(url" in changed.stdout
