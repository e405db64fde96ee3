"""The MCP server's stdio transport: the SDK's own (``mcp.server.stdio.stdio_server``), with a
guard on each side so that no single message can stop the server (issue 31).

- In: a line the SDK cannot decode (its JSON reader refuses a lone surrogate such as
  ``\\udcff``, which the host's JSON takes; a line that is not JSON; an object that is not a
  JSON-RPC message) is handed to the server as an exception, which the SDK drops without a
  word: its client waits forever. Here a request among them gets a JSON-RPC error naming its
  id (``id: null`` when none can be read, as JSON-RPC says), and the server reads on.
- Out: the SDK writes each answer with pydantic's JSON encoder, which refuses a lone surrogate,
  in the one task that writes every answer: one such string ended the server. Here an answer
  that cannot be written is written with U+FFFD for each lone surrogate (node's UTF-8 for
  one; ``agent_view`` already sends record text so, and says it), else replaced by an error
  for its request.

Imports the SDK, so only ``mcp.py``'s server imports this module.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from .model import well_formed

log = logging.getLogger(__name__)

UNDECODABLE = "the request could not be decoded: {why}"
LONE_SURROGATE = (
    "a string holds a lone surrogate (a \\ud800-\\udfff escape without its pair), which is "
    "not Unicode text; send U+FFFD in its place"
)
UNWRITABLE = "the answer to this request could not be written as JSON text: {why}"


async def serve_stdio(server: Any) -> None:
    """Run ``server`` (an ``MCPServer``) on stdin/stdout until the client closes stdin, with
    the guards above between the SDK's transport and the server.
    """
    # The SDK's client reaches its server the same way (client/_memory.py; a TODO there
    # makes it public): MCPServer runs stdio only through a transport of its own.
    lowlevel = server._lowlevel_server
    async with stdio_server() as (wire_in, wire_out):
        to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        server_out, answers = anyio.create_memory_object_stream[SessionMessage](0)
        refusals = server_out.clone()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_inbound, wire_in, to_server, refusals)
            tasks.start_soon(_outbound, answers, wire_out)
            await lowlevel.run(server_in, server_out, lowlevel.create_initialization_options())


async def _inbound(
    wire: ObjectReceiveStream[SessionMessage | Exception],
    server: ObjectSendStream[SessionMessage | Exception],
    refusals: ObjectSendStream[SessionMessage],
) -> None:
    """Pass every decoded message on; answer an undecodable request with its error."""
    async with server, refusals:
        async for item in wire:
            if not isinstance(item, Exception):
                await server.send(item)
                continue
            refusal = refusal_for(item)
            if refusal is None:
                log.warning("an undecodable message was ignored (not a request): %s", item)
            else:
                await refusals.send(SessionMessage(refusal))


async def _outbound(
    answers: ObjectReceiveStream[SessionMessage], wire: ObjectSendStream[SessionMessage]
) -> None:
    """Write every answer, made writable first when it is not."""
    async with answers, wire:
        async for message in answers:
            writable = writable_message(message.message)
            if writable is None:
                log.warning("an answer that could not be written was dropped (not a response)")
                continue
            await wire.send(SessionMessage(writable, message.metadata))


def refusal_for(exc: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error answering a line the SDK could not decode (from its pydantic
    ``ValidationError``), or None when no answer is due: the line is a notification or a
    response, or the exception is not a decoding error.
    """
    errors = getattr(exc, "errors", None)
    try:
        first = errors()[0] if callable(errors) else None
    except (IndexError, TypeError, ValueError):
        first = None
    if not isinstance(first, dict):
        return None
    if first.get("type") != "json_invalid" or not isinstance(first.get("input"), str):
        # Valid JSON that is not a JSON-RPC message: JSON-RPC answers it with id null.
        return _error(None, types.INVALID_REQUEST, "not a JSON-RPC message")
    try:  # the json module takes what the SDK's reader refuses: a lone surrogate
        message = json.loads(first["input"])
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, "not JSON")
    rid = message.get("id") if isinstance(message, dict) else None
    if not isinstance(message, dict) or "method" not in message or rid is None:
        return None  # a notification or a response: nothing to answer
    why = _why_undecodable(message, first)
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        return _error(None, types.INVALID_REQUEST, why)
    if isinstance(rid, str) and well_formed(rid) != rid:
        return _error(None, types.INVALID_REQUEST, why)  # an id that cannot be echoed
    return _error(rid, types.INVALID_REQUEST, why)


def _why_undecodable(message: dict[str, Any], error: dict[str, Any]) -> str:
    try:
        json.dumps(message, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return LONE_SURROGATE
    except (ValueError, RecursionError):
        pass
    # Another reason the SDK's reader gave (NaN, nesting deeper than it reads...).
    return well_formed(str(error.get("msg") or "not JSON-RPC")).removeprefix("Invalid JSON: ")


def _error(rid: int | str | None, code: int, why: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=rid,
        error=types.ErrorData(code=code, message=UNDECODABLE.format(why=why)),
    )


def writable_message(message: types.JSONRPCMessage) -> types.JSONRPCMessage | None:
    """``message`` if the SDK can write it; else the same with U+FFFD for each lone surrogate;
    else an error answering its request (None for a message that answers none).
    """
    try:
        message.model_dump_json(by_alias=True, exclude_unset=True)
        return message
    except ValueError as exc:  # pydantic's serialization error is a ValueError
        problem = well_formed(str(exc))
    data = _well_formed_value(message.model_dump(by_alias=True, exclude_unset=True))
    try:
        fixed = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        fixed.model_dump_json(by_alias=True, exclude_unset=True)
    except ValueError:
        rid = getattr(message, "id", None)
        if rid is None:
            return None
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=UNWRITABLE.format(why=problem))
        return types.JSONRPCError(jsonrpc="2.0", id=_well_formed_value(rid), error=error)
    log.warning("an answer held text that is not Unicode; sent with U+FFFD: %s", problem)
    return fixed


def _well_formed_value(value: Any) -> Any:
    """``value`` (decoded JSON) with ``well_formed`` applied to every string, keys too."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [_well_formed_value(v) for v in value]
    if isinstance(value, dict):
        return {well_formed(str(k)): _well_formed_value(v) for k, v in value.items()}
    return value
