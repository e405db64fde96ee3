"""The three-way merge of a shared file by record id, which git runs as a merge driver
(``merge``, ``merge_file``): never by line, so two branches that both wrote records merge
without a conflict. And what a merge made without the driver leaves (``conflict_marker_lines``,
``split_conflicts``, ``divergences``): ``check`` finds and repairs them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ErrorCode, StoreError
from ..governance import is_erased
from ..governance import tombstone as erase
from ..jsonl import MAX_STORE_BYTES, write_atomic
from ..model import (
    Location,
    ParsedLine,
    Record,
    RecordInvalid,
    Status,
    Verification,
    checked,
    conflict_group_for,
    next_revision,
    parse_entries,
    parse_line,
    parse_lines,
    sha256_hex,
    slow_entry,
    usual_run,
)

# ------------------------------------------------------------------ the merge by record id

_OPEN, _BASE, _SPLIT, _CLOSE = b"<<<<<<<", b"|||||||", b"=======", b">>>>>>>"


def _marker(line: bytes) -> bytes | None:
    if line.startswith((_OPEN, _BASE, _CLOSE)):
        return line[:7]
    return _SPLIT if line.rstrip(b"\r") == _SPLIT else None


def _markers(lines: list[bytes]) -> dict[int, bytes]:
    """0-based line -> the conflict marker it is. A line inside a record that spans several
    lines (raw newlines in its strings, which both programs read as one record) is that
    record's text, never a marker: a line that parses as part of a record is no marker.
    """
    found = {i: m for i, line in enumerate(lines) if (m := _marker(line)) is not None}
    if not found:
        return {}
    inside: set[int] = set()
    for entry in parse_lines(lines, None):
        if entry.last > entry.first:
            inside.update(range(entry.first + 1, entry.last + 1))
    return {i: m for i, m in found.items() if i not in inside}


def conflict_marker_lines(data: bytes) -> list[int]:
    """1-based numbers of the lines that are git's conflict markers (never a line of a
    record, even one whose content holds ``<<<<<<< ours`` on a line of its own).
    """
    if not any(m in data for m in (_OPEN, _BASE, _SPLIT, _CLOSE)):
        return []  # the usual file: one scan per marker in C, no loop over lines
    return [i + 1 for i in sorted(_markers(data.split(b"\n")))]


def split_conflicts(data: bytes) -> tuple[bytes, bytes, bytes]:
    """A file git left with conflict markers, as the three files it merged: (base, ours,
    theirs). Lines outside the markers are in all three; a block's base part (``|||||||``,
    diff3 style) only in the base, so without one both sides' lines count as added. A record's
    own lines that look like markers stay in it (``conflict_marker_lines``).
    """
    parts: tuple[list[bytes], list[bytes], list[bytes]] = ([], [], [])
    into: tuple[int, ...] = (0, 1, 2)
    lines = data.split(b"\n")[: -1 if data.endswith(b"\n") else None]
    markers = _markers(lines)
    for i, line in enumerate(lines):
        marker = markers.get(i)
        if marker == _OPEN:
            into = (1,)
        elif marker == _BASE:
            into = (0,)
        elif marker == _SPLIT:
            into = (2,)
        elif marker == _CLOSE:
            into = (0, 1, 2)
        else:
            for part in into:
                parts[part].append(line)
    base, ours, theirs = (b"".join(x + b"\n" for x in part) for part in parts)
    return base, ours, theirs


@dataclass(slots=True)
class _Side:
    """One input of a merge: its entries in file order, the raw bytes of each, and what each
    id's last line is (its current record, as the host reads the file).
    """

    entries: list[tuple[bytes, Record | None]] = field(default_factory=list)
    current: dict[str, Record] = field(default_factory=dict)
    counts: Counter[bytes] = field(default_factory=Counter)


def _read_side(
    data: bytes, location: Location, known: Mapping[bytes, Record | None]
) -> tuple[_Side, dict[bytes, Record | None]]:
    """Parse ``data``; a line whose bytes ``known`` already judged is not parsed again (the
    same bytes in the same file get the same verdict). Returns the side and the new verdicts.
    """
    from ..store.view import gc_paused  # the store imports this module: at call time

    side = _Side()
    found: dict[bytes, Record | None] = {}
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()

    def take(raw: bytes, result: object) -> None:
        record = result if type(result) is Record else None
        found[raw] = record
        _take(side, raw, record)

    with gc_paused(len(lines)):
        start, n = 0, len(lines)
        while start < n:
            if lines[start] in known:
                raw = lines[start]
                _take(side, raw, known[raw])
                start += 1
                continue
            end = start + 1
            while end < n and lines[end] not in known:
                end += 1
            _parse_segment(lines[start:end], location, take)
            start = end
    return side, found


def _parse_segment(segment: list[bytes], location: Location, take: Callable[..., None]) -> None:
    """Each entry of ``segment`` with its verdict, as a load reads them: runs of usual lines in
    one call (``usual_run``), the others in the host's order (``slow_entry``).
    """
    i, n = 0, len(segment)
    while i < n:
        run, j = usual_run(segment, i, location)
        if len(run) == j - i:
            for raw, result in zip(segment[i:j], run, strict=True):
                take(raw, result)
        else:  # blank lines in the run: ask again line by line
            for k, got in parse_entries(segment[i:j], location):
                if isinstance(got, ParsedLine):
                    take(got.raw, got.result)
                else:
                    take(segment[i + k], got)
        i = j
        if i < n:
            entry = slow_entry(segment, i, location)
            take(entry.raw, entry.result)
            i = entry.last + 1


def _take(side: _Side, raw: bytes, record: Record | None) -> None:
    side.entries.append((raw, record))
    side.counts[raw] += 1
    if record is not None:
        side.current[record.id] = record


def _decision(r: Record) -> tuple[object, ...]:
    """What a reviewer decides about a record: two lines of one revision that differ here
    were decided two ways (a conflict); lines that differ only in times are the same decision.
    """
    g = r.governance
    return (
        r.type,
        r.title,
        r.contentHash,
        tuple(r.tags),
        r.status,
        g.verification,
        g.pinnedAt is not None,
        g.expiresAt,
        g.retention,
    )


def _line_order(r: Record, raw: bytes) -> tuple[int, int, bytes]:
    return (r.governance.revision, r.updatedAt, raw)


@dataclass(frozen=True, slots=True)
class Conflict:
    """One record whose same revision was decided two ways: ``merged`` (its new, unverified
    revision) and ``rival`` (the other content as a new record of its conflict group, or None
    when the contents agree).
    """

    record_id: str
    merged: Record
    rival: Record | None


@dataclass(frozen=True, slots=True)
class Merged:
    data: bytes
    conflicts: list[Conflict]
    forgotten: list[str]


def rival_id(record_id: str, rival: Record) -> str:
    """The id of the record holding a rival version (the same for both merge directions)."""
    return "memory:merge:" + sha256_hex(record_id + "\0" + rival.contentHash)[:32]


def resolve_divergence(a: Record, b: Record) -> Conflict:
    """Two lines of one record with the same revision, decided differently: the record gets
    the next revision, unverified and unpinned (nothing unreviewed is served), with the content
    of the later line; the other content, when it differs, becomes a new unverified record with
    the same title in the same conflict group, so "keep this version" (K) chooses. Symmetric:
    ``resolve_divergence(a, b) == resolve_divergence(b, a)``.
    """
    kept, other = sorted((a, b), key=lambda r: _line_order(r, r.to_line()), reverse=True)
    now = max(a.updatedAt, b.updatedAt)
    rival: Record | None = None
    group = None
    if kept.contentHash != other.contentHash:
        group = kept.governance.conflictGroup or conflict_group_for(kept.title)
        data = other.model_dump(exclude_unset=True)
        data.update(
            id=rival_id(kept.id, other),
            title=kept.title,
            scopeKey=kept.scopeKey,
            status=Status.ACTIVE.value,
            updatedAt=max(other.updatedAt, other.createdAt),
        )
        gov = other.governance.model_dump(exclude_unset=True)
        for name in ("verifiedAt", "verifiedBy", "pinnedAt", "pinnedBy"):
            gov.pop(name, None)
        gov.update(revision=1, verification=Verification.UNVERIFIED.value, conflictGroup=group)
        data["governance"] = gov
        rival = checked(Record.model_validate(data))
    gov_changes: dict[str, object] = {"verification": Verification.UNVERIFIED}
    if group is not None:
        gov_changes["conflictGroup"] = group
    merged = next_revision(
        kept,
        now,
        None,
        gov_changes,
        ("verifiedAt", "verifiedBy", "pinnedAt", "pinnedBy"),
    )
    return Conflict(kept.id, merged, rival)


def _scrubbed(tombstone: Record) -> Record:
    """A tombstone that may still hold the record's text (the host's forget keeps its title
    and content) is replaced by ours, which holds nothing of it; at the tombstone's own time,
    so both merge directions write the same line.
    """
    if is_erased(tombstone):
        return tombstone
    return erase(tombstone, tombstone.updatedAt)


def merge(base: bytes, ours: bytes, theirs: bytes, location: Location) -> Merged:
    """The three-way merge of a shared file by record id (git's merge driver).

    Lines are merged as a multiset: a line either side added is kept, a line of the base
    that either side removed (a compaction, a forget) goes. Then, per record both sides
    changed: a forget wins, and only its tombstone stays (with none of the record's text);
    otherwise the higher revision is the record's current line and every other line is kept
    as its history, in revision order; the same revision decided two ways is a ``Conflict``.
    Foreign, newer-schema and corrupt lines are kept byte for byte. Both directions give the
    same records. ``CONFLICT_MARKERS`` for an input with git's markers; ``STORE_TOO_LARGE``
    when the result passes 8 MiB.
    """
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        marked = conflict_marker_lines(data)
        if marked:
            raise StoreError(
                ErrorCode.CONFLICT_MARKERS,
                f"the {name} version has git conflict markers (line {marked[0]}): resolve that "
                "merge first",
            )
    o, known = _read_side(ours, location, {})
    t, more = _read_side(theirs, location, known)
    known.update(more)
    b, _ = _read_side(base, location, known)

    # The multiset merge of the lines: the side that changed a line's count decides it.
    counts: dict[bytes, int] = {}
    for raw in o.counts.keys() | t.counts.keys():
        co, ct, cb = o.counts[raw], t.counts[raw], b.counts[raw]
        counts[raw] = ct if co == cb else co if ct == cb else max(co, ct)
    out: list[tuple[bytes, Record | None]] = []
    for entries in (o.entries, t.entries):
        for raw, record in entries:
            if counts[raw] > 0:
                counts[raw] -= 1
                out.append((raw, record))

    changed_o = _changed_ids(o, b)
    changed_t = _changed_ids(t, b)
    forgotten = [rid for rid, r in _currents(out).items() if r.status is Status.FORGOTTEN]
    both = changed_o & changed_t
    conflicts: list[Conflict] = []
    # A record only one side added lines of (a compaction on the other, a revert of one) can
    # have them after the other side's newer ones: its lines are put in revision order too.
    settle = both | set(forgotten) | out_of_order(r for _, r in out)
    if settle:
        out, conflicts = _settle(out, settle, o.current, t.current, set(forgotten))
    extra = [c.merged for c in conflicts] + [c.rival for c in conflicts if c.rival is not None]
    data = b"".join(raw + b"\n" for raw, _ in out) + b"".join(r.to_line() for r in extra)
    if len(data) > MAX_STORE_BYTES:
        raise StoreError(
            ErrorCode.STORE_TOO_LARGE,
            f"the merged file would be {len(data) / 1048576:.1f} MiB, over the host's 8 MiB: "
            "compact one side (dsh-memory compact --scope shared-project) and merge again",
        )
    return Merged(data, conflicts, sorted(forgotten))


def out_of_order(records: Iterable[Record | None]) -> set[str]:
    """Ids of ``records`` (a file's lines in order) whose lines are not in revision order: a
    line of a lower revision after one of a higher (the host would show the older one).
    """
    newest: dict[str, int] = {}
    late: set[str] = set()
    for r in records:
        if r is None:
            continue
        revision = r.governance.revision
        top = newest.get(r.id)
        if top is None or revision > top:
            newest[r.id] = revision
        elif revision < top:
            late.add(r.id)
    return late


def order_lines(
    lines: list[tuple[bytes, Record | None]], ids: set[str]
) -> list[tuple[bytes, Record | None]]:
    """``lines`` with each record of ``ids`` in revision order: its lines keep the places they
    hold in the file, filled in the order of (revision, updatedAt, bytes), the same whatever
    the order they came in (``check --repair`` of a file a merge left out of order).
    """
    slots: dict[str, list[int]] = {}
    for i, (_, record) in enumerate(lines):
        if record is not None and record.id in ids:
            slots.setdefault(record.id, []).append(i)
    out = list(lines)
    for where in slots.values():
        ranked = sorted((lines[i] for i in where), key=lambda x: _line_order(x[1], x[0]))  # type: ignore[arg-type]
        for i, line in zip(where, ranked, strict=True):
            out[i] = line
    return out


def in_revision_order(data: bytes, location: Location) -> bytes | None:
    """``data`` with every record's lines in revision order (``order_lines``), or None when
    they are already. Other lines stay byte for byte, in their places.
    """
    side, _ = _read_side(data, location, {})
    late = out_of_order(r for _, r in side.entries)
    if not late:
        return None
    return b"".join(raw + b"\n" for raw, _ in order_lines(side.entries, late))


def _changed_ids(side: _Side, base: _Side) -> set[str]:
    """Ids with a line this side added or removed against the base."""
    ids: set[str] = set()
    for one, other in ((side, base), (base, side)):
        for raw, record in one.entries:
            if record is not None and one.counts[raw] > other.counts[raw]:
                ids.add(record.id)
    return ids


def _currents(out: list[tuple[bytes, Record | None]]) -> dict[str, Record]:
    current: dict[str, Record] = {}
    for _, record in out:
        if record is not None:
            current[record.id] = record
    return current


def _settle(
    out: list[tuple[bytes, Record | None]],
    ids: set[str],
    ours: Mapping[str, Record],
    theirs: Mapping[str, Record],
    forgotten: set[str],
) -> tuple[list[tuple[bytes, Record | None]], list[Conflict]]:
    """Put each id of ``ids`` in order: its lines keep their places in the file, sorted by
    revision with the winner last; a forgotten record keeps its tombstone alone.
    """
    slots: dict[str, list[int]] = {}
    for i, (_, record) in enumerate(out):
        if record is not None and record.id in ids:
            slots.setdefault(record.id, []).append(i)
    conflicts: list[Conflict] = []
    drop: set[int] = set()
    placed: dict[int, tuple[bytes, Record | None]] = {}
    for rid, where in slots.items():
        lines = [out[i] for i in where]
        records = [r for _, r in lines if r is not None]
        sides = [s[rid] for s in (ours, theirs) if rid in s]
        tombs = [r for r in sides if r.status is Status.FORGOTTEN]
        if rid in forgotten or tombs:
            if not tombs:
                tombs = [r for r in records if r.status is Status.FORGOTTEN]
            tomb = max(tombs, key=lambda r: _line_order(r, r.to_line()))
            tomb = _scrubbed(tomb)
            placed[where[-1]] = (tomb.to_line()[:-1], tomb)
            drop.update(where[:-1])
            continue
        ranked = sorted(lines, key=lambda line: _line_order(line[1], line[0]))  # type: ignore[arg-type]
        if len(sides) == 2:
            a, b = sides
            top = max(a.governance.revision, b.governance.revision)
            if (
                a.governance.revision == b.governance.revision == top
                and _decision(a) != _decision(b)
                and ranked[-1][1] is not None
                and ranked[-1][1].governance.revision == top
            ):
                conflicts.append(resolve_divergence(a, b))
            else:
                winner = a if a.governance.revision > b.governance.revision else b
                if a.governance.revision == b.governance.revision:
                    winner = max((a, b), key=lambda r: _line_order(r, r.to_line()))
                ranked = [x for x in ranked if x[1] is not winner] + [
                    x for x in ranked if x[1] is winner
                ]
        for i, line in zip(where, ranked, strict=True):
            placed[i] = line
    result = [placed.get(i, line) for i, line in enumerate(out) if i not in drop]
    return result, conflicts


# An input larger than this is refused before it is read: the result must fit the host's 8 MiB,
# and a side can only be this much larger when the other side compacted most of it away.
MAX_SIDE_BYTES = 4 * MAX_STORE_BYTES


def merge_file(base: Path, ours: Path, theirs: Path, location: Location) -> Merged:
    """git's merge driver (``%O %A %B``): the merge of the three files, written over ``ours``
    in one atomic replace, or ``StoreError`` with ``ours`` untouched (git then shows an
    ordinary conflict). ``READ_FAILED`` for an input that cannot be read, ``STORE_TOO_LARGE``
    for one over ``MAX_SIDE_BYTES`` (refused by its size, unread), ``INVALID_RECORD`` when a
    side is not a memory store (text that holds no record: the attribute names a wrong file).
    """
    sides = []
    for path in (base, ours, theirs):
        try:
            size = path.stat().st_size
            if size > MAX_SIDE_BYTES:
                raise StoreError(
                    ErrorCode.STORE_TOO_LARGE,
                    f"{path} is {size / 1048576:.0f} MiB, over the {MAX_SIDE_BYTES >> 20} MiB a "
                    "side of a shared file can be: not read",
                )
            sides.append(path.read_bytes())
        except OSError as exc:
            raise StoreError(
                ErrorCode.READ_FAILED, f"cannot read {path}: {exc.strerror or exc}"
            ) from None
    for path, data in zip((base, ours, theirs), sides, strict=True):
        if not is_memory_store(data):
            raise StoreError(
                ErrorCode.INVALID_RECORD,
                f"{path} is not a memory store (no line of it is a record): git's own "
                "conflict is left for this file",
            )
    merged = merge(sides[0], sides[1], sides[2], location)
    write_atomic(ours, merged.data)
    return merged


def is_memory_store(data: bytes) -> bool:
    """Empty (blank), or holding at least one line both programs read as a record (ours,
    another clone's, a newer schema's): a text file, or JSON lines of anything else, is not.
    """
    if not data.strip():
        return True
    lines = data.split(b"\n")
    for line in lines:
        if line.lstrip()[:1] != b"{":
            continue
        try:
            parse_line(line, None)
            return True
        except RecordInvalid:
            continue
    return any(not isinstance(e.result, RecordInvalid) for e in parse_lines(lines, None))


# ------------------------------------------------------------------ problems git leaves


@dataclass(frozen=True, slots=True)
class Divergence:
    record_id: str
    revision: int
    lines: list[Record]


def divergences(versions: Mapping[str, list[Record]]) -> list[Divergence]:
    """Records whose newest revision has lines that decide it two ways (a merge without the
    driver, or a hand-resolved conflict, kept both): the host shows whichever came last.
    """
    out = []
    for rid, lines in versions.items():
        if len(lines) < 2:
            continue
        top = max(r.governance.revision for r in lines)
        newest = [r for r in lines if r.governance.revision == top]
        if len({_decision(r) for r in newest}) > 1:
            out.append(Divergence(rid, top, newest))
    return out
