"""The review evidence the app shows (Textual-free): each record's risk flags and near-duplicates
(``lint``), computed in a worker thread after a load or a sync, read by the UI thread; and,
judged in the same worker, which records carry a secret and which shared records' history does
not hold (``team.broken_chains``): reasons to wait on a human (the Review tab).

The first frame never waits for it: until a record's flags are known the app shows none and
filters on them by computing them (cached) for the records the filter looks at. A sync that
appends a record costs its flags and one index update, well under a millisecond.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .. import lint
from ..errors import StoreError
from ..model import Record
from ..paths import StorePaths
from ..present import visible
from ..team import broken_chains


class Evidence:
    """Flags by record id and a near-duplicate index, shared between the worker that fills
    them and the UI that reads them (a lock held for one record at a time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flags: dict[str, tuple[lint.Flag, ...]] = {}
        self._seen: dict[str, Record] = {}
        self._index = lint.NearDuplicates()
        self.generation = 0  # bumped when a computation changed something
        self._secrets: set[str] = set()  # the ids whose flags hold a secret
        # As of the worker's last ``judge``: the ids it had found a secret in, and the shared
        # records whose history breaks (id -> why).
        self._judged: frozenset[str] = frozenset()
        self.broken: Mapping[str, str] = {}

    def update(self, records: Iterable[Record], gone: Iterable[str] = ()) -> bool:
        """Flag and index ``records`` (the current version of each; in a worker thread) and
        forget ``gone``. True when anything changed."""
        changed = False
        for rid in gone:
            with self._lock:
                if self._seen.pop(rid, None) is not None:
                    self._flags.pop(rid, None)
                    self._secrets.discard(rid)
                    self._index.remove(rid)
                    changed = True
        for record in records:
            if self._seen.get(record.id) is record:
                continue
            found = lint.record_flags(record)  # outside the lock: the slow part
            lint.fingerprint(record.title, record.content)
            with self._lock:
                self._seen[record.id] = record
                self._flags[record.id] = found
                if any(f.kind == "secret" for f in found):
                    self._secrets.add(record.id)
                else:
                    self._secrets.discard(record.id)
                if lint.visible_to_reviewer(record):
                    self._index.update(record)
                else:
                    self._index.remove(record.id)
            changed = True
        if changed:
            self.generation += 1
        return changed

    def judge(self, paths: StorePaths) -> set[str]:
        """After ``update``, in the worker: which records carry a secret, and which shared
        records' history breaks now (git, when the shared file is in a repository: cached
        while HEAD and the file are unchanged). Returns the ids whose verdict changed."""
        with self._lock:
            secrets = frozenset(self._secrets)
        try:
            broken = broken_chains(paths)
        except StoreError:  # git or the file could not be read: keep the last verdict
            broken = dict(self.broken)
        changed = set(secrets ^ self._judged) | (broken.keys() ^ self.broken.keys())
        self._judged, self.broken = secrets, broken
        return changed

    def has_secret(self, record: Record) -> bool:
        """The worker found a secret in this version of ``record``."""
        return any(f.kind == "secret" for f in self.found(record))

    def seen_ids(self) -> list[str]:
        return list(self._seen)

    def flags(self, record: Record) -> tuple[lint.Flag, ...]:
        """The record's flags: from the worker when it has seen this version, else computed
        here (cached by text)."""
        if self._seen.get(record.id) is record:
            return self._flags.get(record.id, ())
        return lint.record_flags(record)

    def found(self, record: Record) -> tuple[lint.Flag, ...]:
        """The flags the worker found for this version of ``record`` (() until it has): what
        the detail pane shows, so drawing a record never computes them."""
        return self._flags.get(record.id, ()) if self._seen.get(record.id) is record else ()

    def flagged(self, record: Record) -> bool:
        """Whether the row shows the risk marker: only what the worker found (a row is never
        held up by a computation)."""
        return self._seen.get(record.id) is record and bool(self._flags.get(record.id))

    def near(self, record: Record, limit: int = 5) -> list[lint.Similar]:
        """``record``'s near-duplicates; [] while the worker holds the index (the UI thread
        never waits: the worker's end shows the detail again)."""
        if not self._lock.acquire(blocking=False):
            return []
        try:
            return self._index.similar(record, limit=limit)
        finally:
            self._lock.release()


def flag_lines(record: Record, found: Iterable[lint.Flag]) -> list[tuple[str, str, str]]:
    """The detail pane's evidence: for each flag (kind, where, the line with the span), as
    (prefix, span, suffix) of what a reviewer reads, the span to highlight. A secret's span
    is shown masked but for its first four characters: enough to recognise, not to use; so is
    every other secret the line shows around a flag (``masked_slice``)."""
    found = tuple(found)
    secrets = {field: lint.secret_spans(found, field) for field in ("title", "content")}
    out: list[tuple[str, str, str]] = []
    for flag in found:
        text = record.title if flag.field == "title" else record.content
        spans = secrets[flag.field]
        start = text.rfind("\n", 0, flag.start) + 1
        end = text.find("\n", flag.end)
        end = len(text) if end < 0 else end
        line_no = text.count("\n", 0, flag.start) + 1
        if flag.kind == "secret":
            span = text[flag.start : flag.end]
            span = span[:4] + "…" * min(3, max(0, len(span) - 4))
        else:
            span = masked_slice(text, flag.start, flag.end, spans)
        before = masked_slice(text, max(start, flag.start - 40), flag.start, spans)
        after = masked_slice(text, flag.end, min(end, flag.end + 40), spans)
        head = f"{flag.kind:<11} {flag.field}:{line_no} {flag.what}: "
        if flag.kind == "invisible":
            span = visible(span)
        out.append((visible(head + before), visible(span), visible(after)))
    return out


def masked_slice(text: str, low: int, high: int, spans: Iterable[tuple[int, int]]) -> str:
    """``text[low:high]`` with each secret span in it masked: its first four characters and
    "…" (only "…" for one that began before ``low``: its middle is not shown either)."""
    pieces: list[str] = []
    done = low
    for start, end in spans:
        if end <= done or start >= high:
            continue
        if start < done:
            pieces.append("…")
        else:
            pieces += [text[done:start], text[start : min(start + 4, end, high)], "…"]
        done = min(end, high)
    pieces.append(text[done:high])
    return "".join(pieces)


@dataclass(frozen=True, slots=True)
class RecordEvidence:
    """What the detail pane shows of one record's evidence: its flagged lines
    (``flag_lines``), its near-duplicates with their scores, and the spans of its title and
    content flagged ``secret`` (masked wherever the pane shows them)."""

    flags: tuple[tuple[str, str, str], ...] = ()
    near: tuple[tuple[Record, float], ...] = ()
    secret_title: tuple[tuple[int, int], ...] = ()
    secret_content: tuple[tuple[int, int], ...] = ()
    near_shown: tuple[tuple[str, str], ...] = ()  # each near-duplicate's title and content, masked

    @classmethod
    def of(
        cls, record: Record, found: Iterable[lint.Flag], near: tuple[tuple[Record, float], ...]
    ) -> RecordEvidence:
        """``record``'s evidence from its flags (``found``) and its near-duplicates (whose
        flags the worker has computed: ``lint.record_flags`` remembers them)."""
        found = tuple(found)
        shown = []
        for other, _ in near:
            theirs = lint.record_flags(other)
            shown.append(
                (
                    lint.masked(other.title, lint.secret_spans(theirs, "title")),
                    lint.masked(other.content, lint.secret_spans(theirs, "content")),
                )
            )
        return cls(
            tuple(flag_lines(record, found)),
            near,
            tuple(lint.secret_spans(found, "title")),
            tuple(lint.secret_spans(found, "content")),
            tuple(shown),
        )

    def title(self, record: Record) -> str:
        """``record``'s title as the pane shows it: its secrets masked (``lint.masked``)."""
        return lint.masked(record.title, self.secret_title)

    def content(self, record: Record) -> str:
        """``record``'s content as the pane shows it: its secrets masked."""
        return lint.masked(record.content, self.secret_content)

    @property
    def key(self) -> tuple[object, ...]:
        return (
            self.flags,
            tuple((r.id, r.governance.revision, s) for r, s in self.near),
            self.secret_title,
            self.secret_content,
        )
