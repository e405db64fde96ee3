"""Citations against the host's own code (``DSH_HOST_SRC``): the host opens records whose
``file`` refs we wrote clean and keeps them through its own writes; our ``--mark-stale`` is its
``stale`` transition (its list shows the record stale, unpinned); re-verify is its
``reverify``; a record the host made stale needs no re-review here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.model import MAX_SOURCE_REFS
from dsh_memory_tui.store import MemoryStore

from .corpus import CaseDirs
from .host import HostHarness


def _code(dirs: CaseDirs) -> Path:
    path = dirs.workspace / "app.py"
    path.write_text("".join(f"line {i}\n" for i in range(1, 41)))
    return path


def _host_record(host: HostHarness, dirs: CaseDirs, rid: str) -> dict:
    seen = host.run("list", "--full", home=dirs.home, workspace=dirs.workspace)
    assert seen["warnings"] == []
    (record,) = [r for r in seen["records"] if r["id"] == rid]
    return record


def test_the_host_opens_records_with_citations_clean_and_keeps_their_refs(host, dirs):
    _code(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("project", "fact", "t", "c", citations=["app.py:3-4", "app.py"]).id
    proposal = store.propose("project", "fact", "p", "q", citations=["app.py:9-9"]).id
    opened = host.run("open-warnings", home=dirs.home, workspace=dirs.workspace)
    assert (opened["warnings"], opened["records"]) == ([], 2)
    ours = [r.model_dump(exclude_unset=True) for r in store.get(rid).governance.sourceRefs]
    assert _host_record(host, dirs, rid)["governance"]["sourceRefs"] == ours
    # The host's own write (verify) keeps them.
    host.run("govern", proposal, "verify", home=dirs.home, workspace=dirs.workspace)
    (ref,) = _host_record(host, dirs, proposal)["governance"]["sourceRefs"]
    assert ref["kind"] == "file" and ref["id"] == "app.py:9-9"


def test_the_host_accepts_32_citations(host, dirs):
    _code(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    cites = [f"app.py:{i}-{i}" for i in range(1, MAX_SOURCE_REFS + 1)]
    rid = store.create("project", "fact", "t", "c", citations=cites).id
    assert len(_host_record(host, dirs, rid)["governance"]["sourceRefs"]) == 32
    with pytest.raises(StoreError, match="at most 32"):
        store.create("project", "fact", "u", "d", citations=[*cites, "app.py:33-33"])


def test_mark_stale_is_the_hosts_stale_and_reverify_its_reverify(host, dirs):
    code = _code(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("project", "fact", "t", "c", citations=["app.py:3-4"]).id
    store.verify(rid)
    host.run("govern", rid, "pin", home=dirs.home, workspace=dirs.workspace)
    code.write_text(code.read_text().replace("line 4\n", "line four\n"))
    (marked,), _ = store.mark_stale([rid])
    seen = _host_record(host, dirs, rid)
    assert seen["governance"]["verification"] == "stale"
    assert "pinnedAt" not in seen["governance"]
    active = host.run("list", "--active", home=dirs.home, workspace=dirs.workspace)
    assert [r["id"] for r in active["records"]] == [rid]  # still visible, for repair
    again = store.reverify_citations(rid)
    seen = _host_record(host, dirs, rid)
    assert seen["governance"]["verification"] == "verified"
    assert seen["governance"]["revision"] == again.governance.revision
    assert seen["governance"]["sourceRefs"][0]["contentHash"] == (
        again.governance.sourceRefs[0].contentHash
    )
    assert store.sources.holds(store.get(rid))


def test_a_record_the_host_made_stale_needs_no_rereview_here(host, dirs):
    code = _code(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("project", "fact", "t", "c", citations=["app.py:3-4"]).id
    store.verify(rid)
    code.write_text(code.read_text().replace("line 3\n", "line three\n"))
    assert not store.sources.holds(store.get(rid))
    host.run("govern", rid, "stale", home=dirs.home, workspace=dirs.workspace)
    record = store.get(rid)
    assert record.governance.verification.value == "stale"
    assert store.sources.holds(record)
    assert store.reverify_citations(rid).governance.verification.value == "verified"


_OURS = {"reviewedBy", "reviewedAt", "reviewNote", "sourceRefs"}


def test_reverify_of_moved_and_changed_code_is_the_hosts_own_stale_then_reverify(host, dirs):
    code = _code(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("project", "fact", "ours", "c", citations=["app.py:3-5"]).id
    twin = store.create("project", "fact", "the host's", "d", citations=["app.py:3-5"]).id
    for record_id in (rid, twin):
        store.verify(record_id)
        host.run("govern", record_id, "pin", home=dirs.home, workspace=dirs.workspace)
    # Two lines above it (it moves to 5-7) and its middle line changed.
    code.write_text("# a\n# b\n" + code.read_text().replace("line 4\n", "line 4, changed\n"))
    store.reverify_citations(rid)
    host.run("govern", twin, "stale", home=dirs.home, workspace=dirs.workspace)
    host.run("govern", twin, "reverify", home=dirs.home, workspace=dirs.workspace)
    ours, theirs = _host_record(host, dirs, rid), _host_record(host, dirs, twin)
    # The host reads ours as it reads its own: the same transitions, the same fields.
    assert ours["governance"]["revision"] == theirs["governance"]["revision"] == 5
    same = {k: v for k, v in ours["governance"].items() if k not in _OURS | {"verifiedAt"}}
    assert same == {
        k: v for k, v in theirs["governance"].items() if k not in _OURS | {"verifiedAt"}
    }
    assert same["verification"] == "verified" and "pinnedAt" not in same
    (ref,) = ours["governance"]["sourceRefs"]
    assert ref["id"] == "app.py:5-7"
    assert store.sources.holds(store.get(rid))


def test_the_host_keeps_a_user_records_workspace_named_citation(host, dirs):
    _code(dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("user", "preference", "t", "c", citations=["app.py:3-4"]).id
    (ref,) = store.get(rid).governance.sourceRefs
    assert ref.id.startswith("root:") and ref.id.endswith("//app.py:3-4")
    opened = host.run(
        "open-warnings", home=dirs.home, workspace=dirs.workspace, scope="user", user="alice"
    )
    assert opened["warnings"] == []
    host.run(
        "govern", rid, "verify", home=dirs.home, workspace=dirs.workspace, scope="user",
        user="alice",
    )  # fmt: skip
    seen = host.run(
        "list", "--full", home=dirs.home, workspace=dirs.workspace, scope="user", user="alice"
    )
    (record,) = seen["records"]
    assert record["governance"]["sourceRefs"] == [ref.model_dump(exclude_unset=True)]
    assert store.sources.holds(store.get(rid))


def test_the_host_opens_records_citing_symbols_clean_and_keeps_their_refs(host, dirs):
    """A symbol citation is the host's own ``file`` ref (id ``PATH#SYMBOL``, a sha256 hash):
    the host opens it clean, keeps it through its own write, and the 32-ref limit holds."""
    (dirs.workspace / "net.py").write_text(
        "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(MAX_SOURCE_REFS + 1))
    )
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    cites = [f"net.py#f{i}" for i in range(MAX_SOURCE_REFS)]
    rid = store.propose("project", "fact", "t", "c", citations=cites).id
    opened = host.run("open-warnings", home=dirs.home, workspace=dirs.workspace)
    assert (opened["warnings"], opened["records"]) == ([], 1)
    host.run("govern", rid, "verify", home=dirs.home, workspace=dirs.workspace)
    refs = _host_record(host, dirs, rid)["governance"]["sourceRefs"]
    files = [r for r in refs if r["kind"] == "file"]
    assert [r["id"] for r in files] == cites
    assert all(r["contentHash"].startswith("sha256:") for r in files)
    with pytest.raises(StoreError, match="at most 32"):
        store.create("project", "fact", "u", "d", citations=[*cites, "net.py#f32"])
