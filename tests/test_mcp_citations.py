"""Citations through the MCP server (the SDK's own client, a real server process): an agent
cites files in ``workspace_memory_propose``; a verified record whose cited code changed leaves
search, list and the resources until it is re-verified.
"""

from __future__ import annotations

from citing import store_on, verified, workspace
from test_mcp import SESSION, call, client, ok, read, served_titles

from dsh_memory_tui.mcp import PROPOSE_DESCRIPTION


def test_the_propose_tool_asks_agents_to_cite_symbols_rather_than_lines():
    assert "Cite the code" in PROPOSE_DESCRIPTION
    assert "{path, symbol}" in PROPOSE_DESCRIPTION and "rather than by lines" in PROPOSE_DESCRIPTION


async def test_a_proposal_citing_a_symbol_stores_a_host_valid_file_ref(tmp_path):
    home, ws = workspace(tmp_path)
    (ws / "net.py").write_text("class Client:\n    def fetch(self, url):\n        return url\n")
    async with client(home, ws, "--session", SESSION) as session:
        await ok(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="Fetch",
            content="fetch returns its url",
            citations=[{"path": "net.py", "symbol": "Client.fetch"}],
        )
        error, text = await call(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="Both",
            content="a symbol and lines",
            citations=[{"path": "net.py", "symbol": "Client.fetch", "startLine": 1}],
        )
    assert error and "error[INVALID_CITATION]" in text and "{path, symbol}" in text
    (record,) = store_on(home, ws).records("project")
    refs = [(r.kind, r.id) for r in record.governance.sourceRefs]
    assert refs == [("session", SESSION), ("file", "net.py#Client.fetch")]


async def test_a_proposal_with_citations_stores_host_valid_file_refs(tmp_path):
    home, ws = workspace(tmp_path)
    async with client(home, ws, "--session", SESSION) as session:
        await ok(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="Lines",
            content="The app has numbered lines",
            citations=[{"path": "app.py", "startLine": 2, "endLine": 3}, {"path": "app.py"}],
        )
    (record,) = store_on(home, ws).records("project")
    refs = [(r.kind, r.id) for r in record.governance.sourceRefs]
    assert refs == [("session", SESSION), ("file", "app.py:2-3"), ("file", "app.py")]
    assert all(r.contentHash for r in record.governance.sourceRefs if r.kind == "file")


async def test_a_bad_citation_is_a_tool_error_and_writes_nothing(tmp_path):
    home, ws = workspace(tmp_path)
    async with client(home, ws, "--session", SESSION) as session:
        error, text = await call(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="Outside",
            content="c",
            citations=[{"path": "../etc/passwd"}],
        )
    assert error
    assert "error[INVALID_CITATION]" in text and "inside the workspace" in text
    assert store_on(home, ws).records() == []


async def test_a_record_whose_cited_code_changed_leaves_search_list_and_resources(tmp_path):
    home, ws = workspace(tmp_path)
    verified(store_on(home, ws), "app.py:3-3", title="Line three")
    async with client(home, ws, "--session", SESSION) as session:
        assert served_titles(await ok(session, "workspace_memory_search", query="line")) == [
            "Line three"
        ]
        text = (ws / "app.py").read_text()
        (ws / "app.py").write_text(text.replace("line 3", "line THREE"))
        assert served_titles(await ok(session, "workspace_memory_search", query="line")) == []
        assert served_titles(await ok(session, "workspace_memory_list")) == []
        assert served_titles(await read(session, "memory://verified")) == []
        assert served_titles(await read(session, "memory://verified/project")) == []
        (ws / "app.py").write_text(text)
        assert served_titles(await ok(session, "workspace_memory_list")) == ["Line three"]


def _snapshots(home) -> list:
    root = home / "workspace-memory" / "snapshots"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


async def test_3000_citations_are_refused_before_any_file_is_read_leaving_nothing(tmp_path):
    home, ws = workspace(tmp_path)
    # Files that do not exist: a server that read before counting would say so instead.
    cites = [{"path": f"src/m{i}.py", "startLine": 1, "endLine": 2} for i in range(3000)]
    async with client(home, ws, "--session", SESSION) as session:
        error, text = await call(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="Many",
            content="c",
            citations=cites,
        )
        assert error
        assert "error[INVALID_CITATION]" in text and "at most 32 source refs" in text
        assert "no such file" not in text
        # The server answers the next request.
        assert served_titles(await ok(session, "workspace_memory_list")) == []
    assert store_on(home, ws).records() == []
    assert _snapshots(home) == []


async def test_a_refused_proposal_keeps_no_snapshot_of_what_it_cited(tmp_path):
    home, ws = workspace(tmp_path)
    async with client(home, ws, "--session", SESSION) as session:
        error, text = await call(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="t" * 300,  # past the host's 256 bytes: refused after the files were read
            content="c",
            citations=[{"path": "app.py", "startLine": 2, "endLine": 3}],
        )
    assert error and "error[INVALID_RECORD]" in text
    assert store_on(home, ws).records() == []
    assert _snapshots(home) == []
