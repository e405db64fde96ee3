"""Hostile MCP: ``dsh-memory mcp`` as a real process, through the SDK's own client (as
``tests/test_mcp.py`` drives it) and through raw pipes, over a project file that holds every
record shape of the host corpus (``tests/host-corpus/validation.jsonl``: each line the host
accepts, made verified) and the hostile cases (``tests/hostile_records.py``: controls, bidi,
markup, lone surrogates in each field, a 64 KiB content) all verified. Every request is
answered, every record is served (a lone surrogate as U+FFFD, said), and a request the SDK
cannot decode gets a JSON-RPC error while the server goes on.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import REPO_ROOT
from hostile_records import hostile_record, write_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interop.corpus import make_case_dirs, validation_cases
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from test_mcp import call, client, read

from dsh_memory_tui.agent_view import check_query, eligible
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.mcp import MemoryServer
from dsh_memory_tui.mcp_stdio import refusal_for, writable_message
from dsh_memory_tui.model import (
    Record,
    RecordInvalid,
    Scope,
    content_hash,
    now_ms,
    parse_line,
    utf8_len,
    well_formed,
)
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures
from .harness import SOAK

NOW = 1_700_000_000_000
ANSWER_TIMEOUT_S = 60

# Text the host lets through, each in a title, a content, a tag: controls, bidi, invisible
# characters, markup, Markdown, lone surrogates (in the host's JSON: ``\\udcff``), a pair.
PIECES = [
    "\x9b31m",
    "\x85",
    "\u202e",
    "\u200b",
    "\ufeff",
    "\u2028",
    "\U000e0041",
    "[b]x[/b]",
    "[@click=app.quit]",
    "<!-- hidden -->",
    "```",
    "漢字",
    "\U0001f600",
    "\udcff",
    "\ud800",
    "\udfff",
]


def corpus_records(root_id: str, dirs: Any) -> list[dict[str, Any]]:
    """Every record the host accepted in ``validation.jsonl``, moved to the project file and
    made verified (each with an id of its own when its id was taken already)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, case in enumerate(validation_cases()):
        accepted = case["host"].get("records")
        if not accepted:
            continue
        record = dirs.value(accepted[0])
        record["scope"], record["scopeKey"] = "project", root_id
        if record.get("title") == "Use ruff":  # most cases' title: one of its own to search
            record["title"] = f"Use ruff, case {n}"
        if record["id"] in seen:
            record["id"] = f"memory:case:{n}"
        seen.add(record["id"])
        record["status"] = "active"
        governance = record.get("governance")
        if isinstance(governance, dict):  # a legacy record keeps the host's defaults
            governance.update(verification="verified", verifiedBy="user")
            governance["verifiedAt"] = max(record["updatedAt"], record["createdAt"])
            governance.pop("expiresAt", None)
        out.append(record)
    return out


def hostile_records(store: MemoryStore) -> list[dict[str, Any]]:
    """Each piece in the title, the content, a tag, the id, the session and a sourceRef."""
    out = []
    for n, piece in enumerate(PIECES):
        record = hostile_record(
            store, f"memory:hostile:{n}:{piece}", f"Title {n} {piece}", "-", tags=[piece]
        )
        record["content"] = content = f"Body {n} {piece} end"
        record["contentHash"] = content_hash(content)  # node's hash: U+FFFD for a surrogate
        record["provenance"]["sessionId"] = f"s{piece}"
        record["governance"]["sourceRefs"] = [{"kind": "session", "id": f"s{piece}"}]
        out.append(record)
    big = out[-1] | {"id": "memory:hostile:big", "title": "Big \udcff"}
    big["content"] = "x" * (64 * 1024 - 8) + "\udcff"
    big["contentHash"] = content_hash(big["content"])
    out.append(big)
    for record in out:
        governance = record["governance"]
        governance.update(verification="verified", verifiedAt=NOW, verifiedBy="user")
    return out


def served_store(tmp_path: Path) -> tuple[Path, Path, list[Record]]:
    """A home and workspace whose project file holds the corpus's and the hostile records,
    and the records of it the server serves (every one the host's rules accept)."""
    dirs = make_case_dirs(tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    lines = corpus_records(store.paths.root_id, dirs) + hostile_records(store)
    data = write_records(store, [])
    location = store.file_for(Scope.PROJECT).location
    with open(data, "wb") as f:
        for record in lines:
            line = json.dumps(record, separators=(",", ":")).encode() + b"\n"
            try:
                parse_line(line, location)
            except RecordInvalid:
                continue  # made invalid by the changes above (a verified record's rules)
            f.write(line)
    reader = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    at = now_ms()
    served = [r for r in reader.records(Scope.PROJECT) if eligible(r, at, reader.sources)]
    return dirs.home, dirs.workspace, served


def queryable(title: str) -> str | None:
    """The title as a query the client can send (U+FFFD for a lone surrogate), if the host's
    query rule takes it."""
    try:
        return check_query(well_formed(title))
    except StoreError:
        return None


async def test_every_request_over_every_record_shape_is_answered_and_serves_the_others(
    tmp_path: Path, figures: Figures
) -> None:
    """The corpus's accepted record shapes and the hostile records, all verified, through
    the real client: the list, every resource and a search for each title are answered
    (none an error), and each record is served under its own id (a lone surrogate sent as
    U+FFFD, the record's facts saying so)."""
    home, workspace, served = served_store(tmp_path)
    assert len(served) > 100
    surrogates = [r for r in served if well_formed(r.title + r.id) != r.title + r.id]
    assert len(surrogates) >= 4
    sent: list[str] = []
    args = ("--session", "s1", "--budget-bytes", str(64 * 1024 * 1024))
    async with client(home, workspace, *args) as session:
        error, text = await call(session, "workspace_memory_list")
        assert not error, text
        sent.append(text)
        for uri in ("memory://verified", "memory://verified/project", "memory://verified/user"):
            sent.append(await read(session, uri))
            figures.add("resources read")
        for record in served:
            query = queryable(record.title)
            if query is None:
                continue
            error, text = await call(session, "workspace_memory_search", query=query)
            assert not error, text
            figures.add("searches answered")
            assert well_formed(f"id: {record.id}") in text, (record.id, text[:300])
            sent.append(text)
        error, text = await call(session, "workspace_memory_list")  # still answering
        assert not error and text.startswith("# Verified workspace memory\n"), text
    everything = "\n".join(sent)
    for record in served:
        assert well_formed(f"id: {record.id}") in everything, record.id
        figures.add("records served")
    for record in surrogates:  # each one's facts say what was replaced
        said = re.escape(well_formed(f"id: {record.id}")) + r" · \d+ lone surrogates? \("
        assert re.search(said, everything), record.id
    figures.add("records with a lone surrogate", len(surrogates))


# A lone surrogate or two among the pieces, in any field the host lets hold one.
ODD_TEXT = st.lists(st.sampled_from([*PIECES, "a", " ", "\U0001f600"]), min_size=1, max_size=6)


@settings(
    max_examples=60 if not SOAK else 1000,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fields=st.lists(st.tuples(ODD_TEXT, ODD_TEXT, ODD_TEXT, ODD_TEXT), min_size=1, max_size=4))
def test_random_odd_records_always_give_an_answer_the_sdk_can_write(
    tmp_path_factory: pytest.TempPathFactory, figures: Figures, fields: list[Any]
) -> None:
    """Random verified records (controls, bidi, markup, lone surrogates and pairs in the id,
    title, tag and content), through the server's own methods and the writer's guard: every
    list, resource and search answer is text the SDK writes as it is (UTF-8; U+FFFD where a
    surrogate was, said), of the size the budget counted, naming every record it sent."""
    tmp = tmp_path_factory.mktemp("odd")
    dirs = make_case_dirs(tmp)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    lines = []
    for n, (rid, title, tag, content) in enumerate(fields):
        record = hostile_record(store, f"memory:{n}:{''.join(rid)}", f"T{''.join(title)}", "-")
        record["tags"] = [f"g{''.join(tag)}"]
        record["content"] = f"C{''.join(content)}"
        record["contentHash"] = content_hash(record["content"])
        record["governance"].update(verification="verified", verifiedAt=NOW, verifiedBy="user")
        lines.append(record)
    write_records(store, lines)
    server = MemoryServer(MemoryStore.open(dirs.home, dirs.workspace, "alice"), "s1")
    served = server.store.records(Scope.PROJECT)
    answers = [server.list_records(), server.read_resource("memory://verified", None)]
    answers += [server.search(q) for r in served if (q := queryable(r.title)) is not None]
    for text in answers:
        figures.add("answers checked")
        answer = types.JSONRPCResponse(
            jsonrpc="2.0", id=1, result={"content": [{"type": "text", "text": text}]}
        )
        assert writable_message(answer) is answer  # no guard needed: already writable
        assert utf8_len(text) == len(text.encode())
    for record in served:
        assert well_formed(f"id: {record.id}") in answers[0]


# ----------------------------------------------------------------------------- raw pipes


class RawServer:
    """``dsh-memory mcp`` on raw pipes: lines in, JSON-RPC messages out."""

    def __init__(self, home: Path, workspace: Path) -> None:
        cmd = [sys.executable, "-m", "dsh_memory_tui.cli", "--home", str(home)]
        cmd += ["--workspace", str(workspace), "--user", "alice", "mcp", "--session", "s1"]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workspace,
            env=env,
        )
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())

    def answer(self) -> dict[str, Any]:
        """The next message the server writes (waiting up to the answer timeout for it)."""
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "no answer: " + self.stderr()
            if self._selector.select(left):
                assert self.proc.stdout is not None
                chunk = self.proc.stdout.read()
                assert chunk, "the server closed its output: " + self.stderr()
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stderr(self) -> str:
        self.close()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=ANSWER_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}


def test_a_request_that_cannot_be_decoded_gets_a_json_rpc_error_and_the_server_goes_on(
    tmp_path: Path, figures: Figures
) -> None:
    """A tool call holding a lone surrogate (``\\udcff``, valid to the host's JSON, refused by
    the SDK's reader), a line that is not JSON and an object that is not JSON-RPC, on raw
    pipes: each request gets a JSON-RPC error (its own id when it has one, else null), a
    notification holding one gets nothing, and the requests after them are answered."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    store = MemoryStore.open(home, workspace, "alice")
    rid = store.create("project", "fact", "Port", "The dev server listens on 8080").id
    store.verify(rid)
    server = RawServer(home, workspace)
    try:
        server.request(1, "initialize", INITIALIZE)
        assert server.answer()["id"] == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        server.send(
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":'
            b'"workspace_memory_search","arguments":{"query":"port \\udcff"}}}'
        )
        refused = server.answer()
        assert refused["id"] == 2 and refused["error"]["code"] == types.INVALID_REQUEST
        assert "lone surrogate" in refused["error"]["message"]
        figures.add("undecodable requests refused")
        server.send(
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"x":"\\ud800"}}'
        )
        server.send(b"not json at all")
        parse = server.answer()
        assert parse["id"] is None and parse["error"]["code"] == types.PARSE_ERROR
        server.send(b'{"jsonrpc":"1.0","id":3,"method":"ping"}')
        invalid = server.answer()
        assert invalid["id"] is None and invalid["error"]["code"] == types.INVALID_REQUEST
        figures.add("undecodable lines answered", 2)
        server.request(4, "tools/call", {"name": "workspace_memory_list", "arguments": {}})
        listed = server.answer()
        assert listed["id"] == 4 and "Port" in listed["result"]["content"][0]["text"]
        figures.add("requests answered after them")
    finally:
        server.close()
    assert server.proc.returncode == 0


# The real server, with one fault put where answers are made: a bug that raises on one record.
_FAULTY_SERVER = """
import sys
from dsh_memory_tui import agent_view, cli

plain = agent_view.render_record

def render_record(record):
    if record.title == "Boom":
        raise RuntimeError("a bug met " + record.content)
    return plain(record)

agent_view.render_record = render_record
sys.exit(cli.main(sys.argv[1:]))
"""


async def test_an_exception_while_answering_is_that_requests_error_and_the_server_goes_on(
    tmp_path: Path, figures: Figures
) -> None:
    """A bug that raises while one record is rendered (injected in the real server process):
    the list, the resource and the search that meet it each get an error naming only the
    exception's kind (never the record's text), and a search that does not meet it is
    answered, before and after."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    store = MemoryStore.open(home, workspace, "alice")
    for title, content in (("Boom", "secret text"), ("Port", "The dev server listens on 8080")):
        store.verify(store.create("project", "fact", title, content).id)
    argv = ["--home", str(home), "--workspace", str(workspace), "--user", "alice", "mcp"]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", _FAULTY_SERVER, *argv],
        env={"PYTHONPATH": str(REPO_ROOT)},
        cwd=str(workspace),
    )
    with open(tmp_path / "server-stderr.log", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read_stream, write_stream),
            ClientSession(read_stream, write_stream) as session,
        ):
            with anyio.fail_after(ANSWER_TIMEOUT_S):
                await session.initialize()
            error, text = await call(session, "workspace_memory_search", query="dev server")
            assert not error and "## Port" in text
            for tool, arguments in (
                ("workspace_memory_list", {}),
                ("workspace_memory_search", {"query": "boom"}),
            ):
                error, text = await call(session, tool, **arguments)
                assert error and "internal error (RuntimeError)" in text, text
                assert "secret" not in text
                figures.add("requests failed alone")
            with pytest.raises(MCPError) as failed:
                await read(session, "memory://verified")
            assert "internal error (RuntimeError)" in str(failed.value)
            error, text = await call(session, "workspace_memory_search", query="dev server")
            assert not error and "## Port" in text
            figures.add("requests answered after them")
    assert "Traceback" in (tmp_path / "server-stderr.log").read_text()


# ----------------------------------------------------------------------------- the guards


def test_an_answer_the_sdk_cannot_write_is_written_with_replacement_characters() -> None:
    """The writer's guard (whatever answer holds a lone surrogate, from any handler): the
    text is sent with U+FFFD; an id that cannot be written gets an error answer instead."""
    answer = types.JSONRPCResponse(
        jsonrpc="2.0", id=5, result={"content": [{"type": "text", "text": "a\udcffb"}]}
    )
    fixed = writable_message(answer)
    assert isinstance(fixed, types.JSONRPCResponse)
    assert fixed.result["content"][0]["text"] == "a\ufffdb"
    fine = types.JSONRPCResponse(jsonrpc="2.0", id=6, result={"text": "plain"})
    assert writable_message(fine) is fine
    error = types.JSONRPCError(
        jsonrpc="2.0", id=7, error=types.ErrorData(code=-32603, message="no \ud800 here")
    )
    fixed_error = writable_message(error)
    assert isinstance(fixed_error, types.JSONRPCError)
    assert fixed_error.id == 7 and fixed_error.error.message == "no \ufffd here"


def test_a_line_the_sdk_cannot_decode_is_refused_by_its_id() -> None:
    """``refusal_for`` on the SDK's own decoding errors."""

    def refusal(line: str) -> types.JSONRPCError | None:
        try:
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            return refusal_for(exc)
        raise AssertionError(f"decoded: {line}")

    got = refusal('{"jsonrpc":"2.0","id":"a","method":"x","params":{"q":"\\udcff"}}')
    assert got is not None and got.id == "a" and "lone surrogate" in got.error.message
    unechoable = refusal('{"jsonrpc":"2.0","id":"\\udcff","method":"x"}')
    assert unechoable is not None and unechoable.id is None
    assert refusal('{"jsonrpc":"2.0","method":"x","params":{"q":"\\udcff"}}') is None
    assert refusal('{"jsonrpc":"2.0","id":9,"result":{"q":"\\udcff"}}') is None
    deep = refusal('{"jsonrpc":"2.0","id":1,"method":"x","params":' + "[" * 300 + "]" * 300 + "}")
    assert deep is not None and deep.id == 1 and deep.error.code == types.INVALID_REQUEST
