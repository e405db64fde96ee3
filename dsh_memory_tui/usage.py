"""Usage errors of both command lines (``dsh-memory`` and ``dsh-memory-tui``): argparse only."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn


class UsageError(Exception):
    """A mistake in the command line: exit 2."""


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without loading shutil (and the compression
    modules it loads: a tenth of a command's start): ``$COLUMNS``, else the terminal's, else
    80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class UsageFormatter(argparse.HelpFormatter):
    """argparse's formatter, as wide as the terminal (argparse makes one for every argument
    it adds, and its own asks shutil)."""

    def __init__(self, prog: str, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("width") is None:
            kwargs["width"] = terminal_columns() - 2  # as argparse's own
        super().__init__(prog, *args, **kwargs)


class UsageParser(argparse.ArgumentParser):
    """A parser whose mistakes raise :class:`UsageError` (printed ``error[USAGE]: ...``, exit 2)
    instead of argparse's own two lines; ``dsh-memory`` and ``dsh-memory-tui`` both use it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", UsageFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        # The error first (one line, as every error), then the usage of the command it is in.
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().rstrip()}")
