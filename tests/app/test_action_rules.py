"""Whether an action may run here (``app.actions.refusal``), without the app: the host's
transitions table over a real store file, and each of the app's own reasons (the load, a
read-only file, a batch, edit and copy on one record, keep, adopt). A write of the record still
running is none of them: the app queues the next one behind it.
"""

from __future__ import annotations

import pytest
from interop.corpus import make_case_dirs
from interop.transitions import Case, key_cases
from interop.transitions import line as json_line

from dsh_memory_tui.app.actions import (
    ACTIONS,
    NEED_STORE,
    WRITE_ACTIONS,
    Here,
    pin_action,
    refusal,
)
from dsh_memory_tui.governance import Action, tombstone
from dsh_memory_tui.model import Scope, SourceRef, Status, Verification
from dsh_memory_tui.store import MemoryStore

PROPOSAL = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"


APP_CASES = key_cases()


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    """Every starting record of the table in one real project file, read as the app reads it
    (an expired verified record is its stale view)."""
    dirs = make_case_dirs(tmp_path_factory.mktemp("table"))
    data = dirs.scope_path("project")
    data.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data.write_bytes(b"".join(json_line(c.with_root(dirs.root_id)) for c in APP_CASES))
    data.chmod(0o600)
    return MemoryStore.open(dirs.home, dirs.workspace, "alice")


def test_the_table_splits_as_the_host_and_our_refusals_say() -> None:
    allowed = sum(c.our_code is None for c in APP_CASES)
    # 68 the host allows and we do, and our forget of the 8 forgotten states (the host's
    # forget kept their text: ours erases it; the host refuses).
    assert (allowed, len(APP_CASES) - allowed) == (76, 120)


@pytest.mark.parametrize("case", APP_CASES, ids=lambda c: c.name)
def test_each_transition_is_allowed_or_refused_as_the_rules_say(
    corpus_store: MemoryStore, case: Case
) -> None:
    record = corpus_store.get(case.id)
    action = "pin" if case.action == "unpin" else case.action
    why = refusal(action, [record], Here(now=corpus_store.clock()))
    if case.our_code is None:
        assert why is None, why
        return
    assert why is not None
    code, message = why
    assert code == case.our_code
    assert "\n" not in message and case.id in message


def test_a_batch_runs_when_one_of_its_records_allows_it(alice_store: MemoryStore) -> None:
    proposal, decision = alice_store.get(PROPOSAL), alice_store.get(DECISION)
    now = alice_store.clock()
    assert refusal("verify", [decision, proposal], Here(now=now)) is None
    why = refusal("verify", [decision, decision], Here(now=now))
    assert why is not None and why[1].startswith("none of the 2 marked records: cannot verify")


def test_a_refused_verify_of_a_stale_record_names_the_key_that_reverifies(
    alice_store: MemoryStore,
) -> None:
    decision = alice_store.get(DECISION)
    stale = decision.model_copy(
        update={
            "governance": decision.governance.model_copy(
                update={"verification": Verification.STALE}
            )
        }
    )
    why = refusal("verify", [stale], Here(now=alice_store.clock()))
    assert why is not None and why[1].endswith("; R re-verifies a stale record")


def test_while_the_store_loads_only_filter_help_and_quit_run(alice_store: MemoryStore) -> None:
    loading = Here(now=alice_store.clock(), loading=True)
    for key in ACTIONS:
        why = refusal(key.action, [], loading)
        if key.action in NEED_STORE:
            assert why == ("UNAVAILABLE", "the store is still loading"), key.action
        else:
            assert why is None, key.action


def test_no_record_selected_refuses_every_write(alice_store: MemoryStore) -> None:
    here = Here(now=alice_store.clock(), adoptable=True)
    for action in WRITE_ACTIONS - {"adopt"}:
        assert refusal(action, [], here) == ("UNAVAILABLE", "no record selected"), action
    assert refusal("adopt", [], here) is None


def test_a_read_only_file_says_compact(alice_store: MemoryStore) -> None:
    proposal = alice_store.get(PROPOSAL)
    now = alice_store.clock()

    def read_only(rid: str) -> str | None:
        return "records.jsonl"

    full = refusal("archive", [proposal], Here(now=now, read_only=read_only))
    assert full == (
        "STORE_TOO_LARGE",
        "records.jsonl is over 8 MiB and read-only; compact it (C) to write again",
    )


def test_edit_and_copy_take_one_record_and_session_records_are_not_edited(
    alice_store: MemoryStore,
) -> None:
    proposal, decision = alice_store.get(PROPOSAL), alice_store.get(DECISION)
    here = Here(now=alice_store.clock())
    assert refusal("edit", [proposal], here) is None
    two = refusal("copy", [proposal, decision], here)
    assert two == ("UNAVAILABLE", "copy works on one record; unmark the others")
    session = proposal.model_copy(update={"scope": Scope.SESSION})
    why = refusal("edit", [session], here)
    assert why is not None and why[0] == "READ_ONLY_SCOPE"
    assert refusal("copy", [session], here) is None


def test_a_forgotten_record_cannot_be_edited_or_copied_and_is_forgotten_again_to_erase_it(
    alice_store: MemoryStore,
) -> None:
    # The host's forget keeps the text: ours may forget it again, which erases it.
    forgotten = alice_store.get(PROPOSAL).model_copy(update={"status": Status.FORGOTTEN})
    here = Here(now=alice_store.clock())
    for action in ("edit", "copy"):
        why = refusal(action, [forgotten], here)
        assert why is not None and why[0] == "FORGOTTEN" and "still in the file" in why[1]
    assert refusal("forget", [forgotten], here) is None
    erased = tombstone(alice_store.get(PROPOSAL), alice_store.clock())
    assert refusal("forget", [erased], here) == (
        "FORGOTTEN",
        f"{PROPOSAL} was forgotten; its text is erased",
    )


def test_forget_and_keep_act_on_the_first_record_only(alice_store: MemoryStore) -> None:
    proposal = alice_store.get(PROPOSAL)
    erased = tombstone(proposal, alice_store.clock())
    here = Here(now=alice_store.clock())
    assert refusal("forget", [proposal, erased], here) is None
    assert refusal("forget", [erased, proposal], here) is not None


def test_keep_needs_an_open_conflict_group(alice_store: MemoryStore) -> None:
    proposal = alice_store.get(PROPOSAL)
    alone = refusal("keep", [proposal], Here(now=alice_store.clock()))
    assert alone is not None and alone[0] == "INVALID_TRANSITION"
    assert alone[1].startswith(f"cannot keep {PROPOSAL}: ")


def test_adopt_runs_only_when_the_tab_holds_another_workspaces_lines(
    alice_store: MemoryStore,
) -> None:
    now = alice_store.clock()
    why = refusal("adopt", [], Here(now=now))
    assert why is not None and why[0] == "UNAVAILABLE" and "another workspace" in why[1]
    assert refusal("adopt", [], Here(now=now, adoptable=True)) is None


def test_p_unpins_only_when_every_record_is_pinned(alice_store: MemoryStore) -> None:
    decision = alice_store.get(DECISION)
    pinned = decision.model_copy(
        update={"governance": decision.governance.model_copy(update={"pinnedAt": 1})}
    )
    assert pin_action([pinned, decision]) == (Action.PIN, [decision])
    assert pin_action([pinned, pinned]) == (Action.UNPIN, [pinned, pinned])


def test_actions_that_are_not_writes_need_no_record(alice_store: MemoryStore) -> None:
    here = Here(now=alice_store.clock())
    for key in ACTIONS:
        if key.action not in WRITE_ACTIONS | {"source_diff"}:
            assert refusal(key.action, [], here) is None, key.action


def test_the_diff_since_the_citation_needs_a_record_that_cites_a_file(
    alice_store: MemoryStore,
) -> None:
    here = Here(now=alice_store.clock())
    decision = alice_store.get(DECISION)
    assert refusal("source_diff", [], here) == ("UNAVAILABLE", "no record selected")
    assert refusal("source_diff", [decision], here) == (
        "UNAVAILABLE",
        "this record cites no file (e edits its citations)",
    )
    cited = decision.model_copy(
        update={
            "governance": decision.governance.model_copy(
                update={"sourceRefs": [SourceRef(kind="file", id="a.py:1-2")]}
            )
        }
    )
    assert refusal("source_diff", [cited], here) is None


def test_a_record_whose_cited_code_changed_cannot_be_pinned(alice_store: MemoryStore) -> None:
    record = alice_store.get(DECISION)
    assert record.governance.verification is Verification.VERIFIED
    assert refusal("pin", [record], Here(now=alice_store.clock())) is None
    code, why = refusal("pin", [record], Here(now=alice_store.clock(), rereview={record.id}))
    assert code == "INVALID_TRANSITION"
    assert "its cited code changed or is gone" in why
