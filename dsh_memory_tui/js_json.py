"""JSON as the host's node reads and writes it: ``JSON.parse`` (``loads_js``, ``scan_js``:
NaN and Infinity refused, the last of a repeated key wins, any depth, integers of any length),
``JSON.stringify``'s text back (``dumps_js``: ``RawJSON`` written byte for byte) and
``readFile(..., "utf8")`` (``decode_js``). No I/O; nothing here knows what a record is.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring as _scanstring  # type: ignore[attr-defined]
from typing import Any


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_js(text: str) -> Any:
    """``JSON.parse``: NaN and Infinity are not JSON; duplicate keys keep the last value. What
    JSON.parse takes and Python's reader cannot hold as it does is kept as its text
    (``RawJSON``): a number of more digits than ``int()`` reads or too large for a float,
    arrays and objects nested deeper than ``MAX_NESTING``. Raises ValueError for what is not
    JSON, never RecursionError.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=js_float)
    except RecursionError:  # nested deeper than the interpreter's recursion allows
        return _loads_flat(text)
    except ValueError as exc:
        if "integer string conversion" not in str(exc):  # a number too long for int()
            raise
        return _loads_flat(text)
    # Brackets in strings count too, so the count only says when the depth is worth a look.
    if text.count("[") + text.count("{") > MAX_NESTING and _deeper_than(value, MAX_NESTING):
        return _loads_flat(text)
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` has arrays or objects nested more than ``limit`` deep (a walk
    without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        items = node.values() if type(node) is dict else node
        for item in items:
            if type(item) is dict or type(item) is list:
                if depth + 1 > limit:
                    return True
                stack.append((item, depth + 1))
    return False


# Deeper than any record's own fields (a source ref's are at level 5) and than the fast
# path's reader goes; shallow enough for the json module and pydantic to write back.
MAX_NESTING = 256


class RawJSON:
    """A JSON value kept as its exact text, where Python's reader cannot hold what JSON.parse
    makes of it: a number of more digits than ``int()`` reads, or too large for a float (the
    host reads Infinity), or an array or object nested deeper than ``MAX_NESTING``. It is never
    a string, a safe integer or a container to the host's rules; in a field of any value (an
    unknown one) the record is valid, and ``dumps_js`` writes the text back unchanged.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return type(other) is RawJSON and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"RawJSON({self.text[:40]!r}{'...' if len(self.text) > 40 else ''})"


def js_float(text: str) -> float | RawJSON:
    """A JSON number with a fraction or an exponent: a float, or ``RawJSON`` when it is too
    large for one (JSON.parse makes it Infinity).
    """
    value = float(text)
    return value if value - value == 0 else RawJSON(text)  # inf - inf is NaN


def js_int(text: str) -> int | RawJSON:
    """A JSON integer: an int, or ``RawJSON`` when it has more digits than ``int()`` reads."""
    try:
        return int(text)
    except ValueError:
        return RawJSON(text)


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=js_float)


def scan_js(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value at ``pos`` (no space before it) and the position after it, as
    ``loads_js`` reads it. ValueError for what is not JSON.
    """
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError:
        pass
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
    return _read_flat(text, pos)


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_JSON_WORDS = {"true": True, "false": False, "null": None}


def json_space_end(text: str, pos: int) -> int:
    """The position after the JSON whitespace at ``pos`` in ``text``."""
    found = _JSON_SPACE.match(text, pos)
    return found.end() if found is not None else pos


def _json_error(what: str, pos: int) -> ValueError:
    return ValueError(f"{what} at character {pos}")


def _loads_flat(text: str) -> Any:
    """``loads_js`` without recursion (``_read_flat`` of the whole text)."""
    value, pos = _read_flat(text, json_space_end(text, 0))
    if json_space_end(text, pos) != len(text):
        raise _json_error("Extra data", pos)
    return value


def _read_flat(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value at ``pos`` and the position after it, read without recursion: one loop
    over the text with a stack of the open arrays and objects, so any depth reads. A container
    that opens deeper than ``MAX_NESTING``, and a number Python cannot hold, become ``RawJSON``
    of their text. ValueError for what is not JSON.

    What lies inside such a container is read (it must be JSON) but not kept: its text is the
    value, so the containers in it are ``None`` on the stack and take no values (keeping them
    copied the text once per level: 200,000 levels took seconds).
    """
    space = json_space_end
    # Each open container: (the container, its key awaiting a value or None, where it began).
    stack: list[tuple[Any, str | None, int]] = []
    key: str | None
    while True:
        ch = text[pos : pos + 1]
        if ch == "[" or ch == "{":
            start = pos
            pos = space(text, pos + 1)
            kept = len(stack) <= MAX_NESTING  # inside a RawJSON container: read, not kept
            if ch == "[":
                if not text.startswith("]", pos):
                    stack.append(([] if kept else None, None, start))
                    continue
                value: Any = []
            else:
                if not text.startswith("}", pos):
                    key, pos = _json_key(text, pos)
                    stack.append(({} if kept else None, key, start))
                    continue
                value = {}
            pos += 1
            if len(stack) >= MAX_NESTING:
                value = RawJSON(text[start:pos]) if kept else None
        elif ch == '"':
            value, pos = _scanstring(text, pos + 1, True)
        elif (number := _JSON_NUMBER.match(text, pos)) is not None:
            digits = number.group()
            pos = number.end()
            value = js_float(digits) if number.group(1) or number.group(2) else js_int(digits)
        else:
            word = next((w for w in _JSON_WORDS if text.startswith(w, pos)), None)
            if word is None:
                raise _json_error("Expecting value", pos)
            value = _JSON_WORDS[word]
            pos += len(word)
        # Put the value in its container; close every container that ends here.
        while True:
            if not stack:
                return value, pos
            container, key, start = stack[-1]
            if container is None:
                pass  # inside a container kept as its text
            elif key is None:
                container.append(value)
            else:
                container[key] = value  # a repeated key: the last value wins, in its first place
            pos = space(text, pos)
            ch = text[pos : pos + 1]
            if ch == ",":
                pos = space(text, pos + 1)
                if key is not None:
                    key, pos = _json_key(text, pos)
                    stack[-1] = (container, key, start)
                break
            if ch != ("]" if key is None else "}"):
                raise _json_error("Expecting ',' or the end of the container", pos)
            pos += 1
            stack.pop()
            if len(stack) < MAX_NESTING:
                value = container
            else:  # the outermost of the deep ones is kept as its text; those in it are not
                value = RawJSON(text[start:pos]) if len(stack) == MAX_NESTING else None


def _json_key(text: str, pos: int) -> tuple[str, int]:
    """An object's key at ``pos`` and the position of its value (after the colon)."""
    if not text.startswith('"', pos):
        raise _json_error("Expecting property name enclosed in double quotes", pos)
    key, pos = _scanstring(text, pos + 1, True)
    pos = json_space_end(text, pos)
    if not text.startswith(":", pos):
        raise _json_error("Expecting ':' delimiter", pos)
    return key, json_space_end(text, pos + 1)


def dumps_js(
    value: Any,
    *,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
) -> str:
    """``json.dumps`` of a value ``loads_js`` made (compact unless ``indent`` or
    ``separators`` say otherwise): ``RawJSON`` is written as its text; NaN and Infinity are
    refused.
    """
    import secrets  # here: most commands write no JSON this way, and it loads hmac

    raws: list[str] = []
    nonce = secrets.token_hex(8)

    def raw(obj: Any) -> str:
        if type(obj) is not RawJSON:
            raise TypeError(f"{type(obj).__name__} is not JSON")
        raws.append(obj.text)
        return f"\x00{nonce}:{len(raws) - 1}\x00"

    text = json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators or ((",", ":") if indent is None else (",", ": ")),
        allow_nan=False,
        default=raw,
    )
    if raws:
        text = re.sub(
            f'"\\\\u0000{nonce}:([0-9]+)\\\\u0000"', lambda m: raws[int(m.group(1))], text
        )
    return text


def decode_js(line: bytes) -> str:
    """Bytes as node's ``readFile(..., "utf8")`` decodes them (bad bytes are U+FFFD)."""
    return line.decode("utf-8", "replace")
