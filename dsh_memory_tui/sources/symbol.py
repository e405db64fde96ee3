"""``PATH#NAME``: a symbol citation, judged by ``symbols`` (a parse of the file, made once per
read for all its citations: ``FileText.derived``).

What a symbol citation keeps as its snapshot is the symbol's text after a two-line header, the
sha256 of that text and the symbol's lines when cited (``kept``, ``unkept``): its hash is of
a parse of the whole file, which the text alone cannot give back, so the header is how a
snapshot is known to be whole.
"""

from __future__ import annotations

import hashlib
import re

from .. import symbols
from .citation import Citation, bad
from .text import FileText
from .verdict import State, Verdict

_HEADER = re.compile(rb"\Adsh-symbol (sha256:[0-9a-f]{64}) (sha256:[0-9a-f]{64}) (\d+)-(\d+)\n")
_OUTLINE = "symbols"


def outline_of(text: FileText, path: str) -> symbols.Outline | symbols.NoOutline:
    """The file's outline, parsed once per read (or why it has none)."""

    def build(t: FileText) -> symbols.Outline | symbols.NoOutline:
        try:
            return symbols.outline(t.data, path)
        except symbols.NoOutline as exc:
            return exc

    return text.derived(_OUTLINE, build)


def kept(digest: str, raw: bytes, lines: tuple[int, int]) -> bytes:
    """A symbol's snapshot: its text after a header naming its hash, its text's sha256 and
    its lines."""
    whole = "sha256:" + hashlib.sha256(raw).hexdigest()
    return f"dsh-symbol {digest} {whole} {lines[0]}-{lines[1]}\n".encode() + raw


def unkept(data: bytes) -> tuple[str, bytes, tuple[int, int]] | None:
    """A snapshot's hash, text and lines; None when it is not whole."""
    m = _HEADER.match(data)
    if m is None:
        return None
    raw = data[m.end() :]
    if "sha256:" + hashlib.sha256(raw).hexdigest() != m[2].decode():
        return None
    return m[1].decode(), raw, (int(m[3]), int(m[4]))


class SymbolKind:
    """``PATH#NAME``: a definition found by its dotted name, wherever it sits in its file."""

    name = "symbol"

    def digest_of(self, data: bytes) -> str:
        got = unkept(data)
        return got[0] if got is not None else ""

    def text_of(self, data: bytes) -> bytes:
        """The cited text a snapshot holds (what the diff shows as then)."""
        got = unkept(data)
        return got[1] if got is not None else data

    def cite(self, text: FileText, citation: Citation) -> tuple[str, bytes]:
        path, name = citation.path, _name(citation)
        got = outline_of(text, path)
        if isinstance(got, symbols.NoOutline):
            raise symbols.cite_error(path, got)
        why = symbols.generated(got.data)
        if why is not None:
            raise bad(
                f"{path} looks generated ({why}): cite the source it is made from, or a line "
                f"range ({path}:START-END)"
            )
        symbol = got.resolve(path, name)
        digest = got.digest(symbol)
        return digest, kept(digest, got.lines_of(symbol), symbol.lines)

    def judge(self, text: FileText, citation: Citation, want: str, old: object) -> Verdict:
        path, name = citation.path, _name(citation)
        got = outline_of(text, path)
        if isinstance(got, symbols.NoOutline):
            return Verdict(State.UNPARSED, f"cannot parse now: {got.reason}")
        found = got.find(name, want)
        if found is not None:
            a, b = found.lines
            if found.name == name:
                return Verdict(State.OK, f"unchanged, at lines {a}-{b}")
            why = f"unchanged, now {found.name} at lines {a}-{b}"
            return Verdict(State.MOVED, why, found.lines, found.name)
        if got.broken:
            return Verdict(
                State.UNPARSED, f"cannot parse now: a syntax error at line {got.error_line}"
            )
        now = got.named(name)
        if len(now) == 1:
            a, b = now[0].lines
            return Verdict(State.CHANGED, f"its text changed, now at lines {a}-{b}")
        if now:
            return Verdict(State.CHANGED, f"{len(now)} definitions are named {name} now")
        return Verdict(State.MISSING, f"{path} no longer defines {name}")

    def locate(self, text: FileText, citation: Citation, old: bytes | None) -> Citation | None:
        got = outline_of(text, citation.path)
        if isinstance(got, symbols.NoOutline):
            return None
        now = got.named(_name(citation))
        return citation if len(now) == 1 and now[0].clean else None

    def shown(self, text: FileText, citation: Citation, old: bytes) -> tuple[int, bytes]:
        got = outline_of(text, citation.path)
        if not isinstance(got, symbols.NoOutline):
            now = got.named(_name(citation))
            if len(now) == 1:
                return now[0].lines[0], got.lines_of(now[0])
        return 1, b""

    def guess(self, text: FileText, citation: Citation, old: bytes | None) -> Citation:
        return citation


def _name(citation: Citation) -> str:
    assert citation.symbol is not None
    return citation.symbol


def find_elsewhere(
    texts: dict[str, FileText], citation: Citation, want: str
) -> tuple[str, symbols.Symbol] | None:
    """The cited symbol, by its last name and its hash, in one of ``texts`` (other files of
    its language, read now): where it moved."""
    last = _name(citation).rsplit(".", 1)[-1]
    for rel, text in texts.items():
        got = outline_of(text, rel)
        if isinstance(got, symbols.NoOutline):
            continue
        for sym in got.ending_in(last):
            if sym.clean and got.digest(sym) == want:
                return rel, sym
    return None
