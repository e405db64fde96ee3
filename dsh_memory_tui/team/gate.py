"""What a range of commits brings to the shared file, for a person and for CI.

- ``memory_changes``: per commit, what it did to each record (``readable.Change``), with the
  commit's author; a merge is named only for what it made itself (the driver's resolutions).
- ``gate``: ``dsh-memory check --since REV``: every change the range brings, and what fails it:
  a broken chain (``chain``), git's conflict markers, a verified record carrying a secret or an
  instruction flag (``lint``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import git, lint
from ..errors import ErrorCode, StoreError
from ..jsonl import read_file
from ..model import Record
from ..paths import StorePaths
from .chain import Break, accepted, all_breaks
from .history import WORKING_TREE, commits, head, repository_path, resolve
from .merge import conflict_marker_lines
from .readable import Change, changes, current_records, record_state

# The risk flags that fail the gate on a verified record: what an agent must never be served.
GATE_FLAGS = ("secret", "instruction")


def _repository(paths: StorePaths) -> tuple[Path, str]:
    where = repository_path(paths.workspace, paths.shared_file().path)
    if where is None:
        raise StoreError(ErrorCode.GIT_FAILED, f"{paths.workspace} is not in a git repository")
    return where


def memory_changes(paths: StorePaths, revisions: str | None = None) -> list[Change]:
    """What each commit of ``revisions`` (``A..B``; a single ``A``: ``A..HEAD``) did to the
    shared file's records, oldest first; None: what the working file changes against HEAD.
    ``GIT_FAILED`` outside git or for a revision git does not know.
    """
    top, rel = _repository(paths)
    out: list[Change] = []
    if revisions is not None:
        if ".." not in revisions:
            revisions = f"{resolve(top, revisions)}..HEAD"
        found, _ = commits(top, rel, revisions)
        with git.Blobs(top) as blobs:

            def at(rev: str) -> dict[str, Record]:
                return current_records(blobs.read(f"{rev}:{rel}") or b"")[0]

            for commit in found:
                after = at(commit.sha)
                parents = [at(p) for p in commit.parents] or [{}]
                made = changes(parents[0], after, commit)
                if commit.is_merge:  # only what differs from every parent: the merge's own
                    made = [c for c in made if all(_differs(p, c.record) for p in parents[1:])]
                out += made
        return out
    before = b""
    if head(top) is not None:
        with git.Blobs(top) as blobs:
            before = blobs.read(f"HEAD:{rel}") or b""
    got = read_file(paths.shared_file().path)
    now = got[1] if got else b""
    return changes(current_records(before)[0], current_records(now)[0], WORKING_TREE)


def _differs(parent: dict[str, Record], record: Record) -> bool:
    old = parent.get(record.id)
    return old is None or record_state(old) != record_state(record)


@dataclass(slots=True)
class GateReport:
    """What ``check --since`` found: the changes, and each reason to fail."""

    since: str
    changes: list[Change] = field(default_factory=list)
    breaks: list[Break] = field(default_factory=list)
    markers: list[int] = field(default_factory=list)
    flagged: list[tuple[Record, list[str]]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.breaks or self.markers or self.flagged)

    def lines(self) -> list[str]:
        """The report as short lines (a pull request's comment)."""
        out = [f"memory changes since {self.since[:12]}: {len(self.changes)}"]
        out += ["  " + c.line() for c in self.changes]
        for b in self.breaks:
            out.append(f"FAIL broken history: {b.record_id}: {b.reason}")
        if self.markers:
            out.append(
                f"FAIL conflict markers at line(s) {', '.join(map(str, self.markers[:5]))}"
                " (merged by line: dsh-memory check --repair)"
            )
        for record, kinds in self.flagged:
            out.append(f"FAIL verified with risk flag {', '.join(kinds)}: {record.id}")
        out.append("memory gate: " + ("FAILED" if self.failed else "passed"))
        return out


def gate(paths: StorePaths, since: str) -> GateReport:
    """``check --since REV``: every memory change of ``REV..HEAD`` and the working file, and
    what fails it: a break brought by the range (a line the range or the working file
    added; not one a person here accepted: CI's fresh home has none), conflict markers in
    the file, a verified record the range changed that carries a secret or an instruction
    flag. ``GIT_FAILED`` outside git or for an unknown REV.
    """
    top, rel = _repository(paths)
    base = resolve(top, since)
    report = GateReport(base)
    report.changes = memory_changes(paths, f"{base}..HEAD") + memory_changes(paths)
    got = read_file(paths.shared_file().path)
    data = got[1] if got else b""
    report.markers = conflict_marker_lines(data)
    with git.Blobs(top) as blobs:
        before = blobs.read(f"{base}:{rel}")
    old = set((before or b"").split(b"\n"))
    # A range that adds the file: its first version is no baseline, every line is judged.
    ok = accepted(paths)  # CI's fresh home has none; a person's own clone may
    for rid, found in all_breaks(paths, trust_first=before is not None).items():
        report.breaks += [
            b for b in found if b.line not in old and b.line_hash not in ok.get(rid, set())
        ]
    touched = {c.record.id for c in report.changes}
    current, _ = current_records(data)
    for rid in sorted(touched & current.keys()):
        record = current[rid]
        if record.governance.verification.value != "verified" or record.status.value != "active":
            continue
        kinds = [k for k in lint.kinds(lint.record_flags(record)) if k in GATE_FLAGS]
        if kinds:
            report.flagged.append((record, kinds))
    return report
