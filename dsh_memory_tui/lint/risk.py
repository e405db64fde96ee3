"""Risk flags: each risky span of a record's title and content, by kind (``FLAG_KINDS``).

Every detector reads the text as ``normalize`` spells it (NFKC, look-alikes mapped, hidden
characters removed, continued lines joined) and each span it finds is reported in the original
text. Each detector runs in time linear in the text (RE2, the provider rules' native engine)
and examines a bounded number of candidates (``linear.budget``): past it, or past
``linear.MAX_FOUND`` findings, the rest of the field is one flag of that kind saying so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from ..model import Record
from ..present import hidden_spans
from . import instructions, pii, secrets, urls
from .linear import MAX_FOUND, TooMany
from .normalize import normalize

# The order a reviewer reads them in: the worst first.
FLAG_KINDS = ("secret", "instruction", "pii", "url", "invisible")
NOT_EXAMINED = "too many to examine: the rest of the text is flagged unread"

Found = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class Flag:
    """One risky span: ``kind`` (one of ``FLAG_KINDS``), the ``field`` it is in ("title" or
    "content"), its ``start``/``end`` offsets there, and ``what`` it is ("AWS access key",
    "e-mail address", the host of a link)."""

    kind: str
    field: str
    start: int
    end: int
    what: str

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "field": self.field,
            "start": self.start,
            "end": self.end,
            "what": self.what,
        }


def _finders(text: str) -> Iterator[tuple[str, Iterator[Found]]]:
    for finder in secrets.FINDERS:
        yield "secret", finder(text)
    for found in instructions.finders(text):
        yield "instruction", found
    for finder in (pii.emails, pii.cards, pii.phones, pii.ibans):
        yield "pii", finder(text)
    yield "url", urls.urls(text)


def text_flags(text: str, field: str, *, multiline: bool = True) -> list[Flag]:
    """The flags of one field's text, in ``FLAG_KINDS`` order then by position; of spans of
    one kind that overlap, the first (the longest of those starting together; of equal ones,
    the first detector's) is named."""
    normal = normalize(text)
    size = len(normal.text)
    found: dict[str, list[Found]] = {kind: [] for kind in FLAG_KINDS}
    for kind, finder in _finders(normal.text):
        spans = found[kind]
        count = 0
        try:
            for start, end, what in finder:
                if count == MAX_FOUND:  # the rest of the text is one flag
                    spans.append((*normal.original(start, size), NOT_EXAMINED))
                    break
                count += 1
                spans.append((*normal.original(start, end), what))
        except TooMany as cut:  # the detector's budget is spent: the same
            spans.append((*normal.original(cut.start, size), NOT_EXAMINED))
    out: list[Flag] = []
    for kind in FLAG_KINDS[:-1]:
        reach = -1  # spans come sorted by start: one overlaps a kept one iff it starts before
        for start, end, what in sorted(found[kind], key=lambda f: (f[0], f[0] - f[1])):
            if start < reach or start >= end:
                continue
            reach = end
            out.append(Flag(kind, field, start, end, what))
    hidden = hidden_spans(text, multiline=multiline, limit=MAX_FOUND + 1)
    for start, end in hidden[:MAX_FOUND]:
        out.append(Flag("invisible", field, start, end, "hidden characters"))
    if len(hidden) > MAX_FOUND:
        out.append(Flag("invisible", field, hidden[MAX_FOUND][0], len(text), NOT_EXAMINED))
    return out


@lru_cache(maxsize=32_768)
def flags(title: str, content: str) -> tuple[Flag, ...]:
    """Every risk flag of a record's title and content (cached: a record's text never changes
    under its content hash, and flags are never stored)."""
    return (*text_flags(title, "title", multiline=False), *text_flags(content, "content"))


def record_flags(record: Record) -> tuple[Flag, ...]:
    return flags(record.title, record.content)


def kinds(found: Iterable[Flag]) -> list[str]:
    """The distinct kinds of ``found``, worst first."""
    present = {f.kind for f in found}
    return [k for k in FLAG_KINDS if k in present]


def describe(found: Iterable[Flag]) -> str:
    """One line naming each kind and what it is: ``secret (AWS Access Key), url (github.com)``
    ("" when nothing was found). Spans are not quoted: a secret is not repeated."""
    whats: dict[str, list[str]] = {}
    for flag in found:
        names = whats.setdefault(flag.kind, [])
        if flag.what not in names:
            names.append(flag.what)
    return ", ".join(f"{k} ({', '.join(whats[k][:3])})" for k in FLAG_KINDS if k in whats)


def matches_filter(found: Iterable[Flag], kind: str) -> bool:
    """``flag:KIND`` in a filter: ``any`` matches a record with any flag."""
    found = list(found)
    return bool(found) if kind == "any" else any(f.kind == kind for f in found)


def secret_spans(found: Iterable[Flag], field: str) -> list[tuple[int, int]]:
    """The spans of ``field`` that ``found`` flags as ``secret``, in order."""
    return sorted((f.start, f.end) for f in found if f.kind == "secret" and f.field == field)


def masked(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each span (``secret_spans``) shown as its first four characters and "…":
    what the detail pane and ``show`` print, so a flagged secret is recognisable and never
    repeated."""
    pieces: list[str] = []
    done = 0
    for start, end in sorted(spans):
        if start < done:
            continue
        pieces += [text[done:start], text[start : min(end, start + 4)], "…"]
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def masked_record(record: Record) -> Record:
    """``record`` as a person reads it: each flagged secret of its title and content masked
    (``masked``); the record itself when it has none. Never stored."""
    found = record_flags(record)
    title, content = secret_spans(found, "title"), secret_spans(found, "content")
    if not title and not content:
        return record
    return record.model_copy(
        update={"title": masked(record.title, title), "content": masked(record.content, content)}
    )
