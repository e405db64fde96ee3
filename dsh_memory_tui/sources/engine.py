"""``Sources``: one workspace's citations, checked per file, not per citation.

Each cited path has one ``_FileState``: its stat key as last seen, one read of the file
(``FileText``: bytes, line index, hashes of every region asked, each kind's parse) and the
``Check`` of every citation asked of it. A check is one ``stat`` per file (once per ``batch``);
only a file whose (size, mtime, inode, device) changed is read again, once for all its
citations, and its checks are made again from that one read. A file that is gone is looked
for under git's rename detection (cached while git's index, HEAD and the file's directory
stay).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .. import git, symbols
from ..errors import ErrorCode, StoreError
from ..model import MAX_SOURCE_REFS, Record, Scope, SourceRef, Status, Verification
from ..paths import workspace_root_id
from . import history
from .citation import FILE_KIND, Citation, bad, judged_here, tag_for
from .kinds import BROKEN, LineRange, State, kind_of
from .snapshots import SecretCheck, Snapshots
from .symbol import find_elsewhere, outline_of
from .text import FileText, StatKey, Unreadable, check_regular, read_text, stat_key
from .verdict import Old, Verdict
from .verdicts import Verdicts, verdict_key

_UNPARSED = object()
_OK, _MISSING = State.OK, State.MISSING  # a class attribute of an enum costs 20x a global


class Check(NamedTuple):
    """One citation's state now and why, in words. ``now``: where to find it now: for
    ``moved``, the same text's place (other lines, or a renamed file); for ``changed`` in a
    renamed file, that file at the cited lines; else None.
    """

    ref: SourceRef
    citation: Citation | None
    state: State
    why: str
    now: Citation | None = None

    @property
    def broken(self) -> bool:
        return self.state in BROKEN

    @property
    def label(self) -> str:
        return self.citation.label if self.citation is not None else str(self.ref.id)

    @property
    def now_at(self) -> tuple[int, int] | None:
        """The lines the same text is at now (``moved``), or None."""
        now = self.now
        if self.state is not State.MOVED or now is None or now.start is None:
            return None
        assert now.end is not None
        return now.start, now.end

    def to_json(self) -> dict[str, object]:
        c = self.citation
        out: dict[str, object] = {
            "id": self.ref.id,
            "path": c.path if c else None,
            "startLine": c.start if c else None,
            "endLine": c.end if c else None,
            "contentHash": self.ref.contentHash,
            "state": self.state.value,
            "why": self.why,
        }
        if self.now is not None and c is not None:
            now: dict[str, object] = {}
            if self.now.path != c.path:
                now["path"] = self.now.path
            if self.now_at is not None:
                now["startLine"], now["endLine"] = self.now_at
            if now:
                out["nowAt"] = now
        return out


@dataclass(slots=True)
class _FileState:
    """One cited path as last seen: its stat key (None: gone), its text once read (or why it
    cannot be), and each citation's check against it."""

    key: StatKey | None
    text: FileText | None = None
    error: Unreadable | None = None
    checks: dict[tuple[str, object], Check] = field(default_factory=dict)
    batch: int = 0  # the batch it was made in (0: outside one)

    def trusted(self, key: StatKey | None, batch: int) -> bool:
        """Whether this state still stands for a file whose stat is ``key`` now: the same
        key, and not read so soon after a write that a same-size write could keep its mtime
        (``FileText.racy``: read again, once per batch)."""
        if key != self.key:
            return False
        return self.text is None or not self.text.racy or (batch != 0 and batch == self.batch)


class _Kept(NamedTuple):
    """A record's checks as of a generation of the files' states, whether it holds, and the
    states its checks were made from (they still stand while each is still its path's)."""

    record: Record
    generation: int
    checks: list[Check]
    holds: bool
    states: tuple[tuple[str, _FileState | None], ...] = ()

    @classmethod
    def of(
        cls,
        record: Record,
        checks: list[Check],
        generation: int,
        states: tuple[tuple[str, _FileState | None], ...] = (),
    ) -> _Kept:
        held = not needs_checking(record) or not any(c.broken for c in checks)
        return cls(record, generation, checks, held, states)


class Unlocated(StoreError):
    """INVALID_CITATION: re-verify cannot tell where some cited text is now. ``guesses``:
    each such citation's check and where to look first (the app prefills it), or None;
    ``found``: where the others are now.
    """

    def __init__(
        self,
        message: str,
        guesses: list[tuple[Check, Citation | None]],
        found: list[Citation] | None = None,
    ) -> None:
        super().__init__(ErrorCode.INVALID_CITATION, message)
        self.guesses = guesses
        self.found = found or []


class Sources:
    """Citations in one workspace (``root_id``: its rootId, default: from its path), with
    what each cited file held when last read, kept while its size, mtime, inode and device
    stay; snapshots under ``snapshots`` (``secret``: the secret detectors, without which none
    is kept); symbol verdicts kept across processes in ``verdicts`` (``sources.verdicts``).
    Not thread-safe: one per thread, or calls under the caller's lock.
    """

    def __init__(
        self,
        workspace: Path,
        snapshots: Path | None = None,
        root_id: str | None = None,
        secret: SecretCheck | None = None,
        verdicts: Path | None = None,
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self._top = os.fspath(self.workspace)
        self.root_id = root_id or workspace_root_id(self.workspace)
        self.snapshots = snapshots
        self.kept = Snapshots(snapshots, secret)
        self.verdicts = Verdicts(verdicts)
        self._files: dict[str, _FileState] = {}
        self._citations: dict[str, Citation | None] = {}
        self._renames: dict[str, tuple[object, str | None]] = {}
        self._listing: tuple[int, list[str]] | None = None  # per batch (its number)
        self._batches = 0
        # Cited text read by ``cite`` whose snapshot waits for the write (``keep_snapshots``).
        self._pending: dict[str, bytes] = {}
        # Within a ``batch``: each path's stat key and each directory's real path, taken once.
        self._stats: dict[str, StatKey | None] | None = None
        self._real_dirs: dict[str, str] | None = None
        self.reads = 0  # files read so far (tests bound the work with it)
        # Moves whenever a known path's stat changes: a record's checks made at the same
        # generation still hold (``checks`` in a batch: no per-citation work at all).
        self._generation = 0
        self._restated = False  # every known path stat'ed in this batch
        self._top_fd: int | None = None  # the workspace, open in a batch: shorter stats
        self._by_record: dict[str, _Kept] = {}
        self._holding: dict[int, tuple[object, int, list[Record]]] = {}
        # The last ``report``: its records (held, so their ids stay theirs), the generation
        # and its answer; and how many records' checks could not be kept (a file gone).
        self._reported: tuple[list[Record], tuple[int, ...], int, list[RecordSources]] | None = None
        self._unkept = 0

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Check many citations as of one moment: each file is stat'ed once (``report``)."""
        if self._stats is not None:
            yield
            return
        self._stats, self._real_dirs = {}, {}
        self._batches += 1
        self._restated = False
        with contextlib.suppress(OSError):  # else each stat walks the whole path
            self._top_fd = os.open(self._top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield
        finally:
            self._stats = self._real_dirs = None
            self._restated = False
            if self._top_fd is not None:
                os.close(self._top_fd)
                self._top_fd = None
            self.verdicts.flush()

    def citation(self, ref: SourceRef) -> Citation | None:
        """``Citation.from_ref``, parsed once per id."""
        got = self._citations.get(ref.id, _UNPARSED)
        if got is _UNPARSED:
            got = self._citations[ref.id] = Citation.from_ref(ref)
        return got  # type: ignore[return-value]

    # ----------------------------------------------------------------- reading files

    def _stat(self, rel: str) -> StatKey | None:
        stats = self._stats
        if stats is not None and rel in stats:
            return stats[rel]
        try:
            if self._top_fd is not None:
                key: StatKey | None = stat_key(os.stat(rel, dir_fd=self._top_fd))
            else:
                key = stat_key(os.stat(os.path.join(self._top, rel)))
        except OSError:  # gone, or a directory on the way can no longer be searched
            key = None
        if stats is not None:
            stats[rel] = key
        return key

    def _real_dir(self, directory: str) -> str:
        dirs = self._real_dirs
        if dirs is None:
            return os.path.realpath(directory)
        got = dirs.get(directory)
        if got is None:
            got = dirs[directory] = os.path.realpath(directory)
        return got

    def _state(self, rel: str) -> _FileState:
        """The path's state as of its stat now: kept while the key stays, else a new one."""
        key = self._stat(rel)
        state = self._files.get(rel)
        batch = self._batches if self._stats is not None else 0
        if state is None or not state.trusted(key, batch):
            state = self._replace(rel, _FileState(key, batch=batch))
        return state

    def _replace(self, rel: str, state: _FileState) -> _FileState:
        if rel in self._files:
            self._generation += 1
        self._files[rel] = state
        return state

    def _restat(self) -> None:
        """Every known path stat'ed once (in a batch): what changed gets a new state."""
        stats = self._stats
        assert stats is not None
        top, fd, stat = os.path.join(self._top, ""), self._top_fd, os.stat
        batch = self._batches
        # Only values are replaced while iterating (no key is added or removed).
        for rel, state in self._files.items():
            key = stats.get(rel, _UNPARSED)
            if key is _UNPARSED:
                try:
                    st = stat(rel, dir_fd=fd) if fd is not None else stat(top + rel)
                    key = stats[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
                except OSError:
                    key = stats[rel] = None
            if key == state.key and (state.text is None or not state.text.racy):
                continue  # the usual case, without a call
            if not state.trusted(key, batch):  # type: ignore[arg-type]
                self._replace(rel, _FileState(key, batch=batch))  # type: ignore[arg-type]
        self._restated = True

    def _read(self, rel: str) -> FileText:
        """The file read now (``Unreadable`` when it cannot be); its state takes the read."""
        self.reads += 1
        text = read_text(self._top, rel, self._real_dir)
        batch = self._batches if self._stats is not None else 0
        self._replace(rel, _FileState(text.key, text, batch=batch))
        return text

    def _text(self, rel: str, state: _FileState) -> FileText:
        """The state's text, read once (``Unreadable`` when it cannot be)."""
        if state.text is not None:
            return state.text
        if state.error is not None:
            raise state.error
        try:
            self.reads += 1
            state.text = read_text(self._top, rel, self._real_dir)
        except Unreadable as exc:
            state.error = exc
            raise
        return state.text

    def text_now(self, rel: str) -> FileText | None:
        """The file's text as of its stat now (read only if it changed), or None."""
        state = self._state(rel)
        if state.key is None:
            return None
        try:
            return self._text(rel, state)
        except Unreadable:
            return None

    # ----------------------------------------------------------------- citing

    def cite(self, citation: Citation, tag: str | None = None) -> SourceRef:
        """The ``file`` sourceRef of ``citation`` with today's hash (``tag``: the workspace
        tag a user-scope record's citation is stored with); its text waits to be kept as a
        snapshot until ``keep_snapshots``. INVALID_CITATION: missing, outside, not a regular
        file, a range past the file's end, lines of a binary file, an id over 256 bytes.
        """
        if tag is not None:
            citation = citation.tagged(tag)
        citation.check_length()
        try:
            text = self._read(citation.path)
        except Unreadable as exc:
            raise exc.error() from None
        digest, data = kind_of(citation).cite(text, citation)
        self._pending[digest] = data
        if citation.symbol is not None:  # its first check, as of this read: no parse then
            self._judged(text, citation, digest, lambda: data)
        return SourceRef(kind=FILE_KIND, id=citation.ref_id, contentHash=digest)

    def cite_all(
        self, specs: Iterable[str | Citation], tag: str | None = None, beside: int = 0
    ) -> list[SourceRef]:
        """``cite`` for each (``PATH[:START-END]`` strings or citations), in order, once each.
        Every count, id and file size is checked before any file is read: more than 32 refs
        with the ``beside`` ones (INVALID_CITATION) reads nothing and keeps nothing.
        """
        self._pending.clear()
        citations: dict[str, Citation] = {}
        for spec in specs:
            citation = (spec if isinstance(spec, Citation) else Citation.parse(spec)).tagged(tag)
            citations.setdefault(citation.ref_id, citation)
            if len(citations) + beside > MAX_SOURCE_REFS:
                raise bad(
                    f"more than {MAX_SOURCE_REFS - beside} citations: the host allows at most "
                    f"{MAX_SOURCE_REFS} source refs"
                )
        for citation in citations.values():
            citation.check_length()
            self._check_file(citation.path)
        return [self.cite(c) for c in citations.values()]

    def _check_file(self, rel: str) -> None:
        """INVALID_CITATION unless ``rel`` names a regular file within the bound (no read)."""
        try:
            st = os.stat(os.path.join(self._top, rel))
        except OSError:
            raise bad(f"{rel}: no such file in the workspace") from None
        try:
            check_regular(rel, st)
        except Unreadable as exc:
            raise exc.error() from None

    def keep_snapshots(self, refs: Iterable[SourceRef]) -> None:
        """Keep the snapshot of each of ``refs`` cited by the last ``cite_all`` (after the
        write that stores them: a refused write leaves none behind)."""
        pending, self._pending = self._pending, {}
        for ref in refs:
            data = pending.get(ref.contentHash) if isinstance(ref.contentHash, str) else None
            if data is not None:
                self.kept.keep(ref.contentHash, data)  # type: ignore[arg-type]
        self.verdicts.flush()

    # ----------------------------------------------------------------- checking

    def check(self, ref: SourceRef, here: bool = True) -> Check:
        """``ref``'s state now (a ``file`` ref; any other kind is ``ok``); ``here`` False:
        made in another workspace, ``elsewhere`` (not checked)."""
        if ref.kind != FILE_KIND:
            return Check(ref, None, State.OK, f"a {ref.kind} ref: nothing to check")
        return self._check(ref, self.citation(ref), here)

    def _check(self, ref: SourceRef, citation: Citation | None, here: bool) -> Check:
        if citation is None:
            return Check(ref, None, State.MISSING, "not a path inside the workspace")
        if not here:
            where = citation.workspace or "a workspace not recorded"
            return Check(
                ref,
                citation,
                State.ELSEWHERE,
                f"cited in another workspace ({where}): not checked here",
            )
        # In a batch every known path was stat'ed once (``_restat``): its state is current.
        state = self._files.get(citation.path) if self._restated else None
        if state is None:
            state = self._state(citation.path)
        if state.key is None:  # gone: where git says it went may change without a stat
            return self._judge(ref, citation, state)
        key = (ref.id, ref.contentHash)
        got = state.checks.get(key)
        if got is not None:
            return got
        if citation.start is not None and citation.symbol is None:
            got = self._lines_held(ref, citation, state)
        if got is None:
            got = self._judge(ref, citation, state)
            if _searched(citation, got):  # other files may change what it finds: not kept
                return got
        state.checks[key] = got
        return got

    def _lines_held(self, ref: SourceRef, citation: Citation, state: _FileState) -> Check | None:
        """A line range whose text hashes as cited: ``ok`` by the short way (most citations of
        most checks); None for any other (``_judge`` says what it is)."""
        text = state.text
        if text is None:
            if state.error is not None:
                return None
            try:
                text = self._text(citation.path, state)
            except Unreadable:
                return None
        assert citation.end is not None and citation.start is not None
        why = LineRange.unchanged(text, citation.start, citation.end, ref.contentHash)
        return None if why is None else Check(ref, citation, State.OK, why)

    def _judge(self, ref: SourceRef, citation: Citation, state: _FileState) -> Check:
        want = ref.contentHash
        if state.key is None:
            return self._gone(ref, citation)
        try:
            text = self._text(citation.path, state)
        except Unreadable as exc:
            return Check(ref, citation, State.MISSING if exc.gone else State.CHANGED, exc.reason)
        # The host allows only sha256:<64 hex>; anything else cannot be compared.
        if not isinstance(want, str) or len(want) != 71 or not want.startswith("sha256:"):
            return Check(ref, citation, State.OK, "the file is there (the ref has no hash)")
        kind = kind_of(citation)
        verdict = self._judged(text, citation, want, lambda: self.kept.read(want, kind.digest_of))
        if verdict.state is State.MISSING and citation.symbol is not None:
            moved = self.symbol_elsewhere(citation, want)
            if moved is not None:
                return moved_symbol(self, ref, citation, moved)
        now = None
        if verdict.now is not None or verdict.symbol is not None:
            now = citation.at(lines=verdict.now, symbol=verdict.symbol)
        return Check(ref, citation, verdict.state, verdict.why, now)

    def _judged(self, text: FileText, citation: Citation, want: str, old: Old) -> Verdict:
        """The kind's verdict on ``text``; a symbol's from the kept verdicts when this very
        file (its sha256) was judged so before, else parsed and kept (``verdicts``)."""
        kind = kind_of(citation)
        if citation.symbol is None:
            return kind.judge(text, citation, want, old)
        key = verdict_key(text.sha, citation.path, citation.symbol, want)
        got = self.verdicts.get(key)
        if got is None:
            got = kind.judge(text, citation, want, old)
            self.verdicts.put(key, got)
        return got

    def _gone(self, ref: SourceRef, citation: Citation) -> Check:
        """A cited file that is gone: ``moved`` or ``changed`` where git says it was renamed
        to, else ``missing``."""
        to = self.renamed(citation.path)
        if to is None and citation.symbol is not None and isinstance(ref.contentHash, str):
            moved = self.symbol_elsewhere(citation, ref.contentHash)
            if moved is not None:
                return moved_symbol(self, ref, citation, moved)
        if to is None:
            return Check(
                ref,
                citation,
                State.MISSING,
                "the file is gone (deleted, or moved where git does not see a rename)",
            )
        moved = citation.at(path=to)
        inner = self._judge(ref, moved, self._state(to))
        if inner.state is State.OK:
            return Check(ref, citation, State.MOVED, f"renamed to {to}, the text unchanged", moved)
        if inner.state is State.MOVED:
            return Check(ref, citation, State.MOVED, f"renamed to {to}; {inner.why}", inner.now)
        return Check(ref, citation, inner.state, f"renamed to {to}; {inner.why}", moved)

    def symbol_elsewhere(self, citation: Citation, want: str) -> Citation | None:
        """Where a symbol gone from its file is now: another file of its language (at most
        ``symbols.MAX_SEARCHED_FILES``, each read only if it holds the name, parsed once per
        version) defining the same last name with the cited hash (moved); else the first
        defining its very name once (moved and changed); None when none does."""
        assert citation.symbol is not None
        family = symbols.family(symbols.grammar_for(citation.path))
        needle = citation.symbol.rsplit(".", 1)[-1].encode()
        searched, same_name = 0, None
        for rel in self.workspace_files():
            if rel == citation.path or symbols.family(symbols.grammar_for(rel)) != family:
                continue
            searched += 1
            if searched > symbols.MAX_SEARCHED_FILES:
                break
            text = self.text_now(rel)
            if text is None or needle not in text.data:
                continue
            found = find_elsewhere({rel: text}, citation, want)
            if found is not None:
                return Citation(rel, workspace=citation.workspace, symbol=found[1].name)
            if same_name is None and _defines(text, rel, citation.symbol):
                same_name = rel
        if same_name is not None:  # moved and changed: the diff shows it there
            return Citation(same_name, workspace=citation.workspace, symbol=citation.symbol)
        return None

    def symbol_for(self, citation: Citation) -> Citation | None:
        """The symbol citation to offer for a line range that lies inside one function or
        class (``Outline.anchor``): it would follow the code; None for any other."""
        if citation.kind != "lines" or citation.start is None or citation.end is None:
            return None
        text = self.text_now(citation.path)
        got = outline_of(text, citation.path) if text is not None else None
        if not isinstance(got, symbols.Outline):
            return None
        symbol = got.anchor(citation.start, citation.end)
        if symbol is None:
            return None
        return Citation(citation.path, workspace=citation.workspace, symbol=symbol.name)

    def workspace_files(self) -> list[str]:
        """The workspace's files (git's tracked and untracked-not-ignored, else a walk that
        skips hidden directories), listed once per ``batch`` (a new file anywhere counts)."""
        key = self._batches if self._stats is not None else None
        if key is not None and self._listing is not None and self._listing[0] == key:
            return self._listing[1]
        listed = git.attempt(
            self.workspace, "ls-files", "-z", "--cached", "--others", "--exclude-standard"
        )
        if listed is not None:
            files = [f for f in listed.decode("utf-8", "surrogateescape").split("\0") if f]
        else:
            files = _walk(self.workspace, symbols.MAX_SEARCHED_FILES * 4)
        if key is not None:
            self._listing = (key, files)
        return files

    def renamed(self, rel: str) -> str | None:
        """Where git's rename detection says the gone file ``rel`` went (cached while the
        file's directory, git's index and HEAD stay), or None."""
        key = tuple(
            self._stat(p) for p in (os.path.dirname(rel) or ".", ".git/index", ".git/HEAD", ".git")
        )
        got = self._renames.get(rel)
        if got is not None and got[0] == key:
            return got[1]
        to = history.renamed(self.workspace, rel)
        if to is not None and self._stat(to) is None:
            to = None
        self._renames[rel] = (key, to)
        return to

    def here(self, record: Record, citation: Citation | None) -> bool:
        """Whether ``record``'s ``citation`` is judged in this workspace (``judged_here``)."""
        return citation is None or judged_here(record, citation, self.root_id)

    def checks(self, record: Record) -> list[Check]:
        """Each ``file`` ref of ``record``, checked (``elsewhere`` when made in another
        workspace). In a batch, the record's last checks while no cited file's stat changed
        (every known file is stat'ed once per batch)."""
        return self._kept(record).checks

    def _kept(self, record: Record) -> _Kept:
        """``record``'s checks and whether it holds: kept in a batch while the generation
        stays (not when a file is gone: its rename may show up without a stat change)."""
        if self._stats is None:
            return _Kept.of(record, self._checks_now(record), -1)
        if not self._restated:
            self._restat()
        got = self._by_record.get(record.id)
        if got is not None and got.record is record:
            if got.generation == self._generation:
                return got
            files = self._files
            if all(files.get(rel) is state for rel, state in got.states):
                # Other files changed, not this record's: its checks stand.
                got = self._by_record[record.id] = got._replace(generation=self._generation)
                return got
        generation = self._generation
        files, parsed, root = self._files, self._citations, self.root_id
        checks: list[Check] = []
        states: list[tuple[str, _FileState | None]] = []
        broken = missing = False
        # ``_checks_now`` and the states its checks were made from, in one loop (thousands
        # of records a check).
        for ref in record.governance.sourceRefs:
            if ref.kind != FILE_KIND:
                continue
            known = parsed.get(ref.id, _UNPARSED)
            citation = self.citation(ref) if known is _UNPARSED else known
            if citation is None:
                c = self._check(ref, None, True)
            else:
                assert isinstance(citation, Citation)
                c = self._check(ref, citation, judged_here(record, citation, root))
                states.append((citation.path, files.get(citation.path)))
            checks.append(c)
            if c.now is not None:
                states.append((c.now.path, files.get(c.now.path)))
            if c.state is not _OK and c.state in BROKEN:
                broken = True
                missing = missing or c.state is _MISSING
        held = not broken or not needs_checking(record)
        got = _Kept(record, generation, checks, held, tuple(states))
        if generation == self._generation and not missing:
            self._by_record[record.id] = got
        else:
            self._unkept += 1
        return got

    def _checks_now(self, record: Record) -> list[Check]:
        out = []
        root, parsed = self.root_id, self._citations
        for ref in record.governance.sourceRefs:
            if ref.kind == FILE_KIND:
                citation = parsed.get(ref.id, _UNPARSED)
                if citation is _UNPARSED:
                    citation = self.citation(ref)
                here = citation is None or judged_here(record, citation, root)  # type: ignore[arg-type]
                out.append(self._check(ref, citation, here))  # type: ignore[arg-type]
        return out

    def broken(self, record: Record) -> list[Check]:
        """``record``'s changed or missing citations."""
        return [c for c in self.checks(record) if c.broken]

    def holds(self, record: Record) -> bool:
        """False when ``record`` is verified and active and a citation changed or is missing:
        it is then not served, not pinned, and waits for re-review.
        """
        return self._kept(record).holds

    def holding(self, records: Iterable[Record]) -> list[Record]:
        """Those of ``records`` that ``holds``, checked as of one moment (a batch): one stat
        per cited file; a record whose files' stats did not change since its last check is
        not checked again (what a long-running server asks at every request)."""
        out = []
        with self.batch():
            if not self._restated:
                self._restat()
            by_record, generation = self._by_record, self._generation
            # The same list again (a server's cache of a file's served records) with no
            # cited file changed since: the same answer.
            memo = self._holding.get(id(records))
            if memo is not None and memo[0] is records and memo[1] == generation:
                return memo[2]
            for record in records:
                got = by_record.get(record.id)
                if got is None or got.record is not record or got.generation != generation:
                    got = self._kept(record)
                if got.holds:
                    out.append(record)
            if isinstance(records, list) and generation == self._generation:
                if len(self._holding) >= 16:
                    self._holding.clear()
                self._holding[id(records)] = (records, generation, out)
        return out

    # ----------------------------------------------------------------- where it is now

    def old_text(self, check: Check) -> tuple[bytes | None, str]:
        """The cited text as it was and where it came from, or None and why it cannot be had."""
        citation = check.citation
        if citation is None:
            return None, "it names no file inside the workspace"
        kind = kind_of(citation)
        kept = self.kept.read(check.ref.contentHash, kind.digest_of)
        if kept is not None:
            return kind.text_of(kept), "the snapshot taken when it was cited"

        def cited_in(blob: bytes) -> tuple[str, bytes] | None:
            text = FileText((0, 0, 0, 0), blob, b"\x00" in blob[:8192])
            try:
                return kind.cite(text, citation)
            except StoreError:
                return None

        old, origin = history.git_text(
            self.workspace, citation.path, check.ref.contentHash, cited_in
        )
        return (kind.text_of(old) if old is not None else None), origin

    def locate(self, check: Check) -> Citation | None:
        """Where what ``check`` cites is now: itself when ok, the new place when moved, the
        lines the changed text is at now (found from the cited text as it was); None when it
        cannot be found (gone, nothing of it left, or its old text is not at hand)."""
        citation = check.citation
        if citation is None or check.state is State.ELSEWHERE:
            return None
        if check.state is State.OK:
            return citation
        if check.state is State.MOVED:
            return check.now
        place = check.now or citation
        text = self.text_now(place.path)
        if text is None:
            return None
        old, _ = self.old_text(check)
        return kind_of(place).locate(text, place, old)

    def guess(self, check: Check) -> Citation | None:
        """Where to look first for text ``locate`` cannot find (what the app prefills)."""
        citation = check.citation
        if citation is None:
            return None
        place = check.now or citation
        text = self.text_now(place.path)
        if text is None:
            return None
        old, _ = self.old_text(check)
        return kind_of(place).guess(text, place, old)

    def reanchored(
        self, record: Record, citations: Sequence[str | Citation] | None = None
    ) -> list[SourceRef]:
        """``record``'s refs with each citation re-made where its text is now (``locate``:
        moved, renamed, moved and changed), with today's hash; ``citations``: these instead
        of its citations. A user-scope record's take this workspace's tag. ``Unlocated``
        (INVALID_CITATION naming ``--cite``) when some cited text cannot be found.
        """
        tag = tag_for(record.scope, self.root_id)
        refs = record.governance.sourceRefs
        if citations is not None:
            beside = sum(1 for r in refs if r.kind != FILE_KIND)
            return with_citations(refs, self.cite_all(citations, tag, beside))
        found: list[Citation] = []
        lost: list[tuple[Check, Citation | None]] = []
        for check in self.checks(record):
            if check.state is State.ELSEWHERE and check.citation is not None:
                if check.citation.workspace is not None:
                    lost.append((check, None))  # made in another workspace: judged there
                    continue
                # Made in a workspace no one wrote down: it holds here if its text is here.
                check = self.check(check.ref)
            place = self.locate(check)
            if place is None:
                lost.append((check, self.guess(check)))
            else:
                found.append(place)
        if lost:
            raise Unlocated(_unlocated_message(record, lost), lost, found)
        return with_citations(refs, self.cite_all(found, tag))

    # ----------------------------------------------------------------- snapshots, diff

    def snapshot(self, digest: object) -> bytes | None:
        """The cited text kept when ``digest`` was cited (by lines or whole), if kept."""
        from .text import cited_hash

        return self.kept.read(digest, cited_hash)

    def prune(self, cited: Iterable[object]) -> int:
        """Remove every snapshot whose hash is not in ``cited``; the number removed."""
        return self.kept.prune(cited)

    def diff(self, check: Check) -> list[str]:
        """The cited text then against the file now (``diff.diff_lines``)."""
        from .diff import diff_lines

        return diff_lines(self, check)


def _unlocated_message(record: Record, lost: list[tuple[Check, Citation | None]]) -> str:
    parts, cites = [], []
    for check, near in lost:
        if check.state is State.ELSEWHERE:
            why = "it was cited in another workspace; re-verify it there, or cite it here"
        else:
            why = "the cited text cannot be found in the file now"
        hint = f" (perhaps {near.label})" if near is not None else ""
        parts.append(f"{check.label}: {why}{hint}")
        cites.append(f"--cite {(near.label if near is not None else check.label)}")
    return (
        f"{record.id}: " + "; ".join(parts) + ". Say where each is now: dsh-memory reverify "
        f"{record.id} {' '.join(cites)} (one --cite for every citation the memory keeps)"
    )


def file_refs(record: Record) -> list[SourceRef]:
    return [r for r in record.governance.sourceRefs if r.kind == FILE_KIND]


def needs_checking(record: Record) -> bool:
    """Whether a broken citation changes what ``record`` is: verified and active."""
    return (
        record.status is Status.ACTIVE
        and record.governance.verification is Verification.VERIFIED
        and any(r.kind == FILE_KIND for r in record.governance.sourceRefs)
    )


def with_citations(refs: Sequence[SourceRef], cited: Sequence[SourceRef]) -> list[SourceRef]:
    """``refs`` with their file refs replaced by ``cited``; INVALID_CITATION past 32."""
    out = [r for r in refs if r.kind != FILE_KIND]
    seen = set()
    for ref in cited:
        if (ref.id, ref.contentHash) not in seen:
            seen.add((ref.id, ref.contentHash))
            out.append(ref)
    if len(out) > MAX_SOURCE_REFS:
        raise bad(f"{len(out)} source refs: the host allows at most {MAX_SOURCE_REFS}")
    return out


def placed(refs: Sequence[SourceRef], scope: Scope, root_id: str) -> list[SourceRef]:
    """``refs`` as a record copied into ``scope`` from this workspace keeps them: into the
    user scope, untagged citations take this workspace's tag (they were judged here)."""
    tag = tag_for(scope, root_id)
    if tag is None:
        return list(refs)
    out = []
    for ref in refs:
        citation = Citation.from_ref(ref)
        if citation is not None and citation.workspace is None:
            ref = ref.model_copy(update={"id": citation.tagged(tag).ref_id})
        out.append(ref)
    return out


class RecordSources(NamedTuple):
    """A record and its citations checked now (a tuple: thousands are made per check);
    ``needs_review``: verified and active, and a citation changed or is missing."""

    record: Record
    checks: list[Check]
    needs_review: bool


def report(sources: Sources, records: Iterable[Record]) -> list[RecordSources]:
    """Each of ``records`` that cites a file, with its citations checked now."""
    records = records if isinstance(records, list) else list(records)
    out = []
    with sources.batch():
        if not sources._restated:
            sources._restat()
        # The same records again (the app's periodic check) with no cited file changed: the
        # same answer, at one stat per file.
        ids, generation, unkept = tuple(map(id, records)), sources._generation, sources._unkept
        memo = sources._reported
        if memo is not None and memo[2] == generation and memo[1] == ids:
            return list(memo[3])
        for record in records:
            kept = sources._kept(record)
            if kept.checks:  # one per file ref: none when it cites no file
                out.append(RecordSources(record, kept.checks, not kept.holds))
        if sources._generation == generation and sources._unkept == unkept:
            sources._reported = (list(records), ids, generation, out)
    return list(out)


def cited_hashes(records: Iterable[Record]) -> set[str]:
    """Every hash a ``file`` ref of ``records`` holds (what ``Sources.prune`` keeps)."""
    return {
        ref.contentHash
        for r in records
        for ref in r.governance.sourceRefs
        if ref.kind == FILE_KIND and isinstance(ref.contentHash, str)
    }


def _searched(citation: Citation, check: Check) -> bool:
    """Whether ``check`` came from searching other files (a symbol gone from its file)."""
    return citation.symbol is not None and (
        check.state is State.MISSING or (check.now is not None and check.now.path != citation.path)
    )


def moved_symbol(sources: Sources, ref: SourceRef, citation: Citation, now: Citation) -> Check:
    """``moved`` to ``now`` when its text there is as cited, else ``changed`` there."""
    text = sources.text_now(now.path)
    got = outline_of(text, now.path) if text is not None else None
    if isinstance(got, symbols.Outline) and now.symbol is not None:
        found = got.find(now.symbol, str(ref.contentHash))
        if found is not None:
            return Check(ref, citation, State.MOVED, f"now {now.label}, the text unchanged", now)
    return Check(ref, citation, State.CHANGED, f"moved to {now.label} and changed", now)


def _defines(text: FileText, rel: str, name: str) -> bool:
    got = outline_of(text, rel)
    return isinstance(got, symbols.Outline) and len(got.named(name)) == 1


def _walk(top: Path, most: int) -> list[str]:
    """Up to ``most`` files under ``top``, hidden directories left out."""
    out: list[str] = []
    for directory, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        rel = os.path.relpath(directory, top)
        for name in sorted(files):
            out.append(name if rel == "." else f"{rel}/{name}")
            if len(out) >= most:
                return out
    return out
