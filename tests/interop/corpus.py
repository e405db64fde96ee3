"""The host corpus (``tests/host-corpus``) made usable in a test's temporary folders.

Pure standard library; nothing here imports ``dsh_memory_tui``, so these helpers stay usable
while the package is being rewritten. The corpus is data the TypeScript host wrote, with
placeholders for the paths and ids of the machine that generated it (see its README):
``substitute`` puts a case's own values back, ``install_*`` copies store trees into a case's
home and workspace, and ``write_validation_case`` writes one ``validation.jsonl`` case's file.

The corpus lives in the repository (``tests/host-corpus``, copied from the team's shared folder;
its README names the host commit that produced it), so a clone anywhere runs these tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
REPO_ROOT = TESTS.parent
CORPUS = TESTS / "host-corpus"
HARNESS = TESTS / "host-harness"
STORES = CORPUS / "stores"
AUTOWRITER = CORPUS / "autowriter"
BUNDLES = CORPUS / "bundles"

MEMORY_DIR = ("workspace-memory",)
PROJECT_DIR = (".dsh", "workspace-memory")
SCOPE_FILES = {"project": "records.jsonl", "shared-project": "shared.jsonl", "user": "user.jsonl"}
AUTOWRITER_SESSION = "s-auto"

# bundles/: the rootId placeholder of the workspace each folder was written in. Every other
# bundle placeholder gets an empty workspace of its own (see ``bundle_dirs``).
BUNDLE_ROOT_TAGS = ("TARGET", "MD_TARGET", "MD_USER_TARGET", "MD_PARTIAL", "OTHER")
BUNDLE_FOLDER_ROOTS = {
    "source": "__ROOT_ID__",
    "import-own-json-same-store": "__ROOT_ID__",
    "import-own-json-fresh-store": "__TARGET_ROOT_ID__",
    "import-markdown-own-export": "__MD_TARGET_ROOT_ID__",
    "import-markdown-user-authored": "__MD_USER_TARGET_ROOT_ID__",
    "import-markdown-partial": "__MD_PARTIAL_ROOT_ID__",
    "import-markdown-verified": "__MD_TARGET_ROOT_ID__",
}

_SESSION_REF = re.compile(r"sessions/session-([^/\\\"\s]+?)\.jsonl")
_SESSION_FILE = re.compile(r"session-(.+?)(\.jsonl(?:\..*)?)")


# ------------------------------------------------------------------ naming rules (paths.json)
def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def root_id(path: str | os.PathLike[str]) -> str:
    """``root:`` + sha256 hex of the canonical (realpath) bytes of ``path``."""
    return "root:" + sha256_hex(os.fsencode(os.path.realpath(path)))


def root_id_of_canonical(canonical: str) -> str:
    """The rootId of an already canonical path string (no filesystem access)."""
    return "root:" + sha256_hex(os.fsencode(canonical))


def session_scope_key(session_id: str, root: str) -> str:
    return f"{session_id}|{root}"


def session_file_name(session_id: str, root: str) -> str:
    """The host's session file name: 32 hex of sha256(``<sessionId>|<rootId>``) + ``.jsonl``."""
    return scope_key_file_name(session_scope_key(session_id, root))


def scope_key_file_name(scope_key: str) -> str:
    return sha256_hex(scope_key)[:32] + ".jsonl"


def scope_key_sha16(scope_key: str) -> str:
    """``sha256hex(utf8(scopeKey))[:16]``: the scope part of auto-fact ids."""
    return sha256_hex(scope_key)[:16]


# ------------------------------------------------------------------ placeholders
def substitute(text: str, mapping: dict[str, str]) -> str:
    """Replace every placeholder of ``mapping`` in ``text``, longest placeholder first (so
    ``__ROOT_ID_UPPERCASE__`` is not clobbered by ``__ROOT_ID__``)."""
    for placeholder in sorted(mapping, key=len, reverse=True):
        text = text.replace(placeholder, mapping[placeholder])
    return text


def rename_session_refs(text: str, root: str) -> str:
    """``sessions/session-<sessionId>.jsonl`` (the corpus's readable name) -> the real name."""
    return _SESSION_REF.sub(lambda m: "sessions/" + session_file_name(m.group(1), root), text)


def real_session_file_name(name: str, root: str) -> str:
    """A corpus file name ``session-<id>.jsonl[.bak|.corrupt]`` -> ``<32 hex>.jsonl[...]``."""
    match = _SESSION_FILE.fullmatch(name)
    if match is None:
        return name
    return session_file_name(match.group(1), root)[: -len(".jsonl")] + match.group(2)


@dataclass
class CaseDirs:
    """A case's temporary home, workspace and folder (canonical paths), its rootId and the
    placeholder mapping for its corpus files."""

    home: Path
    workspace: Path
    tmp: Path
    root_id: str
    mapping: dict[str, str] = field(default_factory=dict)

    def text(self, text: str) -> str:
        """Corpus text with this case's values: placeholders, then session file names."""
        return rename_session_refs(substitute(text, self.mapping), self.mapping["__ROOT_ID__"])

    def value(self, value: Any) -> Any:
        """``text`` applied to every string (keys included) of a parsed JSON value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(k): self.value(v) for k, v in value.items()}
        return value

    def scope_path(self, scope: str, scope_key: str | None = None) -> Path:
        """The host's file for ``scope`` (``scope_key`` is needed for session scope)."""
        if scope in ("project", "shared-project"):
            return self.workspace.joinpath(*PROJECT_DIR, SCOPE_FILES[scope])
        if scope == "user":
            return self.home.joinpath(*MEMORY_DIR, SCOPE_FILES[scope])
        if scope == "session":
            if scope_key is None:
                raise ValueError("a session path needs its scopeKey")
            return self.home.joinpath(*MEMORY_DIR, "sessions", scope_key_file_name(scope_key))
        raise ValueError(f"unknown scope {scope!r}")


def _root_mapping(prefix: str, root: str, workspace: Path | None = None) -> dict[str, str]:
    mapping = {f"__{prefix}ROOT_ID__": root, f"__{prefix}ROOT_ID_UPPERCASE__": root.upper()}
    if workspace is not None:
        mapping[f"__{prefix}WORKSPACE__"] = str(workspace)
    return mapping


def make_case_dirs(tmp_path: Path) -> CaseDirs:
    """``tmp_path/home`` and ``tmp_path/workspace`` (created, 0700), with the mapping of every
    main placeholder (``__HOME__``, ``__WORKSPACE__``, ``__TMP__``, ``__ROOT_ID__``,
    ``__ROOT_ID_UPPERCASE__``, ``__SCOPEKEY_SHA16__`` of the auto-writer session)."""
    tmp = Path(os.path.realpath(tmp_path))
    home, workspace = tmp / "home", tmp / "workspace"
    for directory in (home, workspace):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
    root = root_id(workspace)
    mapping = {"__HOME__": str(home), "__TMP__": str(tmp), **_root_mapping("", root, workspace)}
    mapping["__SCOPEKEY_SHA16__"] = scope_key_sha16(session_scope_key(AUTOWRITER_SESSION, root))
    return CaseDirs(home=home, workspace=workspace, tmp=tmp, root_id=root, mapping=mapping)


# ------------------------------------------------------------------ installing trees
def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, 0o600)


def install_tree(src: Path, dst: Path, dirs: CaseDirs) -> list[Path]:
    """Copy the corpus tree ``src`` into ``dst``: every file's UTF-8 text with ``dirs``'s
    placeholders substituted (the only change), ``sessions/session-<id>.jsonl[.bak|.corrupt]``
    renamed to the real ``<32 hex>.jsonl[...]``, files 0600, directories 0700. Returns the
    files written. A missing ``src`` installs nothing."""
    written: list[Path] = []
    if not src.is_dir():
        return written
    for directory, subdirs, files in os.walk(src):
        subdirs.sort()
        rel = Path(directory).relative_to(src)
        target_dir = dst / rel
        target_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(target_dir, 0o700)
        for name in sorted(files):
            text = (Path(directory) / name).read_bytes().decode("utf-8")
            if rel.name == "sessions":
                name = real_session_file_name(name, dirs.mapping["__ROOT_ID__"])
            target = target_dir / name
            _write_private(target, substitute(text, dirs.mapping).encode("utf-8"))
            written.append(target)
    return written


def install_store_case(name: str, tmp_path: Path) -> CaseDirs:
    """A fresh CaseDirs holding ``stores/<name>``'s home and workspace files."""
    dirs = make_case_dirs(tmp_path)
    install_tree(STORES / name / "home", dirs.home, dirs)
    install_tree(STORES / name / "workspace", dirs.workspace, dirs)
    return dirs


def install_autowriter_case(name: str, tmp_path: Path) -> CaseDirs:
    """A fresh CaseDirs holding ``autowriter/<name>``'s session file (when it wrote one)."""
    dirs = make_case_dirs(tmp_path)
    install_tree(AUTOWRITER / name / "home", dirs.home, dirs)
    return dirs


def bundle_dirs(folder: str, tmp_path: Path) -> CaseDirs:
    """CaseDirs for ``bundles/<folder>``: its workspace is the one the folder's files were
    written in (``dirs.root_id`` stands for the folder's own rootId placeholder). Every other
    rootId placeholder gets an empty workspace ``tmp_path/workspace-<tag>`` of its own, and
    ``__ROOT_ID__`` (the exported source store) is ``tmp_path/workspace-source`` unless the
    folder is the source store itself."""
    dirs = make_case_dirs(tmp_path)
    own = BUNDLE_FOLDER_ROOTS.get(folder, "__ROOT_ID__")
    for tag in ("SOURCE", *BUNDLE_ROOT_TAGS):
        placeholder = "__ROOT_ID__" if tag == "SOURCE" else f"__{tag}_ROOT_ID__"
        prefix = "" if tag == "SOURCE" else f"{tag}_"
        if placeholder == own:
            dirs.mapping.update(_root_mapping(prefix, dirs.root_id, dirs.workspace))
            continue
        other = dirs.tmp / f"workspace-{tag.lower().replace('_', '-')}"
        other.mkdir(mode=0o700, exist_ok=True)
        dirs.mapping.update(_root_mapping(prefix, root_id(other), other))
    return dirs


def install_bundle_case(folder: str, tmp_path: Path) -> CaseDirs:
    """``bundle_dirs`` plus the workspace files ``bundles/<folder>`` holds."""
    dirs = bundle_dirs(folder, tmp_path)
    install_tree(BUNDLES / folder / "workspace", dirs.workspace, dirs)
    return dirs


# ------------------------------------------------------------------ reading corpus files
def corpus_text(relpath: str | Path, dirs: CaseDirs | None = None) -> str:
    """A corpus file's text (``relpath`` under host-corpus/), with ``dirs``'s values if given."""
    text = (CORPUS / relpath).read_text(encoding="utf-8")
    return text if dirs is None else dirs.text(text)


def corpus_json(relpath: str | Path, dirs: CaseDirs | None = None) -> Any:
    """A corpus JSON file, parsed, then every string given ``dirs``'s values if given."""
    value = json.loads((CORPUS / relpath).read_text(encoding="utf-8"))
    return value if dirs is None else dirs.value(value)


def store_case_names() -> list[str]:
    return sorted(p.name for p in STORES.iterdir() if (p / "steps.json").is_file())


def load_store_case(
    name: str, dirs: CaseDirs | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(steps, expected)`` of ``stores/<name>``, substituted for ``dirs`` when given."""
    return steps_for(name, dirs), expected_for(name, dirs)


def steps_for(name: str, dirs: CaseDirs | None = None) -> dict[str, Any]:
    result: dict[str, Any] = corpus_json(Path("stores", name, "steps.json"), dirs)
    return result


def expected_for(name: str, dirs: CaseDirs | None = None) -> dict[str, Any]:
    result: dict[str, Any] = corpus_json(Path("stores", name, "expected.json"), dirs)
    return result


# ------------------------------------------------------------------ validation.jsonl
def validation_cases() -> list[dict[str, Any]]:
    """The cases of ``validation.jsonl``, one dict per line, placeholders left in."""
    text = (CORPUS / "validation.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line]


def validation_case_path(case: dict[str, Any], dirs: CaseDirs) -> Path:
    return dirs.scope_path(case["scope"], substitute(case["scopeKey"], dirs.mapping))


def write_validation_case(case: dict[str, Any], dirs: CaseDirs) -> Path:
    """Write ``case["line"]`` (substituted) as the whole file of the case's scope, 0600 in a
    0700 directory; returns its path."""
    path = validation_case_path(case, dirs)
    _write_private(path, substitute(case["line"], dirs.mapping).encode("utf-8"))
    for parent in (path.parent, *path.parent.parents):
        if parent in (dirs.home, dirs.workspace):
            break
        os.chmod(parent, 0o700)
    return path


def expected_host(case: dict[str, Any], dirs: CaseDirs) -> dict[str, Any]:
    """``case["host"]`` (what the host decided) with the case's values substituted."""
    result: dict[str, Any] = dirs.value(case["host"])
    return result
