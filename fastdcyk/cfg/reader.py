"""The readers of grammars: NLTK's text format (and its writer), files, NLTK's grammars,
the built-in grammars.

``parse_rules`` turns the text into plain data: the rules, each with the line and column of
its alternative, the ``%start`` symbol and its line. :meth:`Grammar.from_string
<fastdcyk.cfg.grammar.Grammar.from_string>` checks them and makes the grammar;
``decode_text`` decodes bytes with a helpful error, and ``warn_ruleless`` warns of
nonterminals without rules. ``format_rules`` writes rules back as text
(:meth:`Grammar.to_string <fastdcyk.cfg.grammar.Grammar.to_string>`).

:class:`GrammarReaders`, a base class of :class:`~fastdcyk.cfg.grammar.Grammar`, gives it
its constructors from outside sources (documented as the grammar's):
:meth:`~fastdcyk.cfg.grammar.Grammar.from_string`,
:meth:`~fastdcyk.cfg.grammar.Grammar.from_file`,
:meth:`~fastdcyk.cfg.grammar.Grammar.from_nltk`,
:meth:`~fastdcyk.cfg.grammar.Grammar.builtin_names`,
:meth:`~fastdcyk.cfg.grammar.Grammar.builtin` and
:meth:`~fastdcyk.cfg.grammar.Grammar.load`.
"""

from __future__ import annotations

import codecs
import gzip
import io
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from typing import Any, NamedTuple, Self

from fastdcyk.cfg.nltk_io import nltk_rules
from fastdcyk.cfg.symbols import (
    ARROW,
    CNF_HINT,
    CNF_MODES,
    NAME_RE,
    NAME_TOKEN_RE,
    CnfMode,
    GrammarError,
    GrammarWarning,
    Rule,
    Symbol,
    cnf_fault,
    escape_name,
    nfc,
    quote,
    unescape_name,
)

__all__ = [
    "QUOTES",
    "GrammarReaders",
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


class GrammarReaders:
    """The constructors of a :class:`~fastdcyk.cfg.grammar.Grammar` from outside sources, its
    base class: text, a file, an nltk grammar, a built-in name. Each makes the grammar with
    ``cls(rules, start=..., cnf=..., probs=...)``."""

    __slots__ = ()

    @classmethod
    def from_string(
        cls,
        text: str | bytes,
        *,
        cnf: CnfMode = "strict",
        source: str | None = None,
        encoding: str = "utf-8",
    ) -> Self:
        """Read a grammar in NLTK's text format.

        One rule per line, ``LHS -> alternative | alternative ...``; terminals are quoted
        with ``'`` or ``"`` (inside quotes, ``\\\\`` and ``\\`` before the quote escape them);
        ``#`` starts a comment; ``%start X`` sets the start symbol, which otherwise is the
        left side of the first rule. An alternative with no symbols is an epsilon rule.
        A probabilistic grammar (NLTK's PCFG format) ends every alternative with its
        probability in brackets, ``NP -> DT NN [0.6] | NN [0.4]``. A nonterminal's name is
        NLTK's (letters, digits, ``_ / ^ < > + . -``); any other character is written after
        a backslash (``NP\\|<DT-JJ>``, ``\\,``), as :meth:`to_string` does.

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
        >>> from fastdcyk import Grammar
        >>> Grammar.from_string("S -> A B  # a comment\\nA -> 'a'\\nB -> \\"b\\"").terminals
        ('a', 'b')
        >>> Grammar.from_string("S -> A B C\\nA -> 'a'\\nB -> 'b'\\nC -> 'c'", cnf="convert").is_cnf
        True
        >>> Grammar.from_string("S -> 'caf\\xe9'".encode("latin-1"), encoding="latin-1").terminals
        ('café',)
        """
        if cnf not in CNF_MODES:
            raise ValueError(f"cnf must be one of {CNF_MODES}, not {cnf!r}")
        if isinstance(text, bytes | bytearray | memoryview):
            text = decode_text(bytes(text), encoding, source)
        elif not isinstance(text, str):
            raise TypeError(
                f"the grammar text must be a str (or bytes to decode), got {type(text).__name__}"
            )
        located, start, start_line = parse_rules(nfc(text), source)
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
                fault = cnf_fault(item.rule)
                if fault:
                    raise GrammarError(
                        f"rule '{item.rule}' is not in Chomsky normal form: {fault}; {CNF_HINT}",
                        item.line,
                        item.column,
                        source,
                    )
        warn_ruleless(located, start, source)
        probs = [item.prob for item in located]
        if all(p is None for p in probs):
            return cls((item.rule for item in located), start=start, cnf=cnf)
        bare = next((item for item in located if item.prob is None), None)
        if bare is not None:
            raise GrammarError(
                f"rule '{bare.rule}' has no probability while others have one: a "
                "probabilistic grammar gives every alternative its [p]",
                bare.line,
                bare.column,
                source,
            )
        seen: set[Rule] = set()
        for item in located:
            if item.rule in seen:
                raise GrammarError(
                    f"rule '{item.rule}' is given twice in a probabilistic grammar: give it "
                    "once, with the sum of its probabilities",
                    item.line,
                    item.column,
                    source,
                )
            seen.add(item.rule)
        return cls((item.rule for item in located), start=start, cnf=cnf, probs=probs)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str] | int | io.IOBase,
        *,
        cnf: CnfMode = "strict",
        encoding: str = "utf-8",
    ) -> Self:
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
        >>> from fastdcyk import Grammar
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
            if os.path.isdir(path):
                raise GrammarError(f"{source!r} is a folder, not a grammar file")
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
        return cls.from_string(decode_text(bytes(data), encoding, source), cnf=cnf, source=source)

    @classmethod
    def from_nltk(cls, cfg: Any, *, cnf: CnfMode = "strict") -> Self:
        """Convert an ``nltk.CFG`` or ``nltk.PCFG`` (whose probabilities are kept).

        Every label NLTK's tree transforms make (``chomsky_normal_form``'s ``NP|<DT-JJ>``,
        ``collapse_unary``'s ``S+VP``, parent annotation's ``NP^<S>``, the treebank's
        ``-NONE-`` and ``,``) is a valid nonterminal name.

        Parameters
        ----------
        cfg : nltk.CFG or nltk.PCFG
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
        >>> from fastdcyk import Grammar
        >>> import nltk
        >>> cfg = nltk.CFG.fromstring("S -> D E\\nD -> 'a'\\nE -> 'b'")
        >>> Grammar.from_nltk(cfg) == Grammar.from_string("S -> D E\\nD -> 'a'\\nE -> 'b'")
        True
        """
        rules, start, probs = nltk_rules(cfg)
        if rules and not any(r.lhs == start for r in rules):
            warnings.warn(
                f"the start symbol {start} has no rules: the grammar derives nothing",
                GrammarWarning,
                stacklevel=user_stacklevel(),
            )
        if probs is not None:
            return cls(rules, start=start, cnf=cnf, probs=probs)
        return cls(rules, start=start, cnf=cnf)

    @classmethod
    def builtin_names(cls) -> tuple[str, ...]:
        """The names of the grammars shipped with fastdcyk.

        Returns
        -------
        tuple of str
            Sorted names, e.g. ``('G0', 'G1', 'G2', 'G3', 'G4', 'example')``.

        Examples
        --------
        >>> from fastdcyk import Grammar
        >>> "G0" in Grammar.builtin_names()
        True
        """
        folder = resources.files(__package__).joinpath("grammars")
        return tuple(
            sorted(p.name[: -len(".cfg")] for p in folder.iterdir() if p.name.endswith(".cfg"))
        )

    @classmethod
    def builtin(cls, name: str) -> Self:
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
        >>> from fastdcyk import Grammar
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
    ) -> Self:
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
        >>> from fastdcyk import Grammar
        >>> Grammar.load("example") == Grammar.builtin("example")
        True
        """
        if isinstance(spec, str) and spec.lower() in {n.lower() for n in cls.builtin_names()}:
            if os.path.isfile(spec):
                warnings.warn(
                    f"{spec!r} names the built-in grammar {spec}, which is used; a file of "
                    f"that name is here too: give its path (./{spec}) to read the file",
                    GrammarWarning,
                    stacklevel=user_stacklevel(),
                )
            return cls.builtin(spec)
        if not isinstance(spec, str | os.PathLike):
            raise TypeError(
                f"spec must be a built-in grammar's name or a grammar file's path, got "
                f"{type(spec).__name__}"
            )
        if os.path.isdir(spec):
            raise GrammarError(f"{os.fspath(spec)!r} is a folder, not a grammar file")
        # a regular file, or a pipe or device that can be read once (<(cat g.pcfg), /dev/stdin)
        if not os.path.exists(spec):
            raise GrammarError(
                f"{os.fspath(spec)!r} is neither a builtin grammar "
                f"({', '.join(cls.builtin_names())}) nor an existing file"
            )
        return cls.from_file(spec, cnf=cnf, encoding=encoding)
