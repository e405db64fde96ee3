"""``dsh-memory merge KEEP OTHER`` keeps both records' citations (the kept record's first,
within the host's 32 source refs, saying what of the other's it could not keep) and lists its
parents as the host's governance design does ("Merging creates a new revision that lists both
parents": ``governance.merge``), not as ``import`` refs. Real processes; with
``DSH_HOST_SRC`` the host's own code opens the merged record clean and keeps its citations.
"""

from __future__ import annotations

import json
import os

import pytest
from citing import store_on, workspace
from conftest import run_cli
from interop.host import HostHarness, default_build_dir, ensure_build


def _proposal(home, ws, title: str, *cites: str) -> str:
    args = ["propose", "--scope", "project", "--type", "fact", "--title", title]
    args += ["--content", f"{title}."]
    for cite in cites:
        args += ["--cite", cite]
    done = run_cli(home, ws, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def _shown(home, ws, rid: str) -> dict:
    return json.loads(run_cli(home, ws, "show", rid, "--json").stdout)


def test_merge_keeps_both_records_citations_and_lists_its_parents(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "lib.py").write_text("def f():\n    return 1\n")
    keep = _proposal(home, ws, "Lines are numbered", "app.py:1-2")
    other = _proposal(home, ws, "lines are numbered!", "lib.py:1-2", "app.py:7-8")
    before = {rid: _shown(home, ws, rid) for rid in (keep, other)}
    done = run_cli(home, ws, "merge", keep, other)
    assert done.returncode == 0, done.stderr
    assert "not kept" not in done.stdout
    merged = _shown(home, ws, keep)
    refs = [(r["kind"], r["id"]) for r in merged["governance"]["sourceRefs"]]
    assert refs == [("file", "app.py:1-2"), ("file", "lib.py:1-2"), ("file", "app.py:7-8")]
    assert merged["governance"]["merge"] == {
        "revision": 2,
        "parents": [
            {"id": rid, "revision": 1, "contentHash": before[rid]["contentHash"]}
            for rid in (keep, other)
        ],
    }
    listed = json.loads(run_cli(home, ws, "sources", keep, "--json").stdout)
    assert [c["state"] for c in listed["records"][0]["citations"]] == ["ok"] * 3
    payload = json.loads(run_cli(home, ws, "payload", "--json").stdout)
    assert payload["included"] == [keep]


def test_merge_says_what_of_the_others_refs_it_could_not_keep(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "many.py").write_text("".join(f"x{i} = {i}\n" for i in range(40)))
    keep = _proposal(home, ws, "Forty", *[f"many.py:{i}-{i}" for i in range(1, 21)])
    cites = ["app.py:3-4", *[f"many.py:{i}-{i}" for i in range(21, 36)]]
    other = _proposal(home, ws, "forty!", *cites)
    store = store_on(home, ws)
    # The other cites app.py:3-4 as it was at another time: the kept record's stays.
    store.edit(keep, 1, citations=["app.py:3-4", *[f"many.py:{i}-{i}" for i in range(1, 21)]])
    (ws / "app.py").write_text((ws / "app.py").read_text().replace("line 4", "line four"))
    store.edit(other, 1, citations=["app.py:3-4", *[f"many.py:{i}-{i}" for i in range(21, 36)]])
    done = run_cli(home, ws, "merge", keep, other)
    assert done.returncode == 0, done.stderr
    not_kept = [line for line in done.stdout.splitlines() if line.startswith("not kept: ")]
    assert (
        f"not kept: file app.py:3-4 of {other} ({keep} cites the same lines as they were "
        "at another time)" in not_kept
    )
    assert sum("the host allows 32 source refs" in line for line in not_kept) == 4
    refs = store_on(home, ws).get(keep).governance.sourceRefs
    assert len(refs) == 32 and len({r.id for r in refs}) == 32


def test_the_host_opens_a_merged_record_with_both_citations_clean(tmp_path):
    if not os.environ.get("DSH_HOST_SRC"):
        pytest.skip("DSH_HOST_SRC is not set: no host plugin source to run the host's own code")
    ensure_build(os.environ["DSH_HOST_SRC"], default_build_dir())
    host = HostHarness(default_build_dir())
    home, ws = workspace(tmp_path)
    keep = _proposal(home, ws, "Lines are numbered", "app.py:1-2")
    other = _proposal(home, ws, "lines are numbered!", "app.py:7-8")
    assert run_cli(home, ws, "merge", keep, other).returncode == 0
    opened = host.run("open-warnings", home=home, workspace=ws)
    assert opened["warnings"] == []
    listed = {r["id"]: r for r in host.run("list", "--full", home=home, workspace=ws)["records"]}
    assert [r["id"] for r in listed[keep]["governance"]["sourceRefs"]] == [
        "app.py:1-2",
        "app.py:7-8",
    ]
    host.run("govern", keep, "pin", home=home, workspace=ws)
    assert store_on(home, ws).get(keep).governance.pinnedBy == "user"
