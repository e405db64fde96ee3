"""Symbols found with a real parser, per language, in small git repositories in ``tmp_path``:
a method is found by its dotted name wherever it sits, whitespace and comments do not change
its hash while a token (a string's spaces too) does, a syntax error is "cannot parse now" and
never ``changed``, an ambiguous name is refused with its candidates, and a symbol moved to
another file is found there by name and text.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from citing import commit_all, git
from hypothesis import given, settings
from hypothesis import strategies as st
from symbol_cases import CASES, IDS, Case

from dsh_memory_tui import symbols
from dsh_memory_tui.errors import ErrorCode, StoreError
from dsh_memory_tui.model import SourceRef
from dsh_memory_tui.sources import Check, Citation, Sources, State


class _Finder:
    """The citation engine, asked as these tests ask: cite a symbol, then where it is now."""

    def __init__(self, root: Path) -> None:
        self.sources = Sources(root)

    def cite(self, path: str, name: str) -> SourceRef:
        return self.sources.cite(Citation(path, symbol=name))

    def locate(self, ref: SourceRef) -> Check:
        return self.sources.check(ref)


def _finder(root: Path) -> _Finder:
    return _Finder(root)


def _repo(tmp_path: Path, case: Case) -> Path:
    root = tmp_path / "repo"
    (root / case.path).parent.mkdir(parents=True)
    (root / case.path).write_text(case.source)
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "first")
    return root


def _write(root: Path, rel: str, text: str) -> None:
    # A new inode each time, as an editor's save or git's checkout makes it.
    (root / rel).unlink(missing_ok=True)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _cited(root: Path, case: Case) -> tuple[_Finder, SourceRef]:
    finder = _finder(root)
    return finder, finder.cite(case.path, case.name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_method_is_found_by_its_dotted_name(tmp_path, case):
    outline = symbols.outline(case.source.encode(), case.path)
    symbol = outline.resolve(case.path, case.name)
    assert symbol.name == case.name
    assert outline.text(symbol).decode() in case.source
    assert case.name.rsplit(".", 1)[-1].encode() in outline.text(symbol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_an_ambiguous_name_is_refused_with_its_candidates(tmp_path, case):
    root = _repo(tmp_path, case)
    _write(root, case.path, case.duplicate)
    with pytest.raises(StoreError) as refused:
        _finder(root).cite(case.path, case.name)
    assert refused.value.code is ErrorCode.INVALID_CITATION
    message = refused.value.message
    assert "ambiguous" in message and "2 definitions" in message
    assert message.count(f"{case.name} (") == 2 and f"{case.path}:START-END" in message


def test_a_symbol_moved_within_its_file_is_ok_wherever_it_sits(tmp_path):
    case = CASES[0]
    root = _repo(tmp_path, case)
    finder, ref = _cited(root, case)
    _write(root, case.path, "def helper():\n    return 1\n\n\n" + case.source.split("\n\n\n")[0])
    found = finder.locate(ref)
    assert (found.state, found.why) == (State.OK, "unchanged, at lines 6-8")


def test_a_method_moved_to_another_class_of_its_file_is_moved(tmp_path):
    case = CASES[0]
    root = _repo(tmp_path, case)
    finder, ref = _cited(root, case)
    _write(root, case.path, case.source.replace("class Client:", "class Session:"))
    found = finder.locate(ref)
    assert found.state is State.MOVED
    assert found.why.startswith("unchanged, now Session.fetch at lines ")
    assert found.now is not None and found.now.symbol == "Session.fetch"


@pytest.mark.parametrize(
    "name",
    ["a.rb", "Makefile", "notes.txt", "lib.c"],
)
def test_a_language_with_no_grammar_is_refused_with_a_line_range_offered(tmp_path, name):
    (tmp_path / name).write_text("def f\n  1\nend\n")
    with pytest.raises(StoreError) as refused:
        _finder(tmp_path).cite(name, "f")
    assert refused.value.code is ErrorCode.INVALID_CITATION
    assert "no grammar reads this kind of file" in refused.value.message
    assert f"cite a line range instead ({name}:START-END)" in refused.value.message


def test_a_name_not_defined_suggests_the_names_that_end_in_it(tmp_path):
    (tmp_path / "a.py").write_text("class A:\n    def fetch(self): pass\n")
    with pytest.raises(StoreError) as refused:
        _finder(tmp_path).cite("a.py", "fetch")
    assert refused.value.message == "a.py defines no fetch; did you mean A.fetch?"


def test_non_utf8_source_is_parsed_and_its_comments_still_do_not_count(tmp_path):
    latin = "def f():\n    # caf\xe9\n    return 'cr\xe8me'\n".encode("latin-1")
    (tmp_path / "old.py").write_bytes(latin)
    finder = _finder(tmp_path)
    ref = finder.cite("old.py", "f")
    _write(tmp_path, "old.py", "")
    (tmp_path / "old.py").write_bytes(latin.replace(b"caf\xe9", b"th\xe9 \xff"))
    assert finder.locate(ref).state is State.OK
    (tmp_path / "old.py").write_bytes(latin.replace(b"cr\xe8me", b"cr\xe9me"))
    assert finder.locate(ref).state is State.CHANGED


def test_a_generated_file_is_refused_at_citing(tmp_path):
    (tmp_path / "api_pb2.go").write_text(
        "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n\nfunc F() {}\n"
    )
    (tmp_path / "bundle.min.js").write_text("function f(){" + "a();" * 1000 + "}\n")
    for path, name in (("api_pb2.go", "F"), ("bundle.min.js", "f")):
        with pytest.raises(StoreError) as refused:
            _finder(tmp_path).cite(path, name)
        assert "looks generated" in refused.value.message, path


def test_a_huge_file_is_not_parsed_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(symbols, "MAX_PARSE_BYTES", 1000)
    (tmp_path / "big.py").write_text("def f():\n    return 1\n" + "x = 1\n" * 500)
    finder = _finder(tmp_path)
    with pytest.raises(StoreError) as refused:
        finder.cite("big.py", "f")
    assert "too large to parse" in refused.value.message
    found = finder.locate(SourceRef(kind="file", id="big.py#f", contentHash="sha256:" + "0" * 64))
    assert found.state is State.UNPARSED and "too large to parse" in found.why


def test_a_parse_that_costs_more_than_its_size_allows_is_given_up(tmp_path, monkeypatch):
    """Work is counted (the parser's progress calls), never timed."""
    monkeypatch.setattr(symbols, "MAX_PARSE_STEPS_FLOOR", 1)
    monkeypatch.setattr(symbols, "MAX_PARSE_STEPS_PER_KIB", 0)
    monkeypatch.setattr(symbols, "DIRECT_PARSE_BYTES", 0)
    (tmp_path / "deep.js").write_text("const f = () => " + "[" * 20000 + "]" * 20000 + ";\n")
    with pytest.raises(symbols.NoOutline) as given_up:
        symbols.outline((tmp_path / "deep.js").read_bytes(), "deep.js")
    assert "costs more than its size allows" in given_up.value.reason


def test_a_line_range_inside_one_method_suggests_it(tmp_path):
    case = CASES[0]
    outline = symbols.outline(case.source.encode(), case.path)
    inner = outline.enclosing(3, 4)
    assert inner is not None and inner.name == "Client.fetch"
    top = outline.enclosing(1, 4)
    assert top is not None and top.name == "Client"
    assert outline.enclosing(4, 7) is None


def test_a_python_docstring_does_not_count_but_a_later_string_statement_does():
    before = symbols.outline(b'def f():\n    """a"""\n    "b"\n    return 1\n', "a.py")
    doc = symbols.outline(b'def f():\n    """changed"""\n    "b"\n    return 1\n', "a.py")
    later = symbols.outline(b'def f():\n    """a"""\n    "c"\n    return 1\n', "a.py")

    def digest(o: symbols.Outline) -> str:
        return o.digest(o.named("f")[0])

    assert digest(before) == digest(doc)
    assert digest(before) != digest(later)


def test_python_indentation_that_moves_a_statement_between_blocks_is_a_change():
    inside = symbols.outline(b"def f(x):\n    if x:\n        a()\n        b()\n", "a.py")
    after = symbols.outline(b"def f(x):\n    if x:\n        a()\n    b()\n", "a.py")
    assert inside.digest(inside.symbols[0]) != after.digest(after.symbols[0])


def test_a_line_break_that_ends_a_javascript_statement_is_a_change():
    one = symbols.outline(b"function f() { return 1; }\n", "a.js")
    two = symbols.outline(b"function f() { return\n 1; }\n", "a.js")
    assert one.digest(one.symbols[0]) != two.digest(two.symbols[0])


def test_decorators_and_attributes_are_part_of_the_symbol():
    for path, plain, dressed in (
        ("a.py", b"def f():\n    pass\n", b"@cache\ndef f():\n    pass\n"),
        ("a.rs", b"fn f() {}\n", b"#[inline]\nfn f() {}\n"),
        ("a.ts", b"class A {\n  m() {}\n}\n", b"class A {\n  @dec\n  m() {}\n}\n"),
        ("A.java", b"class A { void m() {} }\n", b"class A { @Deprecated void m() {} }\n"),
    ):
        a, b = symbols.outline(plain, path), symbols.outline(dressed, path)
        name = a.symbols[-1].name
        (sa,), (sb,) = a.named(name), b.named(name)
        assert a.digest(sa) != b.digest(sb), path
        assert b.text(sb).startswith((b"@", b"#[")), path


def test_nothing_of_tree_sitter_loads_until_a_file_is_parsed():
    code = (
        "import sys\nimport dsh_memory_tui.symbols as s\n"
        "assert not [m for m in sys.modules if m.startswith('tree_sitter')]\n"
        "s.outline(b'def f(): pass\\n', 'a.py')\n"
        "assert 'tree_sitter_python' in sys.modules and 'tree_sitter_go' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_changed_symbol_with_a_copy_of_its_old_text_elsewhere_is_changed_not_moved(tmp_path):
    case = CASES[0]
    root = _repo(tmp_path, case)
    finder, ref = _cited(root, case)
    _write(root, "src/copy.py", case.moved_there)  # an old copy, left elsewhere
    _write(root, case.path, case.behaviour)
    commit_all(root, "change it, a copy of the old one elsewhere")
    found = finder.locate(ref)
    assert found.state is State.CHANGED and found.now is None, found.why


def test_a_changed_method_with_a_copy_of_its_old_text_in_another_class_is_changed(tmp_path):
    case = CASES[0]
    root = _repo(tmp_path, case)
    finder, ref = _cited(root, case)
    copy = case.source.split("\n\n\n")[0].replace("class Client:", "class Old:")
    _write(root, case.path, case.behaviour + "\n\n" + copy + "\n")
    found = finder.locate(ref)
    assert (found.state, found.why) == (State.CHANGED, "its text changed, now at lines 2-4")


def test_the_anchor_offered_for_lines_is_the_innermost_unique_definition_holding_them():
    case = CASES[0]
    outline = symbols.outline(case.source.encode(), case.path)
    fetch = outline.anchor(3, 4)
    assert fetch is not None and fetch.name == "Client.fetch"
    assert outline.anchor(4, 7) is None  # across two definitions
    duplicate = symbols.outline(case.duplicate.encode(), case.path)
    assert duplicate.anchor(3, 3) is None  # Client.fetch twice


def test_export_is_part_of_a_javascript_symbol():
    inner = symbols.outline(b"function f() { return 1; }\n", "a.ts")
    exported = symbols.outline(b"export function f() { return 1; }\n", "a.ts")
    assert exported.text(exported.symbols[0]).startswith(b"export function")
    assert inner.digest(inner.symbols[0]) != exported.digest(exported.symbols[0])


_STATEMENTS = {
    "python": ["x = a + {n}", "if a > {n}:\n{i}    return b", "b = [a, {n}, 'k {n}']", "a()"],
    "go": ["x := a + {n}", "if a > {n} {{\n{i}\treturn b\n{i}}}", "b = []int{{a, {n}}}", "a()"],
    "java": ["x = a + {n};", "if (a > {n}) {{ return b; }}", 'b = "k {n}";', "a();"],
}
_WRAP = {
    "python": ("f.py", "def f(a, b):\n{body}\n", "    ", "# note {n}"),
    "go": (
        "f.go",
        "package p\n\nfunc f(a int, b int) int {{\n{body}\n\treturn b\n}}\n",
        "\t",
        "// note {n}",
    ),
    "java": (
        "F.java",
        "class F {{\n  int f(int a, int b) {{\n{body}\n    return b;\n  }}\n}}\n",
        "    ",
        "/* note {n} */",
    ),
}


def _source(language: str, picks: list[tuple[int, int]], cosmetic: list[int]) -> str:
    """A function of the ``picks`` statements; ``cosmetic``: where blank lines, comments and
    extra spaces go (none changes a token)."""
    path, wrap, indent, comment = _WRAP[language]
    lines = []
    for k, (which, n) in enumerate(picks):
        text = _STATEMENTS[language][which].format(n=n, i=indent)
        if k in cosmetic:
            lines.append("")
            lines.append(indent + comment.format(n=k))
            text = text.replace(" = ", "  =   ", 1)
        lines.append(indent + text)
    return wrap.format(body="\n".join(lines))


@settings(max_examples=60, deadline=None)
@given(
    language=st.sampled_from(sorted(_STATEMENTS)),
    picks=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 99)), min_size=1, max_size=8),
    cosmetic=st.sets(st.integers(0, 7)),
    changed=st.integers(0, 7),
)
def test_cosmetic_edits_never_change_the_hash_and_a_token_edit_always_does(
    language, picks, cosmetic, changed
):
    path = _WRAP[language][0]

    def digest(text: str) -> str:
        outline = symbols.outline(text.encode(), path)
        (symbol,) = [s for s in outline.symbols if s.last == "f"]
        assert not outline.broken
        return outline.digest(symbol)

    plain = digest(_source(language, picks, set()))
    assert digest(_source(language, picks, cosmetic)) == plain
    k = changed % len(picks)
    which, n = picks[k]
    edited = [*picks[:k], (which, n + 100), *picks[k + 1 :]]
    if _STATEMENTS[language][which].count("{n}") == 0:
        edited = [*picks[:k], ((which + 1) % 4, n), *picks[k + 1 :]]
    assert digest(_source(language, edited, cosmetic)) != plain
