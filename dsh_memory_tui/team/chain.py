"""A history that must hold: each shared record's lines form a chain that the tool or the host
could have written, else the record is withheld from agents until a person here accepts it.

Every line a record ever had in git (``history``) and in the working file is checked against the
lines before it:
- revisions rise by one (a same-revision line only marks a use, or archives or forgets as the
  host's store does);
- each change of state is one the host's transition table allows (verify and reject from
  unverified, reverify from stale, stale from verified, archive from active, restore from
  archived; nothing comes back from forgotten; an edit of a verified record makes it stale; a
  merge that found one revision decided two ways makes it unverified);
- a verification names who verified it (``verifiedBy: user``);
- a new record arrives unverified (or as a copy that names its original);
- a record of this clone's rootId was written here: one that another git author added in a
  commit that is not a merge took this clone's name.
The first version git has of the file (or the file itself outside git) is the baseline.

A break is accepted by a person in this clone: ``accept`` (``check --repair --accept ID
--reason``), or verifying the record here (``accept_verified``). Acceptances live under the home
(``accepted_path``), never in the repository: a teammate's commit cannot accept its own lines.
They name the exact lines accepted, so a later forged line breaks the chain again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ErrorCode, StoreError
from ..jsonl import read_file, write_atomic
from ..model import Record, Scope, Status, Verification
from ..paths import StorePaths
from .history import WORKING_TREE, Commit, History, head, read_history, repository_path

_V = Verification


@dataclass(frozen=True, slots=True)
class Line:
    raw: bytes
    record: Record
    commit: Commit  # the commit that brought it (WORKING_TREE: not committed yet)
    baseline: bool  # in the first version of the file's history: not checked


@dataclass(frozen=True, slots=True)
class Break:
    """A line no program of ours could have written after the lines before it."""

    record_id: str
    line: bytes
    why: str  # "revision 3 -> 99 in one line"
    commit: Commit

    @property
    def line_hash(self) -> str:
        return line_hash(self.line)

    @property
    def reason(self) -> str:
        """What the review queue and ``check`` say: the break, and where it came from."""
        if self.commit is WORKING_TREE:
            return f"{self.why}, not committed yet"
        return f"{self.why}, in commit {self.commit.short} by {self.commit.name}"


def line_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


# ----------------------------------------------------------------- one step of a chain


def _text(r: Record) -> tuple[object, ...]:
    return (r.type, r.title, r.content, tuple(r.tags))


def _usage_only(p: Record, r: Record) -> bool:
    """Only what the host's markUsed (and a same-revision archive or forget) changes."""
    ignore = {"updatedAt", "lastUsedAt", "useCount", "status"}
    a = {k: v for k, v in p.model_dump().items() if k not in ignore}
    b = {k: v for k, v in r.model_dump().items() if k not in ignore}
    moved = p.status is r.status or r.status in (Status.ARCHIVED, Status.FORGOTTEN)
    return a == b and moved and p.status is not Status.FORGOTTEN


def _merged_here(p: Record, r: Record) -> bool:
    """``dsh-memory merge``: the kept record's new text, verified, naming it as it was."""
    return any(
        ref.kind == "import" and ref.id == p.id and ref.contentHash == p.contentHash
        for ref in r.governance.sourceRefs
    )


def step_refusal(p: Record, r: Record, divergent: bool) -> str | None:
    """Why ``r`` (revision n + 1) cannot follow ``p`` (revision n), or None when it can.
    ``divergent``: revision n was decided two ways (a merge then makes it unverified).
    """
    vp, vr = p.governance.verification, r.governance.verification
    if p.status is Status.FORGOTTEN:
        return None if r.status is Status.FORGOTTEN else "a forgotten record came back"
    if r.status is Status.FORGOTTEN:
        return None  # a forget, from any state
    if p.status is not r.status and {p.status, r.status} != {Status.ACTIVE, Status.ARCHIVED}:
        return f"status {p.status.value} -> {r.status.value}"
    edited = _text(p) != _text(r)
    if vr is _V.UNVERIFIED and vp is not _V.UNVERIFIED:
        return None if divergent else f"{vp.value} -> unverified without a merge that decided it"
    if vr is _V.VERIFIED:
        if vp not in (_V.UNVERIFIED, _V.STALE, _V.VERIFIED):
            return f"{vp.value} -> verified"
        changed = vp is not _V.VERIFIED or r.governance.verifiedAt != p.governance.verifiedAt
        if changed and r.governance.verifiedBy != "user":
            return "verified without naming who verified it"
        if edited and not _merged_here(p, r):
            return "its text changed while verified"
        return None
    allowed = {
        _V.UNVERIFIED: (_V.UNVERIFIED, _V.REJECTED),
        _V.REJECTED: (_V.REJECTED,),
        _V.STALE: (_V.STALE,),
        _V.VERIFIED: (_V.STALE,),
    }
    if vr not in allowed[vp]:
        return f"{vp.value} -> {vr.value}"
    return None


def _creation_refusal(r: Record) -> str | None:
    """Why ``r`` cannot be a record's first line, or None."""
    g = r.governance
    if g.revision != 1:
        return f"a new record at revision {g.revision}"
    if g.verification is _V.VERIFIED:
        copied = any(ref.kind == "import" for ref in g.sourceRefs)
        if not copied or g.verifiedBy != "user":
            return "a new record already verified"
    return None


def record_breaks(lines: list[Line], own_root: str, own_email: str | None) -> list[Break]:
    """Every line of one record's chain (``lines`` in the order they appeared) that breaks it.
    ``own_email``: who writes this clone's records (``clone_author``; None: unknown)."""
    ordered = sorted(lines, key=lambda x: x.record.governance.revision)
    by_revision: dict[int, list[Record]] = {}
    for x in ordered:
        by_revision.setdefault(x.record.governance.revision, []).append(x.record)
    out: list[Break] = []
    first = ordered[0]
    for x in ordered:
        if x.baseline:
            continue
        r = x.record
        why = _why(x, first, by_revision)
        if why is None and x is first and r.scopeKey == own_root and not _merge_rival(r):
            why = _foreign_author(x, own_email)
        if why is not None:
            out.append(Break(r.id, x.raw, why, x.commit))
    return out


def _why(x: Line, first: Line, by_revision: Mapping[int, list[Record]]) -> str | None:
    r = x.record
    n = r.governance.revision
    if x is first:
        if r.status is Status.FORGOTTEN:
            return None
        return _creation_refusal(r)
    peers = by_revision.get(n, [])
    earlier = peers[: next(i for i, p in enumerate(peers) if p is r)]
    if any(_usage_only(p, r) for p in earlier):  # never two new lines vouching for each other
        return None
    before = by_revision.get(n - 1, [])
    if not before:
        if r.status is Status.FORGOTTEN:
            return None  # our forget erases the record's earlier lines
        lower = [m for m in by_revision if m < n]
        if not lower:
            return _creation_refusal(r)
        return f"revision {max(lower)} -> {n} in one line"
    divergent = len({_decision(p) for p in before}) > 1
    refusals = [step_refusal(p, r, divergent) for p in before]
    if any(why is None for why in refusals):
        return None
    return f"revision {n - 1} -> {n}: {refusals[0]}"


def _decision(r: Record) -> tuple[object, ...]:
    g = r.governance
    return (*_text(r), r.status, g.verification, g.pinnedAt is not None)


def _merge_rival(r: Record) -> bool:
    """A rival a merge (or ``check --repair``) made of a record decided two ways: it takes the
    record's scopeKey whoever merged (``merge.rival_id``)."""
    return r.id.startswith("memory:merge:") and r.governance.verification is _V.UNVERIFIED


def _foreign_author(x: Line, own_email: str | None) -> str | None:
    c = x.commit
    if own_email is None or c is WORKING_TREE or c.is_merge:
        return None
    if _email(c) == own_email:
        return None
    return "a record of this clone's rootId added by another author"


# ----------------------------------------------------------------- the file's chains


def chains(history: History, working: bytes, trust_first: bool = True) -> dict[str, list[Line]]:
    """Every line of every record, from git's versions and the working file, in the order
    they appeared. The first version's lines are the baseline (``trust_first``); without a
    committed version, each record's first line is.
    """
    baseline = set(history.baseline) if trust_first else set()
    records = dict(history.records)
    origin = dict(history.origin)
    extra = History(history.path, origin=origin)
    extra.take(working, WORKING_TREE)
    records.update(extra.records)
    out: dict[str, list[Line]] = {}
    for raw, commit in origin.items():
        record = records.get(raw)
        if record is None:
            continue
        lines = out.setdefault(record.id, [])
        first = trust_first and not history.versions and not lines
        lines.append(Line(raw, record, commit, raw in baseline or first))
    return out


def _email(commit: Commit) -> str:
    return commit.author.rsplit("<", 1)[-1].rstrip(">").lower()


def clone_author(
    all_lines: Mapping[str, list[Line]], own_root: str, order: Mapping[str, int]
) -> str | None:
    """The email of whoever writes this clone's records: the author of the first commit
    (``order``: commit -> its place, oldest first; not a merge) that brought a record of its
    rootId; None before there is one."""
    first: tuple[int, str] | None = None
    for lines in all_lines.values():
        x = lines[0]
        c = x.commit
        if x.record.scopeKey != own_root or c is WORKING_TREE or c.is_merge:
            continue
        place = order.get(c.sha, len(order))
        if first is None or place < first[0]:
            first = (place, _email(c))
    return first[1] if first else None


def find_breaks(
    history: History, working: bytes, own_root: str, trust_first: bool = True
) -> dict[str, list[Break]]:
    """Each record with a broken chain and its breaks (accepted ones included)."""
    out: dict[str, list[Break]] = {}
    every = chains(history, working, trust_first)
    order = {v.commit.sha: i for i, v in enumerate(history.versions)}
    own_email = clone_author(every, own_root, order)
    for rid, lines in every.items():
        found = record_breaks(lines, own_root, own_email)
        if found:
            out[rid] = found
    return out


# ----------------------------------------------------------------- acceptances


def accepted_path(paths: StorePaths) -> Path:
    """Where this clone's acceptances live: under the home, one file per workspace."""
    digest = hashlib.sha256(paths.root_id.encode()).hexdigest()[:32]
    return paths.home_memory_dir / "team" / f"accepted-{digest}.jsonl"


def accepted(paths: StorePaths) -> dict[str, set[str]]:
    """Record id -> the hashes of its lines a person here accepted."""
    got = read_file(accepted_path(paths))
    out: dict[str, set[str]] = {}
    for line in (got[1] if got else b"").splitlines():
        try:
            entry = json.loads(line)
            out.setdefault(str(entry["id"]), set()).add(str(entry["line"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _record_acceptance(paths: StorePaths, found: Iterable[Break], reason: str, by: str) -> None:
    path = accepted_path(paths)
    got = read_file(path)
    old = got[1] if got else b""
    new = b"".join(
        json.dumps(
            {"id": b.record_id, "line": b.line_hash, "why": b.why, "reason": reason, "by": by},
            ensure_ascii=False,
        ).encode()
        + b"\n"
        for b in found
    )
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, old + new)


# ----------------------------------------------------------------- the verdicts, cached


@dataclass(frozen=True, slots=True)
class _Key:
    top: str
    head: str | None
    shared: tuple[int, int, int]
    accepted: tuple[int, int, int]
    trust_first: bool


_HISTORIES: dict[tuple[str, str, str | None], History] = {}
_VERDICTS: dict[str, tuple[_Key, dict[str, list[Break]]]] = {}


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _history(top: Path, rel: str, at: str | None) -> History:
    key = (str(top), rel, at)
    found = _HISTORIES.get(key)
    if found is None:
        found = read_history(top, rel) if at is not None else History(rel)
        _HISTORIES.clear()  # one workspace's history at a time is enough
        _HISTORIES[key] = found
    return found


def all_breaks(paths: StorePaths, trust_first: bool = True) -> dict[str, list[Break]]:
    """Every break of the workspace's shared file, accepted or not (cached while HEAD, the
    file and the acceptances are unchanged). Outside git, the file's own lines only.
    ``trust_first``: the first committed version is the baseline (False: CI's gate for a
    range that adds the file judges its every line).
    """
    shared = paths.shared_file().path
    if not shared.exists():
        return {}  # no shared record to judge: git is not asked
    where = repository_path(paths.workspace, shared)
    top, rel = where if where is not None else (paths.workspace, "")
    at = head(top) if where is not None else None
    key = _Key(str(top), at, _stamp(shared), _stamp(accepted_path(paths)), trust_first)
    cached = _VERDICTS.get(paths.root_id)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        history = _history(top, rel, at) if where is not None else History("")
    except StoreError:
        history = History(rel)  # git failed: judge the file's own lines
    try:
        got = read_file(shared)
    except StoreError:
        got = None  # unsafe or unreadable: its readers say so; nothing here to judge
    found = find_breaks(history, got[1] if got else b"", paths.root_id, trust_first)
    _VERDICTS[paths.root_id] = (key, found)
    return found


def broken_chains(paths: StorePaths) -> dict[str, str]:
    """Record id -> why its chain is broken, for each shared record whose breaks no person
    here accepted: what is withheld from agents and waits in the review queue.
    """
    ok = accepted(paths)
    out: dict[str, str] = {}
    for rid, found in all_breaks(paths).items():
        left = [b for b in found if b.line_hash not in ok.get(rid, set())]
        if left:
            out[rid] = left[0].reason
    return out


def chain_reason(paths: StorePaths, record_id: str) -> str | None:
    """Why ``record_id``'s chain is broken (not accepted here), or None when it holds."""
    return broken_chains(paths).get(record_id)


def holds(paths: StorePaths, record: Record) -> bool:
    """The record may be served as far as its history goes: not a shared record with an
    unaccepted broken chain."""
    return record.scope is not Scope.SHARED or record.id not in broken_chains(paths)


def accept(paths: StorePaths, record_id: str, reason: str, by: str) -> list[Break]:
    """A person here accepts every break of ``record_id``'s chain as it is now (``reason``
    kept with it); the breaks accepted ([]: its chain holds). ``REASON_REQUIRED`` without a
    reason.
    """
    if not reason.strip():
        raise StoreError(ErrorCode.REASON_REQUIRED, "accepting a broken chain needs --reason")
    found = all_breaks(paths).get(record_id, [])
    done = accepted(paths).get(record_id, set())
    left = [b for b in found if b.line_hash not in done]
    if left:
        _record_acceptance(paths, left, reason, by)
    return left


def accept_verified(paths: StorePaths, record_id: str, by: str) -> None:
    """A person here verified ``record_id``: its chain as it is now is theirs to vouch for."""
    found = all_breaks(paths).get(record_id, [])
    done = accepted(paths).get(record_id, set())
    left = [b for b in found if b.line_hash not in done]
    if left:
        _record_acceptance(paths, left, "verified here", by)
