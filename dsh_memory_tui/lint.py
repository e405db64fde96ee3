"""Risk flags and near-duplicates: pure functions over record text (no I/O, nothing stored).

A reviewer decides in seconds whether an agent may rely on a proposal; this module finds the
evidence. ``flags`` names each risky span of a title or content:

- ``secret``: provider API keys and tokens, private keys, passwords in assignments and in URLs
  (Yelp's ``detect-secrets`` detectors, run on the text directly: no network verification, no
  global settings), and unquoted high-entropy credentials (mixed case and digits, so hashes,
  UUIDs and version strings are not secrets);
- ``pii``: e-mail addresses, phone numbers, and card and IBAN numbers that pass their check
  digits (Luhn, ISO 7064 mod 97);
- ``instruction``: text addressed to the agent, in English and Chinese ("ignore previous
  instructions", role markers, "you must always", tool-call syntax, a download piped into a
  shell);
- ``url``: each link, with its host;
- ``invisible``: bidi, zero-width and control characters (``present.hidden_spans``).

``NearDuplicates`` indexes records by their words (Chinese and Japanese by character pairs) and
finds, for a record, the others whose title and content say nearly the same thing, whatever the
case, punctuation, word order or small rewording.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any
from urllib.parse import urlsplit

from .model import Record
from .present import hidden_spans

# The order a reviewer reads them in: the worst first.
FLAG_KINDS = ("secret", "instruction", "pii", "url", "invisible")


@dataclass(frozen=True, slots=True)
class Flag:
    """One risky span: ``kind`` (one of ``FLAG_KINDS``), the ``field`` it is in ("title" or
    "content"), its ``start``/``end`` offsets there, and ``what`` it is ("AWS access key",
    "e-mail address", the host of a link)."""

    kind: str
    field: str
    start: int
    end: int
    what: str

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "field": self.field,
            "start": self.start,
            "end": self.end,
            "what": self.what,
        }


# --- secret -------------------------------------------------------------------------------


# detect-secrets' regex detectors, but the public IPv4 one (an address is not a credential).
# A pattern whose match cannot hold a space runs on each long run of non-spaces only (what a
# token looks like); the few that span words (``aws ... key = "..."``, ``BEGIN RSA PRIVATE
# KEY``) run on the lines that name a key, a password or a token. Same findings, a tenth of
# the time on prose.
def _spans_words(pattern: str) -> bool:
    return any(part in pattern for part in (" ", ".{", "\\s*", "\\s+", "/.+"))


Patterns = tuple[tuple[re.Pattern[str], str], ...]


@dataclass(frozen=True, slots=True)
class _Detectors:
    tokens: Patterns  # run on a long run of non-spaces
    lines: Patterns  # run on a line that names a key, a password or a token
    keyword_hint: re.Pattern[str]
    keywords: tuple[tuple[re.Pattern[str], int], ...]
    entropy: Callable[[str], float]


@lru_cache(maxsize=1)
def _detectors() -> _Detectors:
    """detect-secrets, imported on the first text that could hold a secret: it pulls in
    ``requests`` and ``logging``, which a command that never looks for one does not pay."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, DENYLIST

    classes: list[type[Any]] = list(get_mapping_from_secret_type_to_class().values())
    detectors = [
        cls()  # type: ignore[misc]
        for cls in classes
        if issubclass(cls, RegexBasedDetector) and cls.__name__ != "IPPublicDetector"
    ]
    patterns = [(p, str(d.secret_type)) for d in detectors for p in d.denylist]
    return _Detectors(
        tokens=tuple(p for p in patterns if not _spans_words(p[0].pattern)),
        lines=tuple(p for p in patterns if _spans_words(p[0].pattern)),
        # Its keyword detector's patterns for config-like text (``password = x``,
        # ``token: x``): only on lines naming a keyword (they cost ~1.5 us a character).
        keyword_hint=re.compile("|".join(DENYLIST), re.IGNORECASE),
        keywords=tuple(CONFIG_DENYLIST_REGEX_TO_GROUP.items()),
        entropy=Base64HighEntropyString().calculate_shannon_entropy,
    )


_LONG_RUN = re.compile(r"\S{11,}")
_TOKENISH = re.compile(r"[\d:/=_.\-]")
_LINE_HINTS = ("key", "pass", "pwd", "pw", "token", "secret")
_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{20,}={0,2}")
_PLACEHOLDER = re.compile(
    r"^[<{$\[(%]|^(x+|\*+|\.+|changeme|example|redacted|none|null|true|false)$"
)


def _keyword_value_is_secret(value: str) -> bool:
    """A value after ``password =`` is a secret unless it is prose, a placeholder or a
    reference (``${VAR}``, ``<your token>``, ``os.environ[...]``)."""
    value = value.strip().split(maxsplit=1)[0].strip("'\"`,;") if value.strip() else ""
    if len(value) < 6 or any(c.isspace() for c in value) or _PLACEHOLDER.search(value.lower()):
        return False
    if re.match(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*([.\[(]|$)", value) and not value.isalnum():
        return False  # settings.DB_PASSWORD, os.getenv(...), os.environ[...]
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    return has_digit or has_symbol or len(value) >= 12


def _high_entropy(token: str) -> bool:
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False
    if sum(c.isdigit() for c in token) < 2:
        return False
    return _detectors().entropy(token) >= 4.0


def _secrets(text: str) -> Iterator[tuple[int, int, str]]:
    for run in _LONG_RUN.finditer(text):
        token, offset = run.group(), run.start()
        if not _TOKENISH.search(token.strip(".,;:!?()[]{}\"'`")):
            continue  # a word ("Configuration,"): every token pattern needs a digit or a sign
        for pattern, what in _detectors().tokens:
            for match in pattern.finditer(token):
                yield offset + match.start(), offset + match.end(), what
        for match in _TOKEN.finditer(token):
            if _high_entropy(match.group()):
                yield offset + match.start(), offset + match.end(), "high-entropy credential"
    folded = text.lower()
    if not any(hint in folded for hint in _LINE_HINTS):
        return
    found = _detectors()
    for line_start, line in _lines(text):
        if not any(hint in line.lower() for hint in _LINE_HINTS):
            continue
        for pattern, what in found.lines:
            for match in pattern.finditer(line):
                yield line_start + match.start(), line_start + match.end(), what
        if found.keyword_hint.search(line):
            for pattern, group in found.keywords:
                hit = pattern.search(line)
                if hit and _keyword_value_is_secret(hit.group(group)):
                    start, end = hit.span(group)
                    yield line_start + start, line_start + end, "password or key in an assignment"


def _lines(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    for line in text.split("\n"):
        yield start, line
        start += len(line) + 1


# --- pii ----------------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![\w.+\-:/])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
_NOT_PERSONAL = ("git@", "noreply@", "no-reply@", "example@")
_PHONE = re.compile(
    r"(?<![\w+.-])(?:"
    r"\+\d{1,3}[ \-]?(?:\(\d{1,4}\)[ \-]?)?\d{1,4}(?:[ \-]\d{2,4}){1,4}"  # +44 20 7946 0958
    r"|\+\d{8,15}"
    r"|\(\d{3}\) ?\d{3}-\d{4}"  # (415) 555-0132
    r"|\d{3}-\d{3}-\d{4}"
    r"|1[3-9]\d-?\d{4}-?\d{4}"  # a mainland China mobile
    r")(?!\w|[.-]\d)"
)
_CARD = re.compile(r"(?<![\w.-])\d(?:[ \-]?\d){12,18}(?!\w|[.-]\d)")
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?!\w)")


def luhn_ok(digits: str) -> bool:
    """The Luhn check digit of a card number holds."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(iban: str) -> bool:
    """ISO 13616's mod-97 check of an IBAN (spaces ignored)."""
    compact = iban.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def _pii(text: str) -> Iterator[tuple[int, int, str]]:
    if "@" in text:
        for match in _EMAIL.finditer(text):
            if not match.group().lower().startswith(_NOT_PERSONAL):
                yield match.start(), match.end(), "e-mail address"
    cards: list[tuple[int, int]] = []
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn_ok(digits):
            cards.append(match.span())
            yield match.start(), match.end(), "card number (Luhn check passes)"
    for match in _PHONE.finditer(text):
        if not any(s <= match.start() < e for s, e in cards):
            yield match.start(), match.end(), "phone number"
    for match in _IBAN.finditer(text):
        if iban_ok(match.group()):
            yield match.start(), match.end(), "IBAN (check digits pass)"


# --- instruction --------------------------------------------------------------------------

# Each pattern with the words one of which its match must hold (checked on the case-folded
# text first: most texts hold none, and a substring test is cheaper than the pattern).
_INSTRUCTIONS: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE | re.MULTILINE), what, hints)
    for pattern, what, hints in (
        (
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+)*"
            r"(?:previous|prior|above|earlier|preceding|system|safety|original)\s+"
            r"(?:instructions?|prompts?|rules|directions|guidelines|messages?|context)",
            "tells the agent to ignore its instructions",
            ("ignore", "disregard", "forget", "override", "bypass"),
        ),
        (
            r"^\s*(?:#+\s*)?(?:system|assistant|developer)\s*(?:prompt)?\s*:"
            r"|<\|(?:im_start|im_end|system|assistant|user|endoftext)\|>"
            r"|\[/?INST\]|<</?SYS>>|</?(?:system|assistant)(?:-reminder)?>",
            "role marker",
            ("system", "assistant", "developer", "<|", "inst]", "<<sys"),
        ),
        (
            r"\byou\s+(?:must|should|will|shall)\s+(?:always|never|now|from now on)\b"
            r"|\bfrom\s+now\s+on,?\s+(?:you|always|never|ignore)\b"
            r"|\byou\s+are\s+now\s+(?:a|an|in|the|no longer)\b"
            r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert)"
            r"\s+the\s+user\b"
            r"|\bwithout\s+(?:asking|telling|informing)\s+the\s+user\b"
            r"|\bnew\s+instructions\s*:",
            "addresses the agent",
            ("you", "from now", "user", "new instructions"),
        ),
        (
            r"<(?:tool_call|function_calls?|invoke\s+name=|tool_use)\b"
            r"|\"(?:tool_calls|function_call)\"\s*:"
            r"|\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters|input)\"\s*:",
            "tool-call syntax",
            ("<tool_", "<function", "<invoke", "tool_calls", "function_call", '"name"'),
        ),
        (
            r"\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b"
            r"|\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?python3?\b"
            r"|\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]*\|\s*(?:iex|Invoke-Expression)\b"
            r"|\b(?:ba)?sh\s+<\(\s*(?:curl|wget)\b",
            "download piped into a shell",
            ("curl", "wget", "iwr", "irm", "invoke-"),
        ),
        # Chinese: ignore the previous instructions; you must always; from now on you;
        # do not tell the user; you are now; system prompt.
        (
            r"(?:忽略|无视|忘记|忘掉|不要理会|跳过)(?:掉)?(?:你)?(?:之前|以前|先前|前面|上面|以上|原来|原先|所有|全部|系统)"
            r"(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|提示词?|规则|设定|要求|说明)",
            "tells the agent to ignore its instructions",
            ("忽略", "无视", "忘记", "忘掉", "不要理会", "跳过"),
        ),
        (
            r"你(?:必须|务必|一定要|应该)(?:始终|总是|永远|一直|每次都)"
            r"|从现在(?:开始|起)[，,]?\s*(?:你|始终|总是|忽略)"
            r"|(?:不要|别|切勿)(?:告诉|通知|提醒|让)用户"
            r"|你现在(?:是|扮演)|(?:^|\n)\s*(?:系统|助手)\s*[:：]",
            "addresses the agent",
            ("你", "从现在", "用户", "系统", "助手"),
        ),
    )
)


def _instructions(text: str) -> Iterator[tuple[int, int, str]]:
    folded = text.lower()
    for pattern, what, hints in _INSTRUCTIONS:
        if not any(hint in folded for hint in hints):
            continue
        for match in pattern.finditer(text):
            yield match.start(), match.end(), what


# --- url ----------------------------------------------------------------------------------

_URL = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s<>\"'`\])}]+|\bwww\.[A-Za-z0-9-]+\.[^\s<>\"'`\])}]+"
)


def _urls(text: str) -> Iterator[tuple[int, int, str]]:
    if "://" not in text and "www." not in text:
        return
    for match in _URL.finditer(text):
        url = match.group().rstrip(".,;:!?")
        try:
            host = urlsplit(url if "://" in url else "http://" + url).hostname or url
        except ValueError:
            host = url
        yield match.start(), match.start() + len(url), host


# --- all of them --------------------------------------------------------------------------

_FINDERS = (
    ("secret", _secrets),
    ("instruction", _instructions),
    ("pii", _pii),
    ("url", _urls),
)


def text_flags(text: str, field: str, *, multiline: bool = True) -> list[Flag]:
    """The flags of one field's text, in ``FLAG_KINDS`` order then by position; of spans of
    one kind that overlap, the first (the longest of those starting together) is named."""
    out: list[Flag] = []
    for kind, finder in _FINDERS:
        seen: list[tuple[int, int]] = []
        for start, end, what in sorted(finder(text), key=lambda f: (f[0], f[0] - f[1])):
            if any(start < e and s < end for s, e in seen):
                continue
            seen.append((start, end))
            out.append(Flag(kind, field, start, end, what))
    for start, end in hidden_spans(text, multiline=multiline):
        out.append(Flag("invisible", field, start, end, "hidden characters"))
    return out


@lru_cache(maxsize=32_768)
def flags(title: str, content: str) -> tuple[Flag, ...]:
    """Every risk flag of a record's title and content (cached: a record's text never changes
    under its content hash, and flags are never stored)."""
    return (*text_flags(title, "title", multiline=False), *text_flags(content, "content"))


def record_flags(record: Record) -> tuple[Flag, ...]:
    return flags(record.title, record.content)


def kinds(found: Iterable[Flag]) -> list[str]:
    """The distinct kinds of ``found``, worst first."""
    present = {f.kind for f in found}
    return [k for k in FLAG_KINDS if k in present]


def describe(found: Iterable[Flag]) -> str:
    """One line naming each kind and what it is: ``secret (AWS Access Key), url (github.com)``
    ("" when nothing was found). Spans are not quoted: a secret is not repeated."""
    whats: dict[str, list[str]] = {}
    for flag in found:
        names = whats.setdefault(flag.kind, [])
        if flag.what not in names:
            names.append(flag.what)
    return ", ".join(f"{k} ({', '.join(whats[k][:3])})" for k in FLAG_KINDS if k in whats)


def matches_filter(found: Iterable[Flag], kind: str) -> bool:
    """``flag:KIND`` in a filter: ``any`` matches a record with any flag."""
    found = list(found)
    return bool(found) if kind == "any" else any(f.kind == kind for f in found)


# --- near-duplicates ----------------------------------------------------------------------

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKENS = re.compile(rf"([{_CJK}]+)|(\d+(?:\.\d+)+|[^\W\d_]+|\d+)")
_STOP = frozenset(
    """\
    a an the and or but if then than so to of in on at by for from with without into onto
    as is are was were be been being it its this that these those there here we our us you
    your i me my they them their he she his her not no do does did done have has had will
    would shall should can could may might must always never every each all any some before
    after below above under over less more than when while where which who what how why
    also just only very please use using used one per via up down out about again once
    ie eg etc vs""".split()  # noqa: SIM905
)
# Han characters that carry no subject (particles, copulas): a bigram of them alone is noise.
_CJK_STOP = frozenset("的了是在和与及或也都就而把被对将为一个这那之所以用使")
TITLE_WEIGHT = 2.0
NEAR_DUPLICATE = 0.38


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    if len(word) > 4:
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        if len(word) > 3 and word[-1] == word[-2]:
            word = word[:-1]
    return word[:8]


# ASCII text: punctuation to spaces, then split (four times the speed of a regex).
_SPACES = str.maketrans(dict.fromkeys(string.punctuation, " "))
# Each word seen, as the token it counts as ("" for a common word): a store's vocabulary is
# small, and a dictionary lookup is what keeps indexing 7,000 records fast.
_WORD_TOKENS: dict[str, str] = {}


def _word_token(word: str) -> str:
    return "" if word in _STOP or (len(word) < 2 and not word.isdigit()) else _stem(word)


def tokens(text: str) -> set[str]:
    """The words of ``text`` as near-duplicate detection compares them: NFKC, case-folded,
    punctuation and common words dropped, light stemming; a Chinese or Japanese run becomes
    its character pairs (and a lone character itself)."""
    if text.isascii():
        words = text.lower().translate(_SPACES).split()
        known = _WORD_TOKENS
        if len(known) > 500_000:
            known.clear()
        for word in set(words).difference(known):
            known[word] = _word_token(word)
        out = {known[w] for w in words}
        out.discard("")
        return out
    out = set()
    for cjk, word in _TOKENS.findall(unicodedata.normalize("NFKC", text).casefold()):
        if cjk:
            chars = [c for c in cjk if c not in _CJK_STOP] if len(cjk) > 2 else list(cjk)
            if len(chars) == 1:
                out.add(chars[0])
            out.update(a + b for a, b in zip(chars, chars[1:], strict=False))
        elif token := _word_token(word):
            out.add(token)
    return out


@lru_cache(maxsize=32_768)
def fingerprint(title: str, content: str) -> dict[str, float]:
    """A record's weighted words: title words weigh ``TITLE_WEIGHT``, content words 1."""
    weights = dict.fromkeys(tokens(content), 1.0)
    for token in tokens(title):
        weights[token] = TITLE_WEIGHT
    return weights


def similarity(a: dict[str, float], b: dict[str, float]) -> float:
    """Weighted Jaccard of two fingerprints (0..1)."""
    if not a or not b:
        return 0.0
    common = a.keys() & b.keys()
    low = sum(min(a[t], b[t]) for t in common)
    high = sum(a.values()) + sum(b.values()) - low
    return low / high if high else 0.0


@dataclass(frozen=True, slots=True)
class Similar:
    """Another record like this one, with its ``score`` (``similarity``, 0..1)."""

    record_id: str
    score: float


class NearDuplicates:
    """Near-duplicate lookups over the records a reviewer can see, kept current one record at
    a time (``update``/``remove``: well under a millisecond per appended record).

    An inverted index from each word to the records holding it counts, in C, how many words
    each other record shares with this one. Two records at or over the threshold ``t`` share
    at least ``t`` of this one's weight, so only the records sharing that many words, best
    first, are compared; and only those whose total weight could reach ``t``. A word held by
    very many records (``_common``) is not counted: two records that share only such words
    are no near-duplicates.
    """

    def __init__(self, records: Iterable[Record] = (), *, threshold: float = NEAR_DUPLICATE):
        self.threshold = threshold
        self._prints: dict[str, dict[str, float]] = {}
        self._totals: dict[str, float] = {}
        self._scope: dict[str, str] = {}
        self._index: defaultdict[str, set[str]] = defaultdict(set)
        for record in records:
            self.update(record)

    def __len__(self) -> int:
        return len(self._prints)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._prints

    def update(self, record: Record) -> None:
        """Index ``record`` (again, after a new revision)."""
        self.remove(record.id)
        weights = fingerprint(record.title, record.content)
        self._prints[record.id] = weights
        self._totals[record.id] = sum(weights.values())
        self._scope[record.id] = record.scope.value
        index, rid = self._index, record.id
        for token in weights:
            index[token].add(rid)

    def remove(self, record_id: str) -> None:
        weights = self._prints.pop(record_id, None)
        self._totals.pop(record_id, None)
        self._scope.pop(record_id, None)
        for token in weights or ():
            holders = self._index.get(token)
            if holders is not None:
                holders.discard(record_id)
                if not holders:
                    del self._index[token]

    def _common(self) -> int:
        return max(64, int(math.sqrt(len(self._prints))))

    def _scored(self, weights: dict[str, float], exclude: str | None) -> list[Similar]:
        index, common, t = self._index, self._common(), self.threshold
        total = sum(weights.values())
        lists: list[set[str]] = []
        unseen = 0.0  # the weight of words too common to look up
        for token, weight in weights.items():
            holders = index.get(token)
            if holders is None:
                continue  # no record holds it: nothing to share
            if len(holders) <= common:
                lists.append(holders)
                if weight > 1.0:
                    lists.append(holders)  # a title word counts twice
            else:
                unseen += weight
        # A near-duplicate shares at least t of this record's weight (J >= t, and the other
        # weighs at least what they share); of the words counted, it must share t of theirs
        # (the count of a shared word is this record's weight of it: never less than shared).
        need = t * (total - unseen)
        shared = Counter(chain.from_iterable(lists))
        shared.pop(exclude or "", None)
        low_total, high_total = total * t, total / t
        totals, prints = self._totals, self._prints
        out = []
        for rid in [rid for rid, count in shared.items() if count >= need]:
            if not low_total <= totals[rid] <= high_total:
                continue
            score = similarity(weights, prints[rid])
            if score >= t:
                out.append(Similar(rid, round(score, 3)))
        return out

    def similar_text(
        self,
        title: str,
        content: str,
        *,
        scope: str | None = None,
        exclude: str | None = None,
        limit: int = 5,
    ) -> list[Similar]:
        """The indexed records most like this text, at or over the threshold: same ``scope``
        first, then by score."""
        found = self._scored(fingerprint(title, content), exclude)
        found.sort(key=lambda s: (self._scope.get(s.record_id) != scope, -s.score, s.record_id))
        return found[:limit]

    def similar(self, record: Record, *, limit: int = 5) -> list[Similar]:
        """The records most like ``record`` (itself excluded)."""
        return self.similar_text(
            record.title, record.content, scope=record.scope.value, exclude=record.id, limit=limit
        )

    def pairs(self) -> list[tuple[str, str, float]]:
        """Every near-duplicate pair of the index once: (id, id, score), best first."""
        out: dict[tuple[str, str], float] = {}
        for rid, weights in self._prints.items():
            for found in self._scored(weights, rid):
                a, b = sorted((rid, found.record_id))
                out[(a, b)] = found.score
        return sorted(((a, b, s) for (a, b), s in out.items()), key=lambda p: (-p[2], p[0], p[1]))


# --- a report over records (the CLI's ``lint`` and the app) ------------------------------


@dataclass(frozen=True, slots=True)
class RecordLint:
    """One record's evidence: its flags and its near-duplicates among the records seen."""

    record: Record
    flags: tuple[Flag, ...]
    near: list[Similar]

    def as_json(self) -> dict[str, object]:
        r = self.record
        return {
            "id": r.id,
            "scope": r.scope.value,
            "title": r.title,
            "verification": r.governance.verification.value,
            "flags": [f.as_json() for f in self.flags],
            "nearDuplicates": [{"id": s.record_id, "score": s.score} for s in self.near],
        }


def visible_to_reviewer(record: Record) -> bool:
    """The records near-duplicates are looked for among: active, not rejected, and not the
    auto-writer's digests (origin ``derived``: each lists one session's files, and they are
    alike by design)."""
    g = record.governance
    return (
        record.status.value == "active"
        and g.verification.value != "rejected"
        and g.origin.value != "derived"
    )


def report(records: Iterable[Record], selected: Iterable[Record]) -> list[RecordLint]:
    """The flags and near-duplicates of each of ``selected``, against ``records`` (what the
    reviewer can see of them)."""
    index = NearDuplicates(r for r in records if visible_to_reviewer(r))
    return [RecordLint(r, record_flags(r), index.similar(r)) for r in selected]


def verified_secrets(records: Iterable[Record]) -> list[Record]:
    """Active, verified records that carry a ``secret`` flag: what an agent is served today."""
    return [
        r
        for r in records
        if r.status.value == "active"
        and r.governance.verification.value == "verified"
        and any(f.kind == "secret" for f in record_flags(r))
    ]
