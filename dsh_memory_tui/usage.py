"""Usage errors of both command lines (``dsh-memory`` and ``dsh-memory-tui``): argparse only."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """A mistake in the command line: exit 2."""


class UsageParser(argparse.ArgumentParser):
    """A parser whose mistakes raise :class:`UsageError` (printed ``error[USAGE]: ...``, exit 2)
    instead of argparse's own two lines; ``dsh-memory`` and ``dsh-memory-tui`` both use it."""

    def error(self, message: str) -> NoReturn:
        # The error first (one line, as every error), then the usage of the command it is in.
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().rstrip()}")
