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

The pieces live in modules of their own, which this one brings together:
:mod:`fastdcyk.cfg.symbols` (the value types :class:`Symbol`, :class:`Rule`,
:class:`CnfOrigin`, :class:`GrammarError`, :class:`GrammarWarning`, re-exported here),
:mod:`fastdcyk.cfg.reader` (the text format), :mod:`fastdcyk.cfg.nltk_io` (to and from
NLTK), :mod:`fastdcyk.cfg.cnf` (the conversion to
CNF), :mod:`fastdcyk.cfg.weights` (a probabilistic grammar's weights) and
:mod:`fastdcyk.cfg.masks` (the bitsets of symbolic CYK).
"""

from __future__ import annotations

import codecs
import gzip
import io
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal

from fastdcyk.cfg.cnf import cnf_rules
from fastdcyk.cfg.masks import by_left_table, combine, lexical_masks, names_of_mask, word_mask
from fastdcyk.cfg.nltk_io import nltk_grammar, nltk_rules
from fastdcyk.cfg.reader import (
    decode_text,
    format_rules,
    parse_rules,
    user_stacklevel,
    warn_ruleless,
)
from fastdcyk.cfg.symbols import (
    CnfOrigin,
    GrammarError,
    GrammarWarning,
    Rule,
    Symbol,
    cnf_fault,
    nfc,
    nfc_rule,
    valid_name,
)
from fastdcyk.cfg.weights import check_sums, log_weights

__all__ = ["CnfOrigin", "Grammar", "GrammarError", "GrammarWarning", "Rule", "Symbol"]

CnfMode = Literal["strict", "allow", "convert"]
_CNF_MODES = ("strict", "allow", "convert")

_CNF_HINT = "read it with cnf='convert' to convert it (--to-cnf on the command line)"


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
    probs : sequence of float or mapping of Rule to float, optional
        A probabilistic grammar (PCFG): each rule's probability, in (0, 1], in the order of
        ``rules`` or by rule. The probabilities of a left side's rules should add up to 1
        (a :class:`GrammarWarning` says where they do not; the most probable tree is still
        defined).
    log_probs : sequence of float or mapping of Rule to float, optional
        The same as natural logarithms (any finite weights: a weighted grammar whose
        weights need not be probabilities). At most one of ``probs`` and ``log_probs``.

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
    terminal_set : frozenset of str
        The same terminals, for a word's lookup (a sentence's words are checked against it).
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
    is_weighted : bool
        Whether the rules carry probabilities (or log weights).
    log_probs : tuple of float or None
        For a weighted grammar, each rule's natural log probability, in the order of
        :attr:`rules`; None otherwise. :meth:`log_prob` looks one up by rule.
    probs : tuple of float or None
        The probabilities as given (exactly: the text format writes these), for a grammar
        made from probabilities; None for an unweighted one or one given log weights.

    Raises
    ------
    GrammarError
        When there are no rules, a name is not a valid nonterminal name (a non-empty str
        without whitespace), (``"strict"``) a rule is not in CNF, or a probability is
        missing, outside (0, 1] or given twice for one rule.

    Notes
    -----
    Every name (nonterminals and terminals) is brought to Unicode normal form NFC, so rules
    that differ only in the encoding of an accented letter are the same rule.


    Two grammars are equal when they have the same start symbol and the same rules in the
    same order (order matters: it fixes the symbol orders, hence the bit of each symbol),
    with the same probabilities.

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
        "terminal_set",
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
        "_hash",
        "origin",
        "log_probs",
        "probs",
        "is_weighted",
        "_log_prob_of",
    )

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        start: str | None = None,
        cnf: CnfMode = "strict",
        probs: Iterable[float] | Mapping[Rule, float] | None = None,
        log_probs: Iterable[float] | Mapping[Rule, float] | None = None,
    ) -> None:
        if cnf not in _CNF_MODES:
            raise ValueError(f"cnf must be one of {_CNF_MODES}, not {cnf!r}")
        if isinstance(rules, str | bytes) or not isinstance(rules, Iterable):
            hint = " (grammar text: Grammar.from_string)" if isinstance(rules, str) else ""
            raise TypeError(f"rules must be an iterable of Rule, got {type(rules).__name__}{hint}")
        given = [r if isinstance(r, Rule) else _not_a_rule(r) for r in rules]
        given = [nfc_rule(r) for r in given]
        weights, linear = log_weights(given, probs, log_probs)
        rules = tuple(dict.fromkeys(given))
        if not rules:
            raise GrammarError("the grammar has no rules")
        if weights is not None and len(rules) < len(given):
            seen: set[Rule] = set()
            twice = next(r for r in given if r in seen or seen.add(r))
            raise GrammarError(
                f"rule '{twice}' is given twice in a weighted grammar: give it once, with "
                "the sum of its probabilities"
            )
        start = rules[0].lhs if start is None else nfc(start)
        if not any(start == r.lhs or Symbol(start, False) in r.rhs for r in rules):
            raise GrammarError(
                f"the start symbol {start!r} appears in no rule: name one of the grammar's "
                "nonterminals (or leave start out: the left side of the first rule)"
            )
        nonterminals: dict[str, None] = {start: None}
        terminals: dict[str, None] = {}
        for rule in rules:
            nonterminals[rule.lhs] = None
            for sym in rule.rhs:
                (terminals if sym.terminal else nonterminals)[sym.name] = None
        for name in nonterminals:
            if not valid_name(name):
                raise GrammarError(
                    f"{name!r} is not a valid nonterminal name (a non-empty str without whitespace)"
                )
        for name in terminals:
            if not isinstance(name, str) or not name:
                raise GrammarError(f"{name!r} is not a valid terminal (a non-empty str)")
        faults = [(rule, cnf_fault(rule)) for rule in rules]
        if cnf == "strict":
            for rule, fault in faults:
                if fault:
                    raise GrammarError(
                        f"rule '{rule}' is not in Chomsky normal form: {fault}; {_CNF_HINT}"
                    )
        if cnf == "convert" and any(fault for _, fault in faults):
            general = Grammar(
                rules,
                start=start,
                cnf="allow",
                **({"probs": linear} if linear else {"log_probs": weights}),
            )
            cnf_form = general.to_cnf()  # general checked its sums, as below
            self._init(cnf_form.rules, cnf_form.start, cnf_form.nonterminals, cnf_form.terminals)
            self._weigh(cnf_form.log_probs, cnf_form.probs)
            object.__setattr__(self, "origin", cnf_form.origin)
            return
        self._init(rules, start, tuple(nonterminals), tuple(terminals))
        self._weigh(weights, linear)
        if weights is not None and probs is not None:
            check_sums(self)

    def _weigh(self, weights: tuple[float, ...] | None, linear: tuple[float, ...] | None) -> None:
        put = object.__setattr__
        put(self, "log_probs", weights)
        put(self, "probs", linear)
        put(self, "is_weighted", weights is not None)
        put(
            self,
            "_log_prob_of",
            None if weights is None else dict(zip(self.rules, weights, strict=True)),
        )

    def _linear_probs(self) -> tuple[float, ...]:
        """A weighted grammar's rule probabilities: as given, or exp of its log weights."""
        if self.probs is not None:
            return self.probs
        return tuple(math.exp(w) for w in self.log_probs)  # type: ignore[union-attr]

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
        put(self, "terminal_set", frozenset(terminals))
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
        put(self, "_lexical_masks", lexical_masks(lexicon, index))
        put(self, "_by_left", by_left_table(binary, index, nonterminals))
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
                        f"rule '{item.rule}' is not in Chomsky normal form: {fault}; {_CNF_HINT}",
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
    def from_nltk(cls, cfg: Any, *, cnf: CnfMode = "strict") -> Grammar:
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
            When ``words`` is neither, or a word is not a str.

        Examples
        --------
        >>> Grammar.normalize_words("cafe\\u0301 noir") == ("caf\\u00e9", "noir")
        True
        """
        if isinstance(words, bytes | bytearray) or not isinstance(words, str | Iterable):
            hint = " (decode it first)" if isinstance(words, bytes | bytearray) else ""
            raise TypeError(
                f"words must be a str (split at whitespace) or a sequence of str, got "
                f"{type(words).__name__}{hint}"
            )
        items = words.split() if isinstance(words, str) else words
        out = []
        for pos, word in enumerate(items):
            if not isinstance(word, str):
                raise TypeError(f"word {pos} is {word!r}, not a str")
            out.append(nfc(word))
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

        A probabilistic grammar stays one, with every sentence's probability kept: a
        binarised rule keeps its probability on its first part (the new rules get 1, as do
        the ``T_a -> 'a'``), and a rule that replaces unit chains ``A -> B -> ... -> r``
        gets the sum over the chains of their products (cycles included, when their total
        is below 1). What is not kept is said: epsilon rules are refused (a GrammarError:
        remove them first), and a :class:`GrammarWarning` counts the CNF rules that stand
        for several derivations (a most probable CNF tree then shows one of them).

        Returns
        -------
        Grammar
            ``self`` when it is already in CNF, else a new CNF grammar.

        Raises
        ------
        GrammarError
            When the grammar generates no non-empty string (no CNF grammar can exist), or a
            probabilistic grammar has epsilon rules or unit cycles of probability >= 1.

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
        weights = None
        if self.is_weighted:
            weights = dict(zip(self.rules, self._linear_probs(), strict=True))
        converted = cnf_rules(self.rules, self.start, self.nonterminals, weights)
        kept, helpers, nullable, steps = converted[:4]
        cnf = Grammar(kept, start=self.start)
        if converted.probs is not None:
            linear = tuple(converted.probs[r] for r in cnf.rules)
            # log weights in, log weights out; and an improper PCFG's unit chains can fold
            # into weights above 1, which are no probabilities (to_string refuses them)
            if self.probs is None or max(linear) > 1.0 + 1e-12:
                cnf._weigh(tuple(math.log(p) for p in linear), None)
            else:
                cnf._weigh(tuple(math.log(p) for p in linear), linear)
            if converted.merged:
                warnings.warn(
                    f"{converted.merged} rule(s) of the CNF grammar stand for several "
                    "derivations of the given one (unit chains that end in the same rule): "
                    "each has their summed probability, so sentence probabilities are kept, "
                    "but a most probable CNF tree may stand for several trees and is shown as "
                    "one of them",
                    GrammarWarning,
                    stacklevel=user_stacklevel(),
                )
        origin = CnfOrigin(
            grammar=self,
            helpers=helpers,
            nullable=MappingProxyType(nullable),
            steps=MappingProxyType({rule: steps[rule] for rule in cnf.rules}),
        )
        object.__setattr__(cnf, "origin", origin)
        return cnf

    def to_string(self) -> str:
        """The grammar in NLTK's text format; :meth:`from_string` reads it back equal.

        Consecutive rules with the same left side share a line, as alternatives. A weighted
        grammar is written with each alternative's probability (NLTK's PCFG format).

        Raises
        ------
        ValueError
            For a grammar of log weights that are not all <= 0 (not probabilities).

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
        if self.probs is None and self.log_probs is not None and max(self.log_probs) > 0.0:
            raise ValueError(
                "the grammar's log weights are not all <= 0, so they are not "
                "probabilities and the text format cannot write them (the CNF of a PCFG "
                "whose probabilities do not add up to 1 can have such weights: save the "
                "grammar before to_cnf)"
            )
        probs = self._linear_probs() if self.is_weighted else None
        return format_rules(self.rules, self.start, probs)

    def to_nltk(self) -> Any:
        """The grammar as an ``nltk.CFG``, or an ``nltk.PCFG`` when weighted (needs nltk).

        Returns
        -------
        nltk.CFG or nltk.PCFG

        Raises
        ------
        ImportError
            When nltk is not installed.

        Examples
        --------
        >>> Grammar.builtin("example").to_nltk().start()
        S
        """
        probs = None
        if self.is_weighted:
            probs = self._linear_probs()
        return nltk_grammar(self.rules, self.start, probs)

    @property
    def preterminals(self) -> tuple[str, ...]:
        """The nonterminals with a rule ``A -> 'a'``, in the order of :attr:`nonterminals`:
        the labels a tagger gives a word (the last axis of soft preterminal inputs,
        :class:`fastdcyk.nn.DCYK`).

        Examples
        --------
        >>> Grammar.builtin("example").preterminals
        ('D', 'E')
        """
        return tuple(a for a in self.nonterminals if self.unary_by_lhs[a])

    def log_prob(self, rule: Rule) -> float:
        """The natural log probability (or log weight) of one of the grammar's rules.

        Parameters
        ----------
        rule : Rule

        Returns
        -------
        float

        Raises
        ------
        ValueError
            When the grammar is not weighted.
        KeyError
            When ``rule`` is not one of its rules.

        Examples
        --------
        >>> g = Grammar.from_string("S -> A A [1.0]\\nA -> 'a' [0.25] | 'b' [0.75]")
        >>> round(g.log_prob(g.rules[1]), 4)
        -1.3863
        """
        if self._log_prob_of is None:
            raise ValueError("the grammar has no probabilities (it is not weighted)")
        try:
            return self._log_prob_of[rule]
        except KeyError:
            raise KeyError(f"'{rule}' is not a rule of the grammar") from None

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
        return word_mask(self._lexical_masks, word)

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
        # The memo is looked up here first: a call less on the hot path of symbolic CYK.
        result = self._combine_cache.get((left, right))
        if result is None:
            result = combine(self._by_left, self._combine_cache, left, right)
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
        return names_of_mask(self.nonterminals, self._mask_sets, mask)

    # ------------------------------------------------------------------ protocol

    def __len__(self) -> int:
        return len(self.rules)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return (
            self.start == other.start
            and self.rules == other.rules
            and self.log_probs == other.log_probs
        )

    def __hash__(self) -> int:
        # computed once: a treebank grammar has hundreds of thousands of rules, and the
        # engine's caches are keyed by the grammar
        try:
            return self._hash
        except AttributeError:
            value = hash((self.start, self.rules, self.log_probs))
            object.__setattr__(self, "_hash", value)
            return value

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
            return (_restore, (self.rules, self.start, None, self.log_probs, self.probs))
        origin = self.origin._replace(nullable=dict(self.origin.nullable))
        origin = origin._replace(steps=dict(origin.steps))
        return (_restore, (self.rules, self.start, tuple(origin), self.log_probs, self.probs))


def _restore(
    rules: tuple[Rule, ...],
    start: str,
    origin: tuple | None = None,
    log_probs: tuple[float, ...] | None = None,
    probs: tuple[float, ...] | None = None,
) -> Grammar:
    grammar = Grammar(rules, start=start, cnf="allow")
    grammar._weigh(log_probs, probs)
    if origin is not None:
        made, helpers, nullable, steps = origin
        origin = CnfOrigin(made, helpers, MappingProxyType(nullable), MappingProxyType(steps))
        object.__setattr__(grammar, "origin", origin)
    return grammar


def _not_a_rule(item: Any) -> Rule:
    raise TypeError(
        f"rules must hold Rule objects (Rule('S', (Symbol('a', True),))), got "
        f"{type(item).__name__} {item!r}"
    )


def as_grammar(grammar: Any) -> Grammar:
    """``grammar`` itself, or the grammar a built-in name or a file path names
    (:meth:`Grammar.load`): what the functions that take a grammar accept.

    Raises
    ------
    TypeError
        When ``grammar`` is none of these.
    GrammarError
        As :meth:`Grammar.load`.
    """
    if isinstance(grammar, Grammar):
        return grammar
    if isinstance(grammar, str | os.PathLike):
        return Grammar.load(grammar)
    raise TypeError(
        f"grammar must be a fastdcyk.Grammar, a built-in name or a file, got "
        f"{type(grammar).__name__}"
    )
