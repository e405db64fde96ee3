"""The byte budget of what an agent is served (issue 25): ``agent_view(..., budget=N)`` and
``dsh-memory mcp --budget-bytes N`` / ``DSH_MCP_BUDGET_BYTES``. Records go in the served order
(pinned first) until the next would take the text past the budget; the text ends naming how
many were cut; a search is bounded the same way. Real stores in tmp_path, the server a real
subprocess through the SDK's client.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli
from test_mcp import client, ok, read, served_titles, store_of

from dsh_memory_tui import agent_view as av
from dsh_memory_tui import settings
from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import utf8_len
from dsh_memory_tui.store import MemoryStore

AUDIENCE = av.Audience(("s1", None))


def _filled(store: MemoryStore, n: int, size: int = 400) -> list[str]:
    """``n`` verified project records of about ``size`` bytes of content, newest last."""
    ids = []
    for i in range(n):
        body = f"record {i:03d} " + "x" * size
        ids.append(store.create("project", "fact", f"title {i:03d}", body).id)
    store.apply_many("verify", ids)
    return ids


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    (tmp_path / "home").mkdir()
    (tmp_path / "workspace").mkdir()
    return MemoryStore.open(tmp_path / "home", tmp_path / "workspace", "alice")


def test_records_go_in_the_served_order_until_the_budget(store):
    _filled(store, 20)
    whole = av.agent_view(store, AUDIENCE)
    got = av.agent_view(store, AUDIENCE, budget=3000)
    assert got.size <= 3000
    assert 0 < len(got.records) < 20
    # A prefix of the served order, and the rest, in order, is what was cut.
    assert got.records + list(got.cut) == whole.records
    # The next record would not have fitted.
    assert got.size + utf8_len(av.render_record(got.cut[0])) > 3000


def test_the_text_ends_by_naming_what_was_cut(store):
    _filled(store, 20)
    got = av.agent_view(store, AUDIENCE, budget=3000)
    last = got.text.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"_{len(got.cut)} more verified records not sent: over the budget")
    assert "(3,000 bytes)" in last
    assert f"{len(got.records)} records a human verified" in got.text


def test_everything_that_fits_is_sent_with_no_closing_line(store):
    _filled(store, 3)
    got = av.agent_view(store, AUDIENCE, budget=settings.DEFAULT_BUDGET_BYTES)
    assert len(got.records) == 3 and not got.cut
    assert got.text == av.agent_view(store, AUDIENCE).text
    assert "not sent" not in got.text


def test_pinned_records_are_sent_first_under_the_budget(store):
    ids = _filled(store, 20)
    store.apply("pin", ids[0])  # the oldest: last in the list order without its pin
    got = av.agent_view(store, AUDIENCE, budget=2000)
    assert got.records[0].id == ids[0]
    assert ids[0] not in {r.id for r in got.cut}


def test_a_record_larger_than_the_budget_stops_the_list_there(store):
    small = _filled(store, 2, size=10)
    big = store.create("project", "fact", "big", "y" * 5000).id
    store.verify(big)  # the newest: first in the list
    got = av.agent_view(store, AUDIENCE, budget=2000)
    assert got.records == []
    assert got.cut[0].id == big  # the newest comes first, and stops the list
    assert {r.id for r in got.cut[1:]} == set(small)
    assert "3 more verified records not sent" in got.text


def test_a_search_is_bounded_too(store):
    _filled(store, 20)
    got = av.agent_view(store, AUDIENCE, query="record", budget=2500)
    assert got.size <= 2500 and got.cut
    assert f"_{len(got.cut)} more matching records not sent: over the budget" in got.text
    assert "narrow the search" in got.text


def test_records_beyond_the_limit_are_named_too(store):
    _filled(store, 105, size=5)
    got = av.agent_view(store, AUDIENCE, budget=settings.DEFAULT_BUDGET_BYTES)
    assert len(got.records) == 100 and got.more == 5
    assert "5 more beyond the limit of 100 records" in got.text


def test_the_budget_is_the_flag_else_the_environment_else_32_kib(monkeypatch):
    monkeypatch.delenv(settings.BUDGET_ENV, raising=False)
    assert settings.budget_bytes() == 32 * 1024
    monkeypatch.setenv(settings.BUDGET_ENV, "4096")
    assert settings.budget_bytes() == 4096
    assert settings.budget_bytes("2048") == 2048


@pytest.mark.parametrize("value", ["12", "lots", "-5", "1023"])
def test_a_budget_below_1024_bytes_or_not_a_number_is_a_usage_error(value):
    with pytest.raises(StoreError) as err:
        settings.budget_bytes(value)
    assert err.value.code is ErrorCode.USAGE
    assert "--budget-bytes" in err.value.message


def test_the_token_estimate_is_a_quarter_of_the_bytes_rounded_up():
    assert av.estimate_tokens(0) == 0
    assert av.estimate_tokens(1) == 1
    assert av.estimate_tokens(4096) == 1024


# ----------------------------------------------------------------------------- the server


async def test_the_server_cuts_its_list_and_resources_at_the_budget_flag(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    _filled(store_of(home, workspace), 20)
    expected = av.agent_view(store_of(home, workspace), AUDIENCE, budget=3000)
    async with client(home, workspace, "--session", "s1", "--budget-bytes", "3000") as session:
        listed = await ok(session, "workspace_memory_list")
        resource = await read(session, "memory://verified")
        found = await ok(session, "workspace_memory_search", query="record")
    assert served_titles(listed) == [r.title for r in expected.records]
    # The list's use counts moved what it sent to the top; the resource's cut is the same size.
    for text in (listed, resource):
        assert utf8_len(text) <= 3000
        assert len(served_titles(text)) == len(expected.records)
        assert f"{len(expected.cut)} more verified records not sent" in text
    assert utf8_len(found) <= 3000 and "more matching records not sent" in found


async def test_the_server_takes_its_budget_from_the_environment(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    _filled(store_of(home, workspace), 20)
    async with client(home, workspace, env={settings.BUDGET_ENV: "2000"}) as session:
        listed = await ok(session, "workspace_memory_list")
    assert utf8_len(listed) <= 2000 and "not sent: over the budget (2,000 bytes)" in listed


def test_mcp_with_a_bad_budget_exits_2_naming_it(tmp_path):
    (tmp_path / "home").mkdir()
    result = run_cli(tmp_path / "home", tmp_path, "mcp", "--budget-bytes", "10")
    assert result.returncode == 2
    assert result.stderr.startswith("error[USAGE]: --budget-bytes '10'")
    assert "Traceback" not in result.stderr
