"""Commands over whole files: adopt, compact, check, export, import, git's merge driver and
its set-up, and the demo store."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ..errors import ErrorCode, StoreError
from ..host_rules import Scope
from ..present import visible
from ..usage import UsageError
from . import command as cmd
from .command import SESSION, YES_SHARED, arg, command, scope_type, session_of

if TYPE_CHECKING:
    from ..store import MemoryStore


@command(
    "adopt",
    "records of a moved or copied project (lines of another "
    "rootId in this project's files) under this workspace's rootId",
    arg("--from", dest="from_root", metavar="ROOT", help="only this former rootId"),
    arg("--scope", type=scope_type, choices=[Scope.PROJECT, Scope.SHARED]),
    YES_SHARED,
)
def cmd_adopt(store: MemoryStore, args: argparse.Namespace) -> int:
    scopes = [args.scope] if args.scope else [Scope.PROJECT, Scope.SHARED]
    ids: list[str] = []
    for scope in scopes:
        file = store.file_for(scope)
        roots = store.adoptable(file)
        if not args.scope and (not roots or (args.from_root and args.from_root not in roots)):
            continue  # nothing to adopt in this one
        if scope is Scope.SHARED and not args.scope and not args.yes_shared:
            print(f"{file.path}: skipped (shared-project needs --yes-shared)")
            continue
        result = store.adopt(file, from_root=args.from_root, confirm_shared=args.yes_shared)
        for root, n in result.adopted.items():
            print(f"{file.path}: {n} line(s) of {root} adopted")
        for rid, why in result.left:
            print(f"{file.path}: {rid} left as it was: {why}")
        ids += result.ids
    for rid in ids:  # the ids adopted, last (one per line)
        print(rid)
    return 0


@command(
    "export",
    "write a bundle of current records",
    arg("--out", required=True),
    arg("--scope", type=scope_type, action="append"),
    arg(
        "--format",
        choices=["json", "markdown"],
        help="default: markdown for a .md --out, else json",
    ),
    SESSION,
)
def cmd_export(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..bundle import export_bundle, format_for_path

    fmt = args.format or format_for_path(args.out)
    result = export_bundle(
        store, args.out, scopes=args.scope or None, session=session_of(args), fmt=fmt
    )
    for record_id, why in result.left_out:
        print(f"left out {record_id}: {why}", file=sys.stderr)
    if result.over_host_limits:
        print(
            f"note: the host cannot import this bundle: {result.over_host_limits}", file=sys.stderr
        )
    print(result.summary)
    return 0


@command(
    "import",
    "import a bundle into a scope",
    arg("file"),
    arg("--scope", type=scope_type, required=True),
    arg(
        "--format",
        choices=["json", "markdown"],
        help="default: markdown for a .md file or one starting with #, else json",
    ),
    SESSION,
    arg(
        "--dry-run",
        action="store_true",
        help="print the plan, write nothing (with --strict: exit 1 if a record is invalid)",
    ),
    arg("--strict", action="store_true", help="any invalid record aborts the import"),
    YES_SHARED,
)
def cmd_import(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..bundle import apply_import, check_strict, plan_import

    plan = plan_import(store, args.file, args.scope, session=session_of(args), fmt=args.format)
    for bad in plan.invalid:
        print(
            f"invalid: {plan.where(bad.index)} ({bad.id or 'no id'}): {bad.reason}", file=sys.stderr
        )
    print(f"plan for {plan.target.path}: {plan.counts}")
    if args.dry_run:
        for index, record in zip(plan.new_indexes, plan.new, strict=True):
            title = visible(record.title)
            print(f"  new        {plan.where(index)}  {record.type.value:<10}  {title}")
        for dup in plan.duplicates:
            print(f"  duplicate  {plan.where(dup.index)}  same as {dup.existing_id}")
        print("dry run: nothing written")
        if args.strict:  # a bundle with an invalid record fails (a CI job can gate on it)
            check_strict(plan)
        return 0
    result = apply_import(store, plan, strict=args.strict, confirm_shared=args.yes_shared)
    print(f"imported {len(result.written)} record(s)")
    for record_id in result.written:
        print(record_id)
    return 0


@command(
    "compact",
    "keep only each record's current line",
    arg("--scope", type=scope_type),
    YES_SHARED,
)
def cmd_compact(store: MemoryStore, args: argparse.Namespace) -> int:
    for file in store.files(args.scope):
        if not os.path.lexists(file.path):
            continue
        if file.scope is Scope.SHARED and args.scope is None and not args.yes_shared:
            print(f"{file.path}: skipped (shared-project needs --yes-shared)")
            continue
        result = store.compact(file, confirm_shared=args.yes_shared)
        print(
            f"{result.path}: {result.bytes_before} -> {result.bytes_after} bytes, "
            f"{result.lines_removed} line(s) removed, {result.quarantined} quarantined"
        )
    return 0


@command(
    "check",
    "report corrupt, torn, oversized and unsafe files",
    arg("--repair", action="store_true", help="quarantine and compact what it can"),
    cmd.record_id(
        "--accept",
        metavar="ID",
        help="with --repair: accept a shared record whose history does not hold (needs --reason)",
    ),
    arg("--reason", help="why --accept is right (kept with the acceptance)"),
    arg(
        "--since",
        metavar="REV",
        help="CI's gate: list every memory change since REV; exit 1 on a broken history, "
        "conflict markers or a verified record with a secret or instruction flag",
    ),
)
def cmd_check(store: MemoryStore, args: argparse.Namespace) -> int:
    if args.since is not None:
        from ..team.gate import gate

        result = gate(store.paths, args.since)
        print("\n".join(result.lines()))
        return 1 if result.failed else 0
    if args.accept is not None:
        from ..team.chain import accept

        if not args.repair:
            raise UsageError("--accept needs --repair")
        taken = accept(store.paths, args.accept, args.reason or "", store.paths.user_id)
        for found in taken:
            print(f"accepted: {found.record_id}: {found.reason}")
        if not taken:
            print(f"{args.accept}: its history holds: nothing to accept")
    report = store.check(repair=args.repair)
    for p in report.problems:
        where = f"{p.path}:{p.line_no}" if p.line_no else str(p.path)
        state = " (repaired)" if p.repaired else ""
        print(f"{where}: {p.kind}: {p.message}{state}")
    for note in report.notes:
        print(f"note: {note}")
    left = sum(not p.repaired for p in report.problems)
    print(f"{report.files_checked} file(s) checked, {len(report.problems)} problem(s), {left} left")
    return 0 if report.clean else 1


@command(
    "merge-file",
    "git's merge driver for shared.jsonl: merge BASE OURS THEIRS by record id into OURS",
    arg("base"),
    arg("ours"),
    arg("theirs"),
    arg("path", nargs="?", help="the file's path in the repository (for messages)"),
)
def cmd_merge_file(store: MemoryStore, args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..team import merge_file

    name = args.path or args.ours
    try:
        merged = merge_file(
            Path(args.base), Path(args.ours), Path(args.theirs), store.paths.shared_file().location
        )
    except StoreError as exc:
        raise StoreError(exc.code, f"{name}: not merged: {exc.message}") from None
    for conflict in merged.conflicts:
        rival = f"; the other version is {conflict.rival.id}" if conflict.rival else ""
        print(
            f"{name}: {visible(conflict.record_id)} was decided differently on each branch: "
            f"now unverified for review{visible(rival)} (K keeps one)",
            file=sys.stderr,
        )
    return 0


@command(
    "git",
    "set up (install), remove (uninstall) or show (status) git's merge and diff drivers for "
    "shared.jsonl; diff: what commits did to memory, record by record",
    arg("action", choices=["install", "uninstall", "status", "diff", "textconv"]),
    arg(
        "target",
        nargs="?",
        help="diff: a REV_RANGE (A..B, or REV for REV..HEAD; none: the uncommitted change); "
        "textconv: the FILE git passes",
    ),
)
def cmd_git(store: MemoryStore, args: argparse.Namespace) -> int:
    from .. import team

    workspace = store.paths.workspace
    if args.action == "textconv":
        return _git_textconv(args.target)
    if args.action == "diff":
        from ..team.gate import memory_changes

        found = memory_changes(store.paths, args.target)
        for change in found:
            print(change.line())
        print(f"{len(found)} memory change(s)")
        return 0
    if args.target is not None:
        raise UsageError(f"git {args.action} takes no argument")
    if args.action == "install":
        state = team.install(workspace)
    elif args.action == "uninstall":
        state = team.uninstall(workspace)
    else:
        state = team.status(workspace)
    print(f"repository: {state.repository or '(none)'}")
    print(f"attributes: {'merge=' + team.DRIVER if state.attribute else '(not set)'}")
    print(f"merge driver: {state.driver or '(not set)'}")
    print(f"diff driver: {'textconv as records' if state.diff else '(not set)'}")
    print(state.summary())
    return 0 if args.action == "uninstall" or state.installed else 1


def _git_textconv(target: str | None) -> int:
    """git's diff driver: a version of shared.jsonl as readable records, on stdout."""
    from pathlib import Path

    from ..team.readable import as_text

    if target is None:
        raise UsageError("git textconv needs the FILE git passes")
    try:
        data = Path(target).read_bytes()
    except OSError as exc:
        raise StoreError(ErrorCode.READ_FAILED, f"cannot read {target}: {exc.strerror}") from None
    sys.stdout.buffer.write(as_text(data).encode("utf-8", "surrogateescape"))
    return 0


@command(
    "demo",
    "a sample home and workspace under DIR",
    arg("dir"),
    arg(
        "--live",
        action="store_true",
        help="keep appending records (into the demo in DIR if there is one, else a new one)",
    ),
)
def cmd_demo(store: MemoryStore, args: argparse.Namespace) -> int:
    from ..demo import build_demo, is_demo, open_demo, run_live

    # --live on a demo already there (dsh-memory-tui --demo names its DIR) attaches to it.
    demo = open_demo(args.dir) if args.live and is_demo(args.dir) else build_demo(args.dir)
    print(f"demo home:      {demo.home}")
    print(f"demo workspace: {demo.workspace}")
    print(
        f"open it with:   dsh-memory-tui --home {demo.home} --workspace {demo.workspace} "
        f"--user {demo.user}"
    )
    if args.live:
        print("appending live records every few seconds; Ctrl-C stops", flush=True)
        run_live(demo)
    return 0
