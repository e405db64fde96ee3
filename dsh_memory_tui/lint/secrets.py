"""``secret``: credentials in a record's text, read on normalized text.

Two sources, each linear in the text:

- **provider rules**: the maintained rule set of the gitleaks family (betterleaks, 462 rules,
  and 26 more of kingfisher's), run by the ``kingfisher-secret-scanner`` package's native
  scanner (Hyperscan-style multi-pattern matching, then Rust's ``regex``: both linear; the
  rules' own entropy floors, allow-lists and filters; no network). The compiled rules are cached
  in the user's cache directory (``rule_cache``): the first load ever compiles them (~5 s),
  later ones read them (~0.4 s), and only a text that may hold a token loads them at all.
- **our patterns** (RE2): what a reviewer wants flagged that the provider rules leave (they are
  written for code and need a provider's exact format): an AWS access key id in any upper-case
  form, the 40-character secret access key beside one, a private key's header without its body,
  a password in a URL, a password or key in an assignment (``password = ...``, ``token: ...``),
  and an unquoted high-entropy credential (mixed case and digits, so hashes, UUIDs and version
  strings are not secrets).
"""

from __future__ import annotations

import math
import os
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .linear import MAX_FOUND, Pattern, TooMany

# --- provider rules (kingfisher) ----------------------------------------------------------

# A token of any provider: a run of token characters with a digit or an upper-case letter
# past its eighth (prose has none: "Configuration", "tests/test_store.py"), or a PEM block.
_MAY_HOLD_TOKEN = Pattern(
    r"[A-Za-z0-9_+/=.~:@-]{8}[0-9A-Z]|[0-9][A-Za-z0-9_+/=.~:@-]{8}|-----BEGIN"
)
_RULE_PREFIXES = ("betterleaks.", "veles.secrets/", "kingfisher.", "custom.")
_scanner: Any = None
_scanner_lock = threading.Lock()


def rule_cache() -> Path:
    """Where the compiled provider rules are kept: the user's cache directory
    (``$XDG_CACHE_HOME``, else ``.cache`` in the account's home directory, whatever ``$HOME``
    says), shared by every process and every dsh home of the user: only the first load ever
    compiles them."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError):  # no account database (Windows, a bare container)
            home = str(Path.home())
        base = os.path.join(home, ".cache")
    return Path(base) / "dsh-memory-tui" / "secret-rules"


def _load_scanner() -> Any:
    from kingfisher_sdk import Rules, Scanner

    try:
        cache = rule_cache()
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
        rules = Rules(confidence="low", cache_dir=cache)
    except (OSError, RuntimeError, ValueError):
        rules = Rules(confidence="low", cache=False)  # no usable cache: compile here
    return Scanner(rules, base64=False)


def provider_scanner() -> Any:
    """The provider rules' scanner, loaded on first need (thread-safe)."""
    global _scanner
    if _scanner is None:
        with _scanner_lock:
            if _scanner is None:
                _scanner = _load_scanner()
    return _scanner


def rule_name(rule_id: str) -> str:
    """A rule's id without its catalogue's prefix: ``github-pat``, ``slack-webhook-url``."""
    for prefix in _RULE_PREFIXES:
        if rule_id.startswith(prefix):
            return rule_id[len(prefix) :]
    return rule_id


def _char_offsets(data: bytes, offsets: set[int]) -> dict[int, int]:
    """UTF-8 byte offsets of ``data`` as character offsets (one pass over what lies between
    them)."""
    out: dict[int, int] = {}
    last_byte = last_char = 0
    for offset in sorted(offsets):
        last_char += len(data[last_byte:offset].decode("utf-8", "replace"))
        last_byte = offset
        out[offset] = last_char
    return out


def provider_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    """What the provider rules find, named by rule (``github-pat``)."""
    if not _MAY_HOLD_TOKEN.search(text):
        return
    data = text.encode("utf-8")
    found = []
    for finding in provider_scanner().scan(data):
        where = finding.location
        start, end = where["start_offset"], where["end_offset"]
        if 0 <= start < end <= len(data):
            found.append((start, end, rule_name(finding.rule_id)))
    found.sort()
    if not text.isascii():
        chars = _char_offsets(data, {o for s, e, _ in found for o in (s, e)})
        found = [(chars[s], chars[e], what) for s, e, what in found]
    yield from found[:MAX_FOUND]
    if len(found) > MAX_FOUND:
        raise TooMany(found[MAX_FOUND][0])


# --- our patterns -------------------------------------------------------------------------

_AWS_KEY_ID = Pattern(r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b")
_AWS_SECRET = Pattern(r"(?:^|[^A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])")
_BESIDE = 200  # characters around a key id where its secret access key is looked for
_PRIVATE_KEY = Pattern(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
_URL_PASSWORD = Pattern(r"\b[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s:/@]{1,128}:([^\s:/@]{1,128})@")
_ASSIGNMENT = Pattern(
    r"(?i)(?:password|passwd|passphrase|pwd|pass|secret|token|api[_-]?key|access[_-]?key"
    r"|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials|credential)"
    r"[A-Za-z0-9_.-]{0,30}[\"']?[ \t]{0,5}(?:=>|:=|[:=])[ \t]{0,5}[\"'`]?([^\s\"'`,;]{1,256})"
)
_PLACEHOLDER = Pattern(
    r"^[<{$\[(%]|^(?:x+|\*+|\.+|changeme|example|redacted|none|null|true|false)$"
)
_REFERENCE = Pattern(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:[.\[(]|$)")
_TOKEN = Pattern(r"[A-Za-z0-9+/_\-]{20,}={0,2}")
_DIGITS = str.maketrans("", "", "0123456789")


def aws_keys(text: str) -> Iterator[tuple[int, int, str]]:
    """AWS access key ids, and a 40-character secret access key near one."""
    if not any(prefix in text for prefix in ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")):
        return
    reach = 0  # where the last look for a secret ended: each character is looked at once
    for start, end in _AWS_KEY_ID.spans(text, 1):
        yield start, end, "AWS Access Key"
        low, high = max(reach, start - _BESIDE), end + _BESIDE
        if low < high:
            window = text[low:high]
            for s, e in _AWS_SECRET.spans(window, 1):
                key = window[s:e]
                if key.lower() != key and key.upper() != key:  # base64, not a hex digest
                    yield low + s, low + e, "AWS Secret Access Key"
        reach = max(reach, high)


def private_keys(text: str) -> Iterator[tuple[int, int, str]]:
    if "-----BEGIN" in text:
        for start, end in _PRIVATE_KEY.spans(text):
            yield start, end, "Private Key"


def url_passwords(text: str) -> Iterator[tuple[int, int, str]]:
    if "://" in text:
        for start, end in _URL_PASSWORD.spans(text, 1):
            if _is_value(text[start:end]):
                yield start, end, "password in a URL"


def _is_value(value: str) -> bool:
    """A value that is neither prose, a placeholder (``${VAR}``, ``<your token>``,
    ``changeme``) nor a reference (``os.environ[...]``, ``settings.DB_PASSWORD``)."""
    if len(value) < 6 or _PLACEHOLDER.search(value.lower()):
        return False
    if _REFERENCE.search(value) and not value.isalnum():
        return False
    has_digit = len(value.translate(_DIGITS)) < len(value)
    return has_digit or not value.isalnum() or len(value) >= 12


def assignments(text: str) -> Iterator[tuple[int, int, str]]:
    """``password = ...``, ``DB_PASSWORD=...``, ``token: '...'``: the value."""
    folded = text.lower()
    if not any(word in folded for word in ("pass", "pwd", "secret", "token", "key", "credential")):
        return
    for start, end in _ASSIGNMENT.spans(text, 1):
        if _is_value(text[start:end]):
            yield start, end, "password or key in an assignment"


def entropy(token: str) -> float:
    """Shannon entropy of ``token`` in bits per character."""
    counts = Counter(token).values()
    size = len(token)
    return -sum(n / size * math.log2(n / size) for n in counts)


def high_entropy(text: str) -> Iterator[tuple[int, int, str]]:
    """Unquoted tokens of 20 or more characters with upper and lower case, two digits or
    more, and Shannon entropy 4 or more (16 or more distinct characters)."""
    for start, end in _TOKEN.spans(text):
        token = text[start:end]
        if (
            token.lower() != token
            and token.upper() != token
            and len(token) - len(token.translate(_DIGITS)) >= 2
            and len(set(token)) >= 16
            and entropy(token) >= 4.0
        ):
            yield start, end, "high-entropy credential"


# In the order their names are preferred for one span.
FINDERS = (aws_keys, private_keys, url_passwords, assignments, provider_tokens, high_entropy)
