"""What waits on a human, and why: the one rule behind the app's Review tab, ``dsh-memory
queue`` and what the MCP server says it withholds (``agent_view``).

A record waits on a human while a decision about it is still to be made: an agent's proposal
or an import to verify or reject, a verified record no longer served (stale, expired, its
cited code changed), versions to choose between (a team merge that decided it two ways, a
conflict group), a teammate's unverified shared record, a draft written here and never
verified, a verified record that carries a secret (served today). Each such record gets its
``reasons``: a stable, ordered tuple of ``Reason`` (a code for scripts, a short label for a
narrow column, words for people). Only active records wait: archived, forgotten and
rejected ones are decided (a rejected one waits only when a merge left it decided two ways).

The auto-writer's session digests (``digest``) wait too, behind a switch (the app's ``D``,
``queue --derived``): a record with the reason ``digest`` is shown only when asked.

Adding a reason is one place: a ``Reason``, the verifications it can apply to and its rule
(a function of the record and the ``Facts``) as one row of ``_RULES``, whose order is the
order reasons are shown in. A rule
that needs a fact not in ``Facts`` adds a field there, filled by ``store_facts`` and by the
app (its Review tab's ``Facts``).

Nothing here imports textual; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .governance import ConflictIndex
from .model import Origin, Record, Scope, Status, Verification
from .present import expired_at
from .team import broken_chains, divergences, rival_id

if TYPE_CHECKING:
    from .sources import Sources
    from .store import FileView, MemoryStore


@dataclass(frozen=True, slots=True, eq=False)  # one object per reason: compared by identity
class Reason:
    """Why a record waits: ``code`` (stable, for ``--json`` and scripts), ``label`` (at most
    12 characters: the Review tab's Why column and its counts), ``words`` (the CLI, the
    detail pane)."""

    code: str
    label: str
    words: str

    def __str__(self) -> str:
        return self.words


SECRET = Reason("secret", "secret", "verified with a secret")
MERGE = Reason("merge", "merge rival", "merge rival")
CHAIN = Reason("chain", "history", "broken history")
CONFLICT = Reason("conflict", "conflict", "conflict group")
CODE_CHANGED = Reason("code-changed", "code changed", "code changed")
EXPIRED = Reason("expired", "expired", "expired")
STALE = Reason("stale", "stale", "stale")
TEAMMATE = Reason("teammate", "teammate", "teammate's proposal")
PROPOSAL = Reason("proposal", "proposal", "proposal")
IMPORT = Reason("import", "import", "import")
DRAFT = Reason("draft", "draft", "unverified draft")
DIGEST = Reason("digest", "digest", "session digest")


@dataclass(frozen=True, slots=True)
class Facts:
    """What the rules read besides the record: the time (``clock``: the app asks it at each
    look), this clone's rootId (a shared record keyed to another is a teammate's), the open
    conflict groups (a ``ConflictIndex``'s), the file view holding each id (its other records
    and the id's lines), whether a record's cited code changed and whether it carries a
    secret (the app gives what its workers last found; ``store_facts`` computes them)."""

    clock: Callable[[], int]
    root_id: str
    group_of: Callable[[str], str | None]  # the id's open conflict group (ConflictIndex.group)
    members: Callable[[str], list[str]]  # the ids of its open group (ConflictIndex.members)
    view_of: Callable[[str], FileView | None]
    code_changed: Callable[[Record], bool]
    secret: Callable[[Record], bool]
    # A shared record whose history does not hold (``team.broken_chains``), not accepted here.
    chain_broken: Callable[[Record], bool]

    def record(self, record_id: str) -> Record | None:
        view = self.view_of(record_id)
        return view.current.get(record_id) if view is not None else None

    def versions(self, record: Record) -> list[Record]:
        """Every line of ``record``'s id still in its file, oldest first."""
        view = self.view_of(record.id)
        return view.versions[record.id] if view is not None and record.id in view.current else []


Rule = Callable[[Record, Facts], bool]

UNVERIFIED = frozenset({Verification.UNVERIFIED})
ONCE_VERIFIED = frozenset({Verification.VERIFIED, Verification.STALE})
ANY = frozenset(Verification)


def _teammate(r: Record, f: Facts) -> bool:
    """A shared record another clone of the project wrote."""
    return r.scope is Scope.SHARED and r.scopeKey != f.root_id


def _secret(r: Record, f: Facts) -> bool:
    return r.governance.verification is Verification.VERIFIED and f.secret(r)


def _rivals(r: Record, f: Facts) -> bool:
    """In an open group with the other version a team merge made of it (``team.rival_id``):
    the record a merge decided two ways, or the rival it added."""
    for other_id in f.members(r.id):
        other = f.record(other_id)
        if (
            other is not None
            and other_id != r.id
            and (other_id == rival_id(r.id, other) or r.id == rival_id(other_id, r))
        ):
            return True
    return False


def _decided_two_ways(r: Record, f: Facts) -> bool:
    """Its newest revision has lines that decide it two ways (git merged without our
    driver), or it is the unverified revision made over a revision decided two ways (our
    driver's merge, ``check --repair``) and no one has decided since."""
    revision = r.governance.revision
    if revision < 2:
        return False
    lines = f.versions(r)
    if len(lines) < 2:
        return False
    if divergences({r.id: lines}):
        return True
    before = [line for line in lines if line.governance.revision == revision - 1]
    return r.governance.verification is Verification.UNVERIFIED and bool(
        divergences({r.id: before})
    )


def _merge(r: Record, f: Facts) -> bool:
    return _rivals(r, f) or _decided_two_ways(r, f)


def _chain(r: Record, f: Facts) -> bool:
    return r.scope is Scope.SHARED and f.chain_broken(r)


def _conflict(r: Record, f: Facts) -> bool:
    return f.group_of(r.id) is not None and not _merge(r, f)


def _code_changed(r: Record, f: Facts) -> bool:
    return f.code_changed(r)


def _expired(r: Record, f: Facts) -> bool:
    return r.governance.expiresAt is not None and expired_at(r, f.clock())


def _stale(r: Record, f: Facts) -> bool:
    return not _expired(r, f) and not f.code_changed(r)


def _written_here(origin: Origin) -> Rule:
    """Of ``origin``, and not a teammate's (that is its own reason)."""

    def rule(r: Record, f: Facts) -> bool:
        return r.governance.origin is origin and not _teammate(r, f)

    return rule


_user_authored = _written_here(Origin.USER_AUTHORED)


def _draft(r: Record, f: Facts) -> bool:
    """Written by a person here and never verified; a record a merge left unverified is a
    merge rival, not a draft."""
    return _user_authored(r, f) and not _merge(r, f)


# Each reason, the verifications it can apply to (its rule is asked only for those) and its
# rule, in the order reasons are shown and counted: what an agent is served wrongly first,
# then versions to choose between and histories to vouch for, then what was verified and is
# withheld, then what was never verified.
_RULES: tuple[tuple[Reason, frozenset[Verification], Rule], ...] = (
    (SECRET, frozenset({Verification.VERIFIED}), _secret),
    (MERGE, ANY, _merge),
    (CHAIN, ANY, _chain),
    (CONFLICT, ANY, _conflict),
    (CODE_CHANGED, ONCE_VERIFIED, _code_changed),
    (EXPIRED, ONCE_VERIFIED, _expired),
    (STALE, frozenset({Verification.STALE}), _stale),
    (TEAMMATE, UNVERIFIED, _teammate),
    (PROPOSAL, UNVERIFIED, _written_here(Origin.MODEL_SUGGESTED)),
    (IMPORT, UNVERIFIED, _written_here(Origin.IMPORTED)),
    (DRAFT, UNVERIFIED, _draft),
    (DIGEST, UNVERIFIED, _written_here(Origin.DERIVED)),
)
REASONS: tuple[Reason, ...] = tuple(reason for reason, _, _ in _RULES)
BY_CODE: dict[str, Reason] = {reason.code: reason for reason in REASONS}
# The rules asked of a record of each verification (most records skip most rules).
_ASKED: dict[Verification, tuple[tuple[Reason, Rule], ...]] = {
    v: tuple((reason, rule) for reason, applies, rule in _RULES if v in applies)
    for v in Verification
}


def reasons(record: Record, facts: Facts) -> tuple[Reason, ...]:
    """Why ``record`` waits on a human, in ``REASONS`` order; () when it does not (it is
    not active, or nothing about it is left to decide)."""
    if record.status is not Status.ACTIVE:
        return ()
    asked = _ASKED[record.governance.verification]
    return tuple(reason for reason, rule in asked if rule(record, facts))


def shown(found: Sequence[Reason], include_derived: bool) -> bool:
    """Whether a record with reasons ``found`` is listed: any reason, but a session digest
    (whatever else it has: digests of one session share a title, a conflict group) only when
    digests are asked for (the app's ``D``, ``queue --derived``)."""
    return bool(found) and (include_derived or DIGEST not in found)


@dataclass(frozen=True, slots=True)
class Waiting:
    """One record that waits on a human, and why."""

    record: Record
    reasons: tuple[Reason, ...]

    def to_json(self) -> dict[str, object]:
        r = self.record
        return {
            "id": r.id,
            "scope": r.scope.value,
            "title": r.title,
            "reasons": [reason.code for reason in self.reasons],
        }


def code_changed_rule(sources: Sources) -> Callable[[Record], bool]:
    """Whether a record's cited code changed or is gone, checked now (a stat per cited file;
    call inside ``sources.batch()``)."""
    return lambda record: bool(sources.broken(record))


def store_facts(store: MemoryStore, views: Sequence[FileView], now: int) -> Facts:
    """``Facts`` over ``views`` (refreshed): every record of them, checked now. The secret
    flags of the active, verified records are computed here (``lint.verified_secrets``), and
    the shared file's history judged (``team.broken_chains``: git, when it is in a repository).
    """
    from . import lint  # risk flags load with the command that asks for them

    owner = {rid: view for view in views for rid in view.current}
    records = [view.current[rid] for rid, view in owner.items()]
    secrets = {r.id for r in lint.verified_secrets(records)}
    broken = broken_chains(store.paths)
    conflicts = ConflictIndex(records)
    return Facts(
        clock=lambda: now,
        root_id=store.paths.root_id,
        group_of=conflicts.group,
        members=conflicts.members,
        view_of=owner.get,
        code_changed=code_changed_rule(store.sources),
        secret=lambda r: r.id in secrets,
        chain_broken=lambda r: r.id in broken,
    )


def waiting(
    store: MemoryStore, *, include_derived: bool = False, now: int | None = None
) -> list[Waiting]:
    """Every record of the store (every scope, every session) that waits on a human, the
    first reason's order first, then newest first."""
    at = store.clock() if now is None else now
    views = store.views()
    with store.sources.batch():
        facts = store_facts(store, views, at)
        found = [
            Waiting(r, why)
            for view in views
            for r in view.current.values()
            if shown(why := reasons(r, facts), include_derived)
        ]
    rank = {reason: i for i, reason in enumerate(REASONS)}
    # Newest first (the host's list order but for its collation of ids that share a
    # millisecond: that key costs ~0.2 ms a record, most of a big store's queue).
    return sorted(found, key=lambda w: (rank[w.reasons[0]], -w.record.updatedAt, w.record.id))


def counts(found: Iterable[Sequence[Reason]]) -> dict[Reason, int]:
    """How many records have each reason, in ``REASONS`` order (reasons no record has are
    left out). A record with two reasons counts in both."""
    tally = dict.fromkeys(REASONS, 0)
    for why in found:
        for reason in why:
            tally[reason] += 1
    return {reason: n for reason, n in tally.items() if n}


def counts_text(tally: Mapping[Reason, int], *, short: bool = False) -> str:
    """``counts`` in words: "2 merge rival · 1 stale" (``short``: the labels)."""
    return " · ".join(
        f"{n} {reason.label if short else reason.words}" for reason, n in tally.items()
    )


def withheld(view: FileView, now: int) -> list[Record]:
    """``view``'s records a human verified once and agents are not served until someone
    decides again: active and stale (edited, marked stale) or expired, or unverified while a
    line of its id still says verified (a team merge decided it two ways). A verified record
    whose cited code changed is withheld too; that needs the workspace (``Sources.holds``),
    checked by the caller (``agent_view``)."""
    out = []
    active, unverified = Status.ACTIVE, Verification.UNVERIFIED
    once = (Verification.VERIFIED, Verification.STALE)
    for record in view.current.values():  # one pass over every record: the cheap tests first
        g = record.governance
        verification = g.verification
        if verification is unverified:
            if g.revision < 2 or record.status is not active:
                continue
            if any(line.governance.verification in once for line in view.versions[record.id]):
                out.append(record)
        elif (
            verification is Verification.STALE
            or (g.expiresAt is not None and expired_at(record, now))
        ) and record.status is active:
            out.append(record)
    return out
