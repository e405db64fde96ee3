"""``dsh-memory mcp``: a stdio MCP server through which any agent proposes memory and reads back
only what a human verified (SPEC 1, 6; issue 14). Built on the official Python SDK, 2.x
(``mcp.server.mcpserver.MCPServer``), a dependency of the package (``pyproject.toml``).

Tools:

- ``workspace_memory_propose``: what the host's ``proposeMemory`` writes (model-suggested,
  unverified, provenance ``agent`` / ``memory proposal`` with the session id, sourceRefs the
  session and, when the client names its tool call in ``_meta``, an event ref with that id),
  through ``MemoryStore.propose``; it answers with the host's sentence.
- ``workspace_memory_search`` / ``workspace_memory_list``: ``agent_view.served_records`` as
  Markdown (active, verified, unexpired; this project, this user, this session; shared-project
  only with ``--include-shared``).

Resources ``memory://verified`` and ``memory://verified/<scope>``: the same text as the list.
Every record served counts as used once per server run (``agent_view.mark_used``: one locked
batch per file; shared-project records only with ``--yes-shared``).

Every answer is bounded by the byte budget (``--budget-bytes``, ``DSH_MCP_BUDGET_BYTES``, 32 KiB:
``settings.budget_bytes``) and appends one entry to the home's audit log (``audit.py``): the
client's name and version from its ``initialize``, the session, what was asked, each record's
id, revision and hash, the bytes sent; never the text.

The SDK is imported only when a server is built, so the rest of the package never needs it.
"""

import gc
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import Field

from . import lint
from .agent_view import (
    AgentView,
    Audience,
    ServeCache,
    agent_view,
    mark_used,
    served_files,
)
from .audit import AuditLog, safe_append, served_entry
from .errors import ErrorCode, StoreError
from .model import MAX_ID_BYTES, Record, RecordType, Scope, SourceRef, js_trim, text_ok
from .settings import DEFAULT_BUDGET_BYTES, audit_setting, budget_bytes
from .settings import session_id_for as session_id_for  # its home; importable here as before
from .sources import Citation
from .store import MemoryStore

log = logging.getLogger(__name__)

SERVER_NAME = "dsh-memory"
SDK_REQUIREMENT = "mcp>=2.3,<3"
# The SDK is a dependency; where it was removed or replaced, this command brings it back in any
# environment: from a clone (where the package is not on an index) as after `pip install`.
INSTALL_HINT = f"pip install '{SDK_REQUIREMENT}'"
PROPOSE_TOOL = "workspace_memory_propose"
SEARCH_TOOL = "workspace_memory_search"
LIST_TOOL = "workspace_memory_list"
RESOURCE_URI = "memory://verified"
TYPES = tuple(t.value for t in RecordType)
PROPOSE_SCOPES = ("project", "session")
SERVED_SCOPES = tuple(s.value for s in Scope)
# Where clients put the id of the model's tool call in a request's ``_meta`` (Claude Code,
# Copilot, and the generic names some clients use). The first non-blank one is the event ref.
TOOL_CALL_ID_KEYS = (
    "claudecode/toolUseId",
    "copilot/toolCallId",
    "toolCallId",
    "tool_call_id",
    "callId",
)

INSTRUCTIONS = (
    "Workspace Memory keeps durable project decisions, preferences, conventions and facts that "
    "a human reviewed. Before relying on what you remember about this project, search it with "
    f"{SEARCH_TOOL} (or read {RESOURCE_URI}); only memory a human verified is returned. When "
    "you establish or change a stable decision, a user preference, a coding convention or a "
    f"durable project fact, propose it with {PROPOSE_TOOL}: proposals are stored unverified "
    "for the user to review and are never returned to any agent until the user verifies them. "
    "Do not propose transient details, secrets, credentials, or facts the user can trivially "
    "re-derive."
)
PROPOSE_DESCRIPTION = (
    "Propose a durable project decision, preference, convention, or fact for the user to "
    "review and keep in local Workspace Memory. Proposals are stored unverified and are never "
    "injected into the model context automatically; the user must confirm them. Cite the "
    "code the memory rests on in `citations`: the reviewer sees it, and when that code "
    "changes the memory stops being served until it is re-verified. Cite a function, method "
    'or class by name ({path, symbol}, e.g. {"path": "src/net.py", "symbol": '
    '"Client.fetch"}) rather than by lines: a symbol citation follows the code when it '
    "moves or is reformatted, and raises an alarm only when the code itself changes. Use "
    "lines ({path, startLine, endLine}) for what is not one definition."
)
SEARCH_DESCRIPTION = (
    "Search the Workspace Memory a human verified (this project, this user, this session): "
    "best match first, at most 100 records and the server's byte budget, as Markdown; the "
    "last line says how many more matched. Unverified proposals are never returned."
)
LIST_DESCRIPTION = (
    "List the Workspace Memory a human verified (this project, this user, this session): "
    "pinned first, then the most recently updated, at most 100 records and the server's byte "
    "budget, as Markdown; the last line says how many were not sent."
)


def missing_extra(detail: str = "") -> StoreError:
    why = f" ({detail})" if detail else ""
    return StoreError(
        ErrorCode.MISSING_EXTRA,
        f"dsh-memory mcp needs the MCP Python SDK ({SDK_REQUIREMENT}, a dependency of "
        f"dsh-memory-tui missing from this environment){why}: {INSTALL_HINT}",
    )


def load_sdk() -> dict[str, Any]:
    """The SDK's names this server uses; ``StoreError(MISSING_EXTRA)`` when it is missing or
    of another major version.
    """
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.exceptions import ResourceError, ToolError
        from mcp.types import ToolAnnotations
    except ImportError as exc:
        from importlib import metadata

        try:
            version = metadata.version("mcp")
        except metadata.PackageNotFoundError:
            raise missing_extra() from None
        raise missing_extra(f"mcp {version} is installed: {exc}") from None
    return {
        "Context": Context,
        "MCPServer": MCPServer,
        "ToolError": ToolError,
        "ResourceError": ResourceError,
        "ToolAnnotations": ToolAnnotations,
    }


def tool_call_id(meta: Any) -> str | None:
    """The client's id of the model's tool call, from a request's ``_meta``, or None. An id
    the host could not store as a sourceRef (too long, control characters) is ignored.
    """
    if not isinstance(meta, dict):
        return None
    for key in TOOL_CALL_ID_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and js_trim(value):
            value = js_trim(value)  # the host's eventId.trim()
            return value if text_ok(value, MAX_ID_BYTES) else None
    return None


def _host_check(ok: bool, message: str) -> None:
    if not ok:
        raise StoreError(ErrorCode.INVALID_RECORD, message)


class MemoryServer:
    """The server's behaviour without the protocol: one store, one session, one audience.
    Thread-safe (the SDK runs sync tools on worker threads); every method raises StoreError.
    """

    def __init__(
        self,
        store: MemoryStore,
        session_id: str,
        *,
        include_shared: bool = False,
        confirm_shared: bool = False,
        budget: int = DEFAULT_BUDGET_BYTES,
        audit: AuditLog | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.audience = Audience((session_id, None), include_shared)
        self.confirm_shared = confirm_shared
        self.budget = budget
        self.audit = audit
        self.client: tuple[str, str] | None = None  # (name, version) from the initialize
        self._lock = threading.Lock()
        self._used: set[str] = set()  # ids whose use this run has written
        self._cache = ServeCache()
        self._epochs: tuple[int, ...] = ()

    # ----------------------------------------------------------------- proposals

    def propose(
        self,
        record_type: Any,
        title: Any,
        content: Any,
        tags: Any = None,
        scope: Any = None,
        call_id: str | None = None,
        citations: Any = None,
    ) -> str:
        """The host's ``proposeMemory`` and its answer; ``citations``: a list of
        ``{path, symbol?, startLine?, endLine?}`` (INVALID_CITATION when one is not).
        """
        # The host's assertProposalArgs, in its order, with its messages.
        _host_check(
            scope is None or scope in PROPOSE_SCOPES,
            f"Memory proposal scope is invalid (scope {scope!r} is not project or session)",
        )
        _host_check(
            record_type in TYPES,
            f"Memory proposal type is invalid ({record_type!r} is not one of {', '.join(TYPES)})",
        )
        _host_check(
            isinstance(title, str) and bool(js_trim(title)), "Memory proposal title is required"
        )
        _host_check(
            isinstance(content, str) and bool(js_trim(content)),
            "Memory proposal content is required",
        )
        _host_check(
            tags is None or (isinstance(tags, list) and all(isinstance(t, str) for t in tags)),
            "Memory proposal tags are invalid (a list of strings)",
        )
        refs = [SourceRef(kind="event", id=call_id)] if call_id else []
        cited = citations_arg(citations)
        with self._lock:
            result = self.store.propose(
                scope or "project",
                record_type,
                title,
                content,
                tags or [],
                source_refs=refs,
                citations=cited,
                session=(self.session_id, None),
            )
        saved = result.record
        answer = (
            f'Saved memory proposal "{saved.title}" ({saved.scope.value} scope) for your review. '
            "It is not injected into context until the user verifies it."
        )
        found = lint.record_flags(saved)
        if found:
            # Told, not refused: the reviewer decides; the agent learns what it looked like.
            answer += (
                f" Risk flags raised: {lint.describe(found)}. The reviewer sees them, and "
                "verifying it needs their reason."
            )
        return answer

    # ----------------------------------------------------------------- serving

    def view(self, asked: dict[str, Any] | None = None, **kwargs: Any) -> AgentView:
        """``agent_view`` for this server's audience under its budget, with the use of what it
        returns recorded (once per record per server run) and, when ``asked`` says what the
        client asked, the serving appended to the audit log.
        """
        with self._lock:
            got = agent_view(
                self.store, self.audience, cache=self._cache, budget=self.budget, **kwargs
            )
            self._record_use(got.records)
            self.settle()
        if asked is not None:
            entry = served_entry(
                client=self.client,
                session=self.session_id,
                asked=asked,
                records=got.records,
                cut=len(got.cut),
                size=got.size,
                workspace=self.store.paths.workspace,
            )
            safe_append(self.audit, entry)
        return got

    def settle(self) -> None:
        """After a file was (re)loaded, exempt what is alive now from the cyclic GC: the
        records are acyclic and freed by reference counting, but a full collection would
        walk every one of them every few requests (a 100 ms stall with 7,000 records).
        """
        epochs = tuple(
            self.store.view(file).epoch for file in served_files(self.store, self.audience)
        )
        if epochs != self._epochs:
            self._epochs = epochs
            gc.freeze()

    def search(
        self, query: Any, scope: Any = None, record_type: Any = None, limit: Any = None
    ) -> str:
        asked = _asked(SEARCH_TOOL, query=query, scope=scope, type=record_type, limit=limit)
        got = self.view(asked, query=query, scope=scope, record_type=record_type, limit=limit)
        return got.text

    def list_records(self, scope: Any = None) -> str:
        return self.view(_asked(LIST_TOOL, scope=scope), scope=scope).text

    def read_resource(self, uri: str, scope: Scope | None) -> str:
        return self.view({"resource": uri}, scope=scope).text

    def note_client(self, info: Any) -> None:
        """Keep the client's name and version from its ``initialize`` (``clientInfo``)."""
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            version = info.get("version")
            self.client = (info["name"], version if isinstance(version, str) else "")

    def _record_use(self, records: Sequence[Record]) -> None:
        fresh = [r for r in records if r.id not in self._used]
        if not fresh:
            return
        try:
            written = mark_used(self.store, fresh, confirm_shared=self.confirm_shared)
        except StoreError as exc:  # bookkeeping: the agent still gets its records
            log.warning("use counts not written: %s", exc)
            return
        self._used.update(r.id for r in written)


def citations_arg(value: Any) -> list[Citation]:
    """The ``citations`` argument as citations: a list of ``{path, symbol}`` or ``{path,
    startLine?, endLine?}`` (both lines or neither). INVALID_CITATION otherwise.
    """
    if value is None:
        return []
    shape = "citations are a list of {path, symbol} or {path, startLine?, endLine?}"
    if not isinstance(value, list):
        raise StoreError(ErrorCode.INVALID_CITATION, shape)
    out = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise StoreError(ErrorCode.INVALID_CITATION, shape)
        start, end = item.get("startLine"), item.get("endLine")
        symbol = item.get("symbol")
        if symbol is not None:
            if not isinstance(symbol, str) or start is not None or end is not None:
                raise StoreError(ErrorCode.INVALID_CITATION, shape)
            out.append(Citation.parse(f"{item['path']}#{symbol}"))
            continue
        if start is None and end is None:
            out.append(Citation.parse(item["path"]))
            continue
        if end is None:
            end = start
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (start, end)):
            raise StoreError(
                ErrorCode.INVALID_CITATION, "startLine and endLine are whole line numbers"
            )
        out.append(Citation.parse(f"{item['path']}:{start}-{end}"))
    return out


def _asked(tool: str, **arguments: Any) -> dict[str, Any]:
    """What a tool call asked, for the audit: the tool and the arguments it was given."""
    return {"tool": tool, **{k: v for k, v in arguments.items() if v is not None}}


def build_server(memory: MemoryServer) -> Any:
    """The ``MCPServer`` over ``memory``: three tools and the resources."""
    sdk = load_sdk()
    Context, MCPServer, ToolError = sdk["Context"], sdk["MCPServer"], sdk["ToolError"]
    ResourceError = sdk["ResourceError"]
    ToolAnnotations = sdk["ToolAnnotations"]

    async def note_client(ctx: Any, call_next: Any) -> Any:
        # The client names itself once, in its initialize request (clientInfo).
        if ctx.method == "initialize" and isinstance(ctx.params, dict):
            memory.note_client(ctx.params.get("clientInfo"))
        return await call_next(ctx)

    server = MCPServer(
        SERVER_NAME,
        title="Workspace Memory",
        instructions=INSTRUCTIONS,
        version=_version(),
        log_level="WARNING",
        middleware=[note_client],
    )

    def run(call: Callable[[], str], error: type[Exception] = ToolError) -> str:
        """``call()``'s answer; a failure is this request's error (``error``), never the
        server's end: a StoreError in its own words, anything else (a bug) by its kind only,
        the traceback on stderr (record text must not reach the agent through a message)."""
        try:
            return call()
        except StoreError as exc:
            raise error(str(exc)) from None
        except Exception as exc:
            log.exception("internal error while answering a request")
            raise error(
                f"internal error ({type(exc).__name__}) while answering: a bug in dsh-memory, "
                "its traceback is on the server's stderr; other requests are still answered"
            ) from None

    def read_only(title: str) -> Any:
        return ToolAnnotations(title=title, read_only_hint=True, open_world_hint=False)

    # Arguments are typed Any with the schema written out, so that a wrong one is checked by
    # the host's rules (and answered with its message), not by pydantic's.
    text = {"type": "string"}
    optional_scope = {
        "anyOf": [{"type": "string", "enum": list(SERVED_SCOPES)}, {"type": "null"}],
        "default": None,
    }
    optional_type = {
        "anyOf": [{"type": "string", "enum": list(TYPES)}, {"type": "null"}],
        "default": None,
    }
    OnlyScope = Annotated[
        Any,
        Field(
            description="Only this scope: session, project, shared-project or user.",
            json_schema_extra=optional_scope,
        ),
    ]

    @server.tool(
        PROPOSE_TOOL,
        title="Propose workspace memory",
        description=PROPOSE_DESCRIPTION,
        structured_output=False,
        annotations=ToolAnnotations(
            title="Propose workspace memory",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    def propose(
        type: Annotated[
            Any,
            Field(
                description="Record type: decision, preference, convention, or fact.",
                json_schema_extra={"type": "string", "enum": list(TYPES)},
            ),
        ],
        title: Annotated[
            Any, Field(description="Short title (max 256 bytes).", json_schema_extra=text)
        ],
        content: Annotated[Any, Field(description="Content (max 64 KiB).", json_schema_extra=text)],
        # The SDK's class, imported when the server is built (the SDK is optional): mypy sees a
        # variable; the SDK reads the annotation at runtime to pass the request's context.
        ctx: Context,  # type: ignore[valid-type]
        tags: Annotated[
            Any,
            Field(
                description="Optional tags (at most 32, each at most 64 bytes).",
                json_schema_extra={"type": "array", "items": text},
            ),
        ] = None,
        scope: Annotated[
            Any,
            Field(
                description="Target scope: project (default) or session.",
                json_schema_extra={"type": "string", "enum": list(PROPOSE_SCOPES)},
            ),
        ] = None,
        citations: Annotated[
            Any,
            Field(
                description=(
                    "The code this memory rests on (at most 32): each a path relative to "
                    "the workspace and, for part of it, a symbol (a function, method or "
                    "class by its dotted name: Client.fetch) or lines (1-based, inclusive). "
                    "Prefer a symbol: it follows the code when it moves. Cite what a "
                    "reviewer should check."
                ),
                json_schema_extra={
                    "type": "array",
                    "maxItems": 32,
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": text,
                            "symbol": text,
                            "startLine": {"type": "integer", "minimum": 1},
                            "endLine": {"type": "integer", "minimum": 1},
                        },
                        "required": ["path"],
                    },
                },
            ),
        ] = None,
    ) -> str:
        call_id = tool_call_id(ctx.request_context.meta)  # type: ignore[attr-defined]
        return run(lambda: memory.propose(type, title, content, tags, scope, call_id, citations))

    @server.tool(
        SEARCH_TOOL,
        title="Search verified workspace memory",
        description=SEARCH_DESCRIPTION,
        structured_output=False,
        annotations=read_only("Search verified workspace memory"),
    )
    def search(
        query: Annotated[
            Any, Field(description="What to look for (max 256 bytes).", json_schema_extra=text)
        ],
        scope: OnlyScope = None,
        type: Annotated[
            Any,
            Field(
                description="Only this type: decision, preference, convention, or fact.",
                json_schema_extra=optional_type,
            ),
        ] = None,
        limit: Annotated[
            Any,
            Field(
                description="At most this many records (1-100; default 100).",
                json_schema_extra={
                    "anyOf": [{"type": "integer", "minimum": 1, "maximum": 100}, {"type": "null"}],
                    "default": None,
                },
            ),
        ] = None,
    ) -> str:
        return run(lambda: memory.search(query, scope, type, limit))

    @server.tool(
        LIST_TOOL,
        title="List verified workspace memory",
        description=LIST_DESCRIPTION,
        structured_output=False,
        annotations=read_only("List verified workspace memory"),
    )
    def list_memory(
        scope: OnlyScope = None,
    ) -> str:
        return run(lambda: memory.list_records(scope))

    def resource(scope: Scope | None) -> Callable[[], str]:
        uri = RESOURCE_URI if scope is None else f"{RESOURCE_URI}/{scope.value}"

        def read() -> str:
            return run(lambda: memory.read_resource(uri, scope), ResourceError)

        return read

    server.resource(
        RESOURCE_URI,
        name="verified-memory",
        title="Verified workspace memory",
        description="Every record a human verified that this server serves, as Markdown.",
        mime_type="text/markdown",
    )(resource(None))
    for scope in memory.audience.scopes():
        server.resource(
            f"{RESOURCE_URI}/{scope.value}",
            name=f"verified-memory-{scope.value}",
            title=f"Verified {scope.value} memory",
            description=f"The verified {scope.value} records this server serves, as Markdown.",
            mime_type="text/markdown",
        )(resource(scope))
    return server


def _version() -> str:
    from . import __version__

    return __version__


def serve(
    store: MemoryStore,
    *,
    session: str | None = None,
    include_shared: bool = False,
    yes_shared: bool = False,
    budget: int | str | None = None,
) -> None:
    """Run the server on stdin/stdout until the client closes it. ``budget``: the bytes an
    answer may take (``settings.budget_bytes``: the flag, the environment, the default).
    """
    limit = budget_bytes(budget)
    # DSH_AUDIT=off: no entries (bench_mcp.py measures the audit's cost against it).
    audit = AuditLog(store.paths.home) if audit_setting() else None
    load_sdk()
    memory = MemoryServer(
        store,
        session_id_for(session),
        include_shared=include_shared,
        confirm_shared=yes_shared,
        budget=limit,
        audit=audit,
    )
    server = build_server(memory)
    try:  # load the files now, so the first call is as fast as the others
        for file in served_files(store, memory.audience):
            store.view(file).refresh()
        memory.settle()
    except StoreError as exc:
        log.warning("%s", exc)
    for why in store.unread_files():  # served as the host serves it: none of it
        print(f"warning: {why}", file=sys.stderr, flush=True)
    print(
        f"dsh-memory mcp: workspace {store.paths.workspace}, user {store.user_id}, session "
        f"{memory.session_id}{', shared-project included' if include_shared else ''}, "
        f"budget {limit:,} bytes, audit {audit.path if audit else 'off'}",
        file=sys.stderr,
        flush=True,
    )
    import anyio

    from .mcp_stdio import serve_stdio

    anyio.run(serve_stdio, server)
