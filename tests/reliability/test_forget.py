"""7. Forgetting: the forgotten text is gone from every file and every later export, and
nothing else is touched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dsh_memory_tui.bundle import export_bundle
from dsh_memory_tui.errors import StoreError

from .conftest import Figures
from .harness import (
    Emit,
    KillingOS,
    Site,
    Worker,
    complete_lines,
    expire_killed_lock,
    files_containing,
    is_tombstone,
    neighbours,
    regular_files,
    store_os,
)


def _secret_texts(tag: str) -> list[str]:
    return [f"SECRET-{tag}-title-{i}" for i in range(3)] + [
        f"SECRET-{tag}-content-{i}" for i in range(3)
    ]


def _lines_of_others(path: Path, forgotten: str) -> list[bytes]:
    return [
        line for line in complete_lines(path.read_bytes()) if json.loads(line)["id"] != forgotten
    ]


def _leaks(site: Site, texts: list[str], *extra: Path) -> list[tuple[str, Path]]:
    return [
        (text, path)
        for text in texts
        for path in [*files_containing(text.encode(), *site.store_dirs()), *extra]
        if text.encode() in path.read_bytes()
    ]


def test_forget_erases_every_revision_from_file_backup_and_export(
    tmp_path: Path, figures: Figures
) -> None:
    """A record with three revisions (one of them already copied into .bak by a compaction) is
    forgotten: none of its titles or contents is in any store file, its .bak, or an export
    made afterwards; every other record keeps all its lines (its history) byte for byte.
    """
    site = Site.create(tmp_path / "site")
    store = site.store()
    texts = _secret_texts("p")
    others = []
    for i in range(5):
        rid = store.create("project", "fact", f"other {i}", f"other content {i}").id
        store.edit(rid, 1, content=f"other content {i} v2")
        others.append(rid)
    rid = store.create("project", "decision", texts[0], texts[3]).id
    store.edit(rid, 1, title=texts[1], content=texts[4])
    store.compact(store.file_for("project"))  # the .bak now holds the secret's revisions
    store.edit(rid, 2, title=texts[2], content=texts[5])
    for other in others:
        store.edit(other, 2, content=f"{other} v3")
    assert _leaks(site, texts), "the setup did not write the secret"
    histories = {other: len(store.history(other)) for other in others}
    kept = _lines_of_others(site.project, rid)

    store.forget(rid)

    assert not _leaks(site, texts), _leaks(site, texts)
    assert _lines_of_others(site.project, rid) == kept, "another record's lines changed"
    assert {o: len(site.store().history(o)) for o in others} == histories
    bak = complete_lines(neighbours(site.project)["bak"].read_bytes())
    assert [json.loads(line)["id"] for line in bak].count(rid) == 0, "old revisions in .bak"
    out = tmp_path / "export.json"
    result = export_bundle(site.store(), out)
    assert result.count == len(others)
    assert not _leaks(site, texts, out), "the export holds forgotten text"
    exported = {r["id"] for r in json.loads(out.read_bytes())["records"]}
    assert exported == set(others)
    figures.add("forgotten revisions checked", 3)
    figures.add("files scanned", len(regular_files(*site.store_dirs())) + 1)
    figures.add("other records' lines kept byte for byte", len(kept))


def test_forget_in_user_profile_keeps_other_users_lines_byte_for_byte(
    tmp_path: Path, figures: Figures
) -> None:
    """In user.jsonl, alice forgets her profile record: her text is gone from the file, the
    .bak and her export; bob's lines (including his own history) are byte for byte as before
    and he still sees all his records.
    """
    site = Site.create(tmp_path / "site")
    alice, bob = site.store("alice"), site.store("bob")
    texts = _secret_texts("u")
    bob_ids = []
    for i in range(3):
        rid = bob.create("user", "preference", f"bob {i}", f"bob pref {i}").id
        bob.edit(rid, 1, content=f"bob pref {i} v2")
        bob_ids.append(rid)
    rid = alice.create("user", "preference", texts[0], texts[3]).id
    alice.edit(rid, 1, title=texts[1], content=texts[4])
    alice.compact(alice.file_for("user"))
    alice.edit(rid, 2, title=texts[2], content=texts[5])
    bob_lines = [
        line
        for line in complete_lines(site.user_file.read_bytes())
        if json.loads(line)["scopeKey"] == "bob"
    ]

    alice.forget(rid)

    out = tmp_path / "alice.json"
    export_bundle(site.store("alice"), out)
    assert not _leaks(site, texts, out), _leaks(site, texts, out)
    after = [
        line
        for line in complete_lines(site.user_file.read_bytes())
        if json.loads(line)["scopeKey"] == "bob"
    ]
    assert after == bob_lines, "bob's lines changed when alice forgot"
    assert {r.id for r in site.store("bob").records("user")} == set(bob_ids)
    figures.add("other user's lines kept byte for byte", len(bob_lines))


def test_temporary_left_by_a_killed_compaction_does_not_outlive_a_later_forget(
    tmp_path: Path, figures: Figures
) -> None:
    """A compaction SIGKILLed just before its rename leaves a temporary holding the whole old
    file. Forgetting a record afterwards must leave its text in no file of the store
    directory, that temporary included.
    """
    site = Site.create(tmp_path / "site")
    store = site.store()
    texts = _secret_texts("t")
    rid = store.create("project", "fact", texts[0], texts[3]).id
    store.create("project", "fact", "other", "other content")

    def compact_until_killed(emit: Emit) -> None:
        with store_os(KillingOS(1, emit, frozenset({"replace"}))):
            site.store().compact(site.store().file_for("project"))

    worker = Worker(compact_until_killed)
    worker.join()
    assert worker.killed and worker.messages[-1]["killed_at"] == "replace"
    assert expire_killed_lock(site.project, worker.pid), "the killed compaction held no lock"
    figures.add("kills survived")

    site.store().forget(rid)

    leaks = _leaks(site, texts[:1] + texts[3:4])
    figures.add("files holding forgotten text after forget", len({p for _, p in leaks}))
    assert not leaks, f"forgotten text survives in {sorted({p.name for _, p in leaks})}"


def test_forget_killed_at_every_io_call_then_retried_leaves_no_trace(
    tmp_path: Path, figures: Figures
) -> None:
    """Forget is SIGKILLed before its 1st, 2nd, ... I/O call; each time the file is the whole
    old one or the whole scrubbed one, and once the forget is retried to completion (after
    the killed attempt's lock has aged past 60 s) the forgotten text is in no file of the
    store (temporaries of the killed attempt included).
    """
    template = tmp_path / "template"
    trial = Site.create(tmp_path / "trial")  # one place: the rootId (the scopeKey) stays
    site = Site.create(template)
    store = site.store()
    texts = _secret_texts("k")
    rid = store.create("project", "fact", texts[0], texts[3]).id
    store.edit(rid, 1, title=texts[1], content=texts[4])
    for i in range(5):
        store.create("project", "fact", f"other {i}", f"other {i}")
    # The trial's workspace is another directory: its rootId, and so its scopeKey, differ.
    old = site.project.read_bytes().replace(
        site.store().paths.root_id.encode(), trial.store().paths.root_id.encode()
    )
    site.project.write_bytes(old)
    n = 0
    while True:
        n += 1
        shutil.rmtree(trial.root)
        trial = Site.create(trial.root)
        for path in regular_files(template):
            target = trial.root / path.relative_to(template)
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            target.write_bytes(path.read_bytes())

        def forget(emit: Emit, n: int = n, trial: Site = trial) -> None:
            with store_os(KillingOS(n, emit)):
                trial.store().forget(rid)
            emit(completed=True)

        worker = Worker(forget)
        worker.join()
        assert not worker.errors(), worker.errors()
        data = trial.project.read_bytes()
        if worker.killed:
            scrubbed = data != old
            if scrubbed:
                lines = complete_lines(data)
                assert all(json.loads(line)["id"] != rid for line in lines[:-1])
                assert is_tombstone(json.loads(lines[-1]))
                assert len(lines) == len(complete_lines(old)) - 1
            figures.add("kills survived")
            figures.add(
                "kills that left the whole scrubbed file"
                if scrubbed
                else "kills that left the whole old file"
            )
            figures.add(
                "kills that left the lock behind", expire_killed_lock(trial.project, worker.pid)
            )
            try:
                trial.store().forget(rid)
            except StoreError as exc:  # the killed attempt had already forgotten it
                assert exc.code == "FORGOTTEN" and scrubbed, exc
        leaks = _leaks(trial, texts)
        assert not leaks, (n, leaks)
        if not worker.killed:
            break
