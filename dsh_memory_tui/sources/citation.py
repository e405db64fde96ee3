"""What a citation names, as typed and as stored: ``PATH``, ``PATH:START-END``,
``PATH#SYMBOL`` (a definition by its dotted name: ``symbols``), and for a citation made on a
user-scope record the workspace it was made in, ``root:<16 hex>//PATH...``.

The id is the host's ``file`` sourceRef ``id`` (any text of at most 256 bytes without control
characters), so everything a citation needs to be judged lives in fields the host keeps
through its own rewrites (it drops unknown fields).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal, NamedTuple

from ..errors import ErrorCode, StoreError
from ..model import MAX_ID_BYTES, Record, Scope, SourceRef, well_formed
from ..symbols import valid_name

FILE_KIND: Literal["file"] = "file"
_RANGE = re.compile(r"^(?P<path>.+):(?P<start>[0-9]+)-(?P<end>[0-9]+)$")
# PATH#SYMBOL: the first "#" of the path's last part starts the symbol.
_SYMBOL = re.compile(r"^(?P<path>(?:.*/)?[^/#]+)#(?P<name>[^/]*)$")
# The workspace a user-scope citation was made in: the first 16 hex of its rootId, then "//"
# (which no relative path we store holds).
_TAGGED = re.compile(r"^(?P<tag>root:[0-9a-f]{16})//(?P<rest>.+)$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A relative path with single "/" between parts and nothing to clean (but "." and ".." parts).
_PLAIN = re.compile(r"[^/\\\x00-\x1f\x7f](?:[^/\\\x00-\x1f\x7f]|/(?!/))*(?<!/)\Z")
_DOTS = {".", ".."}
TAG_HEX = 16


def bad(message: str) -> StoreError:
    return StoreError(ErrorCode.INVALID_CITATION, message)


def workspace_tag(root_id: str) -> str:
    """The tag naming a workspace in a citation's id: ``root:`` and 16 hex of its rootId."""
    return "root:" + root_id.removeprefix("root:")[:TAG_HEX]


class Citation(NamedTuple):
    """A cited file (``path``, relative, with ``/``) and lines (None, None: the whole file);
    ``workspace``: the tag of the workspace it was made in, when it is stored with one (a
    user-scope record's citation), else None (judged in the workspace whose record it is).
    A named tuple: made once per ref id, thousands at a time.
    """

    path: str
    start: int | None = None
    end: int | None = None
    workspace: str | None = None
    symbol: str | None = None  # PATH#SYMBOL: a definition by its dotted name (no lines)

    @property
    def kind(self) -> str:
        """Which ``kinds.Kind`` judges it: ``symbol``, ``lines`` or ``file``."""
        if self.symbol is not None:
            return "symbol"
        return "file" if self.start is None else "lines"

    @property
    def label(self) -> str:
        """``PATH``, ``PATH:START-END`` or ``PATH#SYMBOL``: what a reviewer reads (no
        workspace tag)."""
        if self.symbol is not None:
            return f"{self.path}#{self.symbol}"
        return self.path if self.start is None else f"{self.path}:{self.start}-{self.end}"

    @property
    def ref_id(self) -> str:
        """The sourceRef's id: the label, after ``root:<16 hex>//`` when tagged."""
        return self.label if self.workspace is None else f"{self.workspace}//{self.label}"

    @property
    def lines(self) -> str:
        if self.symbol is not None:
            return self.symbol
        return "the whole file" if self.start is None else f"lines {self.start}-{self.end}"

    def __str__(self) -> str:
        return self.label

    def at(
        self,
        path: str | None = None,
        lines: tuple[int, int] | None = None,
        symbol: str | None = None,
    ) -> Citation:
        """The same citation at another path and/or lines, or a symbol by another name (the
        tag kept)."""
        moved = self if path is None else self._replace(path=path)
        if lines is not None and self.start is not None:
            moved = moved._replace(start=lines[0], end=lines[1])
        if symbol is not None and self.symbol is not None:
            moved = moved._replace(symbol=symbol)
        return moved

    def tagged(self, tag: str | None) -> Citation:
        return self if tag == self.workspace else self._replace(workspace=tag)

    @classmethod
    def parse(cls, spec: str) -> Citation:
        """``[root:<16 hex>//]PATH[:START-END|#SYMBOL]`` as typed (``--cite``, the form) or
        stored. INVALID_CITATION when it is not one: an absolute path, ``..`` out of the
        workspace, a bad range, a symbol that is not a dotted name.
        """
        usual = _usual(spec)
        if usual is not None:
            return cls(*usual)
        named = _usual_symbol(spec)
        if named is not None:
            return cls(named[0], symbol=named[1])
        spec = spec.strip()
        tag = None
        tagged = _TAGGED.match(spec)
        if tagged is not None:
            tag, spec = tagged["tag"], tagged["rest"]
        if not spec:
            raise bad("a citation needs a path: PATH, PATH:START-END or PATH#SYMBOL")
        hashed = _SYMBOL.match(spec)
        if hashed is not None:
            name = hashed["name"]
            if not valid_name(name):
                raise bad(
                    f"{spec}: {name!r} is not a symbol name (dotted names: Client.fetch, "
                    "handleLogin)"
                )
            return cls(_relative(hashed["path"]), workspace=tag, symbol=name)
        m = _RANGE.match(spec)
        if m is None:
            return cls(_relative(spec), workspace=tag)
        start, end = int(m["start"]), int(m["end"])
        if start < 1 or end < start:
            raise bad(f"{spec}: lines are 1-based and START <= END (e.g. {m['path']}:3-9)")
        return cls(_relative(m["path"]), start, end, tag)

    @classmethod
    def from_ref(cls, ref: SourceRef) -> Citation | None:
        """The citation a ``file`` sourceRef names, or None when it names none we can read
        (another program's ref: an absolute path, a URL-like id...).
        """
        if ref.kind != FILE_KIND or not isinstance(ref.id, str):
            return None
        try:
            return cls.parse(ref.id)
        except StoreError:
            return None

    def check_length(self) -> None:
        """INVALID_CITATION when the id is past the host's 256 bytes."""
        if len(self.ref_id.encode("utf-8", "surrogateescape")) > MAX_ID_BYTES:
            raise bad(f"{self.path}: the path is too long for a source ref (256 bytes)")


def _usual(spec: str) -> tuple[str, int, int] | None:
    """The usual stored id, ``PATH:START-END`` with a plain relative path, by string methods
    alone (thousands are parsed at a time); None for anything else (``Citation.parse``)."""
    path, colon, lines = spec.rpartition(":")
    first, dash, last = lines.partition("-")
    if not (colon and dash and first.isascii() and first.isdigit() and last.isascii()):
        return None
    if not last.isdigit() or first[0] == "0" or last[0] == "0" or len(lines) > 19:
        return None
    start, end = int(first), int(last)
    if start > end or not _plain(path):
        return None
    return path, start, end


def _usual_symbol(spec: str) -> tuple[str, str] | None:
    """The usual stored symbol id, ``PATH#NAME`` with a plain relative path, as ``parse``
    reads it (the first ``#`` of the last part), by string methods; None for anything else."""
    slash = spec.rfind("/")
    at = spec.find("#", slash + 1)
    if at <= slash + 1 or spec[-1].isspace():
        return None
    path, name = spec[:at], spec[at + 1 :]
    if not _plain(path) or not valid_name(name):
        return None
    return path, name


def _plain(path: str) -> bool:
    """A relative path to store as it is: printable, single ``/`` between parts, none of them
    ``.`` or ``..``, no ``\\``, no space at either end."""
    return not (
        not path
        or not path.isprintable()
        or path[0] in "/ "
        or path[-1] in "/ "
        or "\\" in path
        or "//" in path
        or _DOTS & set(path.split("/"))
    )


def _relative(path: str) -> str:
    if well_formed(path) != path:  # bytes that are not UTF-8 (surrogate escapes)
        raise bad(f"{path!r}: a file name that is not UTF-8 cannot be cited (ids are text)")
    if _PLAIN.match(path) and not (_DOTS & set(path.split("/"))):
        return path  # the usual form, already as we store it
    if _CONTROL.search(path):
        raise bad(f"{path!r}: a path with control characters cannot be cited")
    p = PurePosixPath(path.replace("\\", "/"))
    if p.is_absolute():
        raise bad(f"{path}: cite a path relative to the workspace, not an absolute one")
    parts = [part for part in p.parts if part != "."]
    if not parts or ".." in parts:
        raise bad(f"{path}: the path must name a file inside the workspace")
    rel = "/".join(parts)
    if _RANGE.match(rel):
        raise bad(f"{path}: a path ending in :N-M cannot be cited whole; cite its lines")
    return rel


def judged_here(record: Record, citation: Citation, root_id: str) -> bool:
    """Whether ``citation`` of ``record`` is judged in the workspace of ``root_id``: a tagged
    one where it was made; an untagged one in the workspace whose record it is (project and
    shared-project: this one, every clone of a shared file alike; a session: its rootId); an
    untagged one on a user-scope record nowhere (an earlier version of ours made it, in a
    workspace no one wrote down).
    """
    if citation.workspace is not None:
        return citation.workspace == workspace_tag(root_id)
    if record.scope is Scope.USER:
        return False
    if record.scope is Scope.SESSION:
        return record.scopeKey.rpartition("|")[2] == root_id
    return True


def tag_for(scope: Scope, root_id: str) -> str | None:
    """The workspace tag a citation made now in ``scope`` is stored with: a user-scope
    record is every workspace's, so its citations name the one they were made in.
    """
    return workspace_tag(root_id) if scope is Scope.USER else None
