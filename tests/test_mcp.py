"""``dsh-memory mcp`` through the SDK's own client: ``ClientSession`` over ``stdio_client``, the
server a real subprocess (``python -m dsh_memory_tui.cli mcp ...``) on real files in tmp_path.

What is checked: the tools and their annotations; a proposal is the line the host's
``proposeMemory`` writes (and the host reads it); bad proposals are tool errors that write
nothing; unverified, rejected, stale, archived, forgotten, expired, other users', other
sessions' and (without ``--include-shared``) shared-project records are never served; a record
verified through the CLI is served by the running server; the resource text is
``agent_view``'s; use counts are written once per record per server run; the missing extra is
a one-line error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO_ROOT, run_cli
from interop.host import HostHarness, default_build_dir, ensure_build, is_built
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import Implementation

from dsh_memory_tui import agent_view as av
from dsh_memory_tui.mcp import INSTALL_HINT, SDK_REQUIREMENT
from dsh_memory_tui.model import (
    Location,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    content_hash,
    next_revision,
    now_ms,
    parse_line,
)
from dsh_memory_tui.store import MemoryStore

SESSION = "s1"
CALL_TIMEOUT_S = 60
ANSWER = (
    'Saved memory proposal "{title}" ({scope} scope) for your review. It is not injected into '
    "context until the user verifies it."
)


# ----------------------------------------------------------------------------- helpers


def store_of(home: Path, workspace: Path, user: str = "alice") -> MemoryStore:
    return MemoryStore.open(home, workspace, user)


@asynccontextmanager
async def client(
    home: Path,
    workspace: Path,
    *args: str,
    user: str = "alice",
    env: dict[str, str] | None = None,
    client_info: Implementation | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialised client session with ``dsh-memory mcp ARGS`` as a real subprocess;
    ``client_info``: the name and version the client gives in its initialize."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "dsh_memory_tui.cli",
            "--home",
            str(home),
            "--workspace",
            str(workspace),
            "--user",
            user,
            "mcp",
            *args,
        ],
        env={"PYTHONPATH": str(REPO_ROOT), **(env or {})},
        cwd=str(workspace),
    )
    with open(home.parent / "server-stderr.log", "a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=client_info) as session,
        ):
            with anyio.fail_after(CALL_TIMEOUT_S):
                await session.initialize()
            yield session


async def call(
    session: ClientSession, tool: str, meta: dict[str, Any] | None = None, **arguments: Any
) -> tuple[bool, str]:
    """(isError, text) of one tool call."""
    with anyio.fail_after(CALL_TIMEOUT_S):
        result = await session.call_tool(tool, arguments, meta=meta)
    text = "".join(c.text for c in result.content if c.type == "text")
    return bool(result.is_error), text


async def ok(
    session: ClientSession, tool: str, meta: dict[str, Any] | None = None, **arguments: Any
) -> str:
    error, text = await call(session, tool, meta, **arguments)
    assert not error, text
    return text


async def read(session: ClientSession, uri: str) -> str:
    with anyio.fail_after(CALL_TIMEOUT_S):
        result = await session.read_resource(uri)
    return "".join(c.text for c in result.contents)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def host_verdicts(path: Path, location: Location) -> list[Record]:
    """Every line of ``path`` through the host's validation (``model.parse_line``, which
    gives the host corpus's verdict on each of its 282 cases): all must be records.
    """
    out = []
    for raw in path.read_bytes().splitlines():
        result = parse_line(raw, location)
        assert isinstance(result, Record), (raw, result)
        out.append(result)
    return out


def served_titles(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


@pytest.fixture(scope="module")
def host() -> HostHarness:
    """The host's own code (``tests/host-harness``), when it is built or buildable."""
    build = default_build_dir()
    if os.environ.get("DSH_HOST_SRC"):
        ensure_build(os.environ["DSH_HOST_SRC"], build)
    if not is_built(build):
        pytest.skip("no host build (set DSH_HOST_SRC to build one)")
    return HostHarness(build)


# ----------------------------------------------------------------------------- tools


async def test_lists_the_three_tools_with_annotations_and_the_resources(dirs):
    home, workspace = dirs
    async with client(home, workspace, "--session", SESSION) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        resources = {str(r.uri) for r in (await session.list_resources()).resources}
    assert set(tools) == {
        "workspace_memory_propose",
        "workspace_memory_search",
        "workspace_memory_list",
    }
    propose = tools["workspace_memory_propose"]
    assert propose.annotations.read_only_hint is False
    assert propose.annotations.destructive_hint is False
    assert propose.annotations.open_world_hint is False
    assert propose.input_schema["required"] == ["type", "title", "content"]
    props = propose.input_schema["properties"]
    assert props["type"]["enum"] == ["decision", "preference", "convention", "fact"]
    assert props["scope"]["enum"] == ["project", "session"]
    assert props["tags"]["items"] == {"type": "string"}
    for name in ("workspace_memory_search", "workspace_memory_list"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].annotations.open_world_hint is False
    assert tools["workspace_memory_search"].input_schema["required"] == ["query"]
    assert resources == {
        "memory://verified",
        "memory://verified/session",
        "memory://verified/project",
        "memory://verified/user",
    }


async def test_include_shared_adds_the_shared_resource(dirs):
    home, workspace = dirs
    async with client(home, workspace, "--include-shared") as session:
        resources = {str(r.uri) for r in (await session.list_resources()).resources}
    assert "memory://verified/shared-project" in resources


# ----------------------------------------------------------------------------- proposals


async def test_a_proposal_is_the_line_the_hosts_propose_memory_writes(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    project = store.file_for(Scope.PROJECT)
    async with client(home, workspace, "--session", SESSION) as session:
        answer = await ok(
            session,
            "workspace_memory_propose",
            {"claudecode/toolUseId": "toolu_01"},
            type="convention",
            title="Run ruff",
            content="CI fails on ruff errors",
            tags=["ci", "lint"],
        )
        answer_session = await ok(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="Port",
            content="The dev server listens on 8080",
            scope="session",
        )
    assert answer == ANSWER.format(title="Run ruff", scope="project")
    assert answer_session == ANSWER.format(title="Port", scope="session")

    [record] = host_verdicts(project.path, project.location)
    assert record.id.startswith("memory:") and record.scopeKey == store.paths.root_id
    line = lines(project.path)[0]
    assert line["provenance"] == {"kind": "agent", "sessionId": SESSION, "note": "memory proposal"}
    assert line["governance"] == {
        "origin": "model-suggested",
        "sourceRefs": [{"kind": "session", "id": SESSION}, {"kind": "event", "id": "toolu_01"}],
        "verification": "unverified",
        "revision": 1,
        "retention": "project-delete",
    }
    assert (line["type"], line["title"], line["content"], line["tags"]) == (
        "convention",
        "Run ruff",
        "CI fails on ruff errors",
        ["ci", "lint"],
    )
    assert line["status"] == "active" and line["useCount"] == 0
    assert line["contentHash"] == content_hash("CI fails on ruff errors")

    session_file = store.file_for(Scope.SESSION, (SESSION, None))
    [srecord] = host_verdicts(session_file.path, session_file.location)
    assert srecord.scopeKey == f"{SESSION}|{store.paths.root_id}"
    sline = lines(session_file.path)[0]
    assert sline["provenance"]["sessionId"] == SESSION
    # No tool-call id from the client: the session ref alone, as the host writes it.
    assert sline["governance"]["sourceRefs"] == [{"kind": "session", "id": SESSION}]
    assert sline["governance"]["retention"] == "session-end"
    assert store.review_queue() and {r.id for r in store.review_queue()} == {record.id, srecord.id}


async def test_a_proposal_is_an_append_an_open_view_sees_at_once(dirs):
    """Live: the app's views read only appended bytes; a proposal is one such append, and it
    names the proposing session."""
    home, workspace = dirs
    store = store_of(home, workspace)
    store.create("project", "fact", "Existing", "Something already here")
    view = store.view(store.file_for(Scope.PROJECT))
    view.refresh()
    async with client(home, workspace, "--session", "agent-7") as session:
        await ok(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="New",
            content="A new fact",
        )
        change = view.refresh()
    assert not change.reset and len(change.ids) == 1
    proposed = view.current[change.ids[0]]
    assert proposed.provenance.sessionId == "agent-7" and proposed.in_review_queue()


async def test_the_host_writes_the_same_proposal_and_reads_ours(dirs, host, tmp_path):
    home, workspace = dirs
    async with client(home, workspace, "--session", SESSION) as session:
        await ok(
            session,
            "workspace_memory_propose",
            {"claudecode/toolUseId": "toolu_9"},
            type="decision",
            title="Use PostgreSQL 16",
            content="The main store is pg16",
            tags=["db"],
        )
    other_home, other_ws = tmp_path / "host-home", tmp_path / "host-ws"
    other_home.mkdir()
    other_ws.mkdir()
    host.run(
        "propose",
        "--type",
        "decision",
        "--title",
        "Use PostgreSQL 16",
        "--content",
        "The main store is pg16",
        "--tag",
        "db",
        "--event",
        "toolu_9",
        home=other_home,
        workspace=other_ws,
        session=SESSION,
    )
    ours = lines(workspace / ".dsh/workspace-memory/records.jsonl")[0]
    theirs = lines(other_ws / ".dsh/workspace-memory/records.jsonl")[0]
    for line in (ours, theirs):
        for key in ("id", "createdAt", "updatedAt", "scopeKey"):
            line.pop(key)
    assert ours == theirs
    assert list(ours) == list(theirs)  # the same fields in the same order
    opened = host.run("open-warnings", home=home, workspace=workspace)
    assert opened["warnings"] == [] and opened["records"] == 1


BAD_PROPOSALS = [
    ({"type": "rumour", "title": "t", "content": "c"}, "Memory proposal type is invalid"),
    (
        {"type": "fact", "title": "t", "content": "c", "scope": "user"},
        "Memory proposal scope is invalid",
    ),
    (
        {"type": "fact", "title": "t", "content": "c", "scope": "shared-project"},
        "Memory proposal scope is invalid",
    ),
    ({"type": "fact", "title": "   ", "content": "c"}, "Memory proposal title is required"),
    ({"type": "fact", "title": 5, "content": "c"}, "Memory proposal title is required"),
    ({"type": "fact", "title": "t", "content": "\n\t "}, "Memory proposal content is required"),
    (
        {"type": "fact", "title": "é" * 129, "content": "c"},
        "Memory title is invalid (over 256 UTF-8 bytes)",
    ),
    (
        {"type": "fact", "title": "bell\x07", "content": "c"},
        "Memory title is invalid (contains a control character)",
    ),
    (
        {"type": "fact", "title": "t", "content": "x" * (64 * 1024 + 1)},
        "Memory content is invalid (over 65536 UTF-8 bytes)",
    ),
    ({"type": "fact", "title": "t", "content": "nul\x00"}, "Memory content is invalid"),
    (
        {"type": "fact", "title": "t", "content": "c", "tags": [f"t{i}" for i in range(33)]},
        "Memory tags are invalid",
    ),
    (
        {"type": "fact", "title": "t", "content": "c", "tags": ["x" * 65]},
        "Memory tag is invalid (over 64 UTF-8 bytes)",
    ),
    (
        {"type": "fact", "title": "t", "content": "c", "tags": "ci"},
        "Memory proposal tags are invalid",
    ),
    ({"type": "fact", "title": "t"}, "content"),
]


async def test_bad_proposals_are_tool_errors_naming_the_rule_and_write_nothing(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    project = store.file_for(Scope.PROJECT).path
    session_file = store.file_for(Scope.SESSION, (SESSION, None)).path
    async with client(home, workspace, "--session", SESSION) as session:
        for arguments, rule in BAD_PROPOSALS:
            error, text = await call(session, "workspace_memory_propose", None, **arguments)
            assert error, (arguments, text)
            assert rule in text, (arguments, text)
            assert "Traceback" not in text
            assert not project.exists() and not session_file.exists(), arguments
        # The server is still there, and a good proposal goes through.
        await ok(session, "workspace_memory_propose", None, type="fact", title="t", content="c")
    assert len(lines(project)) == 1
    # The title exactly at the host's limit is accepted (256 bytes).
    async with client(home, workspace) as session:
        await ok(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="é" * 128,
            content="at the limit",
        )
    assert len(lines(project)) == 2


async def test_a_repeated_proposal_merges_its_new_source_ref(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    project = store.file_for(Scope.PROJECT).path
    args = {"type": "fact", "title": "Port", "content": "8080"}
    async with client(home, workspace, "--session", SESSION) as session:
        await ok(session, "workspace_memory_propose", {"toolCallId": "c1"}, **args)
        await ok(session, "workspace_memory_propose", {"toolCallId": "c1"}, **args)
        await ok(session, "workspace_memory_propose", {"toolCallId": "c2"}, **args)
    written = lines(project)
    assert len(written) == 2  # the second call had nothing new: nothing written
    assert written[1]["id"] == written[0]["id"]
    assert written[1]["governance"]["revision"] == 2
    assert [r["id"] for r in written[1]["governance"]["sourceRefs"]] == [SESSION, "c1", "c2"]


def test_the_tool_call_id_comes_from_the_clients_meta():
    from dsh_memory_tui.mcp import tool_call_id

    assert tool_call_id({"claudecode/toolUseId": " toolu_1 "}) == "toolu_1"
    assert tool_call_id({"copilot/toolCallId": "call_7", "progressToken": 3}) == "call_7"
    assert tool_call_id({"progressToken": 3}) is None and tool_call_id(None) is None
    assert tool_call_id({"toolCallId": "   "}) is None
    # An id the host could not store as a sourceRef is left out, not an error.
    assert tool_call_id({"toolCallId": "x" * 257}) is None
    assert tool_call_id({"toolCallId": "a\x01b"}) is None


async def test_session_is_the_flag_else_dsh_session_id_else_one_per_run(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    async with client(home, workspace, env={"DSH_SESSION_ID": "from-env"}) as session:
        await ok(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="a",
            content="from the environment",
        )
    async with client(home, workspace) as session:
        for n in range(2):
            await ok(
                session,
                "workspace_memory_propose",
                None,
                type="fact",
                title=f"g{n}",
                content=f"generated {n}",
            )
    async with client(home, workspace) as session:
        await ok(
            session,
            "workspace_memory_propose",
            None,
            type="fact",
            title="other run",
            content="another run",
        )
    sessions = [r.provenance.sessionId for r in store.records("project")]
    assert sessions[0] == "from-env"
    assert sessions[1] == sessions[2] and sessions[1].startswith("mcp-")
    assert sessions[3].startswith("mcp-") and sessions[3] != sessions[1]


# ----------------------------------------------------------------------------- serving


def _verified(store: MemoryStore, scope: str, title: str, content: str, **kw: Any) -> str:
    rid = store.create(scope, "fact", title, content, **kw).id
    store.verify(rid, confirm_shared=kw.get("confirm_shared", False))
    return rid


def _expire(store: MemoryStore, rid: str) -> None:
    view, current = store.locate(rid)
    past = now_ms() - 60_000
    expired = next_revision(current, now_ms(), None, {"expiresAt": past})
    store.write(view.file, lambda _view: ([expired], None))


def never_served_store(home: Path, workspace: Path) -> dict[str, str]:
    """One record in each state an agent may not see, and the ones it may: title -> id."""
    store = store_of(home, workspace)
    ids: dict[str, str] = {}
    marker = "shared marker word"
    ids["served project"] = _verified(store, "project", "served project", f"{marker} p")
    ids["served user"] = _verified(store, "user", "served user", f"{marker} u")
    ids["served session"] = _verified(
        store, "session", "served session", f"{marker} s", session=(SESSION, None)
    )
    ids["pinned project"] = _verified(store, "project", "pinned project", f"{marker} pin")
    store.apply("pin", ids["pinned project"])
    ids["unverified proposal"] = store.propose(
        "project", "fact", "unverified proposal", f"{marker} 1", session=(SESSION, None)
    ).id
    ids["unverified created"] = store.create(
        "project", "fact", "unverified created", f"{marker} 2"
    ).id
    ids["rejected"] = store.propose(
        "project", "fact", "rejected", f"{marker} 3", session=(SESSION, None)
    ).id
    store.reject(ids["rejected"])
    ids["archived"] = _verified(store, "project", "archived", f"{marker} 4")
    store.archive(ids["archived"])
    ids["forgotten"] = _verified(store, "project", "forgotten", f"{marker} 5")
    store.forget(ids["forgotten"])
    ids["stale"] = _verified(store, "project", "stale", f"{marker} 6")
    store.edit(ids["stale"], 2, content=f"{marker} 6 edited")
    ids["expired"] = _verified(store, "project", "expired", f"{marker} 7")
    _expire(store, ids["expired"])
    ids["other session"] = _verified(
        store, "session", "other session", f"{marker} 8", session=("s2", None)
    )
    ids["shared"] = _verified(store, "shared-project", "shared", f"{marker} 9", confirm_shared=True)
    bob = store_of(home, workspace, "bob")
    ids["bob's profile"] = _verified(bob, "user", "bob's profile", f"{marker} 10")
    return ids


SERVED = {"served project", "served user", "served session", "pinned project"}


async def test_records_an_agent_may_not_use_are_never_served(dirs):
    home, workspace = dirs
    ids = never_served_store(home, workspace)
    async with client(home, workspace, "--session", SESSION) as session:
        outputs = {
            "list": await ok(session, "workspace_memory_list"),
            "search": await ok(session, "workspace_memory_search", query="marker"),
            "search tokens": await ok(session, "workspace_memory_search", query="word shared"),
            "resource": await read(session, "memory://verified"),
        }
        per_scope = {
            scope: await read(session, f"memory://verified/{scope}")
            for scope in ("session", "project", "user")
        }
        per_scope_tool = {
            scope: await ok(session, "workspace_memory_list", scope=scope)
            for scope in ("session", "project", "user")
        }
        error, why = await call(session, "workspace_memory_list", scope="shared-project")
    for name, text in outputs.items():
        assert set(served_titles(text)) == SERVED, name
        assert served_titles(text)[0] == "pinned project", name
        for title, rid in ids.items():
            if title not in SERVED:
                assert rid not in text, (name, title)
    assert served_titles(per_scope["session"]) == ["served session"]
    assert set(served_titles(per_scope["project"])) == {"served project", "pinned project"}
    assert served_titles(per_scope["user"]) == ["served user"]
    assert per_scope_tool == per_scope
    assert error and "--include-shared" in why


async def test_a_shared_scope_without_include_shared_is_scope_not_served_naming_the_flag(dirs):
    home, workspace = dirs
    never_served_store(home, workspace)
    async with client(home, workspace, "--session", SESSION) as session:
        answers = [
            await call(session, "workspace_memory_search", query="marker", scope="shared-project"),
            await call(session, "workspace_memory_list", scope="shared"),
        ]
    for error, why in answers:
        assert error
        assert "error[SCOPE_NOT_SERVED]: scope shared-project is not served" in why
        assert "dsh-memory mcp --include-shared" in why
        assert "INVALID_RECORD" not in why


async def test_include_shared_serves_verified_shared_records(dirs):
    home, workspace = dirs
    ids = never_served_store(home, workspace)
    async with client(home, workspace, "--session", SESSION, "--include-shared") as session:
        text = await ok(session, "workspace_memory_list")
        shared = await read(session, "memory://verified/shared-project")
    assert set(served_titles(text)) == SERVED | {"shared"}
    assert served_titles(shared) == ["shared"]
    # Served, but its use is not written without --yes-shared (the file is everyone's).
    shared_lines = lines(workspace / ".dsh/workspace-memory/shared.jsonl")
    assert [line["useCount"] for line in shared_lines if line["id"] == ids["shared"]] == [0, 0]


async def test_a_record_verified_through_the_cli_is_served_by_the_running_server(dirs):
    home, workspace = dirs
    async with client(home, workspace, "--session", SESSION) as session:
        await ok(
            session,
            "workspace_memory_propose",
            None,
            type="preference",
            title="Tabs over spaces",
            content="The user prefers tabs",
        )
        before = await ok(session, "workspace_memory_search", query="tabs")
        assert served_titles(before) == []
        rid = store_of(home, workspace).records("project")[0].id
        done = run_cli(home, workspace, "verify", rid, "--reason", "asked the user")
        assert done.returncode == 0, done.stderr
        after = await ok(session, "workspace_memory_search", query="tabs")
        assert served_titles(after) == ["Tabs over spaces"]
        assert rid in after and "The user prefers tabs" in after
        done = run_cli(home, workspace, "archive", rid)
        assert done.returncode == 0, done.stderr
        gone = await ok(session, "workspace_memory_search", query="tabs")
        assert served_titles(gone) == []


async def test_the_resource_text_is_exactly_agent_views_output(dirs):
    home, workspace = dirs
    never_served_store(home, workspace)
    store = store_of(home, workspace)
    audience = av.Audience((SESSION, None))
    expected = av.agent_view(store, audience).text
    expected_project = av.agent_view(store, audience, scope="project").text
    async with client(home, workspace, "--session", SESSION) as session:
        text = await read(session, "memory://verified")
        project = await read(session, "memory://verified/project")
        listed = await ok(session, "workspace_memory_list")
        again = await read(session, "memory://verified")
    # Before any use was written, the server's text is the function's, byte for byte.
    assert text == expected
    # (The first read recorded the use of every served record, which moves updatedAt: the
    # order may change, nothing else.)
    assert sorted(project.split("\n## ")[1:]) == sorted(expected_project.split("\n## ")[1:])
    assert listed == again
    assert text.startswith(
        "# Verified workspace memory\n\n4 records a human verified for "
        "this session, this project, every project of this user"
    )
    assert "## pinned project\n\n_fact · project · pinned · verified " in text
    assert "\n\nshared marker word pin\n" in text


async def test_search_ranks_like_the_hosts_record_rank_and_respects_limit(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    exact = _verified(store, "project", "deploy checklist", "the list")
    sub_old = _verified(store, "project", "Release", "see the deploy checklist")
    store.apply("pin", sub_old)
    sub_new = _verified(store, "project", "Release 2", "the deploy checklist again")
    tokens = _verified(store, "project", "checklist for a deploy", "all tokens")
    some = _verified(store, "project", "Deploys", "only one token: deploy")
    _verified(store, "project", "Unrelated", "nothing in common")
    store.create("project", "fact", "deploy checklist draft", "unverified: never served")
    async with client(home, workspace, "--session", SESSION) as session:
        text = await ok(session, "workspace_memory_search", query="Deploy Checklist")
        top2 = await ok(session, "workspace_memory_search", query="deploy checklist", limit=2)
        big = await ok(session, "workspace_memory_search", query="deploy checklist", limit=1000)
        typed = await ok(
            session, "workspace_memory_search", query="deploy checklist", type="decision"
        )
        bad = [
            await call(session, "workspace_memory_search", query=" "),
            await call(session, "workspace_memory_search", query="q" * 257),
            await call(session, "workspace_memory_search", query="q", scope="galaxy"),
            await call(session, "workspace_memory_search", query="q", type="rumour"),
        ]
    order = [exact, sub_old, sub_new, tokens, some]
    got = [
        line.rsplit("id: ", 1)[1].rstrip("_")
        for line in text.splitlines()
        if line.startswith("_") and "id: " in line
    ]
    assert got == order
    assert served_titles(top2) == ["deploy checklist", "Release"]
    assert len(served_titles(big)) == 5
    assert served_titles(typed) == []
    assert [error for error, _ in bad] == [True] * 4
    assert "Memory query is invalid (blank)" in bad[0][1]
    assert "Memory query is invalid (over 256 UTF-8 bytes)" in bad[1][1]
    assert "scope 'galaxy' is not one of" in bad[2][1]
    assert "type 'rumour' is not one of" in bad[3][1]


def test_record_rank_matches_the_hosts_ranks():
    def record(title: str, content: str, tags: list[str]) -> Record:
        from dsh_memory_tui.model import Origin, make_record

        return make_record(
            scope=Scope.PROJECT,
            scope_key="root:x",
            record_type=RecordType.FACT,
            title=title,
            content=content,
            tags=tags,
            provenance=Provenance(kind=ProvenanceKind.USER),
            origin=Origin.USER_AUTHORED,
            source_refs=[],
        )

    assert av.record_rank(record("Deploy Checklist", "c", []), "deploy checklist") == 0
    assert av.record_rank(record("t", "c", ["Infra"]), "infra") == 1
    assert av.record_rank(record("t", "x deploy y", []), "deploy") == 1
    assert av.record_rank(record("checklist, deploy", "c", []), "deploy checklist") == 2
    assert av.record_rank(record("t", "c", ["#infra"]), "#") == 3
    assert av.record_rank(record("deploy", "c", []), "deploy checklist") == 4
    assert av.record_rank(record("t", "c", []), "deploy") == 5
    # Tokens are runs of letters and digits in any script (\p{L}\p{N}).
    assert av.record_rank(record("配置 缓存", "c", []), "缓存-配置") == 2


def test_a_servers_cache_follows_every_change_and_expiry(dirs):
    """The cache a server keeps between requests never serves a record that changed, expired
    or was rejected since: the same records as without it, at every step."""
    home, workspace = dirs
    clock = [now_ms()]
    store = MemoryStore.open(home, workspace, "alice", clock=lambda: clock[0])
    audience = av.Audience((SESSION, None))
    cache = av.ServeCache()

    def both(**kw: Any) -> list[str]:
        cached = [r.id for r in av.served_records(store, audience, cache=cache, **kw)]
        fresh = [r.id for r in av.served_records(store, audience, **kw)]
        assert cached == fresh
        return cached

    a = _verified(store, "project", "alpha", "alpha text")
    clock[0] += 1
    b = _verified(store, "project", "beta", "beta text")
    assert both() == [b, a] and both(query="alpha") == [a]
    view, current = store.locate(a)
    soon = next_revision(current, clock[0], None, {"expiresAt": clock[0] + 1000})
    store.write(view.file, lambda _view: ([soon], None))
    assert set(both()) == {a, b}
    clock[0] += 1001  # a expires: the view turns it stale on its next refresh
    assert both() == [b] and both(query="alpha") == []
    store.edit(b, 2, content="beta text, edited")  # a verified record edited is stale
    assert both() == [] and both(query="beta") == []
    c = store.propose("project", "fact", "gamma", "gamma text", session=(SESSION, None)).id
    assert both() == []
    store.verify(c)
    assert both(query="gamma") == [c]
    store.forget(c)
    assert both() == [] and both(query="gamma") == []


async def test_at_most_100_records_are_served(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    ids = [store.create("project", "fact", f"r{i}", f"record number {i}").id for i in range(105)]
    store.apply_many("verify", ids)
    async with client(home, workspace) as session:
        listed = await ok(session, "workspace_memory_list")
        found = await ok(session, "workspace_memory_search", query="record number")
    assert len(served_titles(listed)) == 100
    assert len(served_titles(found)) == 100


# ----------------------------------------------------------------------------- use counts


async def test_use_counts_are_written_once_per_record_per_server_run(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    a = _verified(store, "project", "alpha", "alpha content")
    b = _verified(store, "project", "beta", "beta content")
    u = _verified(store, "user", "gamma", "gamma content")
    project = store.file_for(Scope.PROJECT)
    before = len(lines(project.path))
    revisions = {r.id: r.governance.revision for r in store.records()}

    # A human's views never count: the CLI, and the function itself.
    assert run_cli(home, workspace, "list", "--json").returncode == 0
    assert av.agent_view(store, av.Audience((SESSION, None))).records
    assert len(lines(project.path)) == before

    async with client(home, workspace, "--session", SESSION) as session:
        await ok(session, "workspace_memory_search", query="alpha")
        await ok(session, "workspace_memory_search", query="alpha")
        after_search = lines(project.path)
        await ok(session, "workspace_memory_list")
        await read(session, "memory://verified")
        await ok(session, "workspace_memory_search", query="content")
    written = lines(project.path)[before:]
    assert len(after_search) == before + 1  # alpha, once
    assert [line["id"] for line in written] == [a, b]
    for line in written:
        assert line["useCount"] == 1 and line["lastUsedAt"] >= line["createdAt"]
        assert line["updatedAt"] == line["lastUsedAt"]
        # The host's markUsed: the revision and everything else stay.
        assert line["governance"]["revision"] == revisions[line["id"]]
        assert line["governance"]["verification"] == "verified"
    host_verdicts(project.path, project.location)
    user_lines = [line for line in lines(store.file_for(Scope.USER).path) if line["id"] == u]
    assert [line["useCount"] for line in user_lines] == [0, 0, 1]
    assert not list(project.path.parent.glob("*.lock"))

    # Another run counts again, once.
    async with client(home, workspace, "--session", SESSION) as session:
        await ok(session, "workspace_memory_list")
        await ok(session, "workspace_memory_list")
    current = {r.id: r for r in store_of(home, workspace).records()}
    assert (current[a].useCount, current[b].useCount, current[u].useCount) == (2, 2, 2)


async def test_records_served_together_are_marked_in_one_batch_per_file(dirs):
    home, workspace = dirs
    store = store_of(home, workspace)
    for i in range(5):
        _verified(store, "project", f"p{i}", f"project {i}")
    project = store.file_for(Scope.PROJECT).path
    before = len(lines(project))
    async with client(home, workspace) as session:
        await ok(session, "workspace_memory_list")
    written = lines(project)[before:]
    assert len(written) == 5
    # One write under one lock: one clock reading for every line of the batch.
    assert len({line["lastUsedAt"] for line in written}) == 1


async def test_the_host_reads_the_use_counts_we_wrote(dirs, host):
    home, workspace = dirs
    store = store_of(home, workspace)
    rid = _verified(store, "project", "alpha", "alpha content")
    async with client(home, workspace, "--session", SESSION) as session:
        await ok(session, "workspace_memory_list")
    opened = host.run("open-warnings", home=home, workspace=workspace)
    assert opened["warnings"] == []
    listed = host.run("list", "--active", "--full", home=home, workspace=workspace)
    [record] = [r for r in listed["records"] if r["id"] == rid]
    assert record["useCount"] == 1 and record["governance"]["verification"] == "verified"
    assert record["governance"]["revision"] == 2


# ----------------------------------------------------------------------------- the extra


def test_without_the_sdk_mcp_is_a_one_line_error_naming_the_dependency(dirs):
    home, workspace = dirs
    code = (
        "import sys, importlib.metadata as m\n"
        "sys.modules['mcp'] = None\n"
        "def version(name):\n"
        "    raise m.PackageNotFoundError(name)\n"
        "m.version = version\n"
        "from dsh_memory_tui.cli import main\n"
        f"sys.exit(main(['--home', {str(home)!r}, '--workspace', {str(workspace)!r}, 'mcp']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error[MISSING_EXTRA]: ")
    assert SDK_REQUIREMENT in done.stderr and "a dependency of dsh-memory-tui" in done.stderr
    assert done.stderr.rstrip().endswith(f": {INSTALL_HINT}")


def test_the_sdk_is_a_dependency_and_the_hint_installs_exactly_its_requirement():
    # The README's first command (`pip install -e .`) must leave `dsh-memory mcp` working; where
    # the SDK went missing anyway, the hint names its requirement, which pip resolves anywhere.
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert SDK_REQUIREMENT in project["dependencies"]
    assert f"pip install '{SDK_REQUIREMENT}'" == INSTALL_HINT
    docs = (REPO_ROOT / "docs/mcp.md").read_text()
    assert "dsh-memory-tui[mcp]" not in docs and "'.[mcp]'" not in docs


def test_mcp_usage_errors_exit_2(dirs):
    home, workspace = dirs
    done = run_cli(home, workspace, "mcp", "--no-such-flag")
    assert done.returncode == 2 and "Traceback" not in done.stderr
