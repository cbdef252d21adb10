"""The reader (and writer) of NLTK's text format for context-free grammars.

``parse_rules`` turns the text into plain data: the rules, each with the line and column of
its alternative, the ``%start`` symbol and its line. :meth:`Grammar.from_string
<fastdcyk.cfg.grammar.Grammar.from_string>` checks them and makes the grammar;
``decode_text`` decodes bytes with a helpful error, and ``warn_ruleless`` warns of
nonterminals without rules. ``format_rules`` writes rules back as text
(:meth:`Grammar.to_string <fastdcyk.cfg.grammar.Grammar.to_string>`).
"""

from __future__ import annotations

import codecs
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from fastdcyk.cfg.symbols import (
    ARROW,
    NAME_RE,
    NAME_TOKEN_RE,
    GrammarError,
    GrammarWarning,
    Rule,
    Symbol,
    escape_name,
    quote,
    unescape_name,
)

__all__ = [
    "QUOTES",
    "decode_text",
    "format_rules",
    "parse_rules",
    "user_stacklevel",
    "warn_ruleless",
]

#: The package's folder: frames of files under it are fastdcyk's own.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the function that calls this one that
    names the first caller outside fastdcyk: a warning points at the user's line however
    deep in the package it was raised (``from_file`` through ``from_string``, ``dcyk``
    through ``to_cnf``)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


QUOTES = "'\""


def decode_text(data: bytes, encoding: str, source: str | None) -> str:
    """``data`` decoded, or a GrammarError that names the source and suggests an encoding."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        codec = codecs.lookup(encoding).name
        shown = "UTF-8" if codec == "utf-8" else encoding
        other = "the file's encoding" if source is not None else "the text's encoding"
        raise GrammarError(
            f"not {shown} text (byte {exc.start} is 0x{data[exc.start]:02x}): "
            f"pass encoding='latin-1' (or {other})",
            source=source,
        ) from None


class _Rule(NamedTuple):
    """A rule read from text, with the position of its alternative and its probability
    (None when the alternative has no ``[p]``)."""

    rule: Rule
    line: int
    column: int
    prob: float | None = None


def parse_rules(text: str, source: str | None) -> tuple[list[_Rule], str | None, int | None]:
    """Read NLTK-format text into located rules, the %start symbol and its line."""
    rules: list[_Rule] = []
    start: str | None = None
    start_line: int | None = None
    for line_no, line in _logical_lines(text.removeprefix("\ufeff")):  # a UTF-8 BOM

        def fail(message: str, col: int, line_no: int = line_no) -> GrammarError:
            return GrammarError(message, line_no, col + 1, source)

        tokens = list(_tokens(line, fail))
        if not tokens:
            continue
        kind, value, col = tokens[0]
        if kind == "%":
            if value != "start":
                raise fail(f"unknown directive '%{value}' (only %start is understood)", col)
            if start is not None:
                raise fail("a second %start directive", col)
            if len(tokens) != 2 or tokens[1][0] != "name":
                raise fail("%start needs exactly one nonterminal name", col)
            start, start_line = tokens[1][1], line_no
            continue
        if kind == "->":
            raise fail("the left side of the rule is empty", col)
        if kind == "terminal":
            raise fail(f"a terminal ({quote(value)}) cannot be on the left side of a rule", col)
        if kind != "name":
            raise fail(f"a rule must start with a nonterminal, found '{value}'", col)
        if len(tokens) < 2:
            raise fail(
                f"expected '->' after '{value}', found the end of the line", col + len(value)
            )
        if tokens[1][0] != "->":
            kind_1, value_1, col_1 = tokens[1]
            shown = quote(value_1) if kind_1 == "terminal" else value_1
            raise fail(f"expected '->' after '{value}', found {shown}", col_1)
        # An empty alternative (epsilon) is located at the '->' or '|' before it; a
        # probability "[p]" (NLTK's PCFG format) ends its alternative.
        alternatives: list[list[Symbol]] = [[]]
        columns = [tokens[1][2]]
        probs: list[float | None] = [None]
        for kind_i, value_i, col_i in tokens[2:]:
            if kind_i == "|":
                alternatives.append([])
                columns.append(col_i)
                probs.append(None)
            elif kind_i == "->":
                raise fail("a second '->' in one rule (one rule per line)", col_i)
            elif probs[-1] is not None:
                raise fail(
                    f"'{value_i}' after the probability of an alternative: the probability "
                    "ends it (write 'A -> B C [0.5] | D [0.5]')",
                    col_i,
                )
            elif kind_i == "prob":
                probs[-1] = _probability(value_i, lambda m, c=col_i: fail(m, c))
            else:
                if not alternatives[-1]:
                    columns[-1] = col_i
                alternatives[-1].append(Symbol(value_i, kind_i == "terminal"))
        for alt, alt_col, prob in zip(alternatives, columns, probs, strict=True):
            rules.append(_Rule(Rule(value, tuple(alt)), line_no, alt_col + 1, prob))
    return rules, start, start_line


def _probability(text: str, fail: Callable[[str], GrammarError]) -> float:
    """The probability written ``[text]``: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise fail(f"[{text}] is not a probability (a number in (0, 1])") from None
    if math.isnan(value):
        raise fail(f"[{text}] is not a probability (a number in (0, 1])")
    if not 0.0 < value <= 1.0:
        zero = ": a rule of probability 0 is left out" if value == 0 else ""
        raise fail(f"probability {text} is outside (0, 1]{zero}")
    return value


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of ``text``, a line that ends with a backslash joined with the
    next as NLTK does (numbered as its first line)."""
    first, parts = 0, []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not parts:
            first = line_no
        if line.endswith("\\") and "#" not in line:
            parts.append(line[:-1])
            continue
        yield first, "".join(parts) + line
        parts = []
    if parts:
        yield first, "".join(parts)


def _tokens(line: str, fail: Callable[[str, int], GrammarError]) -> Iterator[tuple[str, str, int]]:
    """Yield (kind, value, 0-based column) for one line: name, terminal, ->, |, %, prob."""
    pos, end = 0, len(line)
    while pos < end:
        char = line[pos]
        if char.isspace():
            pos += 1
        elif char == "#":
            return
        elif line.startswith(ARROW, pos):
            yield "->", ARROW, pos
            pos += 2
        elif char == "|":
            yield "|", "|", pos
            pos += 1
        elif char == "[":
            close = line.find("]", pos)
            if close < 0:
                raise fail("unterminated probability: '[' without ']'", pos)
            yield "prob", line[pos + 1 : close].strip(), pos
            pos = close + 1
        elif char in QUOTES:
            chars: list[str] = []
            cur = pos + 1
            while cur < end and line[cur] != char:
                if line[cur] == "\\" and cur + 1 < end and line[cur + 1] in ("\\", char):
                    cur += 1
                chars.append(line[cur])
                cur += 1
            if cur >= end:
                raise fail(f"unterminated quoted terminal (opened with {char})", pos)
            if not chars:
                raise fail("empty terminal ''; write an epsilon rule as 'A ->'", pos)
            yield "terminal", "".join(chars), pos
            pos = cur + 1
        elif char == "%" and not line[:pos].strip():
            after = pos + 1
            while after < end and line[after] in " \t":  # NLTK reads "% start S" too
                after += 1
            match = NAME_RE.match(line, after)
            if not match:
                raise fail("'%' must be followed by a directive name", pos)
            yield "%", match.group(), pos
            pos = match.end()
        else:
            match = NAME_TOKEN_RE.match(line, pos)
            if not match:
                raise fail(
                    f"unexpected character {char!r} (in a nonterminal's name, write it "
                    f"after a backslash: \\{char})",
                    pos,
                )
            yield "name", unescape_name(match.group()), pos
            pos = match.end()


def warn_ruleless(located: list[_Rule], start: str | None, source: str | None) -> None:
    """A warning for each nonterminal that has no rules of its own (a typo, or a rule left
    out): the rules that use it never apply, and a start symbol without rules derives
    nothing."""
    defined = {item.rule.lhs for item in located}
    where = f"{source}: " if source else ""
    if start is not None and start not in defined:
        warnings.warn(
            f"{where}the start symbol {start} has no rules: the grammar derives nothing",
            GrammarWarning,
            stacklevel=user_stacklevel(),
        )
    seen: set[str] = set()
    for item in located:
        for sym in item.rule.rhs:
            if not sym.terminal and sym.name not in defined and sym.name not in seen:
                seen.add(sym.name)
                warnings.warn(
                    f"{where}line {item.line}: {sym.name} has no rules (undefined), so "
                    f"'{item.rule}' never applies; define {sym.name}, or quote it if it "
                    "is a word",
                    GrammarWarning,
                    stacklevel=user_stacklevel(),
                )


def format_rules(rules: Sequence[Rule], start: str, probs: Sequence[float] | None) -> str:
    """Rules as NLTK's text format: consecutive rules with the same left side share a line,
    a ``%start`` line when the start is not the first rule's left side, each alternative's
    probability in brackets when ``probs`` is given, names escaped (:func:`escape_name`)."""
    lines = [] if start == rules[0].lhs else [f"%start {escape_name(start)}"]
    previous = None
    for k, rule in enumerate(rules):
        rhs = " ".join(map(str, rule.rhs))
        if probs is not None:
            rhs = f"{rhs} [{probs[k]!r}]".lstrip()
        if rule.lhs == previous:
            lines[-1] = f"{lines[-1]} | {rhs}".rstrip()
        else:
            lines.append(f"{escape_name(rule.lhs)} {ARROW} {rhs}".rstrip())
        previous = rule.lhs
    return "\n".join(lines)
