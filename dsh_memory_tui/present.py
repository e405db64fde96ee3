"""Words for records shared by the CLI and the app: times, labels, what a revision changed."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from .model import Origin, Record

SHORT_ORIGIN = {
    Origin.USER_AUTHORED: "user",
    Origin.MODEL_SUGGESTED: "agent",
    Origin.DERIVED: "derived",
    Origin.IMPORTED: "imported",
}


def when(ms: int, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An epoch-millisecond time as UTC text."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime(fmt)


def tags_text(tags: Iterable[str]) -> str:
    return ", ".join(tags) or "(none)"


def describe_changes(old: Record | None, new: Record) -> list[str]:
    """What a revision changed compared with the one before, in words."""
    if old is None:
        return ["created"]
    out: list[str] = []
    for name in ("title", "type", "status", "tags", "content"):
        a, b = getattr(old, name), getattr(new, name)
        if a == b:
            continue
        if name == "content":
            out.append("content changed")
        elif name == "tags":
            out.append(f"tags: {tags_text(a)} -> {tags_text(b)}")
        else:
            out.append(f"{name}: {a} -> {b}")
    ga, gb = old.governance, new.governance
    if ga.verification != gb.verification:
        out.append(f"verification: {ga.verification.value} -> {gb.verification.value}")
    if ga.pinned != gb.pinned:
        out.append("pinned" if gb.pinned else "unpinned")
    added = len(gb.sourceRefs) - len(ga.sourceRefs)
    if added > 0:  # a merge (the host's upsert of the same content) adds source refs
        out.append(f"{added} source ref{'s' if added > 1 else ''} added")
    if gb.reviewNote and gb.reviewNote != ga.reviewNote:
        out.append(f"note: {gb.reviewNote}")
    return out or ["no visible change"]
