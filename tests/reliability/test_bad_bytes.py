"""4. Bad bytes: fuzzed store lines and bundles (invalid UTF-8, NUL, BOM, CRLF, deep nesting,
duplicate keys, huge lines, numbers out of range...)."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dsh_memory_tui.bundle import apply_import, export_bundle, plan_import
from dsh_memory_tui.errors import StoreError
from dsh_memory_tui.js_json import decode_js
from dsh_memory_tui.model import (
    MAX_CONTENT_BYTES,
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    make_record,
)
from dsh_memory_tui.store import FileView
from dsh_memory_tui.store.writer import salvage_glued

from .conftest import Figures
from .harness import Site, complete_lines, neighbours, read_or_none, scaled

settings.register_profile(
    "dsh-reliability-fuzz",
    max_examples=scaled(150, 3000),
    deadline=None,
    database=None,  # no .hypothesis directory in the repository
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
FUZZ = settings.get_profile("dsh-reliability-fuzz")

# The project scopeKey is the workspace's rootId (``root:`` + 64 hex): lines are made with this
# stand-in of the same length and each site's own rootId is put in when they are written.
SCOPE_KEY = "root:" + "0" * 64
MAX_FILE = 6 << 20  # stay clear of the 8 MiB cap: this test is about bytes, not size
# JavaScript's trim(): what the host strips around a line (and a blank line is skipped).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _host_text(line: bytes) -> str:
    """A line as the host reads it: UTF-8 (bad bytes are U+FFFD), JS-trimmed."""
    return line.decode("utf-8", "replace").strip(JS_WHITESPACE)


def _record(index: int, content: str | None = None) -> Record:
    return make_record(
        scope=Scope.PROJECT,
        scope_key=SCOPE_KEY,
        record_type=RecordType.FACT,
        title=f"title {index}",
        content=content or f"content {index}",
        tags=["fuzz"],
        provenance=Provenance(kind=ProvenanceKind.USER),
        origin=Origin.USER_AUTHORED,
        source_refs=[],
        record_id=f"memory:user:fact:{index:032x}",
        now=1_700_000_000_000,
    )


GOOD = [_record(i).to_line().rstrip(b"\n") for i in range(6)]
GOOD_IDS = [json.loads(line)["id"] for line in GOOD]

INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xe2\x82"]
NUMBERS = [
    b"1e999",
    b"-1e999",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"9" * 5000,
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"-0",
    b"1.5",
    b"-1",
    b"0",
    b"1e2",
    b"true",
    b"null",
]
NUMBER_FIELDS = [b"schemaVersion", b"createdAt", b"updatedAt", b"useCount", b"revision"]
DUPLICATE_KEYS = [b"id", b"content", b"scope", b"schemaVersion", b"governance", b"title"]


@dataclass(frozen=True)
class Mutation:
    """One way to damage the line of record ``1000 + index`` (whose id no other line has)."""

    kind: str
    pos: int = 0
    value: bytes = b""

    def apply(self, index: int) -> bytes:
        n = 1000 + index
        line = _record(n).to_line().rstrip(b"\n")
        at = self.pos % (len(line) + 1)
        if self.kind in ("invalid utf-8", "nul"):
            return line[:at] + (self.value or b"\x00") + line[at:]
        if self.kind == "bom":
            return b"\xef\xbb\xbf" + line
        if self.kind == "crlf":
            return line + b"\r"
        if self.kind == "deep":
            depth = int(self.value)
            nest = b"[" * depth + b"]" * depth
            return nest if self.pos % 2 else line[:-1] + b',"x":' + nest + b"}"
        if self.kind == "duplicate key":
            value = b'"memory:user:fact:%032x-dup"' % n if self.value == b"id" else b'"dup"'
            if self.value in (b"schemaVersion", b"governance"):
                value = b"2" if self.value == b"schemaVersion" else b"{}"
            pair = b'"' + self.value + b'":' + value
            return b"{" + pair + b"," + line[1:] if self.pos % 2 else line[:-1] + b"," + pair + b"}"
        if self.kind == "huge":
            size = self.pos
            if self.value == b"valid":  # the most content a record may have: 64 KiB
                size = min(size, MAX_CONTENT_BYTES) - len(str(n))
                return _record(n, "h" * size + str(n)).to_line().rstrip(b"\n")
            if self.value == b"oversized":  # a record line whose content is over 64 KiB
                return line.replace(
                    b'"content":"content %d"' % n, b'"content":"' + b"h" * size + b'"', 1
                )
            return b'{"content": "' + b"h" * size
        if self.kind == "number":
            literal = NUMBERS[self.pos % len(NUMBERS)]
            pattern = b'"' + self.value + b'":-?[0-9]+'
            return re.sub(pattern, lambda m: b'"' + self.value + b'":' + literal, line, count=1)
        if self.kind == "truncated":
            return line[: at % len(line)]
        if self.kind in ("bytes", "json"):
            return self.value
        if self.kind == "wrong scope":
            return line.replace(b'"scope":"project"', b'"scope":"user"')
        if self.kind == "lone surrogate":
            return line.replace(b'"title":"', b'"title":"\\ud800', 1)
        if self.kind == "newer schema":
            return line.replace(b'"schemaVersion":1', b'"schemaVersion":2', 1)
        raise AssertionError(self.kind)


def _json_trees(floats: st.SearchStrategy[float]) -> st.SearchStrategy[object]:
    return st.recursive(
        st.none() | st.booleans() | st.integers() | floats | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    )


_json_values = _json_trees(st.floats())  # NaN and Infinity included: not JSON to the store
_finite_json_values = _json_trees(st.floats(allow_nan=False, allow_infinity=False))
_pos = st.integers(0, 10_000)

mutations = st.one_of(
    st.builds(Mutation, st.just("invalid utf-8"), _pos, st.sampled_from(INVALID_UTF8)),
    st.builds(Mutation, st.just("nul"), _pos),
    st.just(Mutation("bom")),
    st.just(Mutation("crlf")),
    # Past MAX_NESTING and the interpreter's recursion; 100,000 levels: test_json_reading.py.
    st.builds(
        Mutation, st.just("deep"), st.integers(0, 1), st.sampled_from([b"20", b"1000", b"20000"])
    ),
    st.builds(
        Mutation, st.just("duplicate key"), st.integers(0, 1), st.sampled_from(DUPLICATE_KEYS)
    ),
    st.builds(
        Mutation,
        st.just("huge"),
        st.integers(1 << 20, 3 << 19),
        st.sampled_from([b"valid", b"oversized", b"garbage"]),
    ),
    st.builds(
        Mutation,
        st.just("number"),
        st.integers(0, len(NUMBERS) - 1),
        st.sampled_from(NUMBER_FIELDS),
    ),
    st.builds(Mutation, st.just("truncated"), _pos),
    st.builds(
        Mutation,
        st.just("bytes"),
        st.just(0),
        st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")),
    ),
    st.builds(
        Mutation, st.just("json"), st.just(0), _json_values.map(lambda v: json.dumps(v).encode())
    ),
    st.just(Mutation("wrong scope")),
    st.just(Mutation("lone surrogate")),
    st.just(Mutation("newer schema")),
)


@st.composite
def damaged_files(draw: st.DrawFn) -> tuple[list[bytes], list[int]]:
    """The good lines with damaged ones inserted at random places; returns the lines and the
    indexes of the damaged ones."""
    bad = [m.apply(i) for i, m in enumerate(draw(st.lists(mutations, min_size=1, max_size=5)))]
    lines = list(GOOD)
    for line in bad:
        lines.insert(draw(st.integers(0, len(lines))), line)
    assume(sum(len(line) + 1 for line in lines) < MAX_FILE)
    return lines, [i for i, line in enumerate(lines) if line in bad]


@contextmanager
def _fresh_site(root: Path) -> Iterator[Site]:
    """A site for one example, removed afterwards (thousands of examples, some of megabytes)."""
    site = Site.create(Path(tempfile.mkdtemp(dir=root)))
    try:
        yield site
    finally:
        shutil.rmtree(site.root)


def _project_view(site: Site) -> FileView:
    store = site.store()
    view = store.view(store.file_for("project"))
    view.refresh()
    return view


def _localise(site: Site, data: bytes) -> bytes:
    """``data`` with the stand-in scopeKey replaced by the site's own rootId."""
    return data.replace(SCOPE_KEY.encode(), site.store().paths.root_id.encode())


def _generic(site: Site, data: bytes) -> bytes:
    """``data`` with the site's rootId replaced by the stand-in (to compare two sites)."""
    return data.replace(site.store().paths.root_id.encode(), SCOPE_KEY.encode())


def _write(site: Site, data: bytes) -> None:
    site.project.parent.mkdir(parents=True, mode=0o700)
    site.project.parent.parent.chmod(0o700)
    site.project.write_bytes(_localise(site, data))
    site.project.chmod(0o600)


@FUZZ
@given(case=damaged_files())
def test_each_bad_line_affects_only_itself(
    case: tuple[list[bytes], list[int]], tmp_path: Path, figures: Figures
) -> None:
    """A store file with fuzzed damaged lines among good ones: loading raises nothing; every
    good record is read exactly as written; each damaged line is corrupt, a newer-schema line,
    another project's (foreign) line, blank (skipped, as the host does) or its own record
    (never another's); the next write moves exactly the corrupt lines to .corrupt (host
    format: each line's number and its text as the host read it) and keeps every other line
    byte for byte (when it rewrites the file, as the host's compaction does: without blank
    lines or a BOM); an export then holds every readable record.
    """
    lines, bad_at = case
    with _fresh_site(tmp_path) as site:
        _check_damaged_file(site, lines, bad_at, figures)


def _check_damaged_file(
    site: Site, lines: list[bytes], bad_at: list[int], figures: Figures
) -> None:
    _write(site, b"".join(line + b"\n" for line in lines))

    view = _project_view(site)
    lines = [_localise(site, line) for line in lines]

    for rid, line in zip(GOOD_IDS, GOOD, strict=True):
        assert view.current[rid].to_line() == _localise(site, line) + b"\n", (
            "a good record was changed"
        )
    own = set(view.current) - set(GOOD_IDS)
    corrupt_at = [c.line_no - 1 for c in view.corrupt]
    blank_at = [i for i in bad_at if not _host_text(lines[i])]
    assert set(corrupt_at) <= set(bad_at), "a good line was reported corrupt"
    assert not set(corrupt_at) & set(blank_at), "a blank line was reported corrupt"
    foreign = sum(view.foreign.values())
    assert len(corrupt_at) + len(view.future) + len(own) + foreign + len(blank_at) == len(bad_at)

    store = site.store()
    # A corrupt line that ends in a whole record (a writer's piece, then a line glued to it)
    # keeps that record: only the piece is quarantined (writer.salvage_glued).
    salvaged = {i: salvage_glued(lines[i], view.location) for i in corrupt_at}
    salvaged = {i: s for i, s in salvaged.items() if s is not None}
    store.create("project", "fact", "after the fuzz", "after the fuzz")
    if corrupt_at:  # one atomic rewrite, as the host's compaction writes a file
        kept = [
            salvaged[i][1].to_line()[:-1] if i in salvaged else line.removeprefix(b"\xef\xbb\xbf")
            for i, line in enumerate(lines)
            if (i not in corrupt_at or i in salvaged) and i not in blank_at
        ]
    else:  # a plain append
        kept = lines
    after = complete_lines(site.project.read_bytes())
    assert after[:-1] == kept, "a line that was not corrupt was changed or dropped"
    quarantined = [
        json.loads(entry)
        for entry in complete_lines(read_or_none(neighbours(site.project)["corrupt"]))
    ]
    assert [(q["line"], q["raw"]) for q in quarantined] == [
        (i + 1, (decode_js(salvaged[i][0]) if i in salvaged else _host_text(lines[i])) + "\n")
        for i in corrupt_at
    ], "the quarantine is not each corrupt line, as the host read it"
    assert all(type(q["capturedAt"]) is int for q in quarantined)

    result = export_bundle(site.store(), site.root / "export.json")
    salvaged_ids = {s[1].id for s in salvaged.values()} - set(view.current)
    assert result.count == len(GOOD) + len(own) + len(salvaged_ids) + 1
    figures.add("files fuzzed")
    figures.add("damaged lines", len(bad_at))
    figures.add("damaged lines quarantined", len(corrupt_at))


@FUZZ
@given(case=damaged_files(), cuts=st.lists(st.integers(0, 1 << 23), max_size=12))
def test_a_file_read_while_it_is_written_in_pieces_ends_as_if_read_at_once(
    case: tuple[list[bytes], list[int]], cuts: list[int], tmp_path: Path, figures: Figures
) -> None:
    """The same fuzzed file appended in random pieces (cut anywhere, mid-line and mid-UTF-8
    character), the view refreshed after each: no refresh raises, a line is never judged
    before its newline arrives, and the end state equals reading the whole file at once.
    """
    lines, _ = case
    data = b"".join(line + b"\n" for line in lines)
    with _fresh_site(tmp_path) as whole, _fresh_site(tmp_path) as site:
        _check_pieces(whole, site, data, cuts, figures)


def _check_pieces(whole: Site, site: Site, data: bytes, cuts: list[int], figures: Figures) -> None:
    _write(whole, data)
    expected = _project_view(whole)
    expected_corrupt = {c.line_no for c in expected.corrupt}

    _write(site, b"")
    data = _localise(site, data)
    view = _project_view(site)
    points = sorted({c % (len(data) + 1) for c in cuts} | {len(data)})
    start = 0
    with site.project.open("ab", buffering=0) as f:
        for point in points:
            f.write(data[start:point])
            start = point
            view.refresh()
            assert {c.line_no for c in view.corrupt} <= expected_corrupt
            figures.add("pieces appended")
    assert {c.line_no for c in view.corrupt} == expected_corrupt
    assert {k: _generic(site, r.to_line()) for k, r in view.current.items()} == {
        k: _generic(whole, r.to_line()) for k, r in expected.current.items()
    }
    assert len(view.future) == len(expected.future)
    figures.add("files fuzzed")


def _depth(value: Any) -> int:
    stack, deepest = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def _strict_bundle(data: bytes) -> dict[str, Any] | None:
    """The bundle, if it is plainly well formed: UTF-8, strict JSON (no NaN, no infinite or
    overlong numbers, no repeated keys), an object with schemaVersion 1 and a records list,
    no deeper than 60 levels, no two records with one id. None otherwise."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if len(keys) != len(set(keys)):
            raise ValueError("repeated key")
        return dict(items)

    def no_constant(name: str) -> Any:
        raise ValueError(name)

    def finite(text: str) -> float:
        value = float(text)
        if value in (float("inf"), float("-inf")):
            raise ValueError(text)
        return value

    try:
        obj = json.loads(
            data.decode("utf-8"),
            object_pairs_hook=pairs,
            parse_constant=no_constant,
            parse_float=finite,
        )
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or type(obj.get("schemaVersion")) is not int:
        return None
    records = obj.get("records")
    if obj["schemaVersion"] != 1 or not isinstance(records, list) or _depth(obj) > 60:
        return None
    ids = [r.get("id") for r in records if isinstance(r, dict) and isinstance(r.get("id"), str)]
    return obj if len(ids) == len(set(ids)) else None


# Damage that keeps the bundle valid JSON, so the bad entry has to be judged on its own.
_json_safe = st.one_of(
    st.builds(
        Mutation,
        st.just("json"),
        st.just(0),
        _finite_json_values.map(lambda v: json.dumps(v, allow_nan=False).encode()),
    ),
    st.builds(Mutation, st.just("number"), st.integers(0, 2), st.sampled_from(NUMBER_FIELDS)),
    st.builds(Mutation, st.just("deep"), st.just(0), st.just(b"20")),
    st.builds(
        Mutation,
        st.just("huge"),
        st.integers(1 << 10, 1 << 20),
        st.sampled_from([b"valid", b"oversized"]),
    ),
    st.sampled_from([Mutation("wrong scope"), Mutation("newer schema"), Mutation("crlf")]),
)
_entry_mutations = st.one_of(_json_safe, _json_safe, mutations)


@st.composite
def bundles(draw: st.DrawFn) -> tuple[bytes, set[int]]:
    """A bundle of good records with fuzzed entries among them (or fuzzed as a whole);
    returns its bytes and the indexes of the good records."""
    entries = list(GOOD)
    for i, mutation in enumerate(draw(st.lists(_entry_mutations, max_size=4))):
        entries.insert(draw(st.integers(0, len(entries))), mutation.apply(i))
    good_at = {i for i, entry in enumerate(entries) if entry in GOOD}
    valid_head = b'{"schemaVersion": 1, "exportedAt": 1700000000000, "records": ['
    head = (
        valid_head
        if draw(st.integers(0, 3))
        else draw(
            st.sampled_from(
                [
                    b'{"schemaVersion": 1, "records": [',
                    b'{"schemaVersion": 2, "records": [',
                    b'{"schemaVersion": "1", "records": [',
                    b'\xef\xbb\xbf{"schemaVersion": 1, "records": [',
                    b'{"schemaVersion": 1, "schemaVersion": 1, "records": [',
                    b'{"schemaVersion": 1, "records": {"0": [',
                ]
            )
        )
    )
    tail = b"]}}" if head.endswith(b"[") and b'{"0"' in head else b"]}"
    data = head + b",\r\n".join(entries) + tail
    whole = draw(mutations) if draw(st.integers(0, 4)) == 0 else None
    if whole is not None and whole.kind in ("invalid utf-8", "nul", "truncated"):
        at = whole.pos % (len(data) + 1)
        data = (
            data[:at] + (whole.value or b"\x00") + data[at:]
            if whole.kind != "truncated"
            else data[:at]
        )
    return data, good_at


@FUZZ
@given(case=bundles())
def test_a_fuzzed_bundle_is_refused_whole_or_each_bad_record_affects_only_itself(
    case: tuple[bytes, set[int]], tmp_path: Path, figures: Figures
) -> None:
    """A fuzzed bundle: planning raises nothing but BUNDLE_INVALID, and never for a plainly
    well-formed bundle; in a plan every good record is new or a duplicate (never invalid
    because of a neighbour); the import writes exactly the new ones, leaves the store with
    no corrupt line, and importing the same bundle again writes nothing.
    """
    data, good_at = case
    with _fresh_site(tmp_path) as site:
        _check_bundle(site, data, good_at, figures)


def _check_bundle(site: Site, data: bytes, good_at: set[int], figures: Figures) -> None:
    store = site.store()
    try:
        plan = plan_import(store, data, "project")
    except StoreError as exc:
        assert exc.code == "BUNDLE_INVALID", exc
        assert _strict_bundle(data) is None, f"a well-formed bundle was refused: {exc}"
        figures.add("bundles refused whole")
        return
    classified = (
        plan.new_indexes + [d.index for d in plan.duplicates] + [i.index for i in plan.invalid]
    )
    assert sorted(classified) == list(range(plan.total))
    invalid = {i.index for i in plan.invalid}
    assert not (good_at & invalid), "a good record was judged invalid"
    result = apply_import(store, plan)
    assert len(result.written) == len(plan.new)
    view = _project_view(site)
    assert not view.corrupt and len(view.current) == len(plan.new)
    again = plan_import(site.store(), data, "project")
    assert not again.new, "re-importing the same bundle would write again"
    figures.add("bundles imported")
    figures.add("bad records isolated", len(invalid))
    figures.add("records imported", len(result.written))
