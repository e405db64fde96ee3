"""How often a citation's alert is real: replay real history and count, per kind of citation,
the alerts raised against the real changes of the cited code. Not a test (no asserts).

Run:  python tests/benchmarks/bench_staleness.py GITDIR [GITDIR ...]
      (or DSH_STALENESS_REPOS=GITDIR:GITDIR:... ; options: --steps 500 --seed 34 --functions
      200 --classes 100)

Each GITDIR is a git repository (a bare one will do) of a public project; nothing is fetched
here. The README's figures come from (any clone of these, e.g. ``git clone --bare URL``):
    https://github.com/pytest-dev/pluggy        (Python)
    https://github.com/spf13/cobra              (Go)
    https://github.com/tj/commander.js          (JavaScript, TypeScript typings)
    https://github.com/dtolnay/anyhow           (Rust)

For each repository, in a shared clone in a temporary directory:
1. It checks out the first-parent commit ``--steps`` before the tip (in a shorter history,
   the first that holds a file a grammar reads) and cites, by a seeded rule
   (``random.Random(seed)`` over the outline of every file a grammar reads, in path order;
   names and texts unique in their file), ``--functions`` functions and methods and
   ``--classes`` classes (structs, traits, interfaces, types) as symbols (``PATH#NAME``),
   and the same functions by their lines (``PATH:START-END``), the baseline.
2. It checks out each following first-parent commit in turn (git rewrites only the files that
   changed) and checks every citation with the product's checker, ``sources.Sources`` (what
   ``dsh-memory sources`` and the app run).
3. It counts, per kind:
   - **alerts**: a citation going ``changed`` or ``missing`` (what sends a record back to
     review). ``moved`` is not an alert: the citation follows the code (it is re-anchored
     where the code is now, as re-verify would). ``unparsed`` (a syntax error) is not either;
   - **real changes**, decided without the checker's parser or hash: the
     cited code's *behaviour-bearing text* is its tokens by a lexer of this file's own
     (Python's ``tokenize``; for the others a lexer of strings, comments, words and signs),
     leaving out whitespace, comments and Python docstrings, and keeping Python's
     INDENT/DEDENT (a one-line suite ``if x: y`` read as the block it is). The cited code
     changed when that token sequence is found fewer times, as a contiguous run, in its file
     than when it was verified (a run counts only where a definition can start: after
     ``{ } ; ) ,``, a Python line's end not under a decorator line, or another language's
     line break not after an attribute's ``]``: so an attribute, a visibility or a
     decorator added before it on its line is a change), and (when its head, the tokens
     up to its body, or a name it is nested in, is not in that file either: gone from where
     it was) not found in any file of its language. The span first cited is the checker's;
     the rest is not. The lexer cannot tell identical copies apart: a change that leaves as
     many copies of the old text in the file is not seen (a false alert, never a miss);
   - **misses**: a real change the checker did not alert on (state ``ok`` or ``moved``);
     **deferred**: a real change while the file did not parse (alerted once it does);
   - **false alerts**: alerts with no real change.
   After an alert (as after a miss) the citation is re-verified: taken again where its code is
   now, and judged against that text from then on; a citation whose code is gone is retired.
4. It prints one table per repository (with the commits replayed) and a total.
"""

from __future__ import annotations

import argparse
import bisect
import io
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_memory_tui import symbols  # noqa: E402
from dsh_memory_tui.model import SourceRef  # noqa: E402
from dsh_memory_tui.sources import Citation, Sources  # noqa: E402

CLASS_KINDS = {"class", "struct", "enum", "trait", "interface", "type", "record", "union"}
FUNCTION_KINDS = {"function", "method", "constructor"}
KINDS = ("function", "class", "lines")
ALERTS = {"changed", "missing"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


# ----------------------------------------------------------------------- the truth's lexer

_C_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<rawstr>r\#*"(?s:.*?)"\#*)                     # Rust raw strings
  | (?P<str>"(?:\\.|[^"\\])*"|`(?:\\.|[^`\\])*`)     # strings, template and Go raw strings
  | (?P<char>'(?:\\.|[^'\\\n])'|'\\[^']{1,10}')      # a char literal (not a Rust lifetime)
  | (?P<word>[\w$]+)
  | (?P<sign>.)
    """,
    re.VERBOSE | re.DOTALL,
)
# (start byte, end byte, token, whether a line break comes between it and the token before)
Tokens = list[tuple[int, int, str, bool]]


def c_tokens(data: bytes) -> Tokens:
    """A C-family source's tokens: comments and whitespace left out. Read as Latin-1, so a
    character's offset is its byte's (UTF-8 text in strings lexes the same either way).
    """
    text = data.decode("latin-1")
    out: Tokens = []
    at, broken = 0, False
    while at < len(text):
        m = _C_TOKEN.match(text, at)
        assert m is not None
        if m.lastgroup not in ("space", "comment"):
            out.append((at, m.end(), m.group(0), broken))
            broken = False
        elif "\n" in m.group(0):
            broken = True
        at = m.end()
    return out


def py_tokens(data: bytes) -> Tokens:
    """Python source's tokens by ``tokenize``: comments, blank lines and docstrings (a string
    statement opening a ``def`` or ``class`` body) left out; INDENT and DEDENT kept.
    """
    text = data.decode("latin-1")
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    try:
        raw = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return c_tokens(data)  # Python cannot read it now: any lexer keeps the comparison fair
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER}
    out: Tokens = []
    header = False  # the logical line being read opens a def or class
    opens_body = False  # the last logical line did, and its body has not started

    def at(point: tuple[int, int]) -> int:
        row, col = point
        return starts[row - 1] + col if row - 1 < len(starts) else starts[-1]

    def add(tok: tokenize.TokenInfo, word: str) -> None:
        out.append((at(tok.start), max(at(tok.start), at(tok.end)), word, False))

    i = 0
    while i < len(raw):
        tok = raw[i]
        if tok.type in skip:
            i += 1
            continue
        if tok.type == tokenize.INDENT and opens_body:
            add(tok, "INDENT")
            j = i + 1
            while j < len(raw) and raw[j].type in (tokenize.STRING, tokenize.NL, tokenize.COMMENT):
                j += 1
            docstring = raw[i + 1].type == tokenize.STRING and raw[j].type == tokenize.NEWLINE
            i = j + 1 if j > i + 1 and docstring else i + 1
            opens_body = False
            continue
        if tok.type == tokenize.NEWLINE:
            opens_body, header = header, False
            add(tok, "NEWLINE")
        elif tok.type in (tokenize.INDENT, tokenize.DEDENT):
            add(tok, tokenize.tok_name[tok.type])
        else:
            line_start = not out or out[-1][2] in ("NEWLINE", "INDENT", "DEDENT")
            if line_start and tok.string in ("def", "class", "async", "@"):
                header = tok.string != "@"
            add(tok, tok.string)
        i += 1
    return _one_line_suites_as_blocks(out)


_COMPOUND = {"def", "class", "async", "if", "elif", "else", "for", "while", "try", "except"}
_COMPOUND |= {"finally", "with", "match", "case"}


def _one_line_suites_as_blocks(tokens: Tokens) -> Tokens:
    """``if x: y`` as ``if x: NEWLINE INDENT y NEWLINE DEDENT``: Python reads both alike."""
    out: Tokens = []
    depth, compound, opened = 0, False, 0
    for k, (start, end, word, _) in enumerate(tokens):
        line_start = not out or out[-1][2] in ("NEWLINE", "INDENT", "DEDENT")
        if line_start:
            compound = word in _COMPOUND
        if word in ("(", "[", "{"):
            depth += 1
        elif word in (")", "]", "}"):
            depth = max(0, depth - 1)
        out.append((start, end, word, False))
        if word == "NEWLINE":
            out.extend((start, end, "DEDENT", False) for _ in range(opened))
            opened = 0
        elif word == ":" and depth == 0 and compound:
            following = tokens[k + 1][2] if k + 1 < len(tokens) else "NEWLINE"
            if following != "NEWLINE":
                out.extend(((end, end, "NEWLINE", False), (end, end, "INDENT", False)))
                opened += 1
    return out


def lex(path: str, data: bytes) -> Tokens:
    return py_tokens(data) if symbols.grammar_for(path) == "python" else c_tokens(data)


def span_tokens(tokens: Tokens, span: tuple[int, int]) -> tuple[str, ...]:
    """The tokens wholly inside the byte span (a line range can cut a string in two: its
    pieces are not the cited code's tokens; a DEDENT at its start closes what came before),
    then the DEDENTs after it that close the Python blocks it opened: with them, a statement
    added at the end of a function (or a method at the end of a class) is a change, as the
    closing brace makes it in C-family code.
    """
    a, b = span
    inside = tuple(
        t
        for start, end, t, _ in tokens
        if a <= start and end <= b and not (start == a and t == "DEDENT")
    )
    open_blocks = inside.count("INDENT") - inside.count("DEDENT")
    after = bisect.bisect_left(tokens, (b, -1, "", False))
    tail: list[str] = []
    if open_blocks > 0 and after < len(tokens) and tokens[after][2] == "NEWLINE":
        after, tail = after + 1, ["NEWLINE"]  # the one ending its last line
    while open_blocks > 0 and after < len(tokens) and tokens[after][2] == "DEDENT":
        tail.append("DEDENT")
        after += 1
        open_blocks -= 1
    return (*inside, *tail) if "DEDENT" in tail else inside


def line_span(data: bytes, lines: tuple[int, int]) -> tuple[int, int]:
    """The byte span of 1-based lines ``lines`` (inclusive)."""
    starts = [0, *(m.end() for m in re.finditer(rb"\n", data))]
    a, b = lines
    end = starts[b] if b < len(starts) else len(data)
    return starts[a - 1], end


# Tokens after which a definition starts (a match after another token has something added
# before it: an attribute, a visibility, a decorator with arguments).
_BOUNDARIES = {"{", "}", ";", ")", ",", "NEWLINE", "INDENT", "DEDENT"}


def _anchored(words: list[str], at: int) -> bool:
    """Whether a run at ``at`` starts where a definition can: after a boundary token, and in
    Python not under a decorator line (one added above it).
    """
    if at == 0:
        return True
    if words[at - 1] not in _BOUNDARIES:
        return False
    if words[at - 1] == "NEWLINE":
        j = at - 2
        while j >= 0 and words[j] not in ("NEWLINE", "INDENT", "DEDENT"):
            j -= 1
        return words[j + 1] != "@"
    return True


def occurrences(
    haystack: Tokens, needle: tuple[str, ...], most: int = 2, anchored: bool = False
) -> int:
    """How many times ``needle`` is a contiguous run of ``haystack`` (up to ``most``);
    ``anchored``: only runs that start where a definition can (``_anchored``).
    """
    if not needle:
        return most
    words = [t for _, _, t, _ in haystack]
    first, size = needle[0], len(needle)
    at, found = -1, 0
    while found < most:
        try:
            at = words.index(first, at + 1)
        except ValueError:
            break
        if tuple(words[at : at + size]) == needle and (
            not anchored or _anchored(words, at) or (haystack[at][3] and words[at - 1] != "]")
        ):
            found += 1
    return found


def contains(haystack: Tokens, needle: tuple[str, ...], anchored: bool = False) -> bool:
    return occurrences(haystack, needle, 1, anchored) == 1


# ----------------------------------------------------------------------- the replay


@dataclass
class Cited:
    kind: str  # function, class or lines
    path: str
    name: str  # the symbol (lines: the function whose lines are cited)
    lines: tuple[int, int]
    truth: tuple[str, ...]  # the behaviour-bearing tokens verified
    ref: SourceRef | None = None  # the citation as stored
    copies: int = 1  # how many times its tokens were in its file when verified
    anchored: bool = True  # and they started where a definition can
    deferred: bool = False  # a real change seen while the file did not parse
    retired: bool = False


@dataclass
class Tally:
    citations: int = 0
    real: int = 0
    alerts: int = 0
    true_alerts: int = 0
    false_alerts: int = 0
    misses: int = 0
    deferred: int = 0
    moved: int = 0
    unparsed: int = 0
    miss_examples: list[str] = field(default_factory=list)
    false_examples: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in (
            "citations",
            "real",
            "alerts",
            "true_alerts",
            "false_alerts",
            "misses",
            "deferred",
            "moved",
            "unparsed",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Workspace:
    """A checkout that follows the replay, and the product's two checkers on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._reads: dict[str, tuple[tuple[int, int, int], bytes]] = {}
        self._files: list[str] | None = None
        self._tokens: dict[str, tuple[tuple[int, int, int], Tokens]] = {}
        self._outlines: dict[str, tuple[tuple[int, int, int], symbols.Outline | None]] = {}
        self.sources = Sources(root)

    def checkout(self, commit: str) -> None:
        git(self.root, "checkout", "-q", "-f", commit)
        self._files = None

    def read(self, rel: str) -> tuple[tuple[int, int, int], bytes] | None:
        full = self.root / rel
        try:
            st = os.stat(full)
        except OSError:
            return None
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        got = self._reads.get(rel)
        if got is None or got[0] != key:
            try:
                got = self._reads[rel] = (key, full.read_bytes())
            except OSError:
                return None
        return got

    def files(self) -> list[str]:
        if self._files is None:
            self._files = git(self.root, "ls-files").splitlines()
        return self._files

    def outline(self, rel: str) -> symbols.Outline | None:
        """``rel``'s outline now, parsed once per version (to choose citations and to know
        their spans; the checker parses on its own). ``NoOutline`` when it has none."""
        got = self.read(rel)
        if got is None:
            return None
        memo = self._outlines.get(rel)
        if memo is None or memo[0] != got[0]:
            memo = self._outlines[rel] = (got[0], symbols.outline(got[1], rel))
        return memo[1]

    def tokens(self, rel: str) -> Tokens | None:
        got = self.read(rel)
        if got is None:
            return None
        memo = self._tokens.get(rel)
        if memo is None or memo[0] != got[0]:
            memo = self._tokens[rel] = (got[0], lex(rel, got[1]))
        return memo[1]

    def truth(
        self, rel: str, span: tuple[int, int] | None = None, lines: tuple[int, int] | None = None
    ) -> tuple[str, ...]:
        """The behaviour-bearing tokens of a byte span, or of lines, of ``rel`` now."""
        got = self.read(rel)
        if got is None:
            return ()
        if span is None:
            assert lines is not None
            span = line_span(got[1], lines)
        return span_tokens(self.tokens(rel) or [], span)


def choose(ws: Workspace, rng: random.Random, functions: int, classes: int) -> list[Cited]:
    """The seeded rule: every symbol of every file a grammar reads (path order), unique in its
    file and clean, sampled; the sampled functions are cited by their lines too.
    """
    pool: dict[str, list[tuple[str, symbols.Outline, symbols.Symbol]]] = {"f": [], "c": []}
    for rel in sorted(ws.files()):
        if symbols.grammar_for(rel) is None:
            continue
        try:
            outline = ws.outline(rel)
        except symbols.NoOutline:
            continue
        if outline is None or symbols.generated(outline.data):
            continue
        tokens = ws.tokens(rel) or []
        for sym in outline.symbols:
            if not sym.clean or len(outline.named(sym.name)) != 1:
                continue
            if occurrences(tokens, span_tokens(tokens, (sym.start, sym.end))) != 1:
                continue  # its text is in the file twice: no lexer can tell the copies apart
            if sym.kind in FUNCTION_KINDS:
                pool["f"].append((rel, outline, sym))
            elif sym.kind in CLASS_KINDS:
                pool["c"].append((rel, outline, sym))
    picked_f = rng.sample(pool["f"], min(functions, len(pool["f"])))
    picked_c = rng.sample(pool["c"], min(classes, len(pool["c"])))
    out: list[Cited] = []
    for kind, picked in (("function", picked_f), ("class", picked_c)):
        for rel, _outline, sym in picked:
            truth = ws.truth(rel, (sym.start, sym.end))
            ref = ws.sources.cite(Citation(rel, symbol=sym.name))
            out.append(Cited(kind, rel, sym.name, sym.lines, truth, ref))
    for rel, _outline, sym in picked_f:
        ref = ws.sources.cite(Citation(rel, *sym.lines))
        truth = ws.truth(rel, lines=sym.lines)
        out.append(Cited("lines", rel, sym.name, sym.lines, truth, ref))
    for cited in out:
        settle(ws, cited)
    return out


def signature(truth: tuple[str, ...]) -> tuple[str, ...]:
    """The cited code's head, its decorators and attributes left out: its tokens up to the
    first that opens its body (``{``, or the NEWLINE ending a Python header), at most 40.
    """
    at = 0
    while at < len(truth) and truth[at] in ("@", "#"):  # a decorator line, a Rust attribute
        ends = "NEWLINE" if truth[at] == "@" else "]"
        at = truth.index(ends, at) + 1 if ends in truth[at:] else len(truth)
    head = truth[at : at + 40]
    for i, word in enumerate(head):
        if word in ("{", "NEWLINE"):
            return head[: i + 1]
    return head


def truth_holds(ws: Workspace, cited: Cited, touched: set[str]) -> tuple[bool, str | None]:
    """Whether the verified tokens are still found, and in which file (None: not found): in
    their file, as many times as when cited (a copy there changed is a change); when their
    head (``signature``) or a name they are nested in is no longer in that file either (gone
    from where it was), once in any file of its language (moved there, or a copy is there).
    """
    if cited.path not in touched:
        return True, cited.path
    here = ws.tokens(cited.path)
    found = occurrences(here, cited.truth, cited.copies, cited.anchored) if here else 0
    if found >= cited.copies:
        return True, cited.path
    if here is not None and contains(here, signature(cited.truth)):
        words = {t for _, _, t, _ in here}
        if all(part in words for part in cited.name.split(".")[:-1]):
            return False, None  # still defined where it was: it changed there
    family = symbols.family(symbols.grammar_for(cited.path))
    for other in sorted(ws.files(), key=lambda f: (f != cited.path, f not in touched, f)):
        if symbols.family(symbols.grammar_for(other)) != family:
            continue
        there = ws.tokens(other)
        if there is not None and contains(there, cited.truth, cited.anchored):
            return True, other
    return False, None


def judge(ws: Workspace, cited: Cited) -> tuple[str, str, str | None, str | None, tuple[int, int]]:
    """The checker's state and why, and where the code is now (path, symbol name, lines)."""
    if cited.kind == "lines":
        assert cited.ref is not None
        check = ws.sources.check(cited.ref)
        lines = check.now_at or cited.lines
        return check.state.value, check.why, cited.path, None, lines
    assert cited.ref is not None
    check = ws.sources.check(cited.ref)
    now = check.now
    path = now.path if now is not None else cited.path
    name = now.symbol if now is not None and now.symbol else cited.name
    return check.state.value, check.why, path, name, cited.lines


def reverify(ws: Workspace, cited: Cited, path: str, name: str | None, lines: tuple[int, int]):
    """Take the citation again where its code is now (what re-verify does)."""
    if cited.kind != "lines":
        name = name or cited.name
        try:
            cited.ref = ws.sources.cite(Citation(path, symbol=name))
            outline = ws.outline(path)
        except Exception:  # gone, ambiguous now, broken: the reviewer drops the citation
            cited.retired = True
            return
        assert outline is not None
        (sym,) = outline.named(name)
        cited.path, cited.name, cited.lines = path, sym.name, sym.lines
        cited.truth = ws.truth(path, (sym.start, sym.end))
    else:
        try:
            cited.ref = ws.sources.cite(Citation(path, *lines))
        except Exception:
            cited.retired = True
            return
        cited.path, cited.lines = path, lines
        cited.truth = ws.truth(path, lines=lines)
    settle(ws, cited)
    cited.deferred = False


def settle(ws: Workspace, cited: Cited) -> None:
    """Note how the verified tokens sit in their file: whether they start where a definition
    can, and how many times they are there.
    """
    tokens = ws.tokens(cited.path) or []
    cited.anchored = contains(tokens, cited.truth, anchored=True)
    cited.copies = max(1, occurrences(tokens, cited.truth, 50, cited.anchored))


def step(ws: Workspace, cited: Cited, touched: set[str], tally: Tally) -> None:
    state, why, path, name, lines = judge(ws, cited)
    holds, where = truth_holds(ws, cited, touched)
    real = not holds
    alert = state in ALERTS
    if state == "unparsed":
        tally.unparsed += 1
    if real and not cited.deferred:
        tally.real += 1
    if alert:
        tally.alerts += 1
        if real or cited.deferred:
            tally.true_alerts += 1
        else:
            tally.false_alerts += 1
            if len(tally.false_examples) < 3:
                tally.false_examples.append(f"{cited.kind} {cited.path}#{cited.name}: {why}")
        if state == "missing" and path is None:
            cited.retired = True
            return
        reverify(ws, cited, path or cited.path, name, lines)
        return
    if real and state == "unparsed":
        if not cited.deferred:
            tally.deferred += 1
        cited.deferred = True
        return
    if real or (cited.deferred and state != "unparsed"):
        tally.misses += 1
        if len(tally.miss_examples) < 5:
            tally.miss_examples.append(f"{cited.kind} {cited.path}#{cited.name} ({state})")
        reverify(ws, cited, path or cited.path, name, lines)
        return
    if state == "moved":
        tally.moved += 1
        reverify(ws, cited, path or where or cited.path, name, lines)


def replay(gitdir: Path, steps: int, seed: int, functions: int, classes: int):
    with tempfile.TemporaryDirectory(prefix="dsh-staleness-") as tmp:
        root = Path(tmp) / "ws"
        subprocess.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", str(gitdir), str(root)],
            check=True,
        )
        commits = git(root, "rev-list", "--first-parent", "--reverse", "HEAD").split()
        commits = commits[-(steps + 1) :]
        while len(commits) > 1 and not any(
            symbols.grammar_for(f)
            for f in git(root, "ls-tree", "-r", "--name-only", commits[0]).split()
        ):
            commits.pop(0)  # a young history: start where there is code
        ws = Workspace(root)
        ws.checkout(commits[0])
        cited = choose(ws, random.Random(seed), functions, classes)
        tallies = {kind: Tally() for kind in KINDS}
        for c in cited:
            tallies[c.kind].citations += 1
        t0 = time.perf_counter()
        for before, after in zip(commits, commits[1:], strict=False):
            ws.checkout(after)
            names = git(root, "diff", "--name-only", "--no-renames", before, after)
            touched = set(names.splitlines())
            with ws.sources.batch():  # as one `dsh-memory sources` run checks
                for c in cited:
                    if not c.retired:
                        step(ws, c, touched, tallies[c.kind])
        took = time.perf_counter() - t0
        total = int(git(root, "rev-list", "--count", commits[-1]))
        return commits, total, tallies, took, ws.sources.reads


def table(title: str, tallies: dict[str, Tally]) -> str:
    head = (
        "| citations | kind | real changes | alerts | alerts per real change | false alerts"
        " | misses | deferred | moved (no alert) |\n|---|---|---|---|---|---|---|---|---|"
    )
    rows = []
    for kind in KINDS:
        t = tallies[kind]
        label = {"function": "symbol: function", "class": "symbol: class"}.get(
            kind, "line range (same functions)"
        )
        ratio = f"{t.alerts / t.real:.2f}" if t.real else "-"
        rows.append(
            f"| {t.citations} | {label} | {t.real} | {t.alerts} | {ratio} | {t.false_alerts}"
            f" | {t.misses} | {t.deferred} | {t.moved} |"
        )
    return f"{title}\n\n{head}\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gitdirs", nargs="*", type=Path)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--functions", type=int, default=200)
    parser.add_argument("--classes", type=int, default=100)
    args = parser.parse_args(argv)
    gitdirs = args.gitdirs or [
        Path(p) for p in os.environ.get("DSH_STALENESS_REPOS", "").split(":") if p
    ]
    if not gitdirs:
        print(__doc__)
        print("error: name at least one git repository (see above for where to get them)")
        return 2
    total = {kind: Tally() for kind in KINDS}
    for gitdir in gitdirs:
        commits, count, tallies, took, parses = replay(
            gitdir, args.steps, args.seed, args.functions, args.classes
        )
        name = gitdir.resolve().name if gitdir.name not in ("repo", ".git") else gitdir.parent.name
        title = (
            f"### {name}: {len(commits) - 1} first-parent steps,"
            f" {commits[0][:12]}..{commits[-1][:12]}"
            f" ({count} commits in its history; replayed in {took:.0f} s, {parses} files read)"
        )
        print(table(title, tallies))
        for kind in KINDS:
            for example in tallies[kind].miss_examples:
                print(f"  miss: {example}")
            for example in tallies[kind].false_examples:
                print(f"  false alert: {example}")
            total[kind].add(tallies[kind])
        print(flush=True)
    print(table(f"### total: {len(gitdirs)} repositories", total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
