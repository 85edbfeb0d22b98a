"""Definitions scanned before they reach a model: hidden characters, instructions addressed
to the model, references to other tools, names that shadow.

A tool's definition is text a model reads as if the operator wrote it: its name, title,
description, usage hint, guidelines, parameter names, descriptions, enums, defaults and
examples. A definition from outside (a mounted MCP server) can carry text the operator never
saw: Unicode tag characters that spell an instruction invisibly, bidirectional controls that
reorder what a reviewer reads, an ``<IMPORTANT>`` block telling the model to read
``~/.ssh/id_rsa`` first and not to tell the user. ``scan`` checks every text of every
definition against a small, fixed rule set (``RULES``): regular expressions and Unicode
categories, no model, so the same definitions give the same findings, in the same order.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = [
    "RULES",
    "WELL_KNOWN_TOOLS",
    "Finding",
    "RuleId",
    "Subject",
    "definition_texts",
    "metadata_texts",
    "scan",
    "visible",
]

RuleId = Literal[
    "unicode-tags",
    "zero-width",
    "bidi-control",
    "invisible",
    "instruction-block",
    "override",
    "secrecy",
    "sensitive-path",
    "precondition",
    "tool-reference",
    "shadowing",
]
"""The id of a scan rule: what a finding and a consent (``accept_findings``) name."""

RULES: Final[Mapping[RuleId, str]] = {
    "unicode-tags": "Unicode tag characters (U+E0000 to U+E007F): text no one sees, a model reads",
    "zero-width": "zero-width characters (U+200B, U+200C, U+200D, U+2060, U+FEFF, U+180E)",
    "bidi-control": "bidirectional controls (U+202A to U+202E, U+2066 to U+2069, U+200E, "
    "U+200F, U+061C): what a reviewer reads is not what a model reads",
    "invisible": "other invisible characters: format characters (Cf), control characters "
    "other than tab and newline, variation selectors U+E0100 to U+E01EF",
    "instruction-block": "a block addressed to the model: <IMPORTANT>, <SYSTEM>, "
    "<instructions> and the like, or a chat template's own markers ([INST], <|im_start|>)",
    "override": "an instruction to set other instructions aside: ignore (or disregard, "
    "forget) previous instructions, you are now ..., new instructions:",
    "secrecy": "an instruction to keep something from the user: do not tell the user, "
    "without informing the user, hide this from the user",
    "sensitive-path": "a reference to credentials or private keys: ~/.ssh, id_rsa, "
    "~/.aws/credentials, .netrc, .env, mcp.json and the like",
    "precondition": "a step demanded before the tool is used: before using this tool, "
    "read (send, include, call) ...",
    "tool-reference": "a definition from outside names another tool (an installed one, or "
    "another server's)",
    "shadowing": "a name or title equal or nearly equal to another tool's, or to a "
    "well-known tool's (WELL_KNOWN_TOOLS)",
}
"""Every rule ``scan`` applies, by the id a finding and a consent name it."""
assert tuple(RULES) == get_args(RuleId)  # one list of rules

WELL_KNOWN_TOOLS: Final = frozenset({
    "apply_patch",
    "bash",
    "code_execution",
    "code_interpreter",
    "computer",
    "execute_command",
    "google_search",
    "local_shell",
    "run_terminal_cmd",
    "str_replace_based_edit_tool",
    "str_replace_editor",
    "text_editor",
    "web_fetch",
    "web_search",
})
"""Built-in tools of widely used agent hosts: a tool from outside named like one of them is
taken for it (the ``shadowing`` rule)."""

_ZERO_WIDTH: Final = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")
_BIDI: Final = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_EXCERPT_SIDE: Final = 40
_NAME_FIELDS: Final = frozenset({"name", "title", "annotations/title"})

_FLAGS = re.IGNORECASE
_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "instruction-block",
        re.compile(
            r"<\s*/?\s*(?:important|system|instructions?|admin|assistant|secret|hidden|critical"
            r"|override|sys)\b[^<>]{0,80}>|<\|[a-z_]{2,24}\|>|\[/?INST\]|<<\s*/?SYS\s*>>",
            _FLAGS,
        ),
    ),
    (
        "override",
        re.compile(
            r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+)?(?:of\s+the\s+)?"
            r"(?:previous|prior|above|earlier|preceding|other|your|system|user'?s?)\s+"
            r"(?:instructions?|prompts?|rules|directions|guidelines|messages|context)\b"
            r"|\byou\s+are\s+now\b|\bnew\s+instructions?\s*:",
            _FLAGS,
        ),
    ),
    (
        "secrecy",
        re.compile(
            r"\b(?:do\s+not|don'?t|never|must\s+not|should\s+not)\s+(?:ever\s+)?(?:tell|inform"
            r"|mention|reveal|show|notify|alert|disclose)\b[^.\n]{0,40}?\b(?:user|human"
            r"|operator)s?\b|\bwithout\s+(?:telling|informing|notifying|asking|alerting)\s+"
            r"(?:the\s+)?(?:user|human|operator)s?\b|\b(?:hide|conceal)\b[^.\n]{0,30}?\bfrom\s+"
            r"(?:the\s+)?(?:user|human|operator)s?\b|\bkeep\s+(?:this|it)\s+(?:a\s+)?secret\b",
            _FLAGS,
        ),
    ),
    (
        "sensitive-path",
        re.compile(
            r"~/\.ssh\b|\.ssh/|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|~/\.aws\b|\.aws/credentials"
            r"|~/\.config/gcloud|~/\.kube|\.netrc\b|\.pgpass\b|/etc/(?:passwd|shadow)\b"
            r"|\bmcp\.json\b|claude_desktop_config\.json|(?:^|[\s\"'`(/])\.env\b|\.npmrc\b"
            r"|\.pypirc\b|\bprivate[ _]key\b",
            _FLAGS,
        ),
    ),
    (
        "precondition",
        re.compile(
            r"\bbefore\s+(?:using|calling|invoking|running)\s+(?:this|the|any)\b[^.\n]{0,60}?"
            r"\b(?:read|send|include|pass|upload|attach|fetch|copy|call|open)\b",
            _FLAGS,
        ),
    ),
)
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Letters that look like Latin ones, folded before names are compared (a small table of
# the Cyrillic and Greek look-alikes used to spoof names, and digits read as letters).
_CONFUSABLES: Final = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u03bf\u03b1\u03b5\u03b9\u03ba\u03bd\u03c1\u03c4\u03c5\u03c701",
    "aeopcyxijsdqwoaeikvptuxol",
)


@dataclass(frozen=True, order=True)
class Finding:
    """One rule one text of a definition breaks."""

    tool: str
    """The tool's name in toolplug."""
    field: str
    """Where in the definition: ``description``, ``parameters/properties/path/description``."""
    rule: str
    """The rule's id (``RULES``)."""
    excerpt: str
    """The text around what the rule found, invisible characters made visible."""
    source: str = ""
    """Where the definition came from: a distribution, or ``mcp:NAME``."""

    def describe(self) -> str:
        """One line: tool, field, rule and excerpt."""
        return f"{self.tool}: {self.field}: {self.rule}: {self.excerpt}"


@dataclass(frozen=True)
class Subject:
    """One definition to scan, and what the cross-tool rules compare it by."""

    tool: str
    """The tool's name in toolplug."""
    source: str
    """Its plugin's distribution, or ``mcp:NAME``: references and shadowing within one
    source are not findings."""
    texts: tuple[tuple[str, str], ...] = ()
    """``(field, text)`` pairs: every text a model reads of it (empty: not scanned, only
    compared against)."""
    names: tuple[str, ...] = ()
    """Every name it is known by: its name, its server's name of it, its title."""
    family: str = ""
    """What it was built from, when that can be shared by several sources (an OpenAPI
    description: two APIs configured from one file on purpose): tools of one family do not
    shadow one another. Empty: its own."""
    outside: bool = False
    """A definition from outside (a mounted server). Only such a definition is checked for
    references to other tools (an installed plugin's guidance may well say "use web_search
    for that"), compared with ``WELL_KNOWN_TOOLS``, and flagged for a name an installed tool
    has; installed tools are compared with one another."""


def metadata_texts(metadata: ToolMetadata) -> list[tuple[str, str]]:
    """Every text of a tool's metadata a model may read, with where it is."""
    texts = [("name", metadata.name)]
    if metadata.title:
        texts.append(("title", metadata.title))
    texts.append(("description", metadata.description))
    if metadata.usage_hint:
        texts.append(("usage_hint", metadata.usage_hint))
    guidance = metadata.guidelines
    for key, items in (
        ("do", guidance.do),
        ("do_not", guidance.do_not),
        ("common_mistakes", guidance.common_mistakes),
    ):
        texts += [(f"guidelines/{key}/{i}", item) for i, item in enumerate(items)]
    texts += _json_texts("parameters", metadata.parameters)
    if metadata.returns is not None:
        texts += _json_texts("returns", metadata.returns)
    for i, example in enumerate(metadata.examples):
        texts.append((f"examples/{i}/description", example.description))
        texts += _json_texts(f"examples/{i}/input", example.input)
        if example.output is not None:
            texts += _json_texts(f"examples/{i}/output", example.output)
    return texts


def definition_texts(tool: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every text of an MCP ``tools/list`` entry a model may read, named as toolplug names
    them (``inputSchema`` is ``parameters``, ``outputSchema`` is ``returns``)."""
    texts: list[tuple[str, str]] = []
    for key in ("name", "title", "description"):
        if isinstance(tool.get(key), str):
            texts.append((key, tool[key]))
    hints = tool.get("annotations")
    if isinstance(hints, Mapping) and isinstance(hints.get("title"), str):
        texts.append(("annotations/title", hints["title"]))
    for key, field in (("inputSchema", "parameters"), ("outputSchema", "returns")):
        if tool.get(key) is not None:
            texts += _json_texts(field, tool[key])
    return texts


def _json_texts(where: str, value: Any) -> Iterator[tuple[str, str]]:
    """Every string of a JSON value, keys included, with its JSON pointer."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for name, item in value.items():
            key = str(name)
            yield f"{where} (key)", key
            yield from _json_texts(f"{where}/{_pointer(key)}", item)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _json_texts(f"{where}/{index}", item)


def _pointer(key: str) -> str:
    return visible(key.replace("~", "~0").replace("/", "~1"))


def scan(subjects: Sequence[Subject]) -> list[Finding]:
    """The findings of every subject's texts, sorted (tool, field, rule, excerpt).

    Each rule gives at most one finding per text: the first place it matches.
    """
    findings: set[Finding] = set()
    references = _reference_index(subjects)
    for subject in subjects:
        for field, text in subject.texts:
            for rule, index in _character_rules(text):
                excerpt = _excerpt(text, index, index + 1)
                findings.add(Finding(subject.tool, field, rule, excerpt, subject.source))
            folded, where = (text, list(range(len(text)))) if text.isascii() else _fold(text)
            for rule, pattern in _PATTERNS:
                match = pattern.search(folded)
                if match is not None:
                    excerpt = _excerpt(text, where[match.start()], where[match.end() - 1] + 1)
                    findings.add(Finding(subject.tool, field, rule, excerpt, subject.source))
            # a name or title like another tool's is the shadowing rule's to judge
            checks = subject.outside and field not in _NAME_FIELDS
            span = _reference(folded, subject, references) if checks else None
            if span is not None:
                excerpt = _excerpt(text, where[span[0]], where[span[1] - 1] + 1)
                findings.add(
                    Finding(subject.tool, field, "tool-reference", excerpt, subject.source)
                )
        findings.update(_shadowing(subject, subjects))
    return sorted(findings)


# -- hidden characters ------------------------------------------------------------------


def _hidden_rule(char: str) -> str | None:
    code = ord(char)
    if 0xE0000 <= code <= 0xE007F:
        return "unicode-tags"
    if char in _ZERO_WIDTH:
        return "zero-width"
    if char in _BIDI:
        return "bidi-control"
    if 0xE0100 <= code <= 0xE01EF:
        return "invisible"
    category = unicodedata.category(char)
    if category == "Cf" or (category == "Cc" and char not in "\t\n\r"):
        return "invisible"
    return None


def _character_rules(text: str) -> Iterator[tuple[str, int]]:
    """Each hidden-character rule the text breaks, with where it first does."""
    seen: set[str] = set()
    for index, char in enumerate(text):
        if char.isascii() and char.isprintable():
            continue
        rule = _hidden_rule(char)
        if rule is not None and rule not in seen:
            seen.add(rule)
            yield rule, index


def _fold_invisible(text: str) -> str:
    """The text as a model reads it: tag characters as the ASCII they stand for, other
    invisible characters dropped (so that "ig\u200bnore" still reads "ignore")."""
    return text if text.isascii() else _fold(text)[0]


def _fold(text: str) -> tuple[str, list[int]]:
    """The folded text, and where each of its characters stands in ``text``."""
    chars: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        folded = _folded(char)
        if folded:
            chars.append(folded)
            where.append(index)
    return "".join(chars), where


def _folded(char: str) -> str:
    code = ord(char)
    if 0xE0020 <= code <= 0xE007E:
        return chr(code - 0xE0000)
    return "" if _hidden_rule(char) is not None else char


def visible(text: str) -> str:
    """The text with every invisible character shown: ``<U+200B>``, and a run of tag
    characters as ``[tags: "what they spell"]``; line breaks as ``\\n``."""
    out: list[str] = []
    tags: list[str] = []

    def flush() -> None:
        if tags:
            out.append(f'[tags: "{"".join(tags)}"]')
            tags.clear()

    for char in text:
        code = ord(char)
        if 0xE0000 <= code <= 0xE007F:
            tags.append(chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else f"<U+{code:X}>")
            continue
        flush()
        if char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif _hidden_rule(char) is not None:
            out.append(f"<U+{code:04X}>")
        else:
            out.append(char)
    flush()
    return "".join(out)


def _excerpt(text: str, start: int, end: int) -> str:
    begin = max(0, start - _EXCERPT_SIDE)
    # a run of tag characters is shown whole, decoded, however long
    while end < len(text) and 0xE0000 <= ord(text[end]) <= 0xE007F:
        end += 1
    stop = min(len(text), end + _EXCERPT_SIDE)
    return (
        ("..." if begin else "") + visible(text[begin:stop]) + ("..." if stop < len(text) else "")
    )


# -- other tools --------------------------------------------------------------------------


def _reference_index(subjects: Sequence[Subject]) -> dict[str, list[Subject]]:
    """Each name a text may mention a tool by (case-folded), and the tools it names."""
    index: dict[str, list[Subject]] = {}
    for subject in subjects:
        for name in {subject.tool, *subject.names}:
            if _WORD.fullmatch(name):
                index.setdefault(name.casefold(), []).append(subject)
    return index


def _reference(
    folded: str, subject: Subject, index: Mapping[str, list[Subject]]
) -> tuple[int, int] | None:
    """Where the (folded) text first mentions another source's tool, or None.

    A name with ``_`` counts wherever it stands as a word; a one-word name (``calendar``)
    only as a tool: in backticks, or followed by "tool" or "(".
    """
    for match in _WORD.finditer(folded):
        word = match.group()
        named = index.get(word.casefold())
        if not named or not any(s.source != subject.source for s in named):
            continue
        if "_" not in word:
            before = folded[match.start() - 1: match.start()]
            after = folded[match.end(): match.end() + 6].lower()
            quoted = before == "`" and after.startswith("`")
            if not (quoted or after.startswith(("(", " tool"))):
                continue
        return match.start(), match.end()
    return None


def _name_key(name: str) -> str:
    """A name as it reads: compatibility-normalized, case-folded, look-alike letters folded,
    separators and invisible characters dropped."""
    folded = unicodedata.normalize("NFKC", _fold_invisible(name)).casefold()
    return re.sub(r"[^a-z0-9]", "", folded.translate(_CONFUSABLES))


def _near(a: str, b: str) -> bool:
    """Equal, or one edit apart when both are at least six letters long."""
    if a == b:
        return True
    if min(len(a), len(b)) < 6 or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + 1:] == b[i + 1:] if len(a) == len(b) else a[i:] == b[i + 1:]


def _shadowing(subject: Subject, subjects: Sequence[Subject]) -> Iterable[Finding]:
    if not subject.texts:
        return ()
    fields = {value: field for field, value in reversed(subject.texts)}
    found: dict[str, Finding] = {}
    for name in subject.names:
        key = _name_key(name)
        if not key:
            continue
        field = fields.get(name, "name")
        if field in found:
            continue
        rivals: list[str] = []
        if subject.outside:
            rivals += [w for w in sorted(WELL_KNOWN_TOOLS) if _near(key, _name_key(w))]
        for other in subjects:
            if other.source == subject.source or (other.outside and subject.outside):
                continue
            if subject.family and other.family == subject.family:
                continue  # built from one definition: alike by design
            if subject.outside is False and other.outside:
                continue  # an installed tool is not flagged for what a mounted one is called
            if any(_near(key, _name_key(n)) for n in other.names if _name_key(n)):
                rivals.append(f"{other.tool} ({other.source})" if other.source else other.tool)
        if rivals:
            what = "equals" if any(
                _name_key(r.split(" ")[0]) == key for r in rivals
            ) else "nearly equals"
            excerpt = f"{visible(name)!r} {what} {', '.join(sorted(set(rivals)))}"
            found[field] = Finding(subject.tool, field, "shadowing", excerpt, subject.source)
    return found.values()
