"""The queue beside the host's own code (``DSH_HOST_SRC``): what the host's writes leave
waiting on a human is in ``dsh-memory queue``, with its reason, and what the host made stale
is named as withheld in what an agent is served.
"""

from __future__ import annotations

import json

from conftest import run_cli

from dsh_memory_tui.store import MemoryStore

from .corpus import CaseDirs
from .host import HostHarness


def _queue(dirs: CaseDirs) -> dict[str, list[str]]:
    done = run_cli(dirs.home, dirs.workspace, "queue", "--json")
    assert done.returncode == 0, done.stderr
    return {item["id"]: item["reasons"] for item in json.loads(done.stdout)}


def test_a_record_the_host_marks_stale_waits_as_stale(host: HostHarness, dirs: CaseDirs):
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("project", "fact", "Deploy", "make deploy").id
    store.verify(rid)
    assert _queue(dirs) == {}
    host.run("govern", rid, "stale", home=dirs.home, workspace=dirs.workspace)
    assert _queue(dirs) == {rid: ["stale"]}
    payload = run_cli(dirs.home, dirs.workspace, "payload")
    assert "Nothing to show: 1 verified record is withheld until re-review." in payload.stdout
    host.run("govern", rid, "reverify", home=dirs.home, workspace=dirs.workspace)
    assert _queue(dirs) == {}


def test_the_hosts_proposal_and_its_edit_of_a_verified_record_wait(
    host: HostHarness, dirs: CaseDirs
):
    pid = host.propose("Build", "make build", home=dirs.home, workspace=dirs.workspace)["id"]
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = store.create("project", "fact", "Port", "8080").id
    store.verify(rid)
    host.run("edit", rid, "--content", "9090", home=dirs.home, workspace=dirs.workspace)
    assert _queue(dirs) == {rid: ["stale"], pid: ["proposal"]}
