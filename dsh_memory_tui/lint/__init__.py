"""Review evidence: risk flags and near-duplicates, pure functions over record text (no I/O but
the provider rules' cache, nothing stored in a record).

A reviewer decides in seconds whether an agent may rely on a proposal; this package finds the
evidence. ``flags`` names each risky span of a title or content:

- ``secret``: provider API keys and tokens (the gitleaks family's maintained rule set, run by
  kingfisher's native scanner), private keys, passwords in URLs and in assignments, unquoted
  high-entropy credentials (``secrets``);
- ``pii``: e-mail addresses, phone numbers, and card and IBAN numbers that pass their check
  digits (``pii``);
- ``instruction``: text addressed to the agent, in English and Chinese (``instructions``);
- ``url``: each link, with its host (``urls``);
- ``invisible``: bidi, zero-width and control characters (``present.hidden_spans``).

Every detector reads the text ``normalize`` makes (so full-width letters, look-alikes, hidden
characters and continued lines do not hide a flag) and runs in time linear in it (``linear``).
``NearDuplicates`` (``near``) finds records that say nearly the same thing; ``report`` puts both
together for ``dsh-memory lint`` and the app.
"""

from .near import (
    NEAR_DUPLICATE,
    TITLE_WEIGHT,
    NearDuplicates,
    Similar,
    fingerprint,
    similarity,
    tokens,
)
from .pii import iban_ok, luhn_ok
from .report import RecordLint, report, verified_secrets, visible_to_reviewer
from .risk import (
    FLAG_KINDS,
    NOT_EXAMINED,
    Flag,
    describe,
    flags,
    kinds,
    masked,
    masked_record,
    matches_filter,
    record_flags,
    secret_spans,
    text_flags,
)

__all__ = [
    "FLAG_KINDS",
    "NEAR_DUPLICATE",
    "NOT_EXAMINED",
    "TITLE_WEIGHT",
    "Flag",
    "NearDuplicates",
    "RecordLint",
    "Similar",
    "describe",
    "fingerprint",
    "flags",
    "iban_ok",
    "kinds",
    "luhn_ok",
    "masked",
    "masked_record",
    "matches_filter",
    "record_flags",
    "report",
    "secret_spans",
    "similarity",
    "text_flags",
    "tokens",
    "verified_secrets",
    "visible_to_reviewer",
]
