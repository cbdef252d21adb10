"""The bitset view of a CNF grammar that symbolic CYK works on.

Bit ``k`` of a mask stands for ``nonterminals[k]`` of a :class:`~fastdcyk.cfg.grammar.Grammar`.
A word's cell is the mask of the ``A`` with ``A -> word`` (:func:`lexical_masks`); two cells
are combined (:func:`combine`) with a table that holds, for each left child ``B``, the pairs
(bit of ``C``, mask of all ``A`` with ``A -> B C``) (:func:`by_left_table`), so that only the
bits of the left cell are walked. Combinations and the sets of names of masks are memoised
in caches that are cleared past ``_COMBINE_CACHE_LIMIT`` entries. The grammar's methods
:meth:`~fastdcyk.cfg.grammar.Grammar.lexical_mask`,
:meth:`~fastdcyk.cfg.grammar.Grammar.combine_masks` and
:meth:`~fastdcyk.cfg.grammar.Grammar.nonterminals_of_mask` call these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from fastdcyk.cfg.symbols import nfc

__all__ = ["by_left_table", "combine", "lexical_masks", "names_of_mask", "word_mask"]

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
