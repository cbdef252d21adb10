"""The value types of a grammar: symbols, rules, errors, and how a CNF grammar maps back.

:class:`~fastdcyk.cfg.grammar.Symbol` and :class:`~fastdcyk.cfg.grammar.Rule` are what a
:class:`~fastdcyk.cfg.grammar.Grammar` is made of; :class:`~fastdcyk.cfg.grammar.GrammarError`
and :class:`~fastdcyk.cfg.grammar.GrammarWarning` are what reading or using one raises or
warns; :class:`~fastdcyk.cfg.grammar.CnfOrigin` is what :meth:`Grammar.to_cnf
<fastdcyk.cfg.grammar.Grammar.to_cnf>` remembers of the grammar it converted. The helpers
here (the nonterminal name syntax, NFC, quoting a terminal, why a rule is not in CNF, the
``cnf=`` modes) are shared by the reader, the CNF conversion and
:class:`~fastdcyk.cfg.grammar.Grammar`.

The public home of these types is :mod:`fastdcyk.cfg.grammar`, which re-exports them (and
gives them its name, so they are documented there).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

__all__ = [
    "ARROW",
    "CNF_HINT",
    "CNF_MODES",
    "NAME_RE",
    "CnfMode",
    "CnfOrigin",
    "GrammarError",
    "GrammarWarning",
    "Rule",
    "Symbol",
    "NAME_TOKEN_RE",
    "cnf_fault",
    "escape_name",
    "nfc",
    "nfc_rule",
    "quote",
    "unescape_name",
    "valid_name",
]

# NLTK's nonterminal syntax, except that "-" may not start "->", so "A->B" reads as a rule.
NAME_RE = re.compile(r"[\w/](?:[\w/^<>+.]|-(?!>))*")
# The reader's nonterminal token: NLTK's syntax, and any other character after a backslash,
# so that labels NLTK's tree transforms make ("NP|<DT-JJ>", "-NONE-", ",") can be written.
NAME_TOKEN_RE = re.compile(r"(?:[\w/]|\\\S)(?:[\w/^<>+.]|-(?!>)|\\\S)*")
_ESCAPE_RE = re.compile(r"\\(\S)")
_PLAIN_CHAR = re.compile(r"[\w/^<>+.-]")
ARROW = "->"

#: What a reader of a grammar does with a rule that is not in CNF (``cnf=``).
CnfMode = Literal["strict", "allow", "convert"]
CNF_MODES = ("strict", "allow", "convert")
#: The end of the message that refuses such a rule under ``cnf="strict"``.
CNF_HINT = "read it with cnf='convert' to convert it (--to-cnf on the command line)"


def valid_name(name: object) -> bool:
    """Whether ``name`` can name a nonterminal: a non-empty str without whitespace or
    control characters (any other character is allowed: the text format escapes it)."""
    return (
        isinstance(name, str)
        and bool(name)
        and name.isprintable()
        and not any(c.isspace() for c in name)
    )


def escape_name(name: str) -> str:
    """``name`` as the text format writes it: NLTK's syntax as is, a backslash before each
    character outside it (``NP|<DT-JJ>`` is written ``NP\\|<DT-JJ>``)."""
    if NAME_RE.fullmatch(name):
        return name
    out = []
    for pos, char in enumerate(name):
        plain = _PLAIN_CHAR.fullmatch(char) and not (
            (pos == 0 and char in "^<>+.-") or (char == "-" and name[pos + 1 : pos + 2] == ">")
        )
        out.append(char if plain else "\\" + char)
    return "".join(out)


def unescape_name(token: str) -> str:
    """The name a :data:`NAME_TOKEN_RE` token stands for (backslash escapes removed)."""
    return _ESCAPE_RE.sub(r"\1", token) if "\\" in token else token


class GrammarError(ValueError):
    """A grammar that cannot be read or used, with the position of the fault when known.

    Parameters
    ----------
    message : str
        What is wrong.
    line, column : int or None
        1-based position of the fault in the grammar text; None when the fault has no place
        in a text (for example a grammar built from rule objects).
    source : str or None
        The file the text came from, if any.

    Attributes
    ----------
    message, line, column, source
        As given.

    Examples
    --------
    >>> from fastdcyk.cfg.grammar import Grammar
    >>> try:
    ...     Grammar.from_string("S -> D E\\nD 'a'")
    ... except GrammarError as err:
    ...     print(err.line, err.column)
    2 3
    """

    def __init__(
        self,
        message: str,
        line: int | None = None,
        column: int | None = None,
        source: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}" if column is None else f"line {line}, column {column}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class GrammarWarning(UserWarning):
    """A grammar that loads but is probably not what its author meant (a nonterminal with
    no rules, a file shadowed by a built-in grammar of the same name)."""


class Symbol(NamedTuple):
    """One symbol of a rule's right side.

    Attributes
    ----------
    name : str
        The symbol's name (the terminal's text, without quotes).
    terminal : bool
        True for a terminal, False for a nonterminal.
    """

    name: str
    terminal: bool

    def __str__(self) -> str:
        return quote(self.name) if self.terminal else escape_name(self.name)


class Rule(NamedTuple):
    """A rule ``lhs -> rhs``.

    Attributes
    ----------
    lhs : str
        The nonterminal on the left side.
    rhs : tuple of Symbol
        The right side; empty for an epsilon rule.

    Examples
    --------
    >>> str(Rule("D", (Symbol("a", True),)))
    "D -> 'a'"
    """

    lhs: str
    rhs: tuple[Symbol, ...]

    @property
    def is_unary(self) -> bool:
        """Whether the rule is a CNF terminal rule ``A -> 'a'``."""
        return len(self.rhs) == 1 and self.rhs[0].terminal

    @property
    def is_binary(self) -> bool:
        """Whether the rule is a CNF binary rule ``A -> B C``."""
        return len(self.rhs) == 2 and not (self.rhs[0].terminal or self.rhs[1].terminal)

    def __str__(self) -> str:
        return " ".join([escape_name(self.lhs), ARROW, *map(str, self.rhs)]).rstrip()


class CnfOrigin(NamedTuple):
    """How a grammar made by :meth:`Grammar.to_cnf` maps back to the one it was made from.

    Attributes
    ----------
    grammar : Grammar
        The grammar :meth:`~Grammar.to_cnf` was called on.
    helpers : frozenset of str
        The symbols the conversion introduced: ``T_a`` for a terminal lifted out of a long
        rule, and one symbol per shared tail of a binarised rule. A tree of the original
        grammar has none: each one's children take its place.
    nullable : Mapping[str, Rule]
        For each symbol that derives the empty string, a rule of the binarised grammar that
        derives it from symbols that do too (the first found, so the empty tree is finite).
    steps : Mapping[Rule, tuple of (Rule, tuple of int)]
        For each rule of the CNF grammar, the rules of the binarised grammar it stands for,
        from the top: the unit rules of a shortest unit path (none when there was none),
        then the rule that derives the right side; each with the positions of its right
        side that the CNF rule keeps (the others derive the empty string).
    """

    grammar: Any  # the Grammar (fastdcyk.cfg.grammar imports this module)
    helpers: frozenset[str]
    nullable: Mapping[str, Rule]
    steps: Mapping[Rule, tuple[tuple[Rule, tuple[int, ...]], ...]]


def nfc(text: Any) -> Any:
    """``text`` in Unicode normal form NFC (anything that is not a str is returned as is)."""
    if isinstance(text, str) and not unicodedata.is_normalized("NFC", text):
        return unicodedata.normalize("NFC", text)
    return text


def nfc_rule(rule: Rule) -> Rule:
    """``rule`` with every name in Unicode normal form NFC (:func:`nfc`)."""
    return Rule(nfc(rule.lhs), tuple(Symbol(nfc(name), t) for name, t in rule.rhs))


def quote(text: str) -> str:
    # Prefer a quote the terminal does not contain; escape only what the reader needs.
    quote = '"' if "'" in text and '"' not in text else "'"
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def cnf_fault(rule: Rule) -> str | None:
    """Why ``rule`` is not in CNF, or None when it is."""
    rhs = rule.rhs
    if rule.is_unary or rule.is_binary:
        return None
    if not rhs:
        return "its right side is empty (an epsilon rule)"
    n_terminals = sum(sym.terminal for sym in rhs)
    if len(rhs) == 1:
        return "it is a unit rule (a single nonterminal on the right side)"
    if 0 < n_terminals < len(rhs):
        return "it mixes terminals and nonterminals on the right side"
    if n_terminals:
        return f"its right side has {len(rhs)} terminals, CNF allows exactly one"
    return f"its right side has {len(rhs)} nonterminals, CNF allows exactly two"
