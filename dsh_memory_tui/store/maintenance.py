"""Maintenance of store files: compaction, ``check`` and ``check --repair``, and the migration
of files an earlier version of this program wrote (before it followed the host exactly).

What an earlier version wrote that the host cannot read:
- session files named by the full sha256 of the scopeKey (the host uses the first 32 hex);
- project and shared-project records keyed by the workspace path (the host: its rootId), which
  the host keeps as another project's lines and never shows;
- sourceRefs of kind ``record`` (copies) and ``bundle`` (imports): the host allows
  session|event|file|url|import only, so such a line is corrupt to it;
- forget tombstones with an empty title and content, corrupt to the host too.
``migrate_line`` turns each of those lines into its host-valid form; every rewrite uses it, so
nothing of ours is quarantined for an old mistake, and ``check --repair`` applies it to all.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, StoreError
from ..governance import tombstone_content, tombstone_title
from ..js_json import decode_js, loads_js
from ..jsonl import check_dir, check_path, read_file
from ..model import (
    ForeignLine,
    Location,
    ParsedLine,
    Record,
    RecordInvalid,
    Scope,
    _validate_value,
    content_hash,
    js_trim,
    parse_lines,
)
from ..paths import StoreFile, StorePaths
from .view import FileView
from .writer import Migrate, Rewrite

# The view of a store file (``MemoryStore.view``).
ViewOf = Callable[[StoreFile], FileView]
Build = Callable[[FileView], tuple[list[Record], None]]


@dataclass(frozen=True, slots=True)
class Repairs:
    """What ``check --repair`` may write, each through the store's one path for it."""

    rewrite: Callable[[StoreFile], bool]  # clean a file (compacted if oversized): still too big?
    replace: Callable[[StoreFile, Callable[[bytes], bytes | None]], None]  # its bytes, remade
    write: Callable[[StoreFile, Build], None]  # records appended


_OLD_SESSION_NAME = re.compile(r"[0-9a-f]{64}\.jsonl")
_OLD_REF_KINDS = {"record", "bundle"}


@dataclass(frozen=True, slots=True)
class Problem:
    path: Path
    line_no: int | None
    # corrupt | torn | oversized | unsafe | unreadable | migratable; in a shared file also
    # conflict | divergent | out-of-order | chain
    kind: str
    message: str
    repaired: bool = False


@dataclass(slots=True)
class CheckReport:
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files_checked: int = 0

    @property
    def clean(self) -> bool:
        return all(p.repaired for p in self.problems)


def _old_keys(paths: StorePaths) -> set[str]:
    """The scopeKeys an earlier version used for this workspace's project files."""
    return {str(paths.workspace), os.path.realpath(paths.workspace)}


def _migration(obj: dict[str, Any], paths: StorePaths) -> list[str]:
    """Fix, in place, what an earlier version of ours wrote; returns what was fixed."""
    fixed: list[str] = []
    if obj.get("scope") in (Scope.PROJECT.value, Scope.SHARED.value) and obj.get(
        "scopeKey"
    ) in _old_keys(paths):
        obj["scopeKey"] = paths.root_id
        fixed.append("keyed by the workspace path, not its rootId")
    gov = obj.get("governance")
    if isinstance(gov, dict) and isinstance(gov.get("sourceRefs"), list):
        refs = gov["sourceRefs"]
        if any(isinstance(r, dict) and r.get("kind") in _OLD_REF_KINDS for r in refs):
            new: list[Any] = []
            for ref in refs:
                if isinstance(ref, dict) and ref.get("kind") in _OLD_REF_KINDS:
                    ref = {**ref, "kind": "import"}
                if ref not in new:
                    new.append(ref)
            gov["sourceRefs"] = new[:32]
            fixed.append("sourceRefs of kind record/bundle (the host allows import)")
    if (
        obj.get("status") == "forgotten"
        and not js_trim(str(obj.get("title", "")))
        and not js_trim(str(obj.get("content", "")))
    ):
        obj["title"] = tombstone_title(str(obj.get("id")))
        obj["content"] = tombstone_content(None)
        obj["contentHash"] = content_hash(obj["content"])
        obj["tags"] = []
        fixed.append("an empty forget tombstone")
    return fixed


def migrate_line(entry: ParsedLine, location: Location, paths: StorePaths) -> Record | None:
    """The host-valid form of a line an earlier version of ours wrote, or None if the line is
    not one (then it stays corrupt, or foreign, as it is).
    """
    result = entry.result
    if isinstance(result, ForeignLine):
        if result.scope_key not in _old_keys(paths):
            return None
    elif not isinstance(result, RecordInvalid) or result.not_json:
        return None
    try:
        obj = loads_js(js_trim(decode_js(entry.raw)))
    except ValueError:
        return None
    if not isinstance(obj, dict) or not _migration(obj, paths):
        return None
    try:
        fixed = _validate_value(obj, location)
    except RecordInvalid:
        return None
    return fixed if isinstance(fixed, Record) else None


# ----------------------------------------------------------------- a project that moved


@dataclass(frozen=True, slots=True)
class AdoptResult:
    """What ``adopt`` did to one file: lines adopted per former rootId, ids left as they were
    (with why), and the ids now shown under this workspace's rootId.
    """

    path: Path
    adopted: dict[str, int] = field(default_factory=dict)
    left: list[tuple[str, str]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    @property
    def lines(self) -> int:
        return sum(self.adopted.values())


def other_roots(view: FileView, paths: StorePaths) -> dict[str, int]:
    """Lines of a project or shared-project file keyed to another workspace's rootId (the
    project was moved or copied): the host never shows them here. Lines keyed by this
    workspace's path (an earlier dsh-memory) are ``migrate_line``'s, not counted here.
    """
    if view.scope not in (Scope.PROJECT, Scope.SHARED):
        return {}
    if view.scope is Scope.SHARED:
        return view.clones()  # shown as team records; adopt still takes a moved project's
    return {
        key: n
        for key, n in view.foreign.items()
        if key.startswith("root:") and key != paths.root_id
    }


def _foreign_object(entry: ParsedLine) -> dict[str, Any] | None:
    try:
        obj = loads_js(js_trim(decode_js(entry.raw)))
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _other_root(result: object, roots: dict[str, int]) -> str | None:
    """The former rootId of a line ``adopt`` takes: a foreign line of a project file, or a
    teammate's record of a shared file (shown already, but not by this machine's host).
    """
    if isinstance(result, ForeignLine) and result.scope_key in roots:
        return result.scope_key
    if isinstance(result, Record) and result.scopeKey in roots:
        return result.scopeKey
    return None


@dataclass(slots=True)
class _Adoption:
    """What one decision of ``adoption`` found, filled in as its rewrite reads the lines."""

    adopted: dict[str, int] = field(default_factory=dict)
    left: dict[str, str] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)

    def result(self, path: Path) -> AdoptResult:
        return AdoptResult(path, dict(self.adopted), sorted(self.left.items()), list(self.ids))


def adoption(
    paths: StorePaths, from_root: str | None, migrate: Migrate
) -> Callable[[FileView], tuple[Rewrite | None, _Adoption]]:
    """The decision for ``MemoryStore.rewrite`` that adopts a file's lines of another rootId
    (``from_root``, or all of them) under this workspace's rootId: each line keeps its place
    and its fields but the scopeKey, and so each record keeps its history (the old bytes go to
    the ``.bak``). A line that would not be a valid record here, or whose id this workspace (or
    a second former root) already has, stays as it is; ``left`` says which and why.
    ``migrate``: the store's, for the other lines. USAGE, NOT_FOUND.
    """
    if from_root is not None and from_root == paths.root_id:
        raise StoreError(ErrorCode.USAGE, f"{from_root} is this workspace's own rootId")

    def decide(view: FileView) -> tuple[Rewrite | None, _Adoption]:
        found = _Adoption()
        roots = other_roots(view, paths)
        if from_root is not None:
            if from_root not in roots:
                raise StoreError(
                    ErrorCode.NOT_FOUND, f"{view.path} has no lines of {from_root} to adopt"
                )
            roots = {from_root: roots[from_root]}
        if not roots:
            return None, found
        got = read_file(view.path)
        location = view.location
        entries = parse_lines((got[1] if got else b"").split(b"\n"), location)
        owner: dict[str, str] = {}  # id -> the former root whose lines carry it
        clash: dict[str, str] = {}
        own = {
            e.result.id
            for e in entries
            if isinstance(e.result, Record) and e.result.scopeKey == location.scope_key
        }
        for entry in entries:
            former = _other_root(entry.result, roots)
            rid = getattr(entry.result, "id", None)
            if former is None or rid is None:
                continue
            if rid in own:
                clash[rid] = "this workspace has a record with that id"
            elif owner.setdefault(rid, former) != former:
                clash[rid] = "lines of two former workspaces carry that id"
        found.left.update(clash)
        if not owner.keys() - clash.keys():
            return None, found

        def adopt_line(entry: ParsedLine, loc: Location) -> Record | None:
            line = entry.result
            former = _other_root(line, roots)
            if former is None:
                return migrate(entry, loc)
            rid = getattr(line, "id", None) or "(no id)"
            if rid in clash:
                return None
            obj = _foreign_object(entry)
            if obj is None:
                found.left[rid] = "not a JSON object"
                return None
            obj["scopeKey"] = loc.scope_key
            try:
                record = _validate_value(obj, loc)
            except RecordInvalid as exc:
                found.left[rid] = f"not a valid record here: {exc.reason}"
                return None
            if not isinstance(record, Record):
                found.left[rid] = "from a newer schema: kept as it is"
                return None
            found.adopted[former] = found.adopted.get(former, 0) + 1
            if record.id not in found.ids:
                found.ids.append(record.id)
            return record

        return Rewrite(migrate=adopt_line), found

    return decide


def _migratable(view: FileView, paths: StorePaths) -> list[tuple[int, str]]:
    """(line number, what) of each line of the file an earlier version of ours wrote."""
    got = read_file(view.path)
    if got is None:
        return []
    out = []
    location = view.location
    for entry in parse_lines(got[1].split(b"\n"), location):
        if isinstance(entry.result, (RecordInvalid, ForeignLine)):
            try:
                obj = loads_js(js_trim(decode_js(entry.raw)))
            except ValueError:
                continue
            if migrate_line(entry, location, paths) is not None and isinstance(obj, dict):
                out.append((entry.first + 1, "; ".join(_migration(obj, paths))))
    return out


def _old_session_files(paths: StorePaths) -> list[Path]:
    try:
        names = os.listdir(paths.sessions_dir)
    except OSError:
        return []
    return sorted(paths.sessions_dir / n for n in names if _OLD_SESSION_NAME.fullmatch(n))


def _move_old_session_file(paths: StorePaths, view_of: ViewOf, old: Path) -> Path:
    """Give an old session file the host's name (the first 32 hex): renamed when no file has
    that name yet, else its lines appended to that file. Both locks held; nothing lost.
    """
    new = old.with_name(old.name[:32] + ".jsonl")
    old_view = view_of(paths.session_file_at(old))
    new_view = view_of(paths.session_file_at(new))
    with old_view.safe.locked(), new_view.safe.locked() as lock:
        got = read_file(old)
        data = got[1] if got else b""
        if data and not data.endswith(b"\n"):
            data += b"\n"
        if check_path(new):
            new_view.refresh()
            if new_view.unterminated_record:
                data = b"\n" + data
            lock.ensure_ours()
            new_view.safe.append(data)
        else:
            lock.ensure_ours()
            os.rename(old, new)
        for suffix in (".corrupt", ".bak"):
            src, dst = old.with_name(old.name + suffix), new.with_name(new.name + suffix)
            if not check_path(src):
                continue
            if suffix == ".corrupt" and check_path(dst):
                quarantined = read_file(src)
                if quarantined and quarantined[1]:
                    new_view.safe.append_corrupt_bytes(quarantined[1])
                os.unlink(src)
            elif not check_path(dst):
                os.rename(src, dst)
            else:
                os.unlink(src)  # the host's file has its own backup
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old)
    new_view.refresh()
    return new


def check(
    files: Sequence[StoreFile],
    paths: StorePaths,
    view_of: ViewOf,
    *,
    repair: Repairs | None = None,
) -> CheckReport:
    """Corrupt lines, torn tails, oversized and unsafe ``files``, what an earlier version of
    ours wrote (``migratable``), and what a merge without our driver left in a shared file.

    A file whose last line has no newline is a torn tail only if its lock can be taken
    (otherwise a write is in progress). With ``repair`` (the store's writes), every file with
    a problem is repaired (migratable lines made host-valid, corrupt lines and torn tails
    quarantined, an oversized file compacted, git's conflict markers merged by record id) and
    old session files are renamed.
    """
    report = CheckReport()
    for old in _old_session_files(paths):
        problem = Problem(
            old,
            None,
            "migratable",
            "a session file named by the full sha256 of its scopeKey (an earlier dsh-memory); "
            f"the host reads {old.name[:32]}.jsonl",
        )
        if repair is not None:
            try:
                _move_old_session_file(paths, view_of, old)
                problem = replace(problem, repaired=True)
            except StoreError as exc:
                report.notes.append(f"{old}: not renamed: {exc.message}")
        report.problems.append(problem)
    for file in files:
        report.files_checked += 1
        try:
            _check_file(view_of(file), paths, repair, report)
        except StoreError as exc:
            kind = "unsafe" if exc.code == ErrorCode.UNSAFE_PATH else "unreadable"
            report.problems.append(Problem(file.path, None, kind, exc.message))
    return report


def _check_team(view: FileView, repair: Repairs | None, report: CheckReport) -> bool:
    """What a merge without our driver leaves in a shared file (a hosted CI merges with none):
    git's conflict markers (True: the rest of the file's checks wait for their repair), and
    a record's newest revision decided two ways. ``repair`` merges the marked sides by record
    id (``team.merge.merge``) and appends each divergence's resolution.
    """
    from .. import team  # git's side of a shared file: only a check of one loads it
    from ..team.merge import merge

    path = view.path
    got = read_file(path)
    data = got[1] if got else b""
    marked = team.conflict_marker_lines(data)
    if marked:
        how = (
            "git conflict marker: shared.jsonl was merged by line, not by record id. Repair: "
            "dsh-memory check --repair (merges both sides by record id), and dsh-memory git "
            "install so the next merge needs none"
        )
        repaired = False
        if repair is not None:
            location = view.location

            def merged(data: bytes) -> bytes | None:
                if not team.conflict_marker_lines(data):
                    return None
                return merge(*team.split_conflicts(data), location).data

            repair.replace(view.file, merged)
            view.refresh()
            repaired = True
        report.problems.extend(Problem(path, n, "conflict", how, repaired) for n in marked)
        return not repaired
    late = team.out_of_order(r for lines in view.versions.values() for r in lines)
    for rid in sorted(late):
        lines = view.versions[rid]
        how = (
            f"{rid}: its current line is revision {lines[-1].governance.revision}, older than "
            f"an earlier line's {max(r.governance.revision for r in lines)} (a merge put it "
            "last): both programs show the older one. Repair: dsh-memory check --repair (puts "
            "its lines in revision order)"
        )
        report.problems.append(Problem(path, None, "out-of-order", how, repair is not None))
    if repair is not None and late:
        location = view.location
        repair.replace(view.file, lambda data: team.in_revision_order(data, location))
        view.refresh()
    split = team.divergences(view.versions)
    for d in split:
        how = (
            f"{d.record_id} revision {d.revision} was decided {len(d.lines)} ways (a merge "
            "without the dsh-memory driver): the host shows whichever line is last. Repair: "
            "dsh-memory check --repair (a new unverified revision; a different content becomes "
            "a rival record, K keeps one)"
        )
        report.problems.append(Problem(path, None, "divergent", how, repair is not None))
    if repair is not None and split:

        def build(v: FileView) -> tuple[list[Record], None]:
            out: list[Record] = []
            for d in team.divergences(v.versions):
                c = team.resolve_divergence(d.lines[0], d.lines[-1])
                out += [c.merged] + ([c.rival] if c.rival is not None else [])
            return out, None

        repair.write(view.file, build)
    return False


def _check_chains(view: FileView, paths: StorePaths, report: CheckReport) -> None:
    """Shared records whose history no program of ours could have written (``team.chain``),
    unless a person here accepted them: withheld from agents until then."""
    from ..team.chain import broken_chains

    for rid, reason in sorted(broken_chains(paths).items()):
        how = (
            f"{rid}: its history does not hold ({reason}): withheld from agents. After "
            f"review: dsh-memory check --repair --accept {rid} --reason '...', or verify it here"
        )
        report.problems.append(Problem(view.path, None, "chain", how))


def _check_file(
    view: FileView,
    paths: StorePaths,
    repair: Repairs | None,
    report: CheckReport,
) -> None:
    file = view.file
    check_dir(file.path.parent)
    for path in view.safe.paths:
        check_path(path)
    view.refresh()
    if not view.exists:
        return
    if view.unread is not None:  # past MAX_READ_BYTES: nothing of it to check or repair
        report.problems.append(Problem(file.path, None, "oversized", view.unread))
        return
    if file.scope is Scope.SHARED and _check_team(view, repair, report):
        return
    if file.scope is Scope.SHARED:
        _check_chains(view, paths, report)
    found: list[Problem] = []
    migratable = dict(_migratable(view, paths))
    for bad in view.corrupt:
        if bad.line_no in migratable:
            continue
        found.append(Problem(file.path, bad.line_no, "corrupt", bad.reason))
    for line_no, what in sorted(migratable.items()):
        found.append(
            Problem(
                file.path,
                line_no,
                "migratable",
                f"written by an earlier dsh-memory ({what}): the host cannot read it",
            )
        )
    if view.read_only:
        found.append(
            Problem(
                file.path,
                None,
                "oversized",
                f"{view.size} bytes is over the 8 MiB cap: read-only until compacted",
            )
        )
    torn_now = False
    if view.torn:
        try:
            with view.safe.locked():
                view.refresh()
                torn_now = view.torn
        except StoreError as exc:
            if exc.code != ErrorCode.LOCK_TIMEOUT:
                raise
            report.notes.append(f"{file.path}: a write is in progress (lock held)")
        if torn_now:
            found.append(
                Problem(
                    file.path,
                    view.reader.line_count + 1,
                    "torn",
                    "the last line has no newline: a writer crashed mid-line",
                )
            )
    if view.future:
        report.notes.append(
            f"{file.path}: {len(view.future)} line(s) from a newer schema, kept as they are"
        )
    foreign = {k: n for k, n in view.foreign.items() if k not in _old_keys(paths)}
    if foreign and not _OLD_SESSION_NAME.fullmatch(file.path.name):
        whose = "other users' profiles" if file.scope is Scope.USER else "other scopeKeys"
        report.notes.append(
            f"{file.path}: {sum(foreign.values())} line(s) of {whose}, kept as they are"
        )
    if repair is not None and found:
        still_big = repair.rewrite(file)
        found = [replace(p, repaired=not (p.kind == "oversized" and still_big)) for p in found]
    report.problems.extend(found)
