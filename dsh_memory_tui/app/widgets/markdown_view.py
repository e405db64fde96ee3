"""A record's content as Markdown that hides nothing from the reviewer.

Rich's Markdown drops what a browser would not show: HTML blocks and comments, reference
definitions (``[//]: # (note)``), link titles, a fence's info string after its language, and
draws link and image targets as hyperlinks only. An agent's record is read by a person deciding
whether to trust it, so each of those is drawn here as literal text (HTML as code, a link's
target after it, reference definitions as code at their place) and counted, so the pane can say
what a Markdown view would have hidden. A single line break stays a line break (a browser would
join the lines into one paragraph). Every text is ``present.visible``: entities such as
``&#x1b;`` decode to characters, which are then shown as stand-ins.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import TYPE_CHECKING

from ...present import visible

# markdown_it and Rich's Markdown (with pygments) are a fifth of the app's imports: they load
# when the first record is drawn, not before the first frame.
if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from rich.markdown import Markdown


@cache  # a parser costs more to build than a record costs to parse
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")  # what Rich's Markdown enables


def _code_block(text: str, line: int) -> Token:
    from markdown_it.token import Token

    token = Token("code_block", "code", 0, content=text, block=True)
    token.map = [line, line + 1]
    return token


def _inline(token: Token, hidden: Counter[str]) -> list[Token]:
    """An inline token's children with everything hidden made literal."""
    from markdown_it.token import Token

    out: list[Token] = []
    for child in token.children or ():
        kind = child.type
        if kind == "softbreak":
            # A browser joins lines into one paragraph; a record's lines (every auto-writer
            # digest: one fact a line) mean to be lines. Keep them.
            child.type = "hardbreak"
            out.append(child)
            continue
        if kind == "html_inline":
            hidden["HTML comment" if child.content.startswith("<!--") else "inline HTML"] += 1
            out.append(Token("code_inline", "code", 0, content=visible(child.content)))
            continue
        if kind == "image":
            alt = child.content
            target = str(child.attrs.get("src", ""))
            title = child.attrs.get("title")
            shown = f"[image: {alt} -> {target}" + (f' "{title}"' if title else "") + "]"
            out.append(Token("text", "", 0, content=visible(shown)))
            continue
        if kind == "link_open":
            title = child.attrs.get("title")
            href = str(child.attrs.get("href", ""))
            if title:
                hidden["link title"] += 1
                href += f' "{title}"'
            child.attrs["href"] = visible(href)
        elif child.content:
            child.content = visible(child.content)
        out.append(child)
    return out


def safe_markdown(source: str, code_theme: str = "monokai") -> tuple[Markdown, Counter[str]]:
    """``source`` as a Rich Markdown renderable showing every character of it (see the module
    docstring), and what a plain Markdown view would have hidden (name -> how many)."""
    from rich.markdown import Markdown

    hidden: Counter[str] = Counter()
    # markdown-it reads a CR as a line end: show it instead, as the raw view does.
    source = source.replace("\r", visible("\r"))
    env: dict[str, object] = {}
    tokens = _parser().parse(source, env)
    lines = source.split("\n")
    covered = [False] * len(lines)
    out: list[Token] = []
    for token in tokens:
        if token.map and token.level == 0:
            for i in range(token.map[0], min(token.map[1], len(lines))):
                covered[i] = True
        kind = token.type
        if kind == "html_block":
            hidden["HTML comment" if "<!--" in token.content else "HTML block"] += 1
            token = _code_block(
                visible(token.content, multiline=True), token.map[0] if token.map else 0
            )
        elif kind == "inline":
            token.children = _inline(token, hidden)
        elif kind in ("fence", "code_block"):
            info = token.info.strip()
            lexer, _, rest = info.partition(" ")
            if rest.strip():
                hidden["code fence info"] += 1
                token.content = f"{visible(info)}\n{token.content}"
            token.info = visible(lexer)
            token.content = visible(token.content, multiline=True)
        out.append(token)
    # A line no top-level block covers (and not blank) is a reference definition: it shapes
    # links and shows nothing. Put each back where it was, as code.
    definitions = [(i, line) for i, line in enumerate(lines) if not covered[i] and line.strip()]
    references = env.get("references")
    nested = (len(references) if isinstance(references, dict) else 0) - len(definitions)
    if definitions:
        hidden["reference definition"] += len(definitions)
        for i, line in reversed(definitions):
            at = next(
                (n for n, t in enumerate(out) if t.level == 0 and t.map and t.map[0] > i),
                len(out),
            )
            out.insert(at, _code_block(visible(line) + "\n", i))
    if nested > 0:  # inside a quote or a list: counted; the raw view shows them
        hidden["reference definition"] += nested
    markdown = Markdown("", code_theme=code_theme, hyperlinks=False)
    markdown.markup = source
    markdown.parsed = out
    return markdown, hidden


def hidden_summary(hidden: Counter[str]) -> str:
    """``safe_markdown``'s count in words ("2 HTML comments, 1 reference definition")."""
    return ", ".join(f"{n} {name}{'s' if n != 1 else ''}" for name, n in sorted(hidden.items()))
