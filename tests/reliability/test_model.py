"""5. A model test: random sequences of operations, crashes, reopens and user switches, checked
against a plain dictionary after every step."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.store import MemoryStore

from .conftest import Figures
from .harness import (
    Emit,
    KillingOS,
    Site,
    Worker,
    complete_lines,
    expire_killed_lock,
    is_tombstone,
    neighbours,
    read_or_none,
    scaled,
    store_os,
)

USERS = ("alice", "bob")
SCOPES = ("project", "user")

settings.register_profile(
    "dsh-reliability-model",
    max_examples=scaled(60, 600),
    stateful_step_count=scaled(50, 100),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

_CHARS = st.sampled_from(["a", "b", " ", "\n", "é", "☃"])
# Few characters, so equal contents (idempotent merges) are common; blank now and then.
TEXT = st.text(alphabet=_CHARS, min_size=1, max_size=5)
TYPES = st.sampled_from(["fact", "decision", "preference", "convention"])
TAGS = st.lists(st.sampled_from(["x", " x", "y", "", " "]), max_size=3)

COUNTS: Counter[str] = Counter()


@dataclass(frozen=True)
class Entry:
    """What the model knows of one record."""

    type: str
    title: str
    content: str
    tags: tuple[str, ...]
    status: str = "active"
    verification: str = "unverified"
    revision: int = 1

    def bumped(self, **changes: Any) -> Entry:
        return replace(self, revision=self.revision + 1, **changes)


def _clean_tags(tags: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for tag in (t.strip() for t in tags):
        if tag and tag not in out:
            out.append(tag)
    return tuple(out)


# What the model holds as a forgotten record's content: the store's placeholder text is its
# own; ``is_tombstone`` checks its form, the invariant below that nothing of the record is left.
ERASED = "<erased>"


def _tombstone_title(record_id: str) -> str:
    return f"Forgotten memory {hashlib.sha256(record_id.encode()).hexdigest()[:12]}"


def _seen(store: MemoryStore, scope: str) -> dict[str, Entry]:
    out = {}
    for r in store.records(scope, include_inactive=True):
        content = r.content
        if r.status.value == "forgotten" and is_tombstone(json.loads(r.to_line())):
            content = ERASED
        out[r.id] = Entry(
            r.type.value,
            r.title,
            content,
            tuple(r.tags),
            r.status.value,
            r.governance.verification.value,
            r.revision,
        )
    return out


class StoreMachine(RuleBasedStateMachine):
    """The store against a dictionary per file: ``model["project"]`` (shared by both users)
    and ``model["user:<id>"]`` (each user's profile in user.jsonl)."""

    def __init__(self) -> None:
        super().__init__()
        self.site = Site.create(Path(tempfile.mkdtemp(prefix="dsh-model-")))
        self.stores = {u: self.site.store(u) for u in USERS}
        self.acting = USERS[0]
        self.model: dict[str, dict[str, Entry]] = {"project": {}}
        self.model.update({f"user:{u}": {} for u in USERS})
        self.profile_lines: dict[str, list[bytes]] = {u: [] for u in USERS}
        COUNTS["runs"] += 1

    def teardown(self) -> None:
        shutil.rmtree(self.site.root, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    @property
    def store(self) -> MemoryStore:
        return self.stores[self.acting]

    def _key(self, scope: str) -> str:
        return "project" if scope == "project" else f"user:{self.acting}"

    def _visible(self) -> list[tuple[str, str]]:
        return [(key, rid) for key in ("project", f"user:{self.acting}") for rid in self.model[key]]

    def _expect(self, code: str | None, call: Any) -> Any:
        """Run ``call``; it must raise ``StoreError(code)`` (or succeed when ``code`` is None)."""
        try:
            result = call()
        except StoreError as exc:
            assert exc.code == code, f"expected {code}, got {exc.code}: {exc}"
            COUNTS[f"refusals ({exc.code})"] += 1
            return None
        assert code is None, f"expected {code}, but it succeeded"
        return result

    def _pick(self, data: st.DataObject) -> tuple[str, str, Entry]:
        """A visible record, in creation order (so hypothesis can replay the choice); nine
        times in ten one that is not forgotten (those refuse nearly everything)."""
        visible = self._visible()
        live = [(k, r) for k, r in visible if self.model[k][r].status != "forgotten"]
        choices = live if live and data.draw(st.integers(0, 9)) else visible
        key, rid = data.draw(st.sampled_from(choices))
        return key, rid, self.model[key][rid]

    def _after_write(self, key: str, rid: str, new: Entry) -> None:
        self.model[key][rid] = new

    def _profile_lines(self, user: str) -> list[bytes]:
        out = []
        for line in complete_lines(read_or_none(self.site.user_file)):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("scopeKey") == user:
                out.append(line)
        return out

    # ------------------------------------------------------------------ rules

    @rule(scope=st.sampled_from(SCOPES), type_=TYPES, title=TEXT, content=TEXT, tags=TAGS)
    def create(self, scope: str, type_: str, title: str, content: str, tags: list[str]) -> None:
        key = self._key(scope)
        title_, content_ = title.strip(), content.strip("\n")
        # The host's rules: a title is not blank and holds no control character (a line
        # feed); content is not blank and may hold line feeds.
        if not title_ or "\n" in title_ or not content_.strip():
            self._expect("INVALID_RECORD", lambda: self.store.create(scope, type_, title, content))
            return
        same = {
            rid
            for rid, e in self.model[key].items()
            if e.type == type_ and e.content == content_ and e.status != "forgotten"
        }
        result = self.store.create(scope, type_, title, content, tags)
        if same:
            assert result.id in same and not result.written, "no idempotent merge"
            COUNTS["idempotent merges"] += 1
            return
        assert result.written and result.id not in self.model[key]
        self.model[key][result.id] = Entry(type_, title_, content_, _clean_tags(tags))
        COUNTS["creates"] += 1

    @precondition(lambda self: self._visible())
    @rule(
        data=st.data(),
        title=st.none() | TEXT,
        content=TEXT,
        type_=st.none() | TYPES,
        tags=st.none() | TAGS,
        stale=st.sampled_from([0, 0, 0, 0, -1, 1]),
    )
    def edit(
        self,
        data: st.DataObject,
        title: str | None,
        content: str | None,
        type_: str | None,
        tags: list[str] | None,
        stale: int,
    ) -> None:
        key, rid, entry = self._pick(data)
        base = entry.revision + stale

        def call() -> Any:
            return self.store.edit(
                rid, base, title=title, content=content, record_type=type_, tags=tags
            )

        if (title is not None and not title.strip()) or (
            content is not None and not content.strip()
        ):
            self._expect("INVALID_RECORD", call)
            return
        if stale:
            self._expect("REVISION_CONFLICT", call)
            return
        if entry.status == "forgotten":
            self._expect("FORGOTTEN", call)
            return
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = title.strip()
        if content is not None:
            changes["content"] = content.strip("\n")
        if type_ is not None:
            changes["type"] = type_
        if tags is not None:
            changes["tags"] = _clean_tags(tags)
        changes = {k: v for k, v in changes.items() if getattr(entry, k) != v}
        if "\n" in changes.get("title", ""):
            self._expect("INVALID_RECORD", call)
            return
        call()
        if changes:
            if entry.verification == "verified":  # the host's rule: a verified edit is stale
                changes["verification"] = "stale"
                COUNTS["verified records edited (now stale)"] += 1
            self._after_write(key, rid, entry.bumped(**changes))
            COUNTS["edits"] += 1

    @precondition(lambda self: self._visible())
    @rule(
        data=st.data(),
        action=st.sampled_from(["verify", "reject", "reverify", "archive", "restore"]),
    )
    def review(self, data: st.DataObject, action: str) -> None:
        """The host's transitions: verify and reject only from unverified, reverify only from
        stale, archive only active, restore only archived; anything else INVALID_TRANSITION."""
        key, rid, entry = self._pick(data)
        call = lambda: self.store.apply(action, rid)  # noqa: E731
        if entry.status == "forgotten":
            self._expect("FORGOTTEN", call)
            return
        new: Entry | None = None
        if action == "verify" and entry.verification == "unverified":
            new = entry.bumped(verification="verified")
        elif action == "reject" and entry.verification == "unverified":
            new = entry.bumped(verification="rejected")
        elif action == "reverify" and entry.verification == "stale":
            new = entry.bumped(verification="verified")
        elif action == "archive" and entry.status == "active":
            new = entry.bumped(status="archived")
        elif action == "restore" and entry.status == "archived":
            new = entry.bumped(status="active")
        if new is None:
            self._expect("INVALID_TRANSITION", call)
            return
        call()
        self._after_write(key, rid, new)
        COUNTS[
            {
                "verify": "verifications",
                "reject": "rejections",
                "reverify": "reverifications",
                "archive": "archives",
                "restore": "restores",
            }[action]
        ] += 1

    @precondition(lambda self: self._visible())
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        key, rid, entry = self._pick(data)
        if entry.status == "forgotten":
            self._expect("FORGOTTEN", lambda: self.store.forget(rid))
            return
        self.store.forget(rid)
        self._after_write(
            key,
            rid,
            entry.bumped(status="forgotten", title=_tombstone_title(rid), content=ERASED, tags=()),
        )
        COUNTS["forgets"] += 1

    @rule(scope=st.sampled_from(SCOPES))
    def compact(self, scope: str) -> None:
        self.store.compact(self.store.file_for(scope))
        COUNTS["compactions"] += 1

    @rule(scope=st.sampled_from(SCOPES), cut=st.integers(1, 400))
    def crash_mid_line(self, scope: str, cut: int) -> None:
        """A writer died mid-line: the file ends with a piece of a record line."""
        path = self.store.file_for(scope).path
        if not path.exists():
            return
        lines = complete_lines(path.read_bytes()) or [b'{"schemaVersion":1,"id":"memory:']
        line = lines[-1]
        with path.open("ab") as f:
            f.write(line[: min(cut, len(line) - 1)])
        COUNTS["torn tails left"] += 1

    @rule(scope=st.sampled_from(SCOPES), type_=TYPES, nth=st.integers(1, 30))
    def crash_writer(self, scope: str, type_: str, nth: int) -> None:
        """A real writer process creating a record is SIGKILLed just before its nth I/O call
        (a fixed point, so hypothesis can replay it); the record is then wholly there or not
        at all, and there if the create was acknowledged."""
        key = self._key(scope)
        content = f"crash {len(self.model[key])}"
        site, user = self.site, self.acting

        def write(emit: Emit) -> None:
            with store_os(KillingOS(nth, emit)):
                site.store(user).create(scope, type_, "crashing", content)
            emit(ack=True)

        worker = Worker(write)
        worker.join()
        assert not worker.errors(), worker.errors()
        if worker.killed and expire_killed_lock(self.store.file_for(scope).path, worker.pid):
            COUNTS["killed writers' locks aged past 60 s"] += 1
        acked = any("ack" in m for m in worker.messages)
        COUNTS["kills survived" if worker.killed else "writers done before the kill point"] += 1
        landed = set(_seen(self.store, scope)) - set(self.model[key])
        same = [
            e
            for e in self.model[key].values()
            if e.type == type_ and e.content == content and e.status != "forgotten"
        ]
        assert len(landed) <= 1
        assert not (acked and not same and not landed), "an acknowledged create was lost"
        for rid in landed:
            self.model[key][rid] = Entry(type_, "crashing", content, ())
            COUNTS["killed creates that landed" if worker.killed else "creates"] += 1

    @rule()
    def reopen(self) -> None:
        self.stores = {u: MemoryStore.open(self.site.home, self.site.workspace, u) for u in USERS}
        COUNTS["reopens"] += 1

    @rule()
    def switch_user(self) -> None:
        self.acting = USERS[1] if self.acting == USERS[0] else USERS[0]
        COUNTS["user switches"] += 1

    @precondition(lambda self: self.model[f"user:{USERS[0]}"] or self.model[f"user:{USERS[1]}"])
    @rule(data=st.data())
    def peek_at_other_user(self, data: st.DataObject) -> None:
        other = USERS[1] if self.acting == USERS[0] else USERS[0]
        ids = list(self.model[f"user:{other}"])
        if ids:
            rid = data.draw(st.sampled_from(ids))
            self._expect("NOT_FOUND", lambda: self.store.get(rid))
            COUNTS["other user's records hidden"] += 1

    # ------------------------------------------------------------------ invariants

    @invariant()
    def every_user_sees_exactly_the_model(self) -> None:
        for user in USERS:
            store = self.stores[user]
            assert _seen(store, "project") == self.model["project"], f"{user}: project"
            assert _seen(store, "user") == self.model[f"user:{user}"], f"{user}: profile"
        COUNTS["steps checked"] += 1

    @invariant()
    def other_users_lines_are_kept_byte_for_byte(self) -> None:
        for user in USERS:
            lines = self._profile_lines(user)
            if user != self.acting:
                assert lines == self.profile_lines[user], f"{user}'s lines changed"
            self.profile_lines[user] = lines

    @invariant()
    def forgotten_records_have_no_earlier_line(self) -> None:
        """In the file and its .bak a forgotten record has only its tombstone, which holds
        nothing of its last title, content or tags."""
        for key, entries in self.model.items():
            path = self.site.project if key == "project" else self.site.user_file
            for name in ("data", "bak"):
                for line in complete_lines(read_or_none(neighbours(path)[name])):
                    try:
                        obj = json.loads(line)
                    except ValueError:
                        continue
                    entry = entries.get(obj.get("id")) if isinstance(obj, dict) else None
                    if entry is not None and entry.status == "forgotten":
                        assert is_tombstone(obj), (
                            f"an earlier revision of a forgotten record is in {name}"
                        )
                        assert obj["title"] == _tombstone_title(obj["id"])


def test_store_matches_a_dictionary_model_through_crashes_reopens_and_user_switches(
    figures: Figures,
) -> None:
    """A hypothesis state machine runs create / edit (with stale bases) / verify / reject /
    reverify / archive / restore (the host's transitions) / forget / compact / torn tail /
    SIGKILLed writer (its lock aged past 60 s) / reopen / switch user on two users sharing a
    project and a user.jsonl: after every step each user's view
    equals the dictionary model, user A never sees user B's records, B's lines survive A's
    writes byte for byte, and a forgotten record has no earlier line in the file or .bak.
    """
    COUNTS.clear()
    run_state_machine_as_test(StoreMachine, settings=settings.get_profile("dsh-reliability-model"))
    for name, n in sorted(COUNTS.items()):
        figures.add(name, n)
