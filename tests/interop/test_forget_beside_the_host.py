"""The host's forget keeps a record's title, content and tags in its tombstone (its design scrubs
them "on the next successful compaction", which it never runs). Ours erases them: our forget of
such a record, and our compaction, leave the text in no file of the store, and the host still
reads every record, the forgotten one as forgotten."""

from __future__ import annotations

import pytest

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.governance import tombstone_title
from dsh_memory_tui.store import MemoryStore

from .corpus import CaseDirs
from .host import HostHarness

SECRET = "the deploy key is SECRET-4711"


def _host_forgotten(host: HostHarness, dirs: CaseDirs) -> tuple[str, str]:
    """A record and a neighbour, proposed by the host; the record forgotten by the host."""
    ids = [
        str(host.propose(title, content, home=dirs.home, workspace=dirs.workspace)["id"])
        for title, content in ((f"Key {SECRET}", SECRET), ("Neighbour", "Stays as it is"))
    ]
    host.run("forget", ids[0], home=dirs.home, workspace=dirs.workspace)
    assert SECRET.encode() in dirs.scope_path("project").read_bytes()  # the host kept it
    return ids[0], ids[1]


def _text_anywhere(dirs: CaseDirs) -> list[str]:
    folder = dirs.scope_path("project").parent
    return [p.name for p in folder.iterdir() if SECRET.encode() in p.read_bytes()]


@pytest.mark.parametrize("how", ["forget", "compact"])
def test_the_text_the_hosts_forget_kept_is_erased_by_ours(
    how: str, dirs: CaseDirs, host: HostHarness
) -> None:
    forgotten, neighbour = _host_forgotten(host, dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    if how == "forget":
        store.forget(forgotten)
    else:
        assert store.compact(store.file_for("project")).erased == 1
    assert _text_anywhere(dirs) == []
    seen = host.run("list", "--full", home=dirs.home, workspace=dirs.workspace)
    assert seen["warnings"] == []
    by_id = {r["id"]: r for r in seen["records"]}
    assert by_id[forgotten]["status"] == "forgotten"
    assert by_id[forgotten]["title"] == tombstone_title(forgotten)
    assert by_id[neighbour]["content"] == "Stays as it is"
    assert host.run("open-warnings", home=dirs.home, workspace=dirs.workspace)["warnings"] == []


def test_a_host_forgotten_record_is_refused_without_claiming_its_text_is_gone(
    dirs: CaseDirs, host: HostHarness
) -> None:
    forgotten, _ = _host_forgotten(host, dirs)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    with pytest.raises(StoreError) as err:
        store.verify(forgotten)
    assert err.value.code == "FORGOTTEN"
    assert "still in the file" in err.value.message and "gone" not in err.value.message
