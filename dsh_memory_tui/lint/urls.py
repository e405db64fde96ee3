"""``url``: each link, with its host (RE2, ``linear``; read on normalized text)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from .linear import Pattern

_URL = Pattern(
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s<>\"'`\])}]+|\bwww\.[A-Za-z0-9-]+\.[^\s<>\"'`\])}]+"
)


_LONGEST_HOST = 253


def urls(text: str) -> Iterator[tuple[int, int, str]]:
    if "://" not in text and "www." not in text:
        return
    for start, end in _URL.spans(text):
        url = text[start:end].rstrip(".,;:!?")
        try:
            host = urlsplit(url if "://" in url else "http://" + url).hostname or url
        except ValueError:
            host = url
        if len(host) > _LONGEST_HOST:  # a name, not the text: DNS allows 253 characters
            host = host[:_LONGEST_HOST] + "…"
        yield start, start + len(url), host
