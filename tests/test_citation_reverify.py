"""Re-verify closes the loop, from the command line, on a real git repository: a verified
memory whose cited code moved, changed or was renamed is withheld from agents; ``dsh-memory
reverify ID`` records the host's ``stale`` then ``reverify``, re-anchors each citation where
its text is now (the new lines, the new path), takes today's hash, and ``dsh-memory payload``
serves the memory again at once. Where the text cannot be found, it refuses and names
``--cite``; ``--cite`` replaces the citations in the same write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from citing import commit_all, git, store_on, workspace
from conftest import run_cli

from dsh_memory_tui.sources import State

# A module whose cited function is lines 6-8: a name, a body, a return.
MODULE = """import os


# The client's timeout.

def fetch(url):
    timeout = 30
    return get(url, timeout)


def other():
    return 1
"""


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    home, ws = workspace(tmp_path)
    (ws / "net.py").write_text(MODULE)
    commit_all(ws, "net")
    return home, ws


def _verified(home: Path, ws: Path, *cites: str) -> str:
    args = ["create", "--scope", "project", "--type", "fact", "--title", "Fetch timeout"]
    args += ["--content", "fetch waits 30 s"]
    for cite in cites:
        args += ["--cite", cite]
    made = run_cli(home, ws, *args)
    assert made.returncode == 0, made.stderr
    rid = made.stdout.splitlines()[-1]
    assert run_cli(home, ws, "verify", rid).returncode == 0
    return rid


def _served(home: Path, ws: Path) -> list[str]:
    done = run_cli(home, ws, "payload", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["included"]


def _refs(home: Path, ws: Path, rid: str) -> list[str]:
    done = run_cli(home, ws, "show", rid, "--json")
    assert done.returncode == 0, done.stderr
    return [r["id"] for r in json.loads(done.stdout)["governance"]["sourceRefs"]]


def _history(home: Path, ws: Path, rid: str) -> list[str]:
    done = run_cli(home, ws, "show", rid, "--history", "--json")
    return [r["governance"]["verification"] for r in json.loads(done.stdout)]


def _move_and_change(ws: Path) -> None:
    """Two lines above the function (it moves to 8-10) and its timeout changed."""
    text = (ws / "net.py").read_text()
    text = text.replace("import os\n", "import os\nimport sys\nimport json\n")
    (ws / "net.py").write_text(text.replace("timeout = 30", "timeout = 60"))


def test_reverify_from_the_cli_reanchors_a_moved_and_changed_citation_and_serves_it(
    tmp_path,
):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    assert _served(home, ws) == [rid]
    _move_and_change(ws)
    assert _served(home, ws) == []
    assert run_cli(home, ws, "sources").returncode == 1
    done = run_cli(home, ws, "reverify", rid)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == rid
    # The text the diff located, not the old line numbers (now two import lines).
    assert _refs(home, ws, rid) == ["net.py:8-10"]
    assert _history(home, ws, rid)[-2:] == ["stale", "verified"]
    assert run_cli(home, ws, "sources").returncode == 0
    assert _served(home, ws) == [rid]
    # Later edits of that code are caught again.
    (ws / "net.py").write_text((ws / "net.py").read_text().replace("timeout = 60", "t = 9"))
    assert _served(home, ws) == []


def test_reverify_after_mark_stale_takes_todays_hash(tmp_path):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    (ws / "net.py").write_text(MODULE.replace("timeout = 30", "timeout = 60"))
    marked = run_cli(home, ws, "sources", "--mark-stale")
    assert f"marked stale: {rid}" in marked.stdout
    done = run_cli(home, ws, "reverify", rid)
    assert done.returncode == 0, done.stderr
    assert run_cli(home, ws, "sources").returncode == 0
    assert _served(home, ws) == [rid]


def test_reverify_refuses_text_it_cannot_find_and_names_cite(tmp_path):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    (ws / "net.py").write_text("def get_it():\n    pass\n\n\ndef nothing():\n    return 2\n")
    before = run_cli(home, ws, "show", rid, "--history", "--json").stdout
    done = run_cli(home, ws, "reverify", rid)
    assert done.returncode == 1
    assert done.stderr.startswith("error[INVALID_CITATION]: ")
    assert "cannot be found" in done.stderr and f"dsh-memory reverify {rid} --cite" in done.stderr
    assert run_cli(home, ws, "show", rid, "--history", "--json").stdout == before


def test_reverify_cite_replaces_the_citations_in_the_same_write(tmp_path):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    (ws / "net.py").write_text("def nothing():\n    return 2\n")
    done = run_cli(home, ws, "reverify", rid, "--cite", "net.py:1-2", "--cite", "app.py:1-1")
    assert done.returncode == 0, done.stderr
    assert _refs(home, ws, rid) == ["net.py:1-2", "app.py:1-1"]
    assert _history(home, ws, rid)[-2:] == ["stale", "verified"]
    assert _served(home, ws) == [rid]


def test_reverify_of_a_record_whose_citations_hold_is_refused(tmp_path):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    done = run_cli(home, ws, "reverify", rid)
    assert done.returncode == 1
    assert "every citation holds" in done.stderr


@pytest.mark.parametrize("how", ["committed", "staged", "working tree"])
def test_a_renamed_file_is_moved_and_reverify_writes_the_new_path(tmp_path, how):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    if how == "working tree":
        (ws / "net.py").rename(ws / "http.py")
    else:
        git(ws, "mv", "net.py", "http.py")
        if how == "committed":
            git(ws, "commit", "-q", "-m", "rename")
    store = store_on(home, ws)
    (check,) = store.sources.checks(store.get(rid))
    assert check.state is State.MOVED, check.why
    assert check.why == "renamed to http.py, the text unchanged"
    assert _served(home, ws) == [rid]  # moved is not broken
    listed = json.loads(run_cli(home, ws, "sources", "--json").stdout)
    (cited,) = listed["records"][0]["citations"]
    assert cited["state"] == "moved"
    assert cited["nowAt"] == {"path": "http.py", "startLine": 6, "endLine": 8}
    done = run_cli(home, ws, "reverify", rid)
    assert done.returncode == 0, done.stderr
    assert _refs(home, ws, rid) == ["http.py:6-8"]


def test_a_renamed_and_changed_file_is_changed_and_reverify_follows_it(tmp_path):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    git(ws, "mv", "net.py", "http.py")
    text = (ws / "http.py").read_text().replace("import os\n", "import os\nimport re\n")
    (ws / "http.py").write_text(text.replace("timeout = 30", "timeout = 45"))
    assert _served(home, ws) == []
    store = store_on(home, ws)
    (check,) = store.sources.checks(store.get(rid))
    assert check.state is State.CHANGED and check.why.startswith("renamed to http.py; ")
    diff = run_cli(home, ws, "sources", rid).stdout
    assert "+++ http.py (now)" in diff and "+    timeout = 45" in diff
    assert run_cli(home, ws, "reverify", rid).returncode == 0
    assert _refs(home, ws, rid) == ["http.py:7-9"]
    assert _served(home, ws) == [rid]


def test_a_deleted_file_is_missing_and_the_diff_says_what_to_do(tmp_path):
    home, ws = _workspace(tmp_path)
    rid = _verified(home, ws, "net.py:6-8")
    git(ws, "rm", "-q", "net.py")
    git(ws, "commit", "-q", "-m", "gone")
    done = run_cli(home, ws, "sources", rid)
    assert "missing  net.py:6-8  (the file is gone" in done.stdout
    head = [line for line in done.stdout.splitlines() if "is shown as removed" in line]
    assert head and "re-verify it and give where the code is now" in head[0]
    assert "against the file is gone" not in done.stdout
