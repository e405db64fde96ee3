"""``host-corpus/transitions.json`` as test data: the host's answer for every governance action on
every starting state (``matrix``: status x verification x pinned), on records without governance
(``legacy``), and for edits (``editRules``); the starting records themselves, built as the
generator describes them; and where we deliberately answer differently (docs/host.md), what we
answer instead.

Used by tests/interop/test_transitions.py (the library and the CLI) and
tests/app/test_governance.py (the app).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from .corpus import CORPUS

NOW = 1_700_000_500_000  # the fixed ``now`` of the host's pure transitions
HOST_NOW = "__NOW__"  # a time the host took from its clock
# The actions the CLI and the app offer (``stale`` is the host's own: an edit makes it).
COMMAND_ACTIONS = ("verify", "reject", "reverify", "pin", "unpin", "archive", "restore", "forget")


@cache
def transitions() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / "transitions.json").read_text())
    return data


def content_hash(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@dataclass(frozen=True)
class Case:
    """One (starting record, action) of the corpus and the host's answers."""

    name: str
    record: dict[str, Any]  # the starting line, scopeKey "__ROOT_ID__"
    action: str
    pure: dict[str, Any]  # transitionMemoryGovernance(..., 'user', NOW)
    domain: dict[str, Any]  # domain.govern on a real store

    @property
    def id(self) -> str:
        return str(self.record["id"])

    def with_root(self, root_id: str) -> dict[str, Any]:
        return {**self.record, "scopeKey": root_id}

    @property
    def host_allows(self) -> bool:
        return "error" not in self.domain

    @property
    def difference(self) -> str | None:
        """Why we refuse what the host does, or answer otherwise (docs/host.md), or None."""
        return difference(self.record, self.action)

    @property
    def erases(self) -> bool:
        """Our forget of a record the host forgot: its text, which the host keeps, is erased."""
        return self.action == "forget" and self.record["status"] == "forgotten"

    @property
    def we_allow(self) -> bool:
        return (self.host_allows and self.record["status"] != "forgotten") or self.erases

    @property
    def our_code(self) -> str | None:
        """The error code of our refusal, None when we allow it."""
        if self.erases:
            return None
        if self.record["status"] == "forgotten":
            return "FORGOTTEN"  # docs/host.md: every action on a forgotten record is refused
        if self.host_allows:
            return None
        return "INVALID_TRANSITION"  # the host's pin refusal is INELIGIBLE: one code for all


def difference(record: dict[str, Any], action: str) -> str | None:
    if record["status"] == "forgotten" and action == "forget":
        return (
            "the host refuses to forget a forgotten record (INVALID_TRANSITION), whose text its "
            "forget kept; ours erases that text (our tombstone, the next revision)"
        )
    if record["status"] == "forgotten":
        return (
            "an action on a forgotten record is refused (FORGOTTEN); the host allows "
            "verify/reject/reverify/stale/unpin and refuses forget as INVALID_TRANSITION"
        )
    if action == "pin":
        return "the host's pin refusal is INELIGIBLE; ours is INVALID_TRANSITION like the others"
    if action == "forget":
        return "our forget writes a host-valid tombstone (placeholder title and content)"
    return None


def starting_record(state: dict[str, Any], action: str) -> dict[str, Any]:
    """The generator's starting record for ``state`` (its ``about`` text)."""
    status, verification, pinned = state["status"], state["verification"], state["pinned"]
    rid = f"memory:t:{status}:{verification}:{'pinned' if pinned else 'unpinned'}:{action}"
    content = f"Content of {rid}"
    gov: dict[str, Any] = {
        "origin": "model-suggested",
        "sourceRefs": [{"kind": "session", "id": "s1"}],
        "verification": verification,
    }
    if verification in ("verified", "stale"):
        gov |= {"verifiedAt": 1_700_000_000_000, "verifiedBy": "user"}
    gov["revision"] = 3
    if pinned:
        gov |= {"pinnedAt": 1_700_000_000_000, "pinnedBy": "user"}
    gov["retention"] = "project-delete"
    return {
        "schemaVersion": 1,
        "id": rid,
        "scope": "project",
        "scopeKey": "__ROOT_ID__",
        "type": "fact",
        "title": f"Title {rid}",
        "content": content,
        "tags": ["t"],
        "provenance": {"kind": "agent", "sessionId": "s1", "note": "memory proposal"},
        "createdAt": 1_700_000_000_000,
        "updatedAt": 1_700_000_000_000,
        "useCount": 0,
        "contentHash": content_hash(content),
        "status": status,
        "governance": gov,
    }


def legacy_record(kind: str, action: str) -> dict[str, Any]:
    """A record without governance, of provenance ``kind`` (the corpus's ``legacyExample``)."""
    rid = f"memory:legacy:{kind}:{action}"
    content = f"Legacy content of {rid}"
    provenance: dict[str, Any] = {"kind": kind}
    if kind in ("agent", "tool"):
        provenance |= {"sessionId": "s-old", "eventSeq": 4}
    return {
        "schemaVersion": 1,
        "id": rid,
        "scope": "project",
        "scopeKey": "__ROOT_ID__",
        "type": "fact",
        "title": f"Title {rid}",
        "content": content,
        "tags": [],
        "provenance": provenance,
        "createdAt": 1_700_000_000_000,
        "updatedAt": 1_700_000_001_000,
        "useCount": 0,
        "contentHash": content_hash(content),
        "status": "active",
    }


def matrix_cases() -> list[Case]:
    out = []
    for entry in transitions()["matrix"]:
        state = entry["from"]
        record = starting_record(state, entry["action"])
        name = (
            f"{state['status']}-{state['verification']}-"
            f"{'pinned' if state['pinned'] else 'unpinned'}-{entry['action']}"
        )
        out.append(Case(name, record, entry["action"], entry["pure"], entry["domainGovern"]))
    return out


def legacy_cases() -> list[Case]:
    out = []
    for entry in transitions()["legacy"]:
        kind = entry["provenanceKind"]
        record = legacy_record(kind, entry["action"])
        out.append(
            Case(
                f"legacy-{kind}-{entry['action']}",
                record,
                entry["action"],
                entry["pure"],
                entry["domainGovern"],
            )
        )
    return out


def all_cases() -> list[Case]:
    return matrix_cases() + legacy_cases()


def key_cases() -> list[Case]:
    """The cases a key of the app can express: ``p`` pins an unpinned record and unpins a
    pinned one, so pin on a pinned record and unpin on an unpinned one are not among them."""
    out = []
    for case in all_cases():
        if case.action not in COMMAND_ACTIONS:
            continue
        pinned = "pinnedAt" in case.record.get("governance", {})
        if (case.action == "pin" and pinned) or (case.action == "unpin" and not pinned):
            continue
        out.append(case)
    return out


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def outcome(record: dict[str, Any]) -> dict[str, Any]:
    """What the corpus records of a result: status, governance (the host's fields), useCount."""
    from .hostform import GOVERNANCE_FIELDS

    gov = {k: v for k, v in record["governance"].items() if k in GOVERNANCE_FIELDS}
    return {"status": record["status"], "governance": gov, "useCount": record["useCount"]}


def expected_outcome(
    host: dict[str, Any], ours: dict[str, Any], t0: int, t1: int
) -> dict[str, Any]:
    """The host's result with each ``__NOW__`` replaced by our value, once that value is
    checked to be a time of our run (``t0 <= value <= t1``)."""
    want = {k: host[k] for k in ("status", "governance", "useCount")}
    gov = dict(want["governance"])
    for key, value in gov.items():
        if value == HOST_NOW:
            got = ours["governance"].get(key)
            assert isinstance(got, int) and t0 <= got <= t1, (key, got, t0, t1)
            gov[key] = got
    want["governance"] = gov
    return want
