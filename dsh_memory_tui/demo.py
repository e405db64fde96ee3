"""The demo: a home and a workspace that show every feature at once, and a live simulator.

``build_demo`` fills a fresh home and workspace (an API service, ``acme-api``) through the
store's public API, as alice: decisions, conventions and facts with history, agent proposals,
imported records, shared-project records, two users' profiles, two sessions with auto-writer
digests, an open conflict group, an archived and a rejected record, a newer-schema line and a
corrupt line.
``run_live`` then plays another process: an agent proposing and a host's tool results arriving
every few seconds. Used by ``dsh-memory demo DIR [--live]`` and ``dsh-memory-tui --demo``; a
demo already in DIR (the one ``--demo`` names in its status line and help, say) is attached to
by ``open_demo``, so ``dsh-memory demo DIR --live`` in a second shell writes into it.
"""

from __future__ import annotations

import json
import logging
import random
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .autowriter import AutoWriter, Stopped, StopSignals
from .errors import ErrorCode, StoreError
from .jsonl import ensure_dir
from .model import (
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    SourceRef,
    content_hash,
    import_id,
    now_ms,
)
from .model import make_record as build_record
from .paths import StorePaths
from .store import MemoryStore

log = logging.getLogger("dsh_memory_tui.demo")

USER = "alice"
OTHER_USER = "bob"
# Session ids; their root is the demo workspace's rootId (as the host would write them).
SESSION_ID = "sess-2f9c41"
EARLIER_SESSION_ID = "sess-1a77e0"
HOME_DIR, WORKSPACE_DIR = "home", "acme-api"  # under the demo's DIR
_DAY_MS = 24 * 3600 * 1000
_STEP_MS = 83 * 60 * 1000  # the demo's history: one change every 83 minutes


@dataclass(frozen=True, slots=True)
class DemoPaths:
    home: Path
    workspace: Path
    user: str
    other_user: str
    session: tuple[str, str]


class _HistoryClock:
    """Record times for the demo's past: from 10 days ago, one step per write."""

    def __init__(self) -> None:
        self.now = (now_ms() - 10 * _DAY_MS) // 60_000 * 60_000

    def __call__(self) -> int:
        self.now += _STEP_MS
        return min(self.now, now_ms())


def _empty_dir(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise StoreError(
            ErrorCode.USAGE, f"{path} already exists and is not empty; choose a new DIR"
        )
    ensure_dir(path)


# ----------------------------------------------------------------------------- content

# (type, title, content, tags)
_PROJECT = {
    "postgres": (
        RecordType.DECISION,
        "Use PostgreSQL 16 as the primary datastore",
        "Orders, customers and payments live in PostgreSQL 16. SQLite is only for unit tests.",
        ["database"],
    ),
    "versioning": (
        RecordType.DECISION,
        "Version the public API in the URL path",
        "Public endpoints live under `/v1/...`; a breaking change ships as `/v2/...` and the "
        "old version keeps working for 6 months after the announcement.",
        ["api"],
    ),
    "idempotency": (
        RecordType.DECISION,
        "Idempotency keys on every POST",
        "Every POST endpoint accepts an `Idempotency-Key` header; the response is cached for "
        "24 h per key and API client, so a retried payment never charges twice.",
        ["api", "payments"],
    ),
    "celery": (
        RecordType.DECISION,
        "Background jobs run on Celery with Redis as the broker",
        "Emails, webhooks out and report exports run as Celery tasks; Redis 7 is the broker "
        "and the result backend.",
        ["jobs"],
    ),
    "problem-json": (
        RecordType.CONVENTION,
        "Errors are RFC 9457 problem+json",
        "Error responses use `application/problem+json` with `type`, `title`, `status` and "
        "`detail`; validation errors list the fields in `errors`.",
        ["api"],
    ),
    "migrations": (
        RecordType.CONVENTION,
        "Alembic migrations get two reviewers",
        "Every migration under `migrations/versions/` needs two approvals and must be "
        "reversible (`downgrade()` implemented and tested).",
        ["database", "review"],
    ),
    "lint": (
        RecordType.CONVENTION,
        "ruff and mypy --strict gate every pull request",
        "CI runs `ruff check`, `ruff format --check` and `mypy --strict src/`; fix locally "
        "with `make lint` before pushing.",
        ["ci"],
    ),
    "staging": (
        RecordType.FACT,
        "Staging is https://staging.acme-api.internal",
        "Staging deploys from `main` on every merge; its database is refreshed from an "
        "anonymised production snapshot every Monday at 06:00 UTC.",
        ["environments"],
    ),
    "rate-limit": (
        RecordType.FACT,
        "Rate limit: 600 requests per minute per API key",
        "The gateway allows 600 requests per minute per API key (burst 100) and answers 429 "
        "with a `Retry-After` header past that.",
        ["api"],
    ),
    "webhooks": (
        RecordType.FACT,
        "Stripe retries webhooks for 3 days",
        "Stripe retries a failed webhook delivery with backoff for up to 3 days, so the "
        "handler must be idempotent on `event.id`.",
        ["payments"],
    ),
    "heroku": (
        RecordType.DECISION,
        "Review apps on Heroku",
        "Every pull request gets a Heroku review app. (Replaced by the Kubernetes preview "
        "environments.)",
        ["environments"],
    ),
}

_PROPOSALS = [
    (
        RecordType.CONVENTION,
        "Use freezegun for time-dependent tests",
        "Tests that depend on the clock (token expiry, idempotency TTL) freeze time with "
        "`freezegun` instead of sleeping.",
        ["tests"],
    ),
    (
        RecordType.FACT,
        "The orders list needs an index on (customer_id, created_at)",
        "`GET /v1/orders?customer=...` sorts by `created_at`; without a composite index the "
        "query scans 2M rows (EXPLAIN showed 480 ms on staging).",
        ["database", "performance"],
    ),
    (
        RecordType.DECISION,
        "Pin httpx below 0.28 until the client fixture is updated",
        "httpx 0.28 removed the `app=` shortcut our `api_client` fixture uses; keep "
        "`httpx<0.28` until the fixture moves to `ASGITransport`.",
        ["dependencies", "tests"],
    ),
    (
        RecordType.FACT,
        "Local development starts with `make up`",
        "`make up` starts PostgreSQL, Redis and the API with docker compose; the API reloads "
        "on change at http://localhost:8000/docs.",
        ["dev"],
    ),
]

# Another version of the "lint" convention, as a later session saw it: the two make an open
# conflict group (same type and title, other content) for the conflict view.
_RIVAL_LINT = (
    RecordType.CONVENTION,
    "ruff and mypy --strict gate every pull request",
    "CI runs `ruff check`, `ruff format --check` and `mypy --strict src/ tests/`; the tests are "
    "type-checked too since the fixtures got annotations.",
    ["ci"],
)

_REJECTED = (
    RecordType.DECISION,
    "Keep card numbers in the orders table for refunds",
    "Store the card number with each order so refunds can be issued without Stripe.",
    ["payments"],
)

_IMPORTED = [
    (
        RecordType.CONVENTION,
        "Logs are JSON lines through structlog",
        "Services log JSON lines with structlog; every line carries `request_id`, "
        "`service` and `env`. No print statements.",
        ["logging", "platform"],
        "memory:user:convention:5d0e8a1f3c2b4e6a9b7c1d2e3f4a5b6c",
    ),
    (
        RecordType.CONVENTION,
        "Outbound HTTP calls time out after 5 seconds",
        "Every outbound HTTP client sets a 5 s total timeout and at most 2 retries with "
        "jitter; a call without a timeout fails review.",
        ["platform", "http"],
        "memory:user:convention:8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
    ),
]

_SHARED = [
    (
        RecordType.CONVENTION,
        "Release branches are release/x.y",
        "Cut release branches as `release/<major>.<minor>`; tags are `vX.Y.Z` and are made "
        "by CI only.",
        ["release"],
    ),
    (
        RecordType.CONVENTION,
        "Every public API change gets a changelog entry",
        "A pull request that changes a public endpoint adds a line to `CHANGELOG.md` under "
        "*Unreleased*, naming the endpoint.",
        ["api", "release"],
    ),
]
_SHARED_PROPOSAL = (
    RecordType.CONVENTION,
    "Lint the OpenAPI schema in CI",
    "Run `spectral lint openapi.json` in CI so a missing description or an undocumented "
    "4xx response fails the build.",
    ["api", "ci"],
)

_ALICE = [
    (
        RecordType.PREFERENCE,
        "Answer in English, keep code comments to one line",
        "Reply in English. Code comments are one line and say why, not what.",
        ["style"],
    ),
    (
        RecordType.PREFERENCE,
        "Show the diff before applying an edit",
        "Before changing more than one file, show the diff and wait for a go-ahead.",
        ["workflow"],
    ),
]
_ALICE_PROPOSAL = (
    RecordType.PREFERENCE,
    "Prefers pytest fixtures over unittest classes",
    "Alice writes tests as plain functions with pytest fixtures, never unittest.TestCase.",
    ["tests"],
)
_BOB = [
    (
        RecordType.PREFERENCE,
        "bob: tabs only in Makefiles",
        "Bob's profile: spaces everywhere, tabs only where make requires them.",
        ["style"],
    ),
    (
        RecordType.FACT,
        "bob: private on-call note",
        "Bob's private note: swapped the March on-call week with Carol. Never shown to alice.",
        ["private"],
    ),
]

_FUTURE_LINE = {
    "schemaVersion": 2,
    "id": "memory:agent:fact:7c1e0f4b2a9d8c6e5f3a1b0d9e8c7f6a",
    "scope": "project",
    "type": "fact",
    "title": "p95 latency budget per endpoint (from a newer host)",
    "content": "A record written by a newer host: shown read-only and kept verbatim.",
    "embedding": {"model": "host-embed-2", "dims": 4, "vector": [0.12, -0.4, 0.33, 0.08]},
}
# A line a crashed writer cut short, followed by the next writer's newline.
_CORRUPT_LINE = b'{"schemaVersion":1,"id":"memory:agent:fact:9f2c","scope":"project","ti\n'


def _files(*changes: tuple[str, str] | tuple[str, str, bool]) -> list[dict[str, Any]]:
    return [
        {"path": c[0], "op": c[1], "artifact": bool(c[2]) if len(c) > 2 else False}  # type: ignore[misc]
        for c in changes
    ]


def _tool_history(session: tuple[str, str]) -> list[list[tuple[str, list[dict[str, Any]]]]]:
    """A session's tool results so far, in phases: ``(tool, files)`` per result."""
    if session[0] == EARLIER_SESSION_ID:
        return [
            [
                ("edit_file", _files(("docs/api.md", "modify"))),
                ("run_command", _files(("docs/_build/openapi.json", "create", True))),
                ("write_file", _files(("docs/_build/index.html", "create", True))),
            ],
            [
                ("edit_file", _files(("docs/api.md", "modify"), ("docs/webhooks.md", "create"))),
                ("run_command", _files(("docs/_build/openapi.json", "modify", True))),
            ],
        ]
    return [
        [
            ("write_file", _files(("src/acme_api/routes/refunds.py", "create"))),
            ("write_file", _files(("tests/test_refunds.py", "create"))),
            ("edit_file", _files(("src/acme_api/app.py", "modify"))),
        ],
        [
            ("edit_file", _files(("src/acme_api/models.py", "modify"))),
            ("run_command", _files(("migrations/versions/0042_refunds.py", "create", True))),
            ("delete_file", _files(("src/acme_api/legacy_refunds.py", "delete"))),
        ],
        [
            ("write_file", _files(("scratch/notes.txt", "create"))),
            (
                "edit_file",
                _files(
                    ("tests/test_refunds.py", "modify"),
                    ("src/acme_api/routes/refunds.py", "modify"),
                ),
            ),
            ("delete_file", _files(("scratch/notes.txt", "delete"))),
            ("run_command", _files(("reports/coverage.xml", "create", True))),
        ],
    ]


def _tool_results(
    session: tuple[str, str], cwd: Path, phase: list[tuple[str, list[dict[str, Any]]]], seq: int
) -> list[dict[str, Any]]:
    return [
        {
            "sessionId": session[0],
            "rootId": session[1],
            "seq": seq + i,
            "cwd": str(cwd),
            "tool": tool,
            "ok": True,
            "files": files,
        }
        for i, (tool, files) in enumerate(phase)
    ]


def _replay_session(
    writer: AutoWriter, workspace: Path, session: tuple[str, str], flush: bool
) -> int:
    """Feed a session's recorded tool results to ``writer``; returns the next seq."""
    seq = 1
    for phase in _tool_history(session):
        for result in _tool_results(session, workspace, phase, seq):
            writer.on_tool_result(result)
        seq += len(phase) + 3  # the tools in between touched no file
        if flush:
            writer.flush_all()
    return seq


# ----------------------------------------------------------------------------- building


def build_demo(root: str | Path) -> DemoPaths:
    """Create ``root/home`` (a DSH_HOME) and ``root/acme-api`` (a workspace) filled with demo
    records. USAGE if either exists and is not empty; other StoreErrors as the store raises.
    """
    root = Path(root).expanduser().absolute()
    home, workspace = root / HOME_DIR, root / WORKSPACE_DIR
    _empty_dir(home)
    _empty_dir(workspace)
    clock = _HistoryClock()
    alice = MemoryStore(StorePaths.resolve(home, workspace, USER), clock=clock)
    bob = MemoryStore(StorePaths.resolve(home, workspace, OTHER_USER), clock=clock)
    root_id = alice.paths.root_id
    earlier, current = (EARLIER_SESSION_ID, root_id), (SESSION_ID, root_id)
    demo = DemoPaths(alice.paths.home, alice.paths.workspace, USER, OTHER_USER, current)

    ids = {
        key: alice.create(Scope.PROJECT, t, title, content, tags).id
        for key, (t, title, content, tags) in _PROJECT.items()
    }
    for key in ("postgres", "versioning", "idempotency", "migrations", "lint"):
        alice.verify(ids[key])
    # It names a link, a risk flag: verifying it takes a reason.
    alice.verify(ids["staging"], reason="the staging host is ours and documented in the runbook")
    alice.edit(
        ids["postgres"],
        2,
        content=(
            "Orders, customers and payments live in PostgreSQL 16 behind pgbouncer "
            "(transaction pooling). SQLite is only for unit tests."
        ),
    )
    alice.edit(
        ids["postgres"],
        3,
        content=(
            "Orders, customers and payments live in PostgreSQL 16 behind pgbouncer "
            "(transaction pooling); reports read from the replica. SQLite is only for unit tests."
        ),
    )
    alice.edit(ids["problem-json"], 1, title="Errors are RFC 9457 problem+json, never HTML")
    alice.archive(ids["heroku"])

    refs = [SourceRef(kind="session", id=EARLIER_SESSION_ID)]
    for t, title, content, tags in _PROPOSALS:
        alice.propose(Scope.PROJECT, t, title, content, tags, source_refs=refs)
    alice.propose(Scope.PROJECT, *_RIVAL_LINT, source_refs=refs)
    rejected = alice.propose(Scope.PROJECT, *_REJECTED, source_refs=refs).id
    alice.reject(rejected, reason="PCI DSS: card numbers never leave Stripe; refund by charge id")

    project = alice.paths.project_file()
    for t, title, content, tags, original in _IMPORTED:
        alice.add(project, _imported(alice.clock, t, title, content, tags, original))

    shared = [alice.create(Scope.SHARED, *fields, confirm_shared=True).id for fields in _SHARED]
    alice.verify(shared[0], confirm_shared=True)
    alice.propose(Scope.SHARED, *_SHARED_PROPOSAL, source_refs=refs, confirm_shared=True)

    profile = [alice.create(Scope.USER, *fields).id for fields in _ALICE]
    alice.verify(profile[0])
    alice.propose(Scope.USER, *_ALICE_PROPOSAL, source_refs=refs)
    for fields in _BOB:
        bob.create(Scope.USER, *fields)

    writer = AutoWriter(alice)
    for session in (earlier, current):
        _replay_session(writer, demo.workspace, session, flush=True)

    # Last, so no store write quarantines it: a newer host's line and a torn, corrupt one.
    future = dict(_FUTURE_LINE, scopeKey=root_id, createdAt=clock(), updatedAt=clock())
    view = alice.view(project)
    with view.safe.locked():
        view.safe.append(json.dumps(future).encode() + b"\n" + _CORRUPT_LINE)
    return demo


def is_demo(root: str | Path) -> bool:
    """True if ``root`` holds a demo ``build_demo`` made (its home and workspace stores)."""
    root = Path(root).expanduser().absolute()
    project = StorePaths.resolve(root / HOME_DIR, root / WORKSPACE_DIR, USER).project_file()
    return (root / HOME_DIR).is_dir() and project.path.is_file()


def open_demo(root: str | Path) -> DemoPaths:
    """The demo ``build_demo(root)`` made, to attach to. USAGE if ``root`` holds none."""
    if not is_demo(root):
        raise StoreError(
            ErrorCode.USAGE,
            f"{root} holds no demo (expected {HOME_DIR}/ and {WORKSPACE_DIR}/ in it, as "
            "`dsh-memory demo DIR` makes them)",
        )
    root = Path(root).expanduser().absolute()
    paths = StorePaths.resolve(root / HOME_DIR, root / WORKSPACE_DIR, USER)
    return DemoPaths(paths.home, paths.workspace, USER, OTHER_USER, (SESSION_ID, paths.root_id))


def reach_commands(home: Path, workspace: Path, user: str = USER) -> list[str]:
    """How another shell reaches the demo whose home is ``home`` (``DIR/home``): live writes
    into it, the app and the CLI on it."""
    root = shlex.quote(str(home.parent))
    where = (
        f"--home {shlex.quote(str(home))} --workspace {shlex.quote(str(workspace))} "
        f"--user {shlex.quote(user)}"
    )
    return [
        f"dsh-memory demo {root} --live",
        f"dsh-memory-tui {where}",
        f"dsh-memory {where} list",
    ]


def _imported(
    clock: Callable[[], int],
    record_type: RecordType,
    title: str,
    content: str,
    tags: list[str],
    original: str,
) -> Callable[[str], Record]:
    # As an import of the platform team's bundle writes it (bundle.py): an import id, and
    # the original record as its sourceRef.
    def make(scope_key: str) -> Record:
        return build_record(
            scope=Scope.PROJECT,
            scope_key=scope_key,
            record_type=record_type,
            title=title,
            content=content,
            tags=tags,
            provenance=Provenance(
                kind=ProvenanceKind.IMPORT, note="imported from platform-team.json"
            ),
            origin=Origin.IMPORTED,
            source_refs=[SourceRef(kind="import", id=original, contentHash=content_hash(content))],
            record_id=import_id(),
            now=clock(),
        )

    return make


# ----------------------------------------------------------------------------- live

_LIVE_PROPOSALS = [
    (
        Scope.USER,
        RecordType.PREFERENCE,
        "Prefers {tool} for {task}",
        "While working on {area}, alice asked for {tool} to {task}.",
        ["workflow"],
    ),
    (
        Scope.SESSION,
        RecordType.FACT,
        "{area}: flaky test seen",
        "`tests/test_{module}.py` failed once and passed on rerun while working on {area}; "
        "suspect shared state in the {module} fixture.",
        ["tests"],
    ),
    (
        Scope.USER,
        RecordType.PREFERENCE,
        "Wants {area} changes split by {unit}",
        "Alice asked to split the {area} work into one pull request per {unit}.",
        ["review"],
    ),
    (
        Scope.SESSION,
        RecordType.FACT,
        "{area}: {module} endpoint is slow",
        "`GET /v1/{module}` took {ms} ms on the local database with the staging snapshot.",
        ["performance"],
    ),
]
_WORDS = {
    "tool": ["httpie", "pytest -x --lf", "ripgrep", "ruff --fix", "pgcli"],
    "task": ["trying endpoints", "rerunning failures", "searching the code", "quick fixes"],
    "area": ["refunds", "webhooks", "order export", "rate limiting", "auth tokens"],
    "module": ["orders", "refunds", "customers", "payments", "webhooks"],
    "unit": ["endpoint", "migration", "module"],
    "ms": ["480", "730", "1210", "365"],
}
_LIVE_FILES = [
    "src/acme_api/routes/refunds.py",
    "src/acme_api/services/refunds.py",
    "src/acme_api/schemas/refund.py",
    "tests/test_refunds.py",
    "tests/test_webhooks.py",
    "src/acme_api/routes/webhooks.py",
    "docs/api.md",
]


def _live_proposal(store: MemoryStore, demo: DemoPaths, rng: random.Random) -> None:
    scope, record_type, title, content, tags = rng.choice(_LIVE_PROPOSALS)
    words = {key: rng.choice(values) for key, values in _WORDS.items()}
    result = store.propose(
        scope,
        record_type,
        title.format(**words),
        content.format(**words),
        tags,
        session=demo.session if scope is Scope.SESSION else None,
        source_refs=[SourceRef(kind="session", id=demo.session[0])],
    )
    log.info("demo: proposal %s%s", result.id, "" if result.written else " (already there)")


def _live_tool_results(
    writer: AutoWriter, demo: DemoPaths, rng: random.Random, seq: int, created: list[str]
) -> int:
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if roll < 0.35:
            path = f"tests/live/test_case_{seq}.py"
            created.append(path)
            change = {"path": path, "op": "create", "artifact": False}
        elif roll < 0.5 and created:
            change = {"path": created.pop(rng.randrange(len(created))), "op": "delete"}
        elif roll < 0.6:
            path = f"reports/run-{seq}.html"
            change = {"path": path, "op": "create", "artifact": True}
        else:
            change = {"path": rng.choice(_LIVE_FILES), "op": "modify"}
        writer.on_tool_result(
            {
                "sessionId": demo.session[0],
                "rootId": demo.session[1],
                "seq": seq,
                "cwd": str(demo.workspace),
                "tool": "edit_file",
                "ok": True,
                "files": [change],
            }
        )
        seq += 1
    return seq


def run_live(
    demo: DemoPaths,
    *,
    interval_s: float = 3.0,
    stop: threading.Event | None = None,
    rng_seed: int | None = None,
) -> None:
    """Every ``interval_s``, alternately: an agent proposal (alice's profile or the demo
    session) and a few tool results for the demo session, digested by an auto-writer. Runs
    until ``stop`` is set, or (in the main thread) SIGINT or SIGTERM; store errors are logged
    and skipped. Uses its own store, like another process; the project file is left alone so
    its corrupt line stays for the app to warn about.
    """
    stop = stop or threading.Event()
    rng = random.Random(rng_seed)
    store = MemoryStore(StorePaths(demo.home, demo.workspace, demo.user))
    writer = AutoWriter(store)
    # The session so far: the digest goes on from what build_demo wrote.
    seq = _replay_session(writer, demo.workspace, demo.session, flush=False)
    created: list[str] = []
    step = 0
    with StopSignals() as signals:
        try:
            while not signals.requested:
                next_step = time.monotonic() + interval_s
                while (left := next_step - time.monotonic()) > 0:
                    due = writer.due()
                    with signals.waiting():
                        if stop.wait(left if due is None else min(due, left)):
                            return
                    writer.flush_due()
                try:
                    if step % 2 == 0:
                        _live_proposal(store, demo, rng)
                    else:
                        seq = _live_tool_results(writer, demo, rng, seq, created)
                except Exception as exc:  # the demo goes on whatever the store says
                    log.info("demo: live step skipped: %s", exc)
                step += 1
        except (Stopped, KeyboardInterrupt):
            pass
        finally:
            writer.flush_all()


__all__ = [
    "DemoPaths",
    "build_demo",
    "is_demo",
    "open_demo",
    "reach_commands",
    "run_live",
]
