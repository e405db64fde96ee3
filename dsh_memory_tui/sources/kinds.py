"""Citation kinds: what a citation anchors on in a file, how it is hashed, and how it is judged
against a read of the file. A kind is one small object (``Kind``); the engine reads and
indexes a file once for all its citations, whatever their kinds, and asks each kind only
about a ``FileText``:

- ``cite(text, citation)``: the hash and the text to keep as the snapshot, now;
- ``judge(text, citation, want, old)``: ok, moved (the same text elsewhere in the file) or
  changed, and why, in words;
- ``locate(text, citation, old)``: where what was cited is now, when it changed (re-verify
  takes it), or None when it cannot be found;
- ``shown(text, citation, old)``: the first line and the text the diff shows as "now";
- ``guess(text, citation, old)``: where to look first when ``locate`` finds nothing;
- ``digest_of(data)``: the hash of a snapshot's text (to know a snapshot is the cited one);
- ``text_of(data)``: the cited text a snapshot holds (a symbol's keeps a header before it).

A kind that parses (a symbol's) keeps its parse on the text: ``text.derived(name, parse)``
runs once per read of the file. ``KINDS`` maps ``Citation.kind`` to its kind.
"""

from __future__ import annotations

from typing import Protocol

from .citation import Citation, bad
from .locate import find_exact, guess, locate
from .symbol import SymbolKind
from .text import FileText, cited_hash, split_lines
from .verdict import BROKEN, HASH, Old, State, Verdict

__all__ = ["BROKEN", "HASH", "KINDS", "Kind", "Old", "State", "Verdict", "kind_of"]


class Kind(Protocol):
    name: str

    def digest_of(self, data: bytes) -> str: ...

    def text_of(self, data: bytes) -> bytes: ...

    def cite(self, text: FileText, citation: Citation) -> tuple[str, bytes]: ...

    def judge(self, text: FileText, citation: Citation, want: str, old: Old) -> Verdict: ...

    def locate(self, text: FileText, citation: Citation, old: bytes | None) -> Citation | None: ...

    def shown(self, text: FileText, citation: Citation, old: bytes) -> tuple[int, bytes]: ...

    def guess(self, text: FileText, citation: Citation, old: bytes | None) -> Citation: ...


class WholeFile:
    """``PATH``: every line of the file."""

    name = "file"

    def digest_of(self, data: bytes) -> str:
        return cited_hash(data)

    def text_of(self, data: bytes) -> bytes:
        return data

    def cite(self, text: FileText, citation: Citation) -> tuple[str, bytes]:
        return text.digest(None, None), text.region(None, None)

    def judge(self, text: FileText, citation: Citation, want: str, old: Old) -> Verdict:
        if text.digest(None, None) == want:
            return Verdict(State.OK, "the file is unchanged")
        return Verdict(State.CHANGED, "the file changed")

    def locate(self, text: FileText, citation: Citation, old: bytes | None) -> Citation | None:
        return citation

    def shown(self, text: FileText, citation: Citation, old: bytes) -> tuple[int, bytes]:
        return 1, text.region(None, None)

    def guess(self, text: FileText, citation: Citation, old: bytes | None) -> Citation:
        return citation


class LineRange:
    """``PATH:START-END``: lines of a text file."""

    name = "lines"

    def digest_of(self, data: bytes) -> str:
        return cited_hash(data)

    def text_of(self, data: bytes) -> bytes:
        return data

    def cite(self, text: FileText, citation: Citation) -> tuple[str, bytes]:
        start, end = _span(citation)
        if text.binary:
            raise bad(f"{citation.path}: is a binary file; cite it whole, not by lines")
        count = len(text.lines)
        if end > count:
            raise bad(
                f"{citation}: the file has {count} line{'s' if count != 1 else ''}; "
                f"lines {start}-{end} are past its end"
            )
        return text.digest(start, end), text.region(start, end)

    @staticmethod
    def unchanged(text: FileText, start: int, end: int, want: object) -> str | None:
        """Why lines ``start``-``end`` hold as cited (their hash is ``want``), or None."""
        if end <= len(text.lines) and text.digest(start, end) == want:
            return f"lines {start}-{end} are unchanged"
        return None

    def judge(self, text: FileText, citation: Citation, want: str, old: Old) -> Verdict:
        start, end = citation.start or 0, citation.end or 0
        count = len(text.lines)
        why = self.unchanged(text, start, end, want)
        if why is not None:
            return Verdict(State.OK, why)
        kept = old()
        first = split_lines(kept)[0] if kept else None
        size = end - start + 1
        at = find_exact(
            text.lines, size, start, lambda i: text.digest(i, i + size - 1) == want, first
        )
        if at is not None:
            return Verdict(State.MOVED, f"the same text is now at lines {at[0]}-{at[1]}", at)
        if end > count:
            return Verdict(State.CHANGED, f"the file now ends at line {count}")
        return Verdict(State.CHANGED, f"lines {start}-{end} changed")

    def locate(self, text: FileText, citation: Citation, old: bytes | None) -> Citation | None:
        start, _ = _span(citation)
        if old is None or text.binary:
            return None
        at = locate(split_lines(old), text.lines, start)
        return None if at is None else citation.at(lines=at)

    def shown(self, text: FileText, citation: Citation, old: bytes) -> tuple[int, bytes]:
        start, end = _span(citation)
        old_lines = split_lines(old)
        at = locate(old_lines, text.lines, start) or guess(old_lines, text.lines, start, end)
        return at[0], text.region(*at)

    def guess(self, text: FileText, citation: Citation, old: bytes | None) -> Citation:
        """Where to look first when ``locate`` found nothing (the app prefills it)."""
        start, end = _span(citation)
        old_lines = split_lines(old) if old else None
        return citation.at(lines=guess(old_lines, text.lines, start, end))


def _span(citation: Citation) -> tuple[int, int]:
    assert citation.start is not None and citation.end is not None
    return citation.start, citation.end


KINDS: dict[str, Kind] = {"file": WholeFile(), "lines": LineRange(), "symbol": SymbolKind()}


def kind_of(citation: Citation) -> Kind:
    return KINDS[citation.kind]
