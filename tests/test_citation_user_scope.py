"""A user-scope record is every workspace's, its citations one workspace's: a citation made on
one is stored with the workspace it was made in (``root:<16 hex>//PATH:START-END``, in the
ref's id, which the host keeps), judged only there, and ``elsewhere`` ("not checked here")
in any other: never withheld there, never marked stale there. Real ``dsh-memory`` processes
in two workspaces sharing one home.
"""

from __future__ import annotations

import json
from pathlib import Path

from citing import store_on, workspace
from conftest import run_cli

from dsh_memory_tui.model import next_revision
from dsh_memory_tui.paths import workspace_root_id
from dsh_memory_tui.sources import State, workspace_tag


def _two(tmp_path: Path) -> tuple[Path, Path, Path]:
    home, a = workspace(tmp_path)
    b = tmp_path / "b"
    b.mkdir()
    return home, a, b


def _user_record(home: Path, ws: Path, *cites: str) -> str:
    args = ["create", "--scope", "user", "--type", "preference", "--title", "Numbered lines"]
    args += ["--content", "number every line"]
    for cite in cites:
        args += ["--cite", cite]
    made = run_cli(home, ws, *args)
    assert made.returncode == 0, made.stderr
    rid = made.stdout.splitlines()[-1]
    assert run_cli(home, ws, "verify", rid).returncode == 0
    return rid


def _served(home: Path, ws: Path) -> list[str]:
    return json.loads(run_cli(home, ws, "payload", "--json").stdout)["included"]


def _sources(home: Path, ws: Path) -> tuple[int, dict]:
    done = run_cli(home, ws, "sources", "--json")
    return done.returncode, json.loads(done.stdout)


def test_a_user_records_citation_names_the_workspace_it_was_made_in(tmp_path):
    home, a, _ = _two(tmp_path)
    rid = _user_record(home, a, "app.py:2-3")
    (ref,) = store_on(home, a).get(rid).governance.sourceRefs
    assert ref.id == f"{workspace_tag(workspace_root_id(a))}//app.py:2-3"
    assert len(workspace_tag(workspace_root_id(a))) == len("root:") + 16


def test_elsewhere_it_is_not_checked_never_withheld_never_marked_stale(tmp_path):
    home, a, b = _two(tmp_path)
    rid = _user_record(home, a, "app.py:2-3")
    (a / "app.py").write_text("changed\n")  # broken where it was made
    assert _served(home, a) == []
    code, listed = _sources(home, b)
    assert code == 0
    (cited,) = listed["records"][0]["citations"]
    assert cited["state"] == "elsewhere" and "not checked here" in cited["why"]
    assert _served(home, b) == [rid]
    marked = run_cli(home, b, "sources", "--mark-stale")
    assert marked.returncode == 0 and "marked stale" not in marked.stdout
    assert store_on(home, b).get(rid).governance.verification.value == "verified"
    # Where it was made, it is judged: withheld, marked stale there.
    assert run_cli(home, a, "sources", "--mark-stale").returncode == 1
    assert store_on(home, a).get(rid).governance.verification.value == "stale"


def test_reverify_elsewhere_is_refused_and_says_where_to_do_it(tmp_path):
    home, a, b = _two(tmp_path)
    rid = _user_record(home, a, "app.py:2-3")
    (a / "app.py").write_text("changed\n")
    run_cli(home, a, "sources", "--mark-stale")
    done = run_cli(home, b, "reverify", rid)
    assert done.returncode == 1
    assert "cited in another workspace; re-verify it there" in done.stderr
    again = run_cli(home, a, "reverify", rid, "--cite", "app.py:1-1")
    assert again.returncode == 0, again.stderr
    (ref,) = store_on(home, a).get(rid).governance.sourceRefs
    assert ref.id == f"{workspace_tag(workspace_root_id(a))}//app.py:1-1"


def test_a_user_citation_without_a_workspace_is_judged_nowhere_until_reverified(tmp_path):
    home, a, b = _two(tmp_path)
    store = store_on(home, a)
    rid = store.create("user", "fact", "Old", "old").id
    store.verify(rid)
    (ref,) = store.sources.cite_all(["app.py:2-3"])  # untagged, as an earlier version wrote
    file = store.file_for("user")

    def build(view):
        old = view.current[rid]
        return [next_revision(old, store.clock(), None, {"sourceRefs": [ref]})], None

    store.write(file, build)
    for ws in (a, b):
        (check,) = store_on(home, ws).sources.checks(store_on(home, ws).get(rid))
        assert check.state is State.ELSEWHERE
        assert "a workspace not recorded" in check.why
    assert _served(home, b) == [rid]
    # Re-verified where its text is, it names that workspace from then on.
    done = run_cli(home, a, "reverify", rid)
    assert done.returncode == 0, done.stderr
    (ref,) = store_on(home, a).get(rid).governance.sourceRefs
    assert ref.id == f"{workspace_tag(workspace_root_id(a))}//app.py:2-3"
    (check,) = store_on(home, a).sources.checks(store_on(home, a).get(rid))
    assert check.state is State.OK


def test_a_project_record_copied_to_the_user_scope_keeps_its_citations_here(tmp_path):
    home, a, b = _two(tmp_path)
    made = run_cli(
        home, a, "create", "--scope", "project", "--type", "fact", "--title", "t",
        "--content", "c", "--cite", "app.py:2-3",
    )  # fmt: skip
    rid = made.stdout.splitlines()[-1]
    copy = run_cli(home, a, "copy", rid, "--to-scope", "user").stdout.splitlines()[-1]
    refs = [r.id for r in store_on(home, a).get(copy).governance.sourceRefs if r.kind == "file"]
    assert refs == [f"{workspace_tag(workspace_root_id(a))}//app.py:2-3"]
    (check,) = store_on(home, a).sources.checks(store_on(home, a).get(copy))
    assert check.state is State.OK
    (check,) = store_on(home, b).sources.checks(store_on(home, b).get(copy))
    assert check.state is State.ELSEWHERE
