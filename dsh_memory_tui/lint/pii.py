"""``pii``: e-mail addresses, phone numbers, and card and IBAN numbers that pass their check
digits (Luhn, ISO 7064 mod 97). Patterns under RE2 (``linear``), read on normalized text."""

from __future__ import annotations

from collections.abc import Iterator

from .linear import Pattern

# Each pattern takes the character before it as context (RE2 has no look-behind) and its
# group 1 is the finding; what may follow is checked on the text (``_ends_clean``).
_EMAIL = Pattern(
    r"(?:^|[^\w.+\-:/%])([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"
)
_NOT_PERSONAL = ("git@", "noreply@", "no-reply@", "example@")
_PHONE = Pattern(
    r"(?:^|[^\w+.-])("
    r"\+\d{1,3}[ \-]?(?:\(\d{1,4}\)[ \-]?)?\d{1,4}(?:[ \-]\d{2,8}){1,4}"  # +44 20 7946 0958
    r"|\+\d{8,15}"
    r"|\(\d{3}\) ?\d{3}-\d{4}"  # (415) 555-0132
    r"|\d{3}-\d{3}-\d{4}"
    r"|1[3-9]\d-?\d{4}-?\d{4}"  # a mainland China mobile
    r")"
)
_CARD = Pattern(r"(?:^|[^\w.-])(\d(?:[ \-]?\d){12,18})")
_IBAN = Pattern(r"\b([A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?)\b")


def _ends_clean(text: str, end: int) -> bool:
    """Nothing that continues the number follows ``end``: no letter or digit, and no ``.5`` or
    ``-5`` (a version, a range)."""
    if end >= len(text):
        return True
    after = text[end]
    if after.isalnum() or after == "_":
        return False
    return not (after in ".-" and end + 1 < len(text) and text[end + 1].isdigit())


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


def emails(text: str) -> Iterator[tuple[int, int, str]]:
    if "@" not in text:
        return
    for start, end in _EMAIL.spans(text, 1):
        if not text[start:end].lower().startswith(_NOT_PERSONAL):
            yield start, end, "e-mail address"


_DIGITS = str.maketrans("", "", "0123456789")


def _digits(text: str) -> int:
    return len(text) - len(text.translate(_DIGITS))


def cards(text: str) -> Iterator[tuple[int, int, str]]:
    if _digits(text) < 13:
        return
    for start, end in _CARD.spans(text, 1):
        digits = text[start:end].replace(" ", "").replace("-", "")
        if (
            _ends_clean(text, end)
            and 13 <= len(digits) <= 19
            and len(set(digits)) > 1
            and luhn_ok(digits)
        ):
            yield start, end, "card number (Luhn check passes)"


def phones(text: str) -> Iterator[tuple[int, int, str]]:
    if _digits(text) < 7:
        return
    for start, end in _PHONE.spans(text, 1):
        if _ends_clean(text, end):
            yield start, end, "phone number"


def ibans(text: str) -> Iterator[tuple[int, int, str]]:
    if _digits(text) < 2:
        return
    for start, end in _IBAN.spans(text, 1):
        if iban_ok(text[start:end]):
            yield start, end, "IBAN (check digits pass)"
