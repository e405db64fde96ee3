"""The ``secret`` flag's sources: the provider rules (the gitleaks family's maintained set, run
by kingfisher's native scanner) and our own RE2 patterns; the rules load only when a text may
hold a token, from a cache every process of the user shares, and never at CLI start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dsh_memory_tui import lint
from dsh_memory_tui.lint import secrets

PACKAGE = Path(lint.__file__).parents[2]
KEY_ID = "AKIAQYLPMN5HHHFPZAM2"
SECRET_KEY = "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"
TOKEN = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"


def secret_spans(text: str) -> dict[str, str]:
    """Each secret flag's text, by what it is."""
    return {f.what: text[f.start : f.end] for f in lint.flags("t", text) if f.kind == "secret"}


def test_an_aws_secret_access_key_in_an_assignment_beside_its_key_id_is_flagged():
    text = f"aws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET_KEY}\n"
    assert SECRET_KEY in secret_spans(text).values()
    assert KEY_ID in secret_spans(text).values()


def test_an_aws_secret_access_key_beside_its_key_id_in_prose_is_flagged():
    text = f"The export uses key id {KEY_ID}, secret {SECRET_KEY} (rotate monthly)."
    assert secret_spans(text) == {"AWS Access Key": KEY_ID, "AWS Secret Access Key": SECRET_KEY}


def test_a_40_character_hex_digest_beside_a_key_id_is_not_its_secret():
    digest = "940f1f836f99eee3692f09e2e8c662248b483b7f"
    assert secret_spans(f"Key {KEY_ID} was added in {digest}.") == {"AWS Access Key": KEY_ID}


def test_a_provider_token_is_named_by_its_rule():
    assert secret_spans(f"CI pushes with {TOKEN}.") == {"github-pat": TOKEN}


def test_the_rules_byte_offsets_become_the_spans_of_the_original_characters():
    for before in ("数据库令牌 ", "ｆｕｌｌ ｗｉｄｔｈ ", "e\u0301t\u00e9 \U0001f600 "):
        text = f"{before}{TOKEN} 之后"
        assert secret_spans(text) == {"github-pat": TOKEN}, before


def test_the_provider_rules_are_the_whole_catalogue():
    names = [rule["id"] for rule in secrets.provider_scanner().rules.metadata()]
    assert sum(n.startswith("betterleaks.") for n in names) >= 450
    assert "betterleaks.aws-secret-access-key" in names


def test_the_rule_cache_is_the_users_whatever_the_home_and_dsh_home(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    shared = secrets.rule_cache()
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh"))
    assert secrets.rule_cache() == shared
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert secrets.rule_cache() == tmp_path / "cache" / "dsh-memory-tui" / "secret-rules"


def modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, cwd=PACKAGE, capture_output=True, text=True
    ).stdout
    return set(out.split())


def test_the_cli_loads_neither_the_regex_engine_nor_the_rules_at_start():
    loaded = modules_after("import dsh_memory_tui.cli")
    assert not {"re2", "kingfisher_sdk"} & loaded


def test_prose_never_loads_the_rules_and_a_token_does():
    prose = "from dsh_memory_tui import lint\nlint.flags('Run ruff', 'CI fails on ruff errors.')"
    assert "kingfisher_sdk" not in modules_after(prose)
    token = f"from dsh_memory_tui import lint\nlint.flags('t', 'use {TOKEN}')"
    assert "kingfisher_sdk" in modules_after(token)
