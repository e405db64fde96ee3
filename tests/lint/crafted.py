"""Texts crafted to make a pattern-based detector slow, at any size: the classic blow-up shapes
(a repeated prefix of something a detector looks for, nested repeats, a long run without the
character that would end a match), one or more for each detector, and an ordinary record's text
to compare them with. ``crafted(size)`` gives 50 of them, each ``size`` characters.

Used by tests/lint/test_linear_time.py (work done, at 1 MiB) and
tests/benchmarks/bench_lint_crafted.py (time against an ordinary record of the same size).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent

# (name, unit): the text is the unit repeated to the size; a unit given as (head, body) is the
# head once and then the body repeated (a long run after a prefix).
SHAPES: list[tuple[str, str | tuple[str, str]]] = [
    # secrets: repeated prefixes of provider tokens and of assignments
    ("sk- repeated", "sk-"),
    ("sk_live_ repeated", "sk_live_"),
    ("ghp_ repeated", "ghp_"),
    ("xoxb- repeated", "xoxb-1"),
    ("AKIA repeated", "AKIA"),
    ("AKIA and 16 capitals, no boundary", "AKIAABCDEFGHIJKLMNOP"),
    ("eyJ repeated", "eyJ"),
    ("key= repeated", "key="),
    ("password= repeated", "password="),
    ("token: ' repeated", "token: '"),
    ("api_key repeated", "api_key "),
    ("BEGIN PRIVATE KEY, no END", "-----BEGIN RSA PRIVATE KEY-----\n"),
    ("scheme://user: repeated", "https://a:"),
    ("high-entropy tokens, all rejected", "aB1aB1aB1aB1aB1aB1aB1 "),
    ("high-entropy tokens, all flagged", "Zx9QmL2vR8tY4wK7pN3sUe6 "),
    ("one token run without end", ("", "aB3")),
    ("40-char tokens beside key ids", "AKIAQYLPMN5HHHFPZAM2 " + "abcdefghijABCDEFGHIJ" * 2 + " "),
    # pii
    ("e-mail local parts without @", ("", "a.")),
    ("a@ repeated", "a@"),
    ("a@b. repeated", "a@b."),
    ("e-mail addresses, all flagged", "jo.doe@acme-mail.com "),
    ("+1 repeated", "+1 "),
    ("phone groups without end", ("+44 ", "20 ")),
    ("card digits, Luhn fails", "4111 1111 1111 1112 "),
    ("one digit run", ("", "1")),
    ("digit-dash run", ("", "1-")),
    ("IBAN prefixes", "GB82 WEST "),
    # instructions
    ("curl repeated", "curl "),
    ("curl without a pipe", ("curl ", "a")),
    ("curl | without sh", "curl x | "),
    ("ignore repeated", "ignore "),
    ("ignore all all all", ("ignore ", "all ")),
    ("you must repeated", "you must "),
    ("from now on repeated", "from now on "),
    ("role marker prefixes", "<|"),
    ("system: lines", "system\n"),
    ("tool-call name without end", ('{"name": "', "a")),
    ("tool-call prefixes", '{"name":'),
    ("Chinese ignore repeated", "忽略"),
    ("Chinese you must repeated", "你必须"),
    # urls
    ("www. repeated", "www."),
    (":// repeated", "://"),
    ("one URL without end", ("https://", "a")),
    # normalization
    ("zero-width between letters", "a\u200b"),
    ("zero-width only", "\u200b"),
    ("full-width sk-", "ｓｋ－"),
    ("ligatures", "ﬁ"),
    ("continued lines", "x \\\n"),
    ("combining marks", "e\u0301"),
    ("tag characters", "\U000e0061"),
]


def _build(unit: str | tuple[str, str], size: int) -> str:
    head, body = ("", unit) if isinstance(unit, str) else unit
    return (head + body * ((size - len(head)) // len(body) + 1))[:size]


def crafted(size: int) -> list[tuple[str, str]]:
    """The 50 crafted texts, ``(name, text)``, each ``size`` characters."""
    return [(name, _build(unit, size)) for name, unit in SHAPES]


def ordinary(size: int) -> str:
    """An ordinary record's text of ``size`` characters: a realistic project's memories
    (tests/lint/distinct_records.txt: prose, file names, versions, commands, a few links)."""
    lines = [
        line.split("|", 2)[2]
        for line in (HERE / "distinct_records.txt").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    return _build("\n".join(lines) + "\n", size)
