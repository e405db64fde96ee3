"""dsh-memory-tui: parse the command line, open the store, run the app."""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ErrorCode, StoreError
from ..paths import StorePaths, resolve_home
from ..settings import Settings, check_environment, load_settings, save_settings
from ..usage import UsageError, UsageParser

if TYPE_CHECKING:
    from .app import MemoryApp


def _theme(value: str) -> str:
    from textual.theme import BUILTIN_THEMES

    if value not in BUILTIN_THEMES:
        raise argparse.ArgumentTypeError(
            f"invalid theme {value!r} (choose from {', '.join(sorted(BUILTIN_THEMES))})"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="dsh-memory-tui", description="Review dsh workspace memory.")
    p.add_argument("--home", help="DSH_HOME (default: $DSH_HOME or ~/.dsh)")
    p.add_argument("--workspace", help="workspace root (default: the current directory)")
    p.add_argument("--user", help="acting user id (default: $DSH_USER_ID or the login name)")
    p.add_argument("--session", help="open on this session's records")
    p.add_argument(
        "--demo",
        action="store_true",
        help="open a fresh demo store (with live appends) in a temporary directory",
    )
    p.add_argument("--no-watch", action="store_true", help="do not follow other processes' writes")
    p.add_argument(
        "--theme",
        type=_theme,
        help="the colour theme for this run (default: the one last chosen in the palette, "
        "kept in DSH_HOME/dsh-memory-tui.json, your own with --demo too)",
    )
    return p


def apply_theme(app: MemoryApp, home: Path, theme: str | None) -> str:
    """Give ``app`` the theme ``theme`` (``--theme``), else the one saved under ``home``;
    returns the theme it starts with. A saved theme this Textual does not know is ignored."""
    saved = load_settings(home)
    if saved.problem is not None and theme is None:
        print(f"warning: the saved theme is ignored: {saved.problem}", file=sys.stderr)
    chosen = theme or saved.theme
    if chosen is not None and chosen in app.available_themes:
        app.theme = chosen
    return app.theme


def remember_theme(app: MemoryApp, home: Path, started: str) -> None:
    """Save the theme chosen during the run (the palette's "Change theme"), if one was; a
    failed save is one line on stderr, never a failed run."""
    if app.theme == started:
        return
    try:
        save_settings(home, Settings(theme=app.theme))
    except StoreError as exc:
        print(f"note: the theme is not remembered: {exc}", file=sys.stderr)


@dataclass
class Opened:
    """What ``open_app`` made: the app, the home its theme is kept in, the demo's simulator."""

    app: MemoryApp
    # The user's own home, ``--demo`` or not: the demo's is deleted at exit, and a theme
    # chosen in the demo is the next real run's too.
    settings_home: Path
    live: threading.Event | None = None


def open_app(args: argparse.Namespace) -> Opened:
    """The app for ``args``: on a new demo store (its live simulator started) or the store the
    flags name. StoreError for a store that cannot be read."""
    live: threading.Event | None = None
    if args.demo:
        from ..demo import build_demo, run_live

        root = tempfile.mkdtemp(prefix="dsh-memory-demo-")
        atexit.register(shutil.rmtree, root, True)
        demo = build_demo(root)
        paths = StorePaths.resolve(demo.home, demo.workspace, demo.user)
        # The live simulator writes through its own store, as another process would.
        live = threading.Event()
        threading.Thread(
            target=run_live, args=(demo,), kwargs={"stop": live}, name="demo-live", daemon=True
        ).start()
    else:
        paths = StorePaths.resolve(args.home, args.workspace, args.user)
    from ..store import MemoryStore, check_readable
    from .app import MemoryApp

    store = MemoryStore(paths)
    try:
        # An unreadable or unsafe store is an error here, not a traceback; the app loads it.
        check_readable(store.files())
    except StoreError:
        if live is not None:
            live.set()
        raise
    app = MemoryApp(store, session=args.session, watch=not args.no_watch, demo=args.demo)
    return Opened(app, resolve_home(args.home), live)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        print(f"error[{ErrorCode.USAGE}]: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    opened: Opened | None = None
    try:
        check_environment()  # every setting, before anything is opened
        opened = open_app(args)
        app = opened.app
        started = apply_theme(app, opened.settings_home, args.theme)
        app.run()
        remember_theme(app, opened.settings_home, started)
        if app.startup_error is not None:
            raise app.startup_error
        if app.return_code:
            return app.return_code  # Textual printed what went wrong
    except StoreError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if opened is not None and opened.live is not None:
            opened.live.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
