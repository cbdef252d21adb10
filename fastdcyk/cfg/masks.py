"""The bitset view of a CNF grammar that symbolic CYK works on.

Bit ``k`` of a mask stands for ``nonterminals[k]`` of a :class:`~fastdcyk.cfg.grammar.Grammar`.
A word's cell is the mask of the ``A`` with ``A -> word`` (:func:`lexical_masks`); two cells
are combined (:func:`combine`) with a table that holds, for each left child ``B``, the pairs
(bit of ``C``, mask of all ``A`` with ``A -> B C``) (:func:`by_left_table`), so that only the
bits of the left cell are walked. Combinations and the sets of names of masks are memoised
in caches that are cleared past ``_COMBINE_CACHE_LIMIT`` entries.

:class:`GrammarMasks`, a base class of :class:`~fastdcyk.cfg.grammar.Grammar`, holds a
grammar's tables and gives it the methods that read them:
:meth:`~fastdcyk.cfg.grammar.Grammar.lexical_mask`,
:meth:`~fastdcyk.cfg.grammar.Grammar.combine_masks` and
:meth:`~fastdcyk.cfg.grammar.Grammar.nonterminals_of_mask` (documented as the grammar's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from fastdcyk.cfg.symbols import nfc

__all__ = [
    "GrammarMasks",
    "by_left_table",
    "combine",
    "lexical_masks",
    "names_of_mask",
    "word_mask",
]

# The memo of combine_masks is cleared past this many entries so that memory stays bounded
# on grammars with very many distinct cells.
_COMBINE_CACHE_LIMIT = 1 << 20


def lexical_masks(lexicon: Mapping[str, Iterable[str]], index: Mapping[str, int]) -> dict[str, int]:
    """The mask of each terminal: the bits of the ``A`` with ``A -> terminal``.

    Parameters
    ----------
    lexicon : Mapping[str, iterable of str]
        For each terminal, the nonterminals ``A`` with ``A -> terminal``.
    index : Mapping[str, int]
        The bit of each nonterminal.

    Returns
    -------
    dict of str to int
    """
    return {w: sum(1 << index[a] for a in lhs) for w, lhs in lexicon.items()}


def by_left_table(
    binary: Iterable[tuple[str, str, str]],
    index: Mapping[str, int],
    nonterminals: Sequence[str],
) -> tuple[tuple[tuple[int, int], ...], ...]:
    """For each left child ``B`` (by bit), the pairs (bit of ``C``, mask of all ``A`` with
    ``A -> B C``).

    Parameters
    ----------
    binary : iterable of (str, str, str)
        The binary rules as triples ``(A, B, C)``.
    index : Mapping[str, int]
        The bit of each nonterminal.
    nonterminals : sequence of str
        The nonterminals, in the order of their bits.

    Returns
    -------
    tuple of tuple of (int, int)
    """
    by_left: list[dict[int, int]] = [{} for _ in nonterminals]
    for lhs, left, right in binary:
        row = by_left[index[left]]
        row[1 << index[right]] = row.get(1 << index[right], 0) | (1 << index[lhs])
    return tuple(tuple(row.items()) for row in by_left)


def word_mask(masks: Mapping[str, int], word: str) -> int:
    """The mask of ``word`` in ``masks`` (see :func:`lexical_masks`), compared in NFC.

    Parameters
    ----------
    masks : Mapping[str, int]
        The mask of each terminal.
    word : str

    Returns
    -------
    int
        0 for an unknown word.
    """
    mask = masks.get(word)
    if mask is None:
        mask = masks.get(nfc(word), 0)
    return mask


def combine(
    by_left: Sequence[Sequence[tuple[int, int]]],
    cache: dict[tuple[int, int], int],
    left: int,
    right: int,
) -> int:
    """The mask of the ``A`` with a rule ``A -> B C``, B in ``left`` and C in ``right``.

    Parameters
    ----------
    by_left : sequence of sequence of (int, int)
        The table of :func:`by_left_table`.
    cache : dict of (int, int) to int
        The memo of earlier results, updated (cleared past ``_COMBINE_CACHE_LIMIT`` entries).
    left, right : int
        Masks of nonterminals.

    Returns
    -------
    int
    """
    key = (left, right)
    result = cache.get(key)
    if result is None:
        result = 0
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


def names_of_mask(
    names: Sequence[str], cache: dict[int, frozenset[str]], mask: int
) -> frozenset[str]:
    """The set of the ``names[k]`` whose bits ``k`` are set in ``mask``.

    Parameters
    ----------
    names : sequence of str
        The nonterminals, in the order of their bits.
    cache : dict of int to frozenset of str
        The memo of earlier results, updated (cleared past ``_COMBINE_CACHE_LIMIT`` entries).
    mask : int

    Returns
    -------
    frozenset of str
    """
    found = cache.get(mask)
    if found is None:
        found = frozenset(names[k] for k in range(mask.bit_length()) if mask >> k & 1)
        if len(cache) >= _COMBINE_CACHE_LIMIT:
            cache.clear()
        cache[mask] = found
    return found


class GrammarMasks:
    """The bitset view of a :class:`~fastdcyk.cfg.grammar.Grammar`, the base class that gives
    it :meth:`lexical_mask`, :meth:`combine_masks` and :meth:`nonterminals_of_mask`.

    Bit ``k`` is ``nonterminals[k]`` (the grammar's :attr:`nonterminals`, read by
    :meth:`nonterminals_of_mask`). The grammar fills the tables once, with
    :meth:`_init_masks`; the memos of :meth:`combine_masks` and :meth:`nonterminals_of_mask`
    grow as symbolic CYK meets new cells.
    """

    __slots__ = ("_lexical_masks", "_by_left", "_combine_cache", "_mask_sets")

    nonterminals: tuple[str, ...]

    def _init_masks(
        self,
        lexicon: Mapping[str, Iterable[str]],
        index: Mapping[str, int],
        binary: Iterable[tuple[str, str, str]],
        nonterminals: Sequence[str],
    ) -> None:
        # Bitset view for CYK: bit k is nonterminals[k]. For each left child B, the pairs
        # (bit of C, mask of all A with A -> B C), so a cell pair is combined by walking the
        # bits of the left cell only.
        put = object.__setattr__
        put(self, "_lexical_masks", lexical_masks(lexicon, index))
        put(self, "_by_left", by_left_table(binary, index, nonterminals))
        put(self, "_combine_cache", {})
        put(self, "_mask_sets", {0: frozenset()})

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
        >>> from fastdcyk import Grammar
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
        >>> from fastdcyk import Grammar
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
        >>> from fastdcyk import Grammar
        >>> sorted(Grammar.builtin("example").nonterminals_of_mask(0b101))
        ['E', 'S']
        """
        return names_of_mask(self.nonterminals, self._mask_sets, mask)
