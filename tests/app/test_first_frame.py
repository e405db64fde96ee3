"""A big store's first frame: the files' newest records, read from their ends, while the whole
store loads in a thread. What it shows must be what the full load shows, record for record."""

from __future__ import annotations

import json
from pathlib import Path

from dsh_memory_tui.app import app as app_module
from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.jsonl import ensure_dir
from dsh_memory_tui.model import (
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    SourceRef,
    make_record,
)
from dsh_memory_tui.paths import StoreFile
from dsh_memory_tui.store import MemoryStore
from dsh_memory_tui.store.preview import PREVIEW_FROM_BYTES

from .helpers import SIZE, screen_text, table_keys, wait_for

NOW = 1_800_000_000_000


class FirstFrame(MemoryApp):
    """The real app, noting what its first frame showed before the load starts."""

    CSS_PATH = Path(app_module.__file__).parent / MemoryApp.CSS_PATH  # not beside this file
    first: dict[str, Record] | None = None
    first_text = ""
    first_refusals: dict[str, tuple[str, str] | None] = {}

    def _load_store(self) -> None:
        review = self.pane("review")
        self.first = {key: review.records[key] for key in table_keys(self, "review")}
        self.first_text = screen_text(self)
        self.first_refusals = {a: self.unavailable(a) for a in ("verify", "new", "compact")}
        super()._load_store()


def proposal(file: StoreFile, i: int) -> bytes:
    record = make_record(
        scope=file.scope,
        scope_key=file.scope_key or "",
        record_type=RecordType.FACT,
        title=f"Proposal {i}",
        content=f"what proposal {i} says " * 30,
        tags=["t"],
        provenance=Provenance(kind=ProvenanceKind.AGENT, sessionId="s", eventSeq=i),
        origin=Origin.MODEL_SUGGESTED,
        source_refs=[SourceRef(kind="session", id="s")],
        now=NOW - 10_000_000 + i,
    )
    return record.to_line()


def big_store(tmp_path: Path) -> tuple[MemoryStore, list[str]]:
    """A project file over ``PREVIEW_FROM_BYTES`` of proposals, the newest ones edited and
    verified by a reviewer (so their last lines are not their first)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    store = MemoryStore.open(tmp_path / "home", ws, "alice")
    file = store.file_for("project")
    lines: list[bytes] = []
    while sum(map(len, lines)) < PREVIEW_FROM_BYTES * 1.3:
        lines.append(proposal(file, len(lines)))
    ensure_dir(file.path.parent)
    file.path.write_bytes(b"".join(lines))
    ids = [json.loads(raw)["id"] for raw in lines]
    store.verify(ids[-1])
    store.edit(ids[-2], 1, content="edited after it was proposed")
    store.reject(ids[-30])
    return store, ids


async def test_a_big_store_first_shows_its_newest_records_each_in_its_final_state(
    tmp_path: Path,
) -> None:
    store, ids = big_store(tmp_path)
    app = FirstFrame(MemoryStore(store.paths), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.first is not None, what="the first frame")
        await wait_for(pilot, lambda: not app.loading, what="the load")
        loaded = table_keys(app, "review")
        after_text = screen_text(app)
    final = MemoryStore(store.paths)
    current = {r.id: r for r in final.records(include_inactive=True)}
    queue = {r.id for r in final.review_queue()}
    first = app.first
    assert first is not None
    # Only the newest part, each record exactly as the full load has it, none that left the
    # queue (verified, rejected) since it was proposed.
    assert 0 < len(first) < len(queue)
    assert set(first) <= queue
    for rid, record in first.items():
        assert record == current[rid]
    assert ids[-2] in first and first[ids[-2]].content == "edited after it was proposed"
    assert ids[-1] not in first and ids[-30] not in first
    assert table_keys_newest_first(first) == list(first)
    assert "loading…" in app.first_text
    # Once loaded: every record of the queue, and the status line says how many.
    assert set(loaded) == queue
    assert "loading…" not in after_text and f"{len(queue)} waiting" in after_text


async def test_nothing_that_needs_the_store_runs_before_it_has_loaded(tmp_path: Path) -> None:
    store, ids = big_store(tmp_path)
    app = FirstFrame(MemoryStore(store.paths), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: not app.loading and app.first is not None)
        app.pane("review").table.move_cursor_to_key(ids[-3])
        await pilot.pause()
        assert app.check_action("verify", ()) is True
    for action, why in app.first_refusals.items():
        assert why is not None and "loading" in why[1], action


def table_keys_newest_first(records: dict[str, Record]) -> list[str]:
    return [r.id for r in sorted(records.values(), key=lambda r: r.updatedAt, reverse=True)]
