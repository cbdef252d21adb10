"""Context-free grammars: the NLTK text format, Chomsky normal form, shipped grammars.

A :class:`Grammar` is an immutable list of rules ``A -> X1 ... Xk``. Terminals and
nonterminals live in separate namespaces: in the text format a terminal is always quoted
(``'S'`` or ``"S"``) and a nonterminal never is, so the terminal ``'S'`` and the nonterminal
``S`` are different symbols.

CYK (and D-CYK) need Chomsky normal form (CNF): every rule is ``A -> B C`` or ``A -> 'a'``.
By default the readers reject anything else; ``cnf="allow"`` reads a general context-free
grammar and :meth:`Grammar.to_cnf` converts it.

Symbols are kept in Unicode normal form NFC, so that a terminal and a word that differ only
in how an accented letter is encoded (``"\\u00e9"`` or ``"e\\u0301"``) are the same word;
:meth:`Grammar.normalize_words` brings a sentence to that form.
"""

from __future__ import annotations

import codecs
import gzip
import io
import itertools
import os
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

__all__ = ["CnfOrigin", "Grammar", "GrammarError", "GrammarWarning", "Rule", "Symbol"]

CnfMode = Literal["strict", "allow", "convert"]
_CNF_MODES = ("strict", "allow", "convert")

# NLTK's nonterminal syntax, except that "-" may not start "->", so "A->B" reads as a rule.
_NAME_RE = re.compile(r"[\w/](?:[\w/^<>+.]|-(?!>))*")
_ARROW = "->"
_QUOTES = "'\""
_CNF_HINT = "read it with cnf='allow' and call Grammar.to_cnf(), or read it with cnf='convert'"
# The memo of combine_masks is cleared past this many entries so that memory stays bounded
# on grammars with very many distinct cells.
_COMBINE_CACHE_LIMIT = 1 << 20


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
        return _quote(self.name) if self.terminal else self.name


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
        return " ".join([self.lhs, _ARROW, *map(str, self.rhs)]).rstrip()


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

    grammar: Grammar
    helpers: frozenset[str]
    nullable: Mapping[str, Rule]
    steps: Mapping[Rule, tuple[tuple[Rule, tuple[int, ...]], ...]]


def _nfc(text: Any) -> Any:
    """``text`` in Unicode normal form NFC (anything that is not a str is returned as is)."""
    if isinstance(text, str) and not unicodedata.is_normalized("NFC", text):
        return unicodedata.normalize("NFC", text)
    return text


def _decode(data: bytes, encoding: str, source: str | None) -> str:
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


def _quote(text: str) -> str:
    # Prefer a quote the terminal does not contain; escape only what the reader needs.
    quote = '"' if "'" in text and '"' not in text else "'"
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def _cnf_fault(rule: Rule) -> str | None:
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


class _Rule(NamedTuple):
    """A rule read from text, with the position of its alternative."""

    rule: Rule
    line: int
    column: int


def _parse(text: str, source: str | None) -> tuple[list[_Rule], str | None, int | None]:
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
            raise fail(f"a terminal ({_quote(value)}) cannot be on the left side of a rule", col)
        if kind != "name":
            raise fail(f"a rule must start with a nonterminal, found '{value}'", col)
        if len(tokens) < 2:
            raise fail(
                f"expected '->' after '{value}', found the end of the line", col + len(value)
            )
        if tokens[1][0] != "->":
            kind_1, value_1, col_1 = tokens[1]
            shown = _quote(value_1) if kind_1 == "terminal" else value_1
            raise fail(f"expected '->' after '{value}', found {shown}", col_1)
        # An empty alternative (epsilon) is located at the '->' or '|' before it.
        alternatives: list[list[Symbol]] = [[]]
        columns = [tokens[1][2]]
        for kind_i, value_i, col_i in tokens[2:]:
            if kind_i == "|":
                alternatives.append([])
                columns.append(col_i)
            elif kind_i == "->":
                raise fail("a second '->' in one rule (one rule per line)", col_i)
            else:
                if not alternatives[-1]:
                    columns[-1] = col_i
                alternatives[-1].append(Symbol(value_i, kind_i == "terminal"))
        for alt, alt_col in zip(alternatives, columns, strict=True):
            rules.append(_Rule(Rule(value, tuple(alt)), line_no, alt_col + 1))
    return rules, start, start_line


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
    """Yield (kind, value, 0-based column) for one line: name, terminal, ->, |, %."""
    pos, end = 0, len(line)
    while pos < end:
        char = line[pos]
        if char.isspace():
            pos += 1
        elif char == "#":
            return
        elif line.startswith(_ARROW, pos):
            yield "->", _ARROW, pos
            pos += 2
        elif char == "|":
            yield "|", "|", pos
            pos += 1
        elif char in _QUOTES:
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
            match = _NAME_RE.match(line, after)
            if not match:
                raise fail("'%' must be followed by a directive name", pos)
            yield "%", match.group(), pos
            pos = match.end()
        else:
            match = _NAME_RE.match(line, pos)
            if not match:
                raise fail(f"unexpected character {char!r}", pos)
            yield "name", match.group(), pos
            pos = match.end()


def _warn_ruleless(located: list[_Rule], start: str | None, source: str | None) -> None:
    """A warning for each nonterminal that has no rules of its own (a typo, or a rule left
    out): the rules that use it never apply, and a start symbol without rules derives
    nothing."""
    defined = {item.rule.lhs for item in located}
    where = f"{source}: " if source else ""
    if start is not None and start not in defined:
        warnings.warn(
            f"{where}the start symbol {start} has no rules: the grammar derives nothing",
            GrammarWarning,
            stacklevel=3,
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
                    stacklevel=3,
                )


def _fresh_namer(taken: Iterable[str]) -> Callable[[str, bool], str]:
    """A function giving names not in ``taken`` nor given before: ``base`` if free (unless
    ``numbered``), else the first free one of ``base_1``, ``base_2``, ..."""
    used = set(taken)

    def fresh(base: str, numbered: bool) -> str:
        numbers = (f"{base}_{k}" for k in itertools.count(1))
        name = next(
            n for n in itertools.chain(() if numbered else (base,), numbers) if n not in used
        )
        used.add(name)
        return name

    return fresh


class Grammar:
    """An immutable context-free grammar, usually in Chomsky normal form.

    Parameters
    ----------
    rules : iterable of Rule
        The rules, in order; duplicates are dropped (the first one is kept).
    start : str, optional
        The start symbol; default the left side of the first rule.
    cnf : {"strict", "allow", "convert"}
        ``"strict"`` (default) rejects a rule that is not in CNF, ``"allow"`` keeps a general
        grammar (see :attr:`is_cnf`), ``"convert"`` returns the result of :meth:`to_cnf`.

    Attributes
    ----------
    start : str
        The start symbol.
    rules : tuple of Rule
        All rules in text order, without duplicates.
    nonterminals : tuple of str
        In order of first appearance (left or right side) in the rules; the start first.
    terminals : tuple of str
        In order of first appearance.
    unary_rules : tuple of (str, str)
        The CNF terminal rules as pairs ``(A, 'a')``.
    binary_rules : tuple of (str, str, str)
        The CNF binary rules as triples ``(A, B, C)``.
    is_cnf : bool
        Whether every rule is ``A -> B C`` or ``A -> 'a'``.
    nonterminal_index : Mapping[str, int]
        Position of each nonterminal in :attr:`nonterminals`; it is also the nonterminal's
        bit in the bitsets of :meth:`lexical_mask` and :meth:`combine_masks`.
    lexicon : Mapping[str, frozenset of str]
        For each terminal, the nonterminals ``A`` with ``A -> terminal``.
    binary_index : Mapping[(str, str), frozenset of str]
        For each pair ``(B, C)`` on some right side, the ``A`` with ``A -> B C``.
    unary_by_lhs, binary_by_lhs : Mapping[str, tuple]
        For every nonterminal (in order), the terminals ``a`` of its rules ``A -> a`` and the
        pairs ``(B, C)`` of its rules ``A -> B C`` (empty tuples when it has none).
    origin : CnfOrigin or None
        For a grammar made by :meth:`to_cnf`, the grammar it was made from and how each
        rule maps back to it (trees of the CNF grammar are returned in the original one:
        :mod:`fastdcyk.cfg.trees`); None otherwise.

    Raises
    ------
    GrammarError
        When there are no rules, a name is not a valid nonterminal name, or (``"strict"``)
        a rule is not in CNF.

    Notes
    -----
    Every name (nonterminals and terminals) is brought to Unicode normal form NFC, so rules
    that differ only in the encoding of an accented letter are the same rule.


    Two grammars are equal when they have the same start symbol and the same rules in the
    same order (order matters: it fixes the symbol orders, hence the bit of each symbol).

    Examples
    --------
    >>> g = Grammar.from_string("S -> D E | D S\\nD -> 'a'\\nE -> 'b'")
    >>> g.start, g.nonterminals, g.terminals
    ('S', ('S', 'D', 'E'), ('a', 'b'))
    >>> len(g), g.binary_rules
    (4, (('S', 'D', 'E'), ('S', 'D', 'S')))
    """

    __slots__ = (
        "start",
        "rules",
        "nonterminals",
        "terminals",
        "unary_rules",
        "binary_rules",
        "is_cnf",
        "nonterminal_index",
        "lexicon",
        "binary_index",
        "unary_by_lhs",
        "binary_by_lhs",
        "_lexical_masks",
        "_by_left",
        "_combine_cache",
        "_mask_sets",
        "origin",
    )

    def __init__(
        self, rules: Iterable[Rule], *, start: str | None = None, cnf: CnfMode = "strict"
    ) -> None:
        if cnf not in _CNF_MODES:
            raise ValueError(f"cnf must be one of {_CNF_MODES}, not {cnf!r}")
        rules = tuple(
            dict.fromkeys(
                Rule(_nfc(r.lhs), tuple(Symbol(_nfc(name), t) for name, t in r.rhs)) for r in rules
            )
        )
        if not rules:
            raise GrammarError("the grammar has no rules")
        start = rules[0].lhs if start is None else _nfc(start)
        nonterminals: dict[str, None] = {start: None}
        terminals: dict[str, None] = {}
        for rule in rules:
            nonterminals[rule.lhs] = None
            for sym in rule.rhs:
                (terminals if sym.terminal else nonterminals)[sym.name] = None
        for name in nonterminals:
            if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
                raise GrammarError(f"{name!r} is not a valid nonterminal name")
        for name in terminals:
            if not isinstance(name, str) or not name:
                raise GrammarError(f"{name!r} is not a valid terminal (a non-empty str)")
        faults = [(rule, _cnf_fault(rule)) for rule in rules]
        if cnf == "strict":
            for rule, fault in faults:
                if fault:
                    raise GrammarError(
                        f"rule '{rule}' is not in Chomsky normal form: {fault}; {_CNF_HINT}"
                    )
        if cnf == "convert" and any(fault for _, fault in faults):
            cnf_form = Grammar(rules, start=start, cnf="allow").to_cnf()
            self._init(cnf_form.rules, cnf_form.start, cnf_form.nonterminals, cnf_form.terminals)
            object.__setattr__(self, "origin", cnf_form.origin)
            return
        self._init(rules, start, tuple(nonterminals), tuple(terminals))

    def _init(
        self,
        rules: tuple[Rule, ...],
        start: str,
        nonterminals: tuple[str, ...],
        terminals: tuple[str, ...],
    ) -> None:
        put = object.__setattr__
        put(self, "origin", None)
        put(self, "start", start)
        put(self, "rules", rules)
        put(self, "nonterminals", nonterminals)
        put(self, "terminals", terminals)
        unary = tuple((r.lhs, r.rhs[0].name) for r in rules if r.is_unary)
        binary = tuple((r.lhs, r.rhs[0].name, r.rhs[1].name) for r in rules if r.is_binary)
        put(self, "unary_rules", unary)
        put(self, "binary_rules", binary)
        put(self, "is_cnf", len(unary) + len(binary) == len(rules))
        index = {name: k for k, name in enumerate(nonterminals)}
        put(self, "nonterminal_index", MappingProxyType(index))

        lexicon: dict[str, dict[str, None]] = {}
        unary_by: dict[str, list[str]] = {name: [] for name in nonterminals}
        for lhs, word in unary:
            lexicon.setdefault(word, {})[lhs] = None
            unary_by[lhs].append(word)
        pairs: dict[tuple[str, str], dict[str, None]] = {}
        binary_by: dict[str, list[tuple[str, str]]] = {name: [] for name in nonterminals}
        for lhs, left, right in binary:
            pairs.setdefault((left, right), {})[lhs] = None
            binary_by[lhs].append((left, right))
        put(self, "lexicon", MappingProxyType({w: frozenset(a) for w, a in lexicon.items()}))
        put(self, "binary_index", MappingProxyType({p: frozenset(a) for p, a in pairs.items()}))
        put(self, "unary_by_lhs", MappingProxyType({a: tuple(v) for a, v in unary_by.items()}))
        put(self, "binary_by_lhs", MappingProxyType({a: tuple(v) for a, v in binary_by.items()}))

        # Bitset view for CYK: bit k is nonterminals[k]. For each left child B, the pairs
        # (bit of C, mask of all A with A -> B C), so a cell pair is combined by walking the
        # bits of the left cell only.
        put(
            self,
            "_lexical_masks",
            {w: sum(1 << index[a] for a in lhs) for w, lhs in lexicon.items()},
        )
        by_left: list[dict[int, int]] = [{} for _ in nonterminals]
        for lhs, left, right in binary:
            row = by_left[index[left]]
            row[1 << index[right]] = row.get(1 << index[right], 0) | (1 << index[lhs])
        put(self, "_by_left", tuple(tuple(row.items()) for row in by_left))
        put(self, "_combine_cache", {})
        put(self, "_mask_sets", {0: frozenset()})

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_string(
        cls,
        text: str | bytes,
        *,
        cnf: CnfMode = "strict",
        source: str | None = None,
        encoding: str = "utf-8",
    ) -> Grammar:
        """Read a grammar in NLTK's text format.

        One rule per line, ``LHS -> alternative | alternative ...``; terminals are quoted
        with ``'`` or ``"`` (inside quotes, ``\\\\`` and ``\\`` before the quote escape them);
        ``#`` starts a comment; ``%start X`` sets the start symbol, which otherwise is the
        left side of the first rule. An alternative with no symbols is an epsilon rule.

        Parameters
        ----------
        text : str or bytes
            The grammar; bytes are decoded with ``encoding``. The text is brought to Unicode
            normal form NFC before it is read (error positions refer to that form).
        cnf : {"strict", "allow", "convert"}
            See :class:`Grammar`.
        source : str, optional
            Where the text came from, for error messages.
        encoding : str, default "utf-8"
            The encoding of ``text`` when it is bytes (ignored for a str).

        Returns
        -------
        Grammar

        Raises
        ------
        GrammarError
            On malformed text (with ``line`` and ``column`` set) or, with ``cnf="strict"``,
            a rule that is not in CNF (with the line and column of its alternative); on bytes
            that are not ``encoding`` text.
        TypeError
            When ``text`` is neither str nor bytes.
        LookupError
            For an unknown ``encoding``.

        Examples
        --------
        >>> Grammar.from_string("S -> A B  # a comment\\nA -> 'a'\\nB -> \\"b\\"").terminals
        ('a', 'b')
        >>> Grammar.from_string("S -> A B C\\nA -> 'a'\\nB -> 'b'\\nC -> 'c'", cnf="convert").is_cnf
        True
        >>> Grammar.from_string("S -> 'caf\\xe9'".encode("latin-1"), encoding="latin-1").terminals
        ('café',)
        """
        if cnf not in _CNF_MODES:
            raise ValueError(f"cnf must be one of {_CNF_MODES}, not {cnf!r}")
        if isinstance(text, bytes | bytearray | memoryview):
            text = _decode(bytes(text), encoding, source)
        elif not isinstance(text, str):
            raise TypeError(
                f"the grammar text must be a str (or bytes to decode), got {type(text).__name__}"
            )
        located, start, start_line = _parse(_nfc(text), source)
        if not located:
            raise GrammarError("the grammar has no rules", source=source)
        if start is not None and not any(
            start == item.rule.lhs or Symbol(start, False) in item.rule.rhs for item in located
        ):
            raise GrammarError(
                f"the %start symbol {start} appears in no rule", start_line, None, source
            )
        if cnf == "strict":
            for item in located:
                fault = _cnf_fault(item.rule)
                if fault:
                    raise GrammarError(
                        f"rule '{item.rule}' is not in Chomsky normal form: {fault}; {_CNF_HINT}",
                        item.line,
                        item.column,
                        source,
                    )
        _warn_ruleless(located, start, source)
        return cls((item.rule for item in located), start=start, cnf=cnf)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str] | int | io.IOBase,
        *,
        cnf: CnfMode = "strict",
        encoding: str = "utf-8",
    ) -> Grammar:
        """Read a grammar file in NLTK's text format; see :meth:`from_string`.

        Parameters
        ----------
        path : str, path-like, int or file object
            The file: a path, an open file descriptor, or a file object open for reading
            (text or binary). A descriptor or file object is read from its current position
            to its end and left open: it is the caller's to close.
        cnf : {"strict", "allow", "convert"}
            See :class:`Grammar`.
        encoding : str, default "utf-8"
            The file's encoding (ignored for a file object open in text mode). Grammars that
            come with NLTK, such as its ATIS grammar, are often ``"latin-1"``. A gzipped
            file (``.cfg.gz``) is decompressed first.

        Returns
        -------
        Grammar

        Raises
        ------
        GrammarError
            As :meth:`from_string`, or when the file is not ``encoding`` text; the message
            starts with the file name.
        TypeError
            When ``path`` is none of the above.
        OSError
            When the file cannot be read.
        LookupError
            For an unknown ``encoding``.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "g.cfg"
        >>> _ = path.write_text("S -> 'x'\\n")
        >>> Grammar.from_file(path).terminals
        ('x',)
        """
        codecs.lookup(encoding)  # an unknown encoding fails before the file is read
        if isinstance(path, bool):
            raise TypeError("path must be a path, a file descriptor or a file object, not a bool")
        if isinstance(path, int):
            source = f"<file descriptor {path}>"
            with open(path, "rb", closefd=False) as handle:
                data = handle.read()
        elif isinstance(path, str | os.PathLike):
            source = os.fspath(path)
            with open(path, "rb") as handle:
                data = handle.read()
        elif callable(getattr(path, "read", None)):
            name = getattr(path, "name", None)
            source = os.fspath(name) if isinstance(name, str | os.PathLike) else None
            try:
                data = path.read()
            except UnicodeDecodeError as exc:
                opened = getattr(path, "encoding", None) or "the encoding it was opened with"
                raise GrammarError(
                    f"cannot be decoded as {opened} ({exc.reason}): open the file with "
                    "encoding='latin-1' (or the file's encoding)",
                    source=source,
                ) from None
            if isinstance(data, str):
                return cls.from_string(data, cnf=cnf, source=source)
        else:
            raise TypeError(
                "path must be a path, a file descriptor or a file object, "
                f"got {type(path).__name__}"
            )
        if not isinstance(data, bytes | bytearray):
            raise TypeError(f"reading {source or 'the file'} gave {type(data).__name__}, not text")
        if data[:2] == b"\x1f\x8b":  # gzip's magic number: a compressed grammar
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError) as exc:
                raise GrammarError(f"is not a readable gzip file ({exc})", source=source) from None
        return cls.from_string(_decode(bytes(data), encoding, source), cnf=cnf, source=source)

    @classmethod
    def from_nltk(cls, cfg: Any, *, cnf: CnfMode = "strict") -> Grammar:
        """Convert an ``nltk.CFG``.

        Parameters
        ----------
        cfg : nltk.CFG
            The grammar; its start symbol is kept.
        cnf : {"strict", "allow", "convert"}
            See :class:`Grammar`.

        Returns
        -------
        Grammar

        Raises
        ------
        ImportError
            When nltk is not installed.
        TypeError
            When ``cfg`` is not an nltk grammar.
        GrammarError
            As :class:`Grammar`.

        Examples
        --------
        >>> import nltk
        >>> cfg = nltk.CFG.fromstring("S -> D E\\nD -> 'a'\\nE -> 'b'")
        >>> Grammar.from_nltk(cfg) == Grammar.from_string("S -> D E\\nD -> 'a'\\nE -> 'b'")
        True
        """
        try:
            from nltk.grammar import Nonterminal
        except ImportError as err:
            raise ImportError(
                "Grammar.from_nltk needs nltk; install it with 'pip install nltk'"
            ) from err
        if not (hasattr(cfg, "productions") and hasattr(cfg, "start")):
            raise TypeError(f"expected an nltk.CFG, got {type(cfg).__name__}")
        if type(cfg).__name__ == "FeatureGrammar" or type(cfg.start()) is not Nonterminal:
            raise GrammarError(
                f"{type(cfg).__name__} is a feature grammar (its nonterminals carry feature "
                "structures): fastdcyk reads plain context-free grammars (nltk.CFG) only"
            )

        def symbol(item: Any) -> Symbol:
            if isinstance(item, Nonterminal):
                return Symbol(str(item.symbol()), False)
            return Symbol(str(item), True)

        rules = [
            Rule(str(p.lhs().symbol()), tuple(symbol(x) for x in p.rhs()))
            for p in cfg.productions()
        ]
        return cls(rules, start=str(cfg.start().symbol()), cnf=cnf)

    @classmethod
    def builtin_names(cls) -> tuple[str, ...]:
        """The names of the grammars shipped with fastdcyk.

        Returns
        -------
        tuple of str
            Sorted names, e.g. ``('G0', 'G1', 'G2', 'G3', 'G4', 'example')``.

        Examples
        --------
        >>> "G0" in Grammar.builtin_names()
        True
        """
        folder = resources.files(__package__).joinpath("grammars")
        return tuple(
            sorted(p.name[: -len(".cfg")] for p in folder.iterdir() if p.name.endswith(".cfg"))
        )

    @classmethod
    def builtin(cls, name: str) -> Grammar:
        """Load a grammar shipped with fastdcyk (names are matched case-insensitively).

        Parameters
        ----------
        name : str
            One of :meth:`builtin_names`: ``"example"`` (the paper's running example) or
            ``"G0"`` .. ``"G4"`` (reconstructions of the paper's experimental grammars).

        Returns
        -------
        Grammar

        Raises
        ------
        GrammarError
            For an unknown name; the message lists the available ones.

        Examples
        --------
        >>> len(Grammar.builtin("G0")), len(Grammar.builtin("G4"))
        (8, 41)
        """
        names = {n.lower(): n for n in cls.builtin_names()}
        key = str(name).lower()
        if key not in names:
            raise GrammarError(
                f"no builtin grammar named {name!r}; available: {', '.join(names.values())}"
            )
        resource = resources.files(__package__).joinpath("grammars", f"{names[key]}.cfg")
        return cls.from_string(resource.read_text(encoding="utf-8"), source=f"{names[key]}.cfg")

    @classmethod
    def load(
        cls, spec: str | os.PathLike[str], *, cnf: CnfMode = "strict", encoding: str = "utf-8"
    ) -> Grammar:
        """Load a builtin grammar by name, or a grammar file by path.

        Parameters
        ----------
        spec : str or path-like
            A name from :meth:`builtin_names` (which wins over a file of the same name, with
            a :class:`GrammarWarning`: give ``./NAME`` for the file) or the path of a file
            in NLTK's text format.
        cnf : {"strict", "allow", "convert"}
            For a file, see :class:`Grammar`; builtin grammars are already in CNF.
        encoding : str, default "utf-8"
            For a file, its encoding (see :meth:`from_file`).

        Returns
        -------
        Grammar

        Raises
        ------
        GrammarError
            When ``spec`` is neither a builtin name nor an existing file, or the file is not
            a valid grammar.

        Examples
        --------
        >>> Grammar.load("example") == Grammar.builtin("example")
        True
        """
        if isinstance(spec, str) and spec.lower() in {n.lower() for n in cls.builtin_names()}:
            if os.path.isfile(spec):
                warnings.warn(
                    f"{spec!r} names the built-in grammar {spec}, which is used; a file of "
                    f"that name is here too: give its path (./{spec}) to read the file",
                    GrammarWarning,
                    stacklevel=2,
                )
            return cls.builtin(spec)
        if not os.path.isfile(spec):
            raise GrammarError(
                f"{os.fspath(spec)!r} is neither a builtin grammar "
                f"({', '.join(cls.builtin_names())}) nor an existing file"
            )
        return cls.from_file(spec, cnf=cnf, encoding=encoding)

    @staticmethod
    def normalize_words(words: str | Iterable[str]) -> tuple[str, ...]:
        """The words of a sentence in Unicode normal form NFC, the form of the symbols.

        A word typed or read from a file may encode an accented letter as one code point or
        as a letter and a combining accent; the grammar keeps its terminals in NFC, so a
        sentence must be normalised before its words are looked up as terminals.

        Parameters
        ----------
        words : str or iterable of str
            The sentence: a str is split at whitespace.

        Returns
        -------
        tuple of str

        Raises
        ------
        TypeError
            When a word is not a str.

        Examples
        --------
        >>> Grammar.normalize_words("cafe\\u0301 noir") == ("caf\\u00e9", "noir")
        True
        """
        items = words.split() if isinstance(words, str) else words
        out = []
        for pos, word in enumerate(items):
            if not isinstance(word, str):
                raise TypeError(f"word {pos} is {word!r}, not a str")
            out.append(_nfc(word))
        return tuple(out)

    # ------------------------------------------------------------------ conversions

    def to_cnf(self) -> Grammar:
        """An equivalent grammar in Chomsky normal form.

        The steps are the textbook ones: terminals inside rules of two or more symbols are
        lifted into fresh nonterminals (``T_a -> 'a'``), long rules are binarised with fresh
        nonterminals (one per distinct tail, shared between rules), epsilon rules and then
        unit rules (cycles included) are removed, and finally useless nonterminals (not
        productive or not reachable from the start) are dropped. Fresh names never collide
        with existing ones. The start symbol keeps its name.

        The language is preserved except for the empty string, which no CNF grammar
        generates: a grammar that derives the empty string loses just that string.

        Returns
        -------
        Grammar
            ``self`` when it is already in CNF, else a new CNF grammar.

        Raises
        ------
        GrammarError
            When the grammar generates no non-empty string (no CNF grammar can exist).

        Examples
        --------
        >>> g = Grammar.from_string("S -> 'a' S 'b' | ", cnf="allow")
        >>> print(g.to_cnf())
        S -> T_a S_1
        S_1 -> S T_b | 'b'
        T_a -> 'a'
        T_b -> 'b'
        """
        if self.is_cnf:
            return self
        fresh = _fresh_namer(self.nonterminals)

        # Lift terminals out of rules with two or more symbols; the new T_a -> 'a' rules go
        # last so that the first rule keeps the start symbol on its left side.
        lifted: dict[str, str] = {}
        rules: list[Rule] = []
        for rule in self.rules:
            if len(rule.rhs) < 2:
                rules.append(rule)
                continue
            rhs = []
            for sym in rule.rhs:
                if sym.terminal:
                    if sym.name not in lifted:
                        valid = _NAME_RE.fullmatch(f"T_{sym.name}") is not None
                        lifted[sym.name] = fresh(f"T_{sym.name}" if valid else "T", not valid)
                    sym = Symbol(lifted[sym.name], False)
                rhs.append(sym)
            rules.append(Rule(rule.lhs, tuple(rhs)))
        rules.extend(Rule(name, (Symbol(word, True),)) for word, name in lifted.items())

        # Binarise: A -> X1 X2 ... Xk becomes A -> X1 N, N -> X2 ... Xk, and so on; N is
        # shared by all rules with the same tail X2 ... Xk.
        tails: dict[tuple[Symbol, ...], str] = {}
        binarised: list[Rule] = []
        for lhs, rhs in rules:
            base = lhs
            while len(rhs) > 2:
                tail = rhs[1:]
                known = tail in tails
                if not known:
                    tails[tail] = fresh(base, True)
                binarised.append(Rule(lhs, (rhs[0], Symbol(tails[tail], False))))
                if known:
                    break
                lhs, rhs = tails[tail], tail
            else:
                binarised.append(Rule(lhs, rhs))

        # Remove epsilon rules: every rule gets its variants with nullable symbols dropped.
        # Each nullable symbol keeps the first rule found to derive the empty string from
        # symbols already known nullable (so its empty tree is finite), and each new rule
        # the binarised rule and the positions of its right side that it keeps.
        nullable: dict[str, Rule] = {}
        changed = True
        while changed:
            changed = False
            for rule in binarised:
                lhs, rhs = rule
                if lhs not in nullable and all(not s.terminal and s.name in nullable for s in rhs):
                    nullable[lhs] = rule
                    changed = True
        no_epsilon: list[Rule] = []
        kept_of: dict[Rule, tuple[Rule, tuple[int, ...]]] = {}
        for rule in binarised:
            variants: list[tuple[int, ...]] = [()]
            for pos, sym in enumerate(rule.rhs):
                keep = [v + (pos,) for v in variants]
                variants = keep + variants if not sym.terminal and sym.name in nullable else keep
            for v in variants:
                if v:
                    new = Rule(rule.lhs, tuple(rule.rhs[p] for p in v))
                    no_epsilon.append(new)
                    kept_of.setdefault(new, (rule, v))

        # Remove unit rules: A gets the non-unit rules of every B with A =>* B by unit rules.
        def is_unit(rule: Rule) -> bool:
            return len(rule.rhs) == 1 and not rule.rhs[0].terminal

        units: dict[str, list[str]] = {}
        for rule in no_epsilon:
            if is_unit(rule):
                units.setdefault(rule.lhs, []).append(rule.rhs[0].name)
        proper: dict[str, list[Rule]] = {}
        for rule in no_epsilon:
            if not is_unit(rule):
                proper.setdefault(rule.lhs, []).append(rule)
        # A gets B's rules for every B it reaches by unit rules; each new rule remembers the
        # unit rules of one shortest path from A to B, then B's rule.
        no_unit: list[Rule] = []
        steps: dict[Rule, tuple[tuple[Rule, tuple[int, ...]], ...]] = {}
        for lhs in dict.fromkeys(r.lhs for r in no_epsilon):
            path: dict[str, tuple[Rule, ...]] = {lhs: ()}
            todo = [lhs]
            while todo:
                here = todo.pop(0)
                for nxt in units.get(here, ()):
                    if nxt not in path:
                        path[nxt] = path[here] + (Rule(here, (Symbol(nxt, False),)),)
                        todo.append(nxt)
            for name, chain in path.items():
                for r in proper.get(name, ()):
                    new = Rule(lhs, r.rhs)
                    no_unit.append(new)
                    steps.setdefault(new, tuple(kept_of[u] for u in chain) + (kept_of[r],))

        kept = _useful_rules(no_unit, self.start)
        if not kept:
            raise GrammarError(
                f"the grammar generates no non-empty string from {self.start}, "
                "so it has no Chomsky normal form"
            )
        cnf = Grammar(kept, start=self.start)
        origin = CnfOrigin(
            grammar=self,
            helpers=frozenset(lifted.values()) | frozenset(tails.values()),
            nullable=MappingProxyType(nullable),
            steps=MappingProxyType({rule: steps[rule] for rule in cnf.rules}),
        )
        object.__setattr__(cnf, "origin", origin)
        return cnf

    def to_string(self) -> str:
        """The grammar in NLTK's text format; :meth:`from_string` reads it back equal.

        Consecutive rules with the same left side share a line, as alternatives.

        Returns
        -------
        str

        Examples
        --------
        >>> print(Grammar.builtin("example").to_string())
        S -> D E | D S
        D -> 'a'
        E -> 'b'
        """
        lines = [] if self.start == self.rules[0].lhs else [f"%start {self.start}"]
        previous = None
        for rule in self.rules:
            rhs = " ".join(map(str, rule.rhs))
            if rule.lhs == previous:
                lines[-1] = f"{lines[-1]} | {rhs}".rstrip()
            else:
                lines.append(f"{rule.lhs} {_ARROW} {rhs}".rstrip())
            previous = rule.lhs
        return "\n".join(lines)

    def to_nltk(self) -> Any:
        """The grammar as an ``nltk.CFG`` (needs nltk).

        Returns
        -------
        nltk.CFG

        Raises
        ------
        ImportError
            When nltk is not installed.

        Examples
        --------
        >>> Grammar.builtin("example").to_nltk().start()
        S
        """
        try:
            from nltk.grammar import CFG, Nonterminal, Production
        except ImportError as err:
            raise ImportError(
                "Grammar.to_nltk needs nltk; install it with 'pip install nltk'"
            ) from err
        productions = [
            Production(
                Nonterminal(rule.lhs),
                [s.name if s.terminal else Nonterminal(s.name) for s in rule.rhs],
            )
            for rule in self.rules
        ]
        return CFG(Nonterminal(self.start), productions)

    # ------------------------------------------------------------------ bitset lookups

    def lexical_mask(self, word: str) -> int:
        """Bitset of the nonterminals ``A`` with ``A -> word`` (0 for an unknown word).

        Parameters
        ----------
        word : str
            Compared with the terminals in Unicode normal form NFC.

        Returns
        -------
        int
            Bit k set iff ``nonterminals[k] -> word`` is a rule.

        Examples
        --------
        >>> Grammar.builtin("example").lexical_mask("a")  # D is nonterminal 1
        2
        """
        mask = self._lexical_masks.get(word)
        if mask is None:
            mask = self._lexical_masks.get(_nfc(word), 0)
        return mask

    def combine_masks(self, left: int, right: int) -> int:
        """Bitset of the ``A`` with a rule ``A -> B C``, B in ``left`` and C in ``right``.

        Results are memoised: CYK meets few distinct pairs of cells on a small grammar.

        Parameters
        ----------
        left, right : int
            Bitsets of nonterminals (see :attr:`nonterminal_index`).

        Returns
        -------
        int

        Examples
        --------
        >>> g = Grammar.builtin("example")
        >>> g.combine_masks(g.lexical_mask("a"), g.lexical_mask("b"))  # S is bit 0
        1
        """
        key = (left, right)
        cache = self._combine_cache
        result = cache.get(key)
        if result is None:
            result = 0
            by_left = self._by_left
            rest = left
            while rest:
                low = rest & -rest
                for c_bit, a_mask in by_left[low.bit_length() - 1]:
                    if right & c_bit:
                        result |= a_mask
                rest ^= low
            if len(cache) >= _COMBINE_CACHE_LIMIT:
                cache.clear()
            cache[key] = result
        return result

    def nonterminals_of_mask(self, mask: int) -> frozenset[str]:
        """The set of nonterminals whose bits are set in ``mask``.

        Parameters
        ----------
        mask : int

        Returns
        -------
        frozenset of str

        Examples
        --------
        >>> sorted(Grammar.builtin("example").nonterminals_of_mask(0b101))
        ['E', 'S']
        """
        found = self._mask_sets.get(mask)
        if found is None:
            names = self.nonterminals
            found = frozenset(names[k] for k in range(mask.bit_length()) if mask >> k & 1)
            if len(self._mask_sets) >= _COMBINE_CACHE_LIMIT:
                self._mask_sets.clear()
            self._mask_sets[mask] = found
        return found

    # ------------------------------------------------------------------ protocol

    def __len__(self) -> int:
        return len(self.rules)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return self.start == other.start and self.rules == other.rules

    def __hash__(self) -> int:
        return hash((self.start, self.rules))

    def __repr__(self) -> str:
        kind = "CNF" if self.is_cnf else "not CNF"
        return (
            f"<Grammar start={self.start!r}: {len(self)} rules ({len(self.unary_rules)} unary, "
            f"{len(self.binary_rules)} binary, {kind}), {len(self.nonterminals)} nonterminals, "
            f"{len(self.terminals)} terminals>"
        )

    def __str__(self) -> str:
        return self.to_string()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Grammar objects are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Grammar objects are immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        if self.origin is None:
            return (_restore, (self.rules, self.start))
        origin = self.origin._replace(nullable=dict(self.origin.nullable))
        origin = origin._replace(steps=dict(origin.steps))
        return (_restore, (self.rules, self.start, tuple(origin)))


def _restore(rules: tuple[Rule, ...], start: str, origin: tuple | None = None) -> Grammar:
    grammar = Grammar(rules, start=start, cnf="allow")
    if origin is not None:
        made, helpers, nullable, steps = origin
        origin = CnfOrigin(made, helpers, MappingProxyType(nullable), MappingProxyType(steps))
        object.__setattr__(grammar, "origin", origin)
    return grammar


def _useful_rules(rules: list[Rule], start: str) -> list[Rule]:
    """The rules left after dropping non-productive, then unreachable, nonterminals."""
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs not in productive and all(s.terminal or s.name in productive for s in rhs):
                productive.add(lhs)
                changed = True
    rules = [r for r in rules if all(s.terminal or s.name in productive for s in r.rhs)]
    rules = [r for r in rules if r.lhs in productive]
    reachable, todo = {start}, [start]
    by_lhs: dict[str, list[Rule]] = {}
    for rule in rules:
        by_lhs.setdefault(rule.lhs, []).append(rule)
    while todo:
        for rule in by_lhs.get(todo.pop(), ()):
            for sym in rule.rhs:
                if not sym.terminal and sym.name not in reachable:
                    reachable.add(sym.name)
                    todo.append(sym.name)
    return [r for r in rules if r.lhs in reachable]
