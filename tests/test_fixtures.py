"""The project's fixtures agree with the host: the fixture digest is what the auto-writer (held
byte for byte to the host's writeAutoFact by tests/interop/test_autowriter_corpus.py) writes for
the fixture events, so a fixture cannot drift into a format the host never wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES, run_cli
from interop.corpus import make_case_dirs, scope_key_sha16

from dsh_memory_tui.model import session_file_stem

SESSIONS = FIXTURES / "host/home/workspace-memory/sessions"


def test_fixture_digest_is_what_the_auto_writer_writes_for_the_fixture_events(
    tmp_path: Path,
) -> None:
    dirs = make_case_dirs(tmp_path / "case")
    scope_key = f"session-abc|{dirs.root_id}"
    mapping = {
        "__ROOT_ID__": dirs.root_id,
        "__WORKSPACE__": str(dirs.workspace),
        "__SCOPEKEY_SHA16__": scope_key_sha16(scope_key),
    }

    def substituted(text: str) -> str:
        for placeholder, value in mapping.items():
            text = text.replace(placeholder, value)
        return text

    events = tmp_path / "events.jsonl"
    events.write_text(substituted((FIXTURES / "events/session-abc.jsonl").read_text()))
    done = run_cli(dirs.home, dirs.workspace, "auto-write", "--events", str(events))
    assert done.returncode == 0, done.stderr

    written = dirs.home / "workspace-memory/sessions" / f"{session_file_stem(scope_key)}.jsonl"
    (line,) = written.read_text().splitlines()
    (fixture_line,) = (SESSIONS / "session-session-abc.jsonl").read_text().splitlines()
    ours, fixture = json.loads(line), json.loads(substituted(fixture_line))
    # Only the clock differs; every other byte of the line is the auto-writer's.
    for rec in (ours, fixture):
        rec["createdAt"] = rec["updatedAt"] = 0
    assert ours == fixture
    assert list(ours) == list(fixture)  # the same key order
