"""The text the risk detectors read: what a person or a model reads, not how it is spelled.

An agent can spell ``ghp_…`` or "ignore previous instructions" so that no pattern meets it and a
reader (or the next model) still does: full-width or mathematical letters, look-alike letters of
other scripts, zero-width characters, soft hyphens or tag characters inside a word, a shell
line continued with a backslash. ``normalize`` undoes each of these:

- every character ``present.visible`` shows as a stand-in (controls, bidi, zero-width, soft
  hyphens, joiners, the BOM) is removed, and so are the emoji variation selectors; a line or
  paragraph separator, a vertical tab or a form feed becomes a newline;
- tag characters (U+E0020..E007E, text hidden from a reader) become the ASCII they encode;
- each other character becomes its NFKC form without combining marks (``ｓｋ`` -> ``sk``,
  ``𝐈𝐠𝐧𝐨𝐫𝐞`` -> ``Ignore``, ``ïgnore`` -> ``ignore``), then look-alikes of ASCII letters, digits
  and signs in other scripts become those (``_LOOK_ALIKES``: Cyrillic ``о``, Greek ``Ο``, ...);
- a backslash (or PowerShell's backtick) at the end of a line joins it with the next.

``Normalized.original`` maps a span of the normalized text back to the characters of the
original that produced it, so a flag names what is stored. The map costs nothing when no
character changes length (ASCII text, CJK text, full-width letters); otherwise it holds one
entry per run of removed or expanded characters.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from ..present import hidden_spans

# Look-alikes of ASCII characters that NFKC leaves alone (it already folds full-width,
# mathematical, circled and small-form letters), by Unicode name: Unicode's confusables
# (UTS #39) whose prototype is one ASCII character, for the scripts that draw them as Latin.
_LOOK_ALIKES: dict[str, tuple[str, ...]] = {
    "a": ("CYRILLIC SMALL LETTER A", "GREEK SMALL LETTER ALPHA", "LATIN SMALL LETTER ALPHA"),
    "c": ("CYRILLIC SMALL LETTER ES", "GREEK LUNATE SIGMA SYMBOL"),
    "d": ("CYRILLIC SMALL LETTER KOMI DE",),
    "e": ("CYRILLIC SMALL LETTER IE",),
    "g": ("LATIN SMALL LETTER SCRIPT G", "ARMENIAN SMALL LETTER CO"),
    "h": ("CYRILLIC SMALL LETTER SHHA", "ARMENIAN SMALL LETTER HO"),
    "i": (
        "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I",
        "GREEK SMALL LETTER IOTA",
        "LATIN SMALL LETTER DOTLESS I",
        "LATIN SMALL LETTER IOTA",
    ),
    "j": ("CYRILLIC SMALL LETTER JE", "GREEK LETTER YOT", "LATIN SMALL LETTER DOTLESS J"),
    "k": ("GREEK SMALL LETTER KAPPA",),
    "l": (
        "CYRILLIC LETTER PALOCHKA",
        "CYRILLIC SMALL LETTER PALOCHKA",
        "LATIN LETTER DENTAL CLICK",
    ),
    "n": ("ARMENIAN SMALL LETTER VO",),
    "o": ("CYRILLIC SMALL LETTER O", "GREEK SMALL LETTER OMICRON", "ARMENIAN SMALL LETTER OH"),
    "p": ("CYRILLIC SMALL LETTER ER", "GREEK SMALL LETTER RHO"),
    "q": ("CYRILLIC SMALL LETTER QA",),
    "s": ("CYRILLIC SMALL LETTER DZE",),
    "u": ("ARMENIAN SMALL LETTER SEH", "GREEK SMALL LETTER UPSILON"),
    "v": ("GREEK SMALL LETTER NU",),
    "w": ("CYRILLIC SMALL LETTER WE",),
    "x": ("CYRILLIC SMALL LETTER HA",),
    "y": ("CYRILLIC SMALL LETTER U", "CYRILLIC SMALL LETTER STRAIGHT U"),
    "A": ("CYRILLIC CAPITAL LETTER A", "GREEK CAPITAL LETTER ALPHA", "CHEROKEE LETTER GO"),
    "B": ("CYRILLIC CAPITAL LETTER VE", "GREEK CAPITAL LETTER BETA", "CHEROKEE LETTER YV"),
    "C": ("CYRILLIC CAPITAL LETTER ES", "GREEK CAPITAL LUNATE SIGMA SYMBOL", "CHEROKEE LETTER TLI"),
    "D": ("CHEROKEE LETTER A",),
    "E": ("CYRILLIC CAPITAL LETTER IE", "GREEK CAPITAL LETTER EPSILON", "CHEROKEE LETTER GV"),
    "G": ("CHEROKEE LETTER NAH",),
    "H": ("CYRILLIC CAPITAL LETTER EN", "GREEK CAPITAL LETTER ETA", "CHEROKEE LETTER MI"),
    "I": ("CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I", "GREEK CAPITAL LETTER IOTA"),
    "J": ("CYRILLIC CAPITAL LETTER JE", "CHEROKEE LETTER GU"),
    "K": ("CYRILLIC CAPITAL LETTER KA", "GREEK CAPITAL LETTER KAPPA", "CHEROKEE LETTER TSO"),
    "L": ("CHEROKEE LETTER TLE",),
    "M": ("CYRILLIC CAPITAL LETTER EM", "GREEK CAPITAL LETTER MU", "CHEROKEE LETTER LU"),
    "N": ("GREEK CAPITAL LETTER NU",),
    "O": (
        "CYRILLIC CAPITAL LETTER O",
        "GREEK CAPITAL LETTER OMICRON",
        "ARMENIAN CAPITAL LETTER OH",
    ),
    "P": ("CYRILLIC CAPITAL LETTER ER", "GREEK CAPITAL LETTER RHO", "CHEROKEE LETTER TLV"),
    "Q": ("CYRILLIC CAPITAL LETTER QA",),
    "R": ("CHEROKEE LETTER E",),
    "S": ("CYRILLIC CAPITAL LETTER DZE", "CHEROKEE LETTER DU"),
    "T": ("CYRILLIC CAPITAL LETTER TE", "GREEK CAPITAL LETTER TAU", "CHEROKEE LETTER I"),
    "U": ("ARMENIAN CAPITAL LETTER SEH",),
    "V": ("CHEROKEE LETTER DO",),
    "W": ("CYRILLIC CAPITAL LETTER WE", "CHEROKEE LETTER LA"),
    "X": ("CYRILLIC CAPITAL LETTER HA", "GREEK CAPITAL LETTER CHI"),
    "Y": ("CYRILLIC CAPITAL LETTER STRAIGHT U", "GREEK CAPITAL LETTER UPSILON"),
    "Z": ("GREEK CAPITAL LETTER ZETA", "CHEROKEE LETTER NO"),
    "-": (
        "HYPHEN",
        "NON-BREAKING HYPHEN",
        "FIGURE DASH",
        "EN DASH",
        "EM DASH",
        "HORIZONTAL BAR",
        "MINUS SIGN",
    ),
    "/": ("DIVISION SLASH", "FRACTION SLASH"),
    ":": ("MODIFIER LETTER TRIANGULAR COLON", "ARMENIAN FULL STOP", "MODIFIER LETTER COLON"),
    '"': ("LEFT DOUBLE QUOTATION MARK", "RIGHT DOUBLE QUOTATION MARK"),
    "'": ("LEFT SINGLE QUOTATION MARK", "RIGHT SINGLE QUOTATION MARK"),
}
_NEWLINES = frozenset("\x0b\x0c\x85\u2028\u2029")
_VARIATION = frozenset("\ufe0e\ufe0f")
# A line continued: a backslash (sh, Python, C) or a backtick (PowerShell) before the newline.
_CONTINUATION = r"[\\`]\r?\n"
_ASCII_SPECIAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|" + _CONTINUATION)


@lru_cache(maxsize=1)
def _look_alikes() -> dict[str, str]:
    return {
        unicodedata.lookup(name): ascii_char
        for ascii_char, names in _LOOK_ALIKES.items()
        for name in names
    }


class _Folds(dict[int, str]):
    """Each code point seen, as the normalized text spells it (a ``str.translate`` table,
    filled on first sight: a text holds few distinct characters)."""

    def __missing__(self, code: int) -> str:
        folded = _fold(chr(code))
        self[code] = folded
        return folded


def _fold(char: str) -> str:
    if char in _NEWLINES:
        return "\n"
    if char == "\r" or char == "\t" or char == "\n":
        return char
    if hidden_spans(char, multiline=True) or char in _VARIATION:
        code = ord(char)
        return chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else ""
    if char.isascii():
        return char
    alikes = _look_alikes()
    if char in alikes:  # before NFKC, which turns some into other letters (lunate sigma)
        return alikes[char]
    bare = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    folded = unicodedata.normalize("NFKC", bare) if bare else ""
    return "".join(alikes.get(c, c) for c in folded)


_FOLDS = _Folds()


_CONTINUED = re.compile(_CONTINUATION)
# The map back is kept per chunk of the original: a chunk where every character stays one
# character maps by offset; in another, a lookup walks its characters (at most ~this many).
_CHUNK = 256


@dataclass(frozen=True, slots=True)
class Normalized:
    """``text`` as the detectors read it, and where each part of it came from: the original
    in chunks (``_orig``), the normalized offset where each begins (``_norm``), and whether
    each maps one for one (``_plain``)."""

    text: str
    _source: str = ""
    _resized: frozenset[str] = frozenset()
    _joined: bool = False
    _orig: list[int] = field(default_factory=list)
    _norm: list[int] = field(default_factory=list)
    _plain: list[bool] = field(default_factory=list)

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that the normalized ``[start, end)`` came from
        (characters removed inside the span are in it; those around it are not)."""
        if not self._orig:
            return start, end
        return self._locate(start)[0], self._locate(end - 1)[1]

    def _locate(self, target: int) -> tuple[int, int]:
        """The original span of the character (or continued line) that made normalized
        character ``target``."""
        i = bisect_right(self._norm, target) - 1
        o, n = self._orig[i], self._norm[i]
        if self._plain[i]:
            return o + target - n, o + target - n + 1
        source, limit = self._source, len(self._source)
        while o < limit:
            if self._joined and source[o] in "\\`" and (joined := _CONTINUED.match(source, o)):
                unit, size = joined.end() - o, 0
            else:
                unit, size = 1, len(_FOLDS[ord(source[o])])
            if n + size > target:
                return o, o + unit
            n += size
            o += unit
        return limit, limit


def _chunk_end(text: str, start: int) -> int:
    """Where the chunk from ``start`` ends: never inside a continued line."""
    end = min(start + _CHUNK, len(text))
    for _ in range(2):
        if end < len(text) and text[end - 1] in "\\`\r":
            end += 1
    return end


def normalize(text: str) -> Normalized:
    """``text`` normalized (see the module), with the map back to it. Linear in the text:
    ``str.translate`` and ``re`` over it, Python work per chunk of 256 characters."""
    if text.isascii() and not _ASCII_SPECIAL.search(text):
        return Normalized(text)
    folds = _FOLDS
    if len(folds) > 100_000:
        folds.clear()
    resized = frozenset(c for c in set(text) if len(folds[ord(c)]) != 1)
    joined = "\n" in text and ("\\" in text or "`" in text) and bool(_CONTINUED.search(text))
    normalized = (_CONTINUED.sub("", text) if joined else text).translate(folds)
    if not resized and not joined:
        return Normalized(normalized)  # one for one everywhere
    orig: list[int] = []
    norm: list[int] = []
    plain: list[bool] = []
    o = n = 0
    while o < len(text):
        end = _chunk_end(text, o)
        chunk = text[o:end]
        same = resized.isdisjoint(chunk) and not (joined and _CONTINUED.search(chunk))
        orig.append(o)
        norm.append(n)
        plain.append(same)
        n += (
            len(chunk)
            if same
            else len((_CONTINUED.sub("", chunk) if joined else chunk).translate(folds))
        )
        o = end
    return Normalized(normalized, text, resized, joined, orig, norm, plain)
