"""``instruction``: text addressed to the agent, in English and Chinese ("ignore previous
instructions", role markers, "you must always", tool-call syntax, a download piped into a
shell). Patterns under RE2 (``linear``), read on normalized text."""

from __future__ import annotations

from collections.abc import Iterator

from .linear import Pattern

# Each pattern with the words one of which its match must hold (checked on the case-folded
# text first: most texts hold none, and a substring test is cheaper than the pattern).
_INSTRUCTIONS: tuple[tuple[Pattern, str, tuple[str, ...]], ...] = tuple(
    (Pattern("(?im)" + pattern), what, hints)
    for pattern, what, hints in (
        (
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your)\s+)*"
            r"(?:previous|prior|above|earlier|preceding|system|safety|original)\s+"
            r"(?:instructions|instruction|prompts|prompt|rules|directions|guidelines|messages"
            r"|message|context)",
            "tells the agent to ignore its instructions",
            ("ignore", "disregard", "forget", "override", "bypass"),
        ),
        (
            r"^[ \t]*(?:#+[ \t]*)?(?:system|assistant|developer)[ \t]*(?:prompt)?[ \t]*:"
            r"|<\|(?:im_start|im_end|system|assistant|user|endoftext)\|>"
            r"|\[/?INST\]|<</?SYS>>|</?(?:system|assistant)(?:-reminder)?>",
            "role marker",
            ("system", "assistant", "developer", "<|", "inst]", "<<sys"),
        ),
        (
            r"\byou\s+(?:must|should|will|shall)\s+(?:always|never|now|from now on)\b"
            r"|\bfrom\s+now\s+on,?\s+(?:you|always|never|ignore)\b"
            r"|\byou\s+are\s+now\s+(?:a|an|in|the|no longer)\b"
            r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert)"
            r"\s+the\s+user\b"
            r"|\bwithout\s+(?:asking|telling|informing)\s+the\s+user\b"
            r"|\bnew\s+instructions\s*:",
            "addresses the agent",
            ("you", "from now", "user", "new instructions"),
        ),
        (
            r"<(?:tool_call|function_calls|function_call|invoke\s+name=|tool_use)\b"
            r"|\"(?:tool_calls|function_call)\"\s*:"
            r"|\{\s*\"name\"\s*:\s*\"[^\"\n]{1,200}\"\s*,\s*\"(?:arguments|parameters|input)\"\s*:",
            "tool-call syntax",
            ("<tool_", "<function", "<invoke", "tool_calls", "function_call", '"name"'),
        ),
        (
            r"\b(?:curl|wget)\b[^\n|]*\|[ \t]*(?:sudo[ \t]+)?(?:ba|z|k|da)?sh\b"
            r"|\b(?:curl|wget)\b[^\n|]*\|[ \t]*(?:sudo[ \t]+)?python3?\b"
            r"|\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]*\|[ \t]*"
            r"(?:iex|Invoke-Expression)\b"
            r"|\b(?:ba)?sh[ \t]+<\([ \t]*(?:curl|wget)\b",
            "download piped into a shell",
            ("curl", "wget", "iwr", "irm", "invoke-"),
        ),
        # Chinese: ignore the previous instructions; you must always; from now on you;
        # do not tell the user; you are now; system prompt.
        (
            r"(?:忽略|无视|忘记|忘掉|不要理会|跳过)掉?你?(?:之前|以前|先前|前面|上面|以上|原来|原先|所有"
            r"|全部|系统)的?(?:所有|全部|一切)?的?(?:指令|指示|提示词|提示|规则|设定|要求|说明)",
            "tells the agent to ignore its instructions",
            ("忽略", "无视", "忘记", "忘掉", "不要理会", "跳过"),
        ),
        (
            r"你(?:必须|务必|一定要|应该)(?:始终|总是|永远|一直|每次都)"
            r"|从现在(?:开始|起)[，,]?[ \t]*(?:你|始终|总是|忽略)"
            r"|(?:不要|别|切勿)(?:告诉|通知|提醒|让)用户"
            r"|你现在(?:是|扮演)|(?:^|\n)[ \t]*(?:系统|助手)[ \t]*[:：]",
            "addresses the agent",
            ("你", "从现在", "用户", "系统", "助手"),
        ),
    )
)


def finders(text: str) -> Iterator[Iterator[tuple[int, int, str]]]:
    """One finder per pattern whose words are in ``text``."""
    folded = text.lower()
    for pattern, what, hints in _INSTRUCTIONS:
        if any(hint in folded for hint in hints):
            yield _found(pattern, what, text)


def _found(pattern: Pattern, what: str, text: str) -> Iterator[tuple[int, int, str]]:
    for start, end in pattern.spans(text):
        yield start, end, what
