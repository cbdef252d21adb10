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
:mod:`fastdcyk.cfg.reader` (the text format, and the grammar's constructors from text, files,
NLTK and the built-ins: its base class ``GrammarReaders``), :mod:`fastdcyk.cfg.nltk_io` (to
and from NLTK), :mod:`fastdcyk.cfg.cnf` (the conversion to CNF), :mod:`fastdcyk.cfg.weights`
(a probabilistic grammar's weights) and :mod:`fastdcyk.cfg.masks` (the bitsets of symbolic
CYK, and the grammar's methods that read them: its base class ``GrammarMasks``). This module
holds what a grammar is (its rules, symbols and indexes), its conversions and its protocol.
"""

from __future__ import annotations

import math
import os
import string
import warnings
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from fastdcyk.cfg.cnf import cnf_rules
from fastdcyk.cfg.masks import GrammarMasks
from fastdcyk.cfg.nltk_io import nltk_grammar
from fastdcyk.cfg.reader import GrammarReaders, format_rules, user_stacklevel
from fastdcyk.cfg.symbols import (
    CNF_HINT,
    CNF_MODES,
    CnfMode,
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


class Grammar(GrammarReaders, GrammarMasks):
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
        if cnf not in CNF_MODES:
            raise ValueError(f"cnf must be one of {CNF_MODES}, not {cnf!r}")
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
                        f"rule '{rule}' is not in Chomsky normal form: {fault}; {CNF_HINT}"
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

        self._init_masks(lexicon, index, binary, nonterminals)

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

    def terminal_like(self, word: str) -> str | None:
        """The terminal a word that is none of them was probably meant to be: the same
        letters in another case, or without the punctuation around it ("Alice" for
        'alice', "dog." for 'dog'); None when there is no such terminal. Words are matched
        exactly (case and punctuation included): this is for error messages.

        Examples
        --------
        >>> g = Grammar.builtin("G0")
        >>> g.terminal_like("Fish"), g.terminal_like("fish."), g.terminal_like("cat")
        ('fish', 'fish', None)
        """
        stripped = word.strip(string.punctuation + "‘’“”")
        for candidate in dict.fromkeys((stripped, word.lower(), stripped.lower())):
            if candidate and candidate != word and candidate in self.terminal_set:
                return candidate
        folded = stripped.casefold()
        if not folded:
            return None
        found = sorted(t for t in self.terminal_set if t.casefold() == folded)
        return found[0] if found else None

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
