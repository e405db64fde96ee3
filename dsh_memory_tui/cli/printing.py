"""How the commands print: tables that fit a terminal, one record, JSON, a written id."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import StoreError
from ..host_rules import Scope
from ..ids import short_ids
from ..js_json import dumps_js
from ..present import (
    ADDED,
    CONTEXT,
    REMOVED,
    REVISION,
    facts_text,
    hidden_warning,
    history_lines,
    json_for_terminal,
    record_hidden_characters,
    visible,
    when,
)

if TYPE_CHECKING:
    from ..record import Record
    from ..store import MemoryStore


def _widths(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> list[int]:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    return widths


def table(rows: Sequence[Sequence[str]], headers: Sequence[str], out: TextIO) -> None:
    """``rows`` under ``headers``, each column as wide as its widest cell."""
    widths = _widths(rows, headers)
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {}"
    print(fmt.format(*headers).rstrip(), file=out)
    for row in rows:
        print(fmt.format(*row).rstrip(), file=out)


LIST_HEADERS = (
    "ID",
    "SCOPE",
    "TYPE",
    "STATUS",
    "VERIFICATION",
    "ORIGIN",
    "REV",
    "UPDATED",
    "TITLE",
)
# Dropped in this order while a terminal is too narrow for the table (the title goes last).
LIST_DROPPABLE = ("ORIGIN", "UPDATED", "SCOPE", "REV")
MIN_TITLE = 12


def _terminal_width(out: TextIO) -> int | None:
    """The terminal's width when ``out`` is one (a pipe gets every column, whole)."""
    try:
        if not out.isatty():
            return None
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):
        return None


def _fit(rows: list[list[str]], headers: list[str], width: int, droppable: Sequence[str]) -> None:
    """Make the table at most ``width`` columns: drop columns of ``droppable``, then cut the
    titles (the last column) with an ellipsis."""

    def total() -> int:
        return sum(_widths(rows, headers)) + 2 * (len(headers) - 1)

    for name in droppable:
        if total() - _widths(rows, headers)[-1] + MIN_TITLE <= width:
            break
        at = headers.index(name)
        del headers[at]
        for row in rows:
            del row[at]
    room = max(MIN_TITLE, width - (total() - _widths(rows, headers)[-1]))
    for row in rows:
        if len(row[-1]) > room:
            row[-1] = row[-1][: room - 1] + "…"


def fitted_table(
    rows_of: Callable[[Callable[[str], str]], list[list[str]]],
    headers: Sequence[str],
    out: TextIO,
    known_ids: Callable[[], Iterable[str]],
    droppable: Sequence[str],
) -> None:
    """A table of records (the title last) that fits a terminal: ``rows_of(name)`` makes the
    rows with each id as ``name`` gives it; when they are too wide, short ids (each a unique
    prefix among ``known_ids()``, which every command takes), then fewer columns (those of
    ``droppable``, in order), then cut titles. A pipe gets every column, whole."""
    rows, shown = rows_of(lambda rid: rid), list(headers)
    width = _terminal_width(out)
    if width is not None and sum(_widths(rows, shown)) + 2 * (len(shown) - 1) > width:
        short = short_ids(known_ids())
        rows = rows_of(lambda rid: short.get(rid, rid))
        _fit(rows, shown, width, droppable)
    table(rows, shown, out)


def print_records(
    records: Sequence[Record],
    out: TextIO,
    known_ids: Callable[[], Iterable[str]],
    by: Callable[[Record], str] | None = None,
) -> None:
    """The records as a table that fits a terminal (``fitted_table``). ``by``: whose clone
    wrote each record (a BY column first)."""
    if not records:
        print("(no records)", file=out)
        return

    def row(r: Record, rid: str) -> list[str]:
        return [
            *([visible(by(r)) or "-"] if by is not None else []),
            visible(rid),
            r.scope.value,
            r.type.value,
            r.status.value,
            r.governance.verification.value,
            r.governance.origin.value,
            str(r.governance.revision),
            when(r.updatedAt),
            visible(r.title[:60]),
        ]

    headers = ["BY", *LIST_HEADERS] if by is not None else list(LIST_HEADERS)
    fitted_table(
        lambda name: [row(r, name(r.id)) for r in records],
        headers,
        out,
        known_ids,
        LIST_DROPPABLE,
    )


def clone_names(store: MemoryStore, records: Sequence[Record]) -> Callable[[Record], str] | None:
    """Whose clone wrote each record (a teammate's name, "" for this clone's), or None when
    every record is this clone's: then the table has no BY column.
    """
    own = store.paths.root_id
    if all(r.scope is not Scope.SHARED or r.scopeKey == own for r in records):
        return None
    from ..team import CloneNames  # only for another clone's records

    names = CloneNames(store.paths.workspace, store.paths.shared_file().path, own)
    return lambda r: names.label(r.scopeKey) if r.scope is Scope.SHARED else ""


def print_record(
    record: Record,
    history: Sequence[Record] | None,
    out: TextIO,
    facts: Sequence[tuple[str, str]] = (),
) -> None:
    """One record: a warning of hidden characters, its facts, its content, its history."""
    hidden = record_hidden_characters(record)
    if hidden:
        print(f"warning:      this record {hidden_warning(hidden)}", file=out)
    print(facts_text([("title", visible(record.title)), *facts]), file=out)
    print("\n" + visible(record.content, multiline=True), file=out)
    if history is not None:
        print("\nhistory:", file=out)
        for kind, text in history_lines(history):
            # A revision's line, then its diff indented below it: "-"/"+" lines, "@@" places.
            indent = "  " if kind == REVISION else "      "
            mark = f"{kind} " if kind in (REMOVED, ADDED, CONTEXT) else ""
            print(f"{indent}{mark}{text}".rstrip(), file=out)


def dump(obj: Any) -> None:
    """``obj`` as indented JSON on stdout, safe for a terminal."""
    sys.stdout.write(json_for_terminal(dumps_js(obj, indent=2)) + "\n")


def dump_plain(obj: Any) -> None:
    """``dump`` of plain data (strings, integers, booleans, None, lists, dicts: no float, no
    ``RawJSON``), the same bytes serialized in Rust (the json module's indenting encoder is
    pure Python: 0.1 s for 10,000 citations); a lone surrogate goes the json module's way."""
    from ..model_fast import json_in_rust

    text = json_in_rust(obj, 2)
    if text is None:
        dump(obj)
        return
    sys.stdout.write(json_for_terminal(text) + "\n")


def symbol_hints(store: MemoryStore, cites: Sequence[str] | None) -> None:
    """On stderr, for each ``--cite`` line range that lies inside one function or class: the
    symbol to cite instead (it follows the code when it moves)."""
    if not cites:
        return  # nothing cited: the citations are not loaded
    from ..sources import Citation

    for spec in cites:
        try:
            offered = store.sources.symbol_for(Citation.parse(spec))
        except StoreError:
            continue
        if offered is not None:
            print(
                f"hint: {visible(spec)} lies inside {visible(offered.symbol or '')}: cite "
                f"{visible(offered.label)} instead, and the citation follows the code when it "
                "moves",
                file=sys.stderr,
            )


def written(record_id: str, note: str | None = None) -> int:
    """A write's last words: ``note`` if any, then the id alone on the last line (exit 0)."""
    if note:
        print(note)
    print(record_id)
    return 0
