"""dsh-memory-tui: parse the command line, open the store, run the app."""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence

from ..errors import StoreError
from ..paths import StorePaths


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dsh-memory-tui", description="Review dsh workspace memory.")
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
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    live: threading.Event | None = None
    try:
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
        from ..store import MemoryStore
        from ..store.preview import check_readable
        from .app import MemoryApp

        store = MemoryStore(paths)
        # An unreadable or unsafe store is an error here, not a traceback; the app loads it.
        check_readable(store.files())
        app = MemoryApp(store, session=args.session, watch=not args.no_watch, demo=args.demo)
        app.run()
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
        if live is not None:
            live.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
