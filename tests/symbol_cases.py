"""The languages symbol citations are tried in: for each, a file, the method cited, and edits
of it (tests/test_symbols.py: the parser; tests/test_symbol_citations.py: the citations).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    """One language: a file, the method cited, and edits of it."""

    path: str
    source: str
    name: str
    cosmetic: str  # whitespace, line breaks and comments only
    behaviour: str  # the method's body changed
    spaces_in_string: str  # only the spaces inside a string literal
    broken_inside: str  # a syntax error inside the method
    broken_elsewhere: str  # a syntax error after it
    duplicate: str  # two definitions of the name at the same nesting
    other_path: str  # where the method moves in a refactoring
    moved_here: str  # what stays in ``path``
    moved_there: str  # the new file


CASES = [
    Case(
        "src/net.py",
        'class Client:\n    def fetch(self, url):\n        """Get it."""\n'
        '        return get(url, "a b")\n\n\ndef helper():\n    return 1\n',
        "Client.fetch",
        "class Client:\n\n    # fetch it\n    def fetch(self,\n              url):\n"
        '        """Get it, now better documented."""\n        return get(url,   "a b")  # why\n'
        "\n\ndef helper():\n    return 1\n",
        'class Client:\n    def fetch(self, url):\n        """Get it."""\n'
        '        return post(url, "a b")\n\n\ndef helper():\n    return 1\n',
        'class Client:\n    def fetch(self, url):\n        """Get it."""\n'
        '        return get(url, "a  b")\n\n\ndef helper():\n    return 1\n',
        'class Client:\n    def fetch(self, url):\n        """Get it."""\n'
        '        return get(url, "a b"\n\n\ndef helper():\n    return 1\n',
        'class Client:\n    def fetch(self, url):\n        """Get it."""\n'
        '        return get(url, "a b")\n\n\ndef helper(:\n    return 1\n',
        "class Client:\n    def fetch(self):\n        return 1\n\n    def fetch(self):\n"
        "        return 2\n",
        "src/client.py",
        "def helper():\n    return 1\n",
        'class Client:\n    def fetch(self, url):\n        """Get it."""\n'
        '        return get(url, "a b")\n',
    ),
    Case(
        "web/app.js",
        'export class Client {\n  fetch(url) {\n    return get(url, "a b");\n  }\n}\n'
        "export function helper() { return 1; }\n",
        "Client.fetch",
        "/* client */\nexport class Client {\n  // fetch it\n  fetch(url)\n  {\n"
        '    return get(url,\n      "a b");\n  }\n}\nexport function helper() { return 1; }\n',
        'export class Client {\n  fetch(url) {\n    return post(url, "a b");\n  }\n}\n'
        "export function helper() { return 1; }\n",
        'export class Client {\n  fetch(url) {\n    return get(url, "a  b");\n  }\n}\n'
        "export function helper() { return 1; }\n",
        'export class Client {\n  fetch(url) {\n    return get(url, "a b";\n  }\n}\n'
        "export function helper() { return 1; }\n",
        'export class Client {\n  fetch(url) {\n    return get(url, "a b");\n  }\n}\n'
        "export function helper() { return 1 +; }\n",
        "class Client {\n  fetch() { return 1; }\n  fetch() { return 2; }\n}\n",
        "web/client.js",
        "export function helper() { return 1; }\n",
        'export class Client {\n  fetch(url) {\n    return get(url, "a b");\n  }\n}\n',
    ),
    Case(
        "web/login.ts",
        "export const handleLogin = async (user: string): Promise<number> => {\n"
        '  return send(user, "a b");\n};\nexport function helper(): number { return 1; }\n',
        "handleLogin",
        "// log in\nexport const handleLogin = async (\n  user: string\n): Promise<number> => {\n"
        '  /* send it */ return send(user,  "a b");\n};\n'
        "export function helper(): number { return 1; }\n",
        "export const handleLogin = async (user: string): Promise<number> => {\n"
        '  return send(user, "a c");\n};\nexport function helper(): number { return 1; }\n',
        "export const handleLogin = async (user: string): Promise<number> => {\n"
        '  return send(user, " a b");\n};\nexport function helper(): number { return 1; }\n',
        "export const handleLogin = async (user: string): Promise<number> => {\n"
        '  return send(user, "a b";\n};\nexport function helper(): number { return 1; }\n',
        "export const handleLogin = async (user: string): Promise<number> => {\n"
        '  return send(user, "a b");\n};\nexport function helper(): number { return 1 +; }\n',
        "function handleLogin(): void {}\nfunction handleLogin(): void {}\n",
        "web/auth.ts",
        "export function helper(): number { return 1; }\n",
        "export const handleLogin = async (user: string): Promise<number> => {\n"
        '  return send(user, "a b");\n};\n',
    ),
    Case(
        "web/View.tsx",
        "export class View {\n  render(): JSX.Element {\n"
        '    return <div title="a b">{this.x}</div>;\n'
        "  }\n}\n",
        "View.render",
        "export class View {\n  // draw\n  render(): JSX.Element {\n"
        '    return <div title="a b">{this.x}</div>;   /* done */\n  }\n}\n',
        "export class View {\n  render(): JSX.Element {\n"
        '    return <span title="a b">{this.x}</span>;\n'
        "  }\n}\n",
        "export class View {\n  render(): JSX.Element {\n"
        '    return <div title="a  b">{this.x}</div>;\n'
        "  }\n}\n",
        "export class View {\n  render(): JSX.Element {\n"
        '    return <div title="a b">{this.x</div>;\n'
        "  }\n}\n",
        "export class View {\n  render(): JSX.Element {\n"
        '    return <div title="a b">{this.x}</div>;\n'
        "  }\n}\nexport const z = (;\n",
        "class View {\n  render() { return 1; }\n  render() { return 2; }\n}\n",
        "web/Other.tsx",
        "export const z = 1;\n",
        "export class View {\n  render(): JSX.Element {\n"
        '    return <div title="a b">{this.x}</div>;\n'
        "  }\n}\n",
    ),
    Case(
        "net/client.go",
        "package net\n\ntype Client struct{}\n\nfunc (c *Client) Fetch(url string) string {\n"
        '\treturn get(url, "a b")\n}\n\nfunc Helper() int { return 1 }\n',
        "Client.Fetch",
        "package net\n\ntype Client struct{}\n\n// Fetch gets it.\n"
        'func (c *Client) Fetch(url string) string {\n\n\treturn get(url,\n\t\t"a b") // why\n}\n\n'
        "func Helper() int { return 1 }\n",
        "package net\n\ntype Client struct{}\n\nfunc (c *Client) Fetch(url string) string {\n"
        '\treturn post(url, "a b")\n}\n\nfunc Helper() int { return 1 }\n',
        "package net\n\ntype Client struct{}\n\nfunc (c *Client) Fetch(url string) string {\n"
        '\treturn get(url, "a  b")\n}\n\nfunc Helper() int { return 1 }\n',
        "package net\n\ntype Client struct{}\n\nfunc (c *Client) Fetch(url string) string {\n"
        '\treturn get(url, "a b"\n}\n\nfunc Helper() int { return 1 }\n',
        "package net\n\ntype Client struct{}\n\nfunc (c *Client) Fetch(url string) string {\n"
        '\treturn get(url, "a b")\n}\n\nfunc Helper() int { return 1 +}\n',
        "package net\n\nfunc (c *Client) Fetch() {}\n\nfunc (c Client) Fetch() {}\n",
        "net/fetch.go",
        "package net\n\ntype Client struct{}\n\nfunc Helper() int { return 1 }\n",
        'package net\n\nfunc (c *Client) Fetch(url string) string {\n\treturn get(url, "a b")\n}\n',
    ),
    Case(
        "src/client.rs",
        "pub struct Client;\n\nimpl Client {\n    pub fn fetch(&self, url: &str) -> String {\n"
        '        get(url, "a b")\n    }\n}\n\npub fn helper() -> u8 { 1 }\n',
        "Client.fetch",
        "pub struct Client;\n\nimpl Client {\n    /// Gets it.\n"
        "    pub fn fetch(&self,\n                 url: &str) -> String {\n"
        '        get(url, "a b") // why\n'
        "    }\n}\n\npub fn helper() -> u8 { 1 }\n",
        "pub struct Client;\n\nimpl Client {\n    pub fn fetch(&self, url: &str) -> String {\n"
        '        post(url, "a b")\n    }\n}\n\npub fn helper() -> u8 { 1 }\n',
        "pub struct Client;\n\nimpl Client {\n    pub fn fetch(&self, url: &str) -> String {\n"
        '        get(url, "a  b")\n    }\n}\n\npub fn helper() -> u8 { 1 }\n',
        "pub struct Client;\n\nimpl Client {\n    pub fn fetch(&self, url: &str) -> String {\n"
        '        get(url, "a b"\n    }\n}\n\npub fn helper() -> u8 { 1 }\n',
        "pub struct Client;\n\nimpl Client {\n    pub fn fetch(&self, url: &str) -> String {\n"
        '        get(url, "a b")\n    }\n}\n\npub fn helper() -> u8 { 1 + }\n',
        "struct Client;\nimpl Display for Client { fn fetch(&self) {} }\n"
        "impl Debug for Client { fn fetch(&self) {} }\n",
        "src/fetch.rs",
        "pub struct Client;\n\npub fn helper() -> u8 { 1 }\n",
        'impl Client {\n    pub fn fetch(&self, url: &str) -> String {\n        get(url, "a b")\n'
        "    }\n}\n",
    ),
    Case(
        "src/Client.java",
        'public class Client {\n  public String fetch(String url) {\n    return get(url, "a b");\n'
        "  }\n  static int helper() { return 1; }\n}\n",
        "Client.fetch",
        "public class Client {\n  /** Gets it. */\n  public String fetch(String url)\n  {\n"
        '    return get(url, "a b"); // why\n  }\n  static int helper() { return 1; }\n}\n',
        'public class Client {\n  public String fetch(String url) {\n    return post(url, "a b");\n'
        "  }\n  static int helper() { return 1; }\n}\n",
        'public class Client {\n  public String fetch(String url) {\n    return get(url, "a  b");\n'
        "  }\n  static int helper() { return 1; }\n}\n",
        'public class Client {\n  public String fetch(String url) {\n    return get(url, "a b";\n'
        "  }\n  static int helper() { return 1; }\n}\n",
        'public class Client {\n  public String fetch(String url) {\n    return get(url, "a b");\n'
        "  }\n  static int helper() { return 1 +; }\n}\n",
        "class Client {\n  String fetch(int a) { return null; }\n"
        "  String fetch(String b) { return null; }\n}\n",
        "src/Fetcher.java",
        "public class Client {\n  static int helper() { return 1; }\n}\n",
        "class Fetcher {\n  public String fetch(String url) {\n"
        '    return get(url, "a b");\n  }\n}\n',
    ),
]
IDS = [Path(c.path).suffix for c in CASES]
