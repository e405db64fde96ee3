"""Near-duplicates: ``NearDuplicates`` indexes records by their words (Chinese and Japanese by
character pairs) and finds, for a record, the others whose title and content say nearly the same
thing, whatever the case, punctuation, word order or small rewording."""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from ..model import Record

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
