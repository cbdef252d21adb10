"""Symbolic CYK: the paper's Algorithm 1, the oracle that D-CYK is scored against.

Each cell is a bitset of nonterminals (a Python int, bit k for ``grammar.nonterminals[k]``);
two cells are combined by :meth:`Grammar.combine_masks`, which walks the left cell's bits and
memoises the result, so a sentence of length n costs about n^3 / 6 dictionary look-ups.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fastdcyk.cfg.grammar import Grammar, GrammarError, as_grammar

__all__ = ["UnknownWordError", "cyk", "recognizes"]


class UnknownWordError(ValueError):
    """A word of the input that no rule ``A -> word`` produces (``cyk(..., strict=True)``).

    Attributes
    ----------
    word : str
        The word.
    position : int
        Its 0-based position: it fills cell ``(position, position + 1)``.
    """

    def __init__(self, word: str, position: int, like: str | None = None) -> None:
        self.word = word
        self.position = position
        hint = "" if like is None else f" (did you mean {like!r}? words are matched exactly)"
        super().__init__(
            f"word {word!r} at position {position} (0-based) is produced by no rule of the "
            f"grammar{hint}"
        )


def _words(words: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(words, bytes | bytearray) or not isinstance(words, str | Iterable):
        raise TypeError(
            f"words must be a str (split at whitespace) or a sequence of str, got "
            f"{type(words).__name__}"
        )
    tokens = tuple(words.split()) if isinstance(words, str) else tuple(words)
    if not tokens:
        raise ValueError(
            "CYK needs at least one word: a CNF grammar cannot derive the empty string"
        )
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(f"words must be str, got {type(token).__name__}: {token!r}")
    return tokens


def _chart(
    grammar: Grammar,
    tokens: tuple[str, ...],
    strict: bool,
    tags: Sequence[Iterable[str] | None] | None = None,
) -> list[list[int]]:
    """The CYK table as bitsets: ``chart[i][j]`` is cell (i, j)."""
    if not grammar.is_cnf:
        raise GrammarError(
            "CYK needs a grammar in Chomsky normal form; convert it with Grammar.to_cnf()"
        )
    n = len(tokens)
    if tags is not None:
        tags = list(tags)
        if len(tags) != n:
            raise ValueError(f"tags has {len(tags)} entries for a sentence of {n} words")
    index = grammar.nonterminal_index
    pre = set(grammar.preterminals) if tags is not None else set()
    chart = [[0] * (n + 1) for _ in range(n + 1)]
    for i, word in enumerate(tokens):
        if tags is not None and tags[i] is not None:
            given = [tags[i]] if isinstance(tags[i], str) else list(tags[i])
            bad = [a for a in given if a not in pre]
            if bad:
                raise ValueError(
                    f"tags[{i}] names {bad[0]!r}, not a preterminal of the grammar (a "
                    "nonterminal with a rule A -> 'word')"
                )
            chart[i][i + 1] = sum({1 << index[a] for a in given})
            continue
        mask = grammar.lexical_mask(word)
        if strict and not mask:
            raise UnknownWordError(word, i, grammar.terminal_like(word))
        chart[i][i + 1] = mask
    combine = grammar.combine_masks
    for j in range(2, n + 1):
        for i in range(j - 2, -1, -1):
            row = chart[i]
            cell = 0
            for k in range(i + 1, j):
                left = row[k]
                if left:
                    right = chart[k][j]
                    if right:
                        cell |= combine(left, right)
            row[j] = cell
    return chart


def cyk(
    grammar: Grammar,
    words: Sequence[str] | str,
    *,
    strict: bool = False,
    tags: Sequence[Iterable[str] | str | None] | None = None,
) -> dict[tuple[int, int], frozenset[str]]:
    """Fill the CYK table of ``words`` (the paper's Algorithm 1).

    Parameters
    ----------
    grammar : Grammar or str or path
        A grammar in Chomsky normal form, or a built-in name / file path.
    words : sequence of str, or str
        The input; a str is split on whitespace.
    strict : bool
        If True, a word that no rule produces is an error; otherwise its cell is empty (and
        so is every cell spanning it).
    tags : sequence, optional
        One entry per word: None (the grammar's rules A -> word), or a preterminal or
        preterminals (nonterminals with a rule A -> a) that fill the word's cell instead,
        whatever the word (a tagger's tags; the word need not be a terminal).

    Returns
    -------
    dict
        ``{(i, j): frozenset of nonterminals}`` for every ``0 <= i < j <= n``, empty cells
        included; ``A`` is in cell ``(i, j)`` iff ``A`` derives ``words[i:j]``.

    Raises
    ------
    ValueError
        When ``words`` is empty.
    UnknownWordError
        With ``strict=True``, for the first word no rule produces (a ValueError).
    GrammarError
        When the grammar is not in CNF.

    Examples
    --------
    >>> table = cyk(Grammar.builtin("example"), "a a b")
    >>> sorted(table[0, 3]), sorted(table[1, 3]), sorted(table[0, 2])
    (['S'], ['S'], [])
    """
    grammar = as_grammar(grammar)
    tokens = _words(words)
    chart = _chart(grammar, tokens, strict, tags)
    as_set = grammar.nonterminals_of_mask
    n = len(tokens)
    return {(i, j): as_set(chart[i][j]) for i in range(n) for j in range(i + 1, n + 1)}


def recognizes(grammar: Grammar, words: Sequence[str] | str) -> bool:
    """Whether the grammar's start symbol derives ``words``.

    Parameters
    ----------
    grammar : Grammar
        A grammar in Chomsky normal form.
    words : sequence of str, or str
        The input; a str is split on whitespace. Unknown words make it False.

    Returns
    -------
    bool
        True iff the start symbol is in cell ``(0, n)``.

    Raises
    ------
    ValueError
        When ``words`` is empty.
    GrammarError
        When the grammar is not in CNF.

    Examples
    --------
    >>> g = Grammar.builtin("example")
    >>> recognizes(g, "a a b"), recognizes(g, ["a", "b", "b"])
    (True, False)
    """
    grammar = as_grammar(grammar)
    tokens = _words(words)
    chart = _chart(grammar, tokens, strict=False)
    return bool(chart[0][len(tokens)] >> grammar.nonterminal_index[grammar.start] & 1)
