"""A flagged secret is never printed whole where a person reads a record: the app's detail pane
(its Markdown and raw views, its flag lines, near-duplicates and history) and ``dsh-memory
show`` (the content, the title and the history) show its first four characters and "…";
``show --reveal`` prints it as stored and ``show --json`` stays the exact record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app.helpers import SIZE, make_app, wait_for
from conftest import run_cli

from dsh_memory_tui import lint
from dsh_memory_tui.app.evidence import flag_lines
from dsh_memory_tui.model import SourceRef
from dsh_memory_tui.store import MemoryStore

REFS = [SourceRef(kind="session", id="s1")]
KEY = "AKIA81U33XTPLPFT75V2"
TOKEN = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"
CONTENT = f"The export job uses {KEY}.\n\nCI pushes with {TOKEN} daily."


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "ws").mkdir()
    return tmp_path / "home", tmp_path / "ws"


def proposed(dirs) -> str:
    store = MemoryStore.open(*dirs, "alice")
    return store.propose("project", "fact", "Export credentials", CONTENT, source_refs=REFS).id


def test_masked_shows_each_span_as_its_first_four_characters():
    found = lint.flags("t", CONTENT)
    shown = lint.masked(CONTENT, lint.secret_spans(found, "content"))
    assert shown == "The export job uses AKIA….\n\nCI pushes with ghp_… daily."


def test_a_secret_hidden_by_a_zero_width_character_is_masked_whole():
    text = f"token {TOKEN[:10]}\u200b{TOKEN[10:]} here"
    found = lint.flags("t", text)
    assert lint.masked(text, lint.secret_spans(found, "content")) == "token ghp_… here"


def test_a_flag_line_masks_every_secret_around_its_span_too():
    key_id, secret = "AKIAQYLPMN5HHHFPZAM2", "1tUm636uS1yOEcfP5pvfqJ/ml36mF7AkyHsEU0IU"
    text = f"Key id {key_id}, secret {secret}.\nUse postgres://admin:Tr0ub4dor@db.example/x now"
    record = type("R", (), {"title": "t", "content": text})()
    lines = ["".join(parts) for parts in flag_lines(record, lint.flags("t", text))]
    assert len(lines) == 4  # key id, secret, URL password; the link
    for line in lines:
        assert key_id not in line and secret not in line and "Tr0ub4dor" not in line


def test_show_masks_a_flagged_secret_and_says_so(dirs):
    rid = proposed(dirs)
    out = run_cli(*dirs, "show", rid).stdout
    assert KEY not in out and TOKEN not in out
    assert "The export job uses AKIA…." in out and "CI pushes with ghp_… daily." in out
    assert "2 flagged, shown masked (show --reveal)" in out


def test_show_masks_the_history_too(dirs):
    rid = proposed(dirs)
    store = MemoryStore.open(*dirs, "alice")
    store.edit(rid, base_revision=1, content=CONTENT + "\nRotated monthly.")
    out = run_cli(*dirs, "show", rid, "--history").stdout
    assert KEY not in out and TOKEN not in out and "Rotated monthly." in out


def test_show_reveal_prints_the_secret_as_stored(dirs):
    rid = proposed(dirs)
    out = run_cli(*dirs, "show", rid, "--reveal").stdout
    assert KEY in out and TOKEN in out and "shown masked" not in out


def test_show_json_is_the_exact_record(dirs):
    rid = proposed(dirs)
    shown = json.loads(run_cli(*dirs, "show", rid, "--json").stdout)
    assert shown["content"] == CONTENT


async def test_the_detail_pane_masks_the_secret_in_the_content_as_markdown_and_raw(dirs):
    rid = proposed(dirs)
    store = MemoryStore.open(*dirs, "alice")
    store.propose("project", "fact", "Export credential", CONTENT + " Weekly.", source_refs=REFS)
    store.edit(rid, base_revision=1, content=f"Old key {KEY}.\n\n" + CONTENT)  # a history
    app = make_app(*dirs)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.evidence.generation > 0, what="the evidence worker")
        pane = app.pane("review")
        pane.table.move_cursor_to_key(rid)
        await wait_for(pilot, lambda: "Risk flags" in pane.detail.text, what="risk flags")
        await wait_for(pilot, lambda: "Near-duplicates" in pane.detail.text, what="near-dups")
        text = pane.detail.text
        assert "History" in text
        assert KEY not in text and TOKEN not in text  # content, flags, near-dups, history
        assert "The export job uses AKIA…." in text
        assert "3 flagged secrets shown masked" in text
        await pilot.press("m")
        await wait_for(pilot, lambda: "raw text (m: as Markdown)" in pane.detail.text, what="raw")
        text = pane.detail.text
        assert KEY not in text and TOKEN not in text and "CI pushes with ghp_… daily." in text
