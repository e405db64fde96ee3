"""The diff since a citation: one sentence saying what is compared (or why nothing can be, and
what the reviewer can do), then the cited text as it was against where it is now, as
unified-diff lines numbered by the file's lines.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from .kinds import State, kind_of
from .text import BINARY_PROBE, split_lines

if TYPE_CHECKING:
    from .engine import Check, Sources

MAX_DIFF_LINES = 2000
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
# What a reviewer can do about a citation whose diff cannot help them.
_EDIT = (
    "if the memory still holds, re-verify it and give its lines as they are now; "
    "else edit its citations or archive it"
)


def diff_lines(sources: Sources, check: Check) -> list[str]:
    """``check``'s diff: after a first line saying what is compared, ``---``, ``+++``, ``@@``
    and `` ``/``-``/``+`` lines. Text that is not UTF-8 is shown with replacement characters;
    pass each line through ``present.visible`` before it reaches a terminal.
    """
    citation, label = check.citation, check.label
    if check.state is State.OK:
        return [f"{label}: unchanged since it was cited"]
    if check.state is State.ELSEWHERE:
        return [f"{label}: {check.why}; its diff is shown in the workspace it was cited in"]
    if check.state is State.MOVED and check.now is not None:
        now = check.now
        at = now.lines if citation is not None and now.path == citation.path else now.label
        return [f"{label}: the cited text is unchanged, now at {at}"]
    if citation is None:
        return [f"{label}: {check.why}; it names no file of the workspace: {_EDIT}"]
    old, origin = sources.old_text(check)
    if old is None:
        then = _EDIT[0].upper() + _EDIT[1:]
        return [f"{label}: {check.why}; the diff cannot be shown: {origin}. {then}"]
    if b"\x00" in old[:BINARY_PROBE]:
        return [f"{label}: a binary file changed; the diff is not shown"]
    place = check.now or citation
    text = sources.text_now(place.path)
    if text is None:
        head = (
            f"{label}: {check.why}. The cited text ({origin}) is shown as removed. If the code "
            "lives on elsewhere and the memory still holds, re-verify it and give where the "
            "code is now; else edit its citations or archive it"
        )
        first, new = citation.start or 1, b""
    else:
        first, new = kind_of(place).shown(text, place, old)
        where = place.path if place.path != citation.path else "the file"
        if citation.start is not None and new:
            where += f" now (lines {first}-{first + len(split_lines(new)) - 1})"
        else:
            where += " now"
        head = f"{label}: {check.why}; the cited text ({origin}) against {where}"
    lines = difflib.unified_diff(
        _decoded(old),
        _decoded(new),
        f"{citation.path} (cited)",
        f"{place.path} (now)",
        lineterm="",
        n=3,
    )
    old_shift, new_shift = (citation.start or 1) - 1, first - 1
    out = [head, *(_at_file_lines(line, old_shift, new_shift) for line in lines)]
    return out[:MAX_DIFF_LINES]


def _at_file_lines(line: str, old_shift: int, new_shift: int) -> str:
    """A hunk header numbered by the file's lines (the diff is of the cited region)."""
    m = _HUNK.match(line) if old_shift or new_shift else None
    if m is None:
        return line
    a, b = int(m[1]) + old_shift, int(m[3]) + new_shift
    return f"@@ -{a}{m[2] or ''} +{b}{m[4] or ''} @@{line[m.end() :]}"


def _decoded(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").split("\n") if data else []
