"""``--cite`` on create/propose/edit and ``dsh-memory sources [ID] [--json] [--mark-stale]``,
as real processes: the states, the diff, the exit codes a CI job relies on.
"""

from __future__ import annotations

import json

from citing import workspace
from conftest import run_cli


def _verified(home, ws, *cites, title="app lines"):
    args = ["create", "--scope", "project", "--type", "fact", "--title", title]
    args += ["--content", "c " + title]
    for cite in cites:
        args += ["--cite", cite]
    made = run_cli(home, ws, *args)
    assert made.returncode == 0, made.stderr
    rid = made.stdout.splitlines()[-1]
    assert run_cli(home, ws, "verify", rid).returncode == 0
    return rid


def _break(ws):
    (ws / "app.py").write_text((ws / "app.py").read_text().replace("line 3", "line three"))


def test_sources_exits_0_while_every_verified_citation_holds(tmp_path):
    home, ws = workspace(tmp_path)
    rid = _verified(home, ws, "app.py:3-4")
    done = run_cli(home, ws, "sources")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{rid}  active, verified  app lines",
        "  ok       app.py:3-4  (lines 3-4 are unchanged)",
    ]


def test_sources_exits_1_and_says_how_many_memories_the_change_breaks(tmp_path):
    home, ws = workspace(tmp_path)
    _verified(home, ws, "app.py:3-4", title="a")
    _verified(home, ws, "app.py:2-3", title="b")
    _verified(home, ws, "app.py:7-8", title="c")
    _break(ws)
    done = run_cli(home, ws, "sources")
    assert done.returncode == 1
    assert done.stdout.count("NEEDS RE-REVIEW") == 2
    assert "2 verified memories cite code that changed or is gone" in done.stderr


def test_sources_with_an_id_prints_the_diff_of_each_changed_citation(tmp_path):
    home, ws = workspace(tmp_path)
    rid = _verified(home, ws, "app.py:3-4")
    _break(ws)
    done = run_cli(home, ws, "sources", rid)
    assert done.returncode == 1
    out = done.stdout.splitlines()
    assert "      -line 3" in out and "      +line three" in out
    assert "      @@ -3,2 +3,2 @@" in out


def test_sources_json_is_stable_for_scripts(tmp_path):
    home, ws = workspace(tmp_path)
    rid = _verified(home, ws, "app.py:3-4")
    _break(ws)
    done = run_cli(home, ws, "sources", "--json")
    assert done.returncode == 1
    got = json.loads(done.stdout)
    assert got["needsReview"] == 1 and got["markedStale"] == []
    (record,) = got["records"]
    assert record["id"] == rid and record["needsReview"] is True
    (citation,) = record["citations"]
    assert {k: citation[k] for k in ("id", "path", "startLine", "endLine", "state")} == {
        "id": "app.py:3-4",
        "path": "app.py",
        "startLine": 3,
        "endLine": 4,
        "state": "changed",
    }
    assert citation["contentHash"].startswith("sha256:")


def test_mark_stale_writes_the_hosts_stale_transition_then_sources_exits_0(tmp_path):
    home, ws = workspace(tmp_path)
    rid = _verified(home, ws, "app.py:3-4")
    _break(ws)
    done = run_cli(home, ws, "sources", "--mark-stale")
    assert done.returncode == 1
    assert f"marked stale: {rid}" in done.stdout
    shown = json.loads(run_cli(home, ws, "show", rid, "--json").stdout)
    assert shown["governance"]["verification"] == "stale"
    assert run_cli(home, ws, "sources").returncode == 0


def test_show_lists_the_citations_and_the_need_for_rereview(tmp_path):
    home, ws = workspace(tmp_path)
    rid = _verified(home, ws, "app.py:3-4")
    _break(ws)
    out = run_cli(home, ws, "show", rid).stdout
    assert "re-review:    needed: 1 citation changed or missing" in out
    assert "cited:        changed app.py:3-4  (lines 3-4 changed)" in out


def test_a_bad_cite_is_an_error_line_and_writes_nothing(tmp_path):
    home, ws = workspace(tmp_path)
    done = run_cli(
        home, ws, "propose", "--scope", "project", "--type", "fact", "--title", "t",
        "--content", "c", "--cite", "app.py:5-99",
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == (
        "error[INVALID_CITATION]: app.py:5-99: the file has 8 lines; lines 5-99 are past its end\n"
    )
    assert not (ws / ".dsh").exists()


def test_edit_cite_replaces_the_citations(tmp_path):
    home, ws = workspace(tmp_path)
    rid = _verified(home, ws, "app.py:3-4")
    done = run_cli(home, ws, "edit", rid, "--base-revision", "2", "--cite", "app.py:1-1")
    assert done.returncode == 0, done.stderr
    shown = json.loads(run_cli(home, ws, "show", rid, "--json").stdout)
    assert [r["id"] for r in shown["governance"]["sourceRefs"]] == ["app.py:1-1"]
