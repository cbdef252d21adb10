"""Reproducible random grammars in Chomsky normal form, of a given size.

:func:`random_grammar` draws a CNF grammar with a given number of nonterminals, terminals
(words) and binary rules ``A -> B C``, a given lexical ambiguity (nonterminals per word)
and, optionally, a given share of rules ``A -> B B``. It is built in two steps:

1. A *backbone* that guarantees the grammar's properties: the rules ``A -> 'w'`` (every
   word gets one nonterminal or more), a *spine* for the start symbol (``S -> S X``, plus
   ``S -> X Y`` when S has no word, with X and Y nonterminals that have words) through which
   S derives sentences of every length, one rule for each nonterminal without words
   whose two children have words (so that every nonterminal derives a sentence of one or
   two words), and rules that attach every nonterminal below S, two per rule.
2. The remaining binary rules, drawn uniformly at random among the rules not yet drawn.

The result is then checked (every nonterminal reachable and deriving a short sentence, the
start symbol deriving every length up to :data:`CHECKED_LENGTHS`), and the rules are sorted
by left side (binary rules before rules ``A -> 'w'``), so that the grammar shows nothing of
how it was built.

Every random choice goes through :meth:`random.Random.random`, the one method whose output
Python promises to keep across versions, so a seed gives the same grammar in any process
and on any Python version.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from numbers import Real

from fastdcyk.cfg.grammar import Grammar, Rule, Symbol

__all__ = ["CHECKED_LENGTHS", "START", "minimum_binary_rules", "random_grammar"]

#: The start symbol of every random grammar; the other nonterminals are N1, N2, ...
START = "S"
#: The lengths up to which the derivable lengths of the start symbol are checked once the
#: grammar is drawn (the construction guarantees every length; this is the safety net).
CHECKED_LENGTHS = 12


# ---------------------------------------------------------------------- random primitives
# Only Random.random() is used: Python keeps its output stable across versions, which it
# does not promise for randrange, shuffle or sample.


def _below(rng: random.Random, n: int) -> int:
    """A uniform integer in ``[0, n)`` (``n >= 1``, small enough for a float's 53 bits)."""
    return min(int(rng.random() * n), n - 1)


def _shuffle(rng: random.Random, items: list) -> None:
    """Shuffle ``items`` in place (Fisher-Yates)."""
    for i in range(len(items) - 1, 0, -1):
        j = _below(rng, i + 1)
        items[i], items[j] = items[j], items[i]


def _sample(rng: random.Random, items: list, k: int) -> list:
    """``k`` distinct elements of ``items``, in random order (a partial Fisher-Yates)."""
    pool = list(items)
    for i in range(k):
        j = i + _below(rng, len(pool) - i)
        pool[i], pool[j] = pool[j], pool[i]
    return pool[:k]


def _pop_random(rng: random.Random, items: list) -> object:
    """Remove and return a random element of ``items`` (order is not kept)."""
    j = _below(rng, len(items))
    items[j], items[-1] = items[-1], items[j]
    return items.pop()


# ---------------------------------------------------------------------- sizes


def _preterminal_count(nonterminals: int, unary: int, min_length: int) -> int:
    """How many nonterminals get rules ``A -> 'w'``: as many as the unary rules allow."""
    eligible = nonterminals if min_length == 1 else nonterminals - 1
    return min(eligible, unary)


def _backbone_sizes(nonterminals: int, preterminals: int, min_length: int) -> tuple[int, int]:
    """(rules ``A -> B C`` with B != C, rules ``A -> B B``) of the backbone.

    They follow the construction in :func:`_backbone` step by step and depend on the sizes
    only, never on the seed.
    """
    if min_length == 1:
        # S has words; its spine is S -> S X, or S -> S S when S is the only preterminal.
        others = preterminals - 1  # preterminals other than S
        spine, same = 1, int(others == 0)
        free = max(others - 1, 0)  # preterminals left without a parent
        inner = nonterminals - preterminals  # nonterminals without words (never S)
        # The first inner nonterminal can only get A -> S S when S is the only preterminal.
        same += int(others == 0 and inner > 0)
    else:
        # S has no words; its spine is S -> X Y and S -> S X (S -> X X when only one X).
        spine, same = 2, int(preterminals == 1)
        free = max(preterminals - 2, 0)
        inner = nonterminals - preterminals - 1
    # Each inner nonterminal's rule takes up to two of the free preterminals as children;
    # the inner nonterminals and the preterminals still free are attached two per rule.
    orphans = inner + max(free - 2 * inner, 0)
    total = spine + inner + (orphans + 1) // 2
    return total - same, same


def _unary_count(terminals: int, ambiguity: float) -> int:
    return max(terminals, math.floor(ambiguity * terminals + 0.5))


def minimum_binary_rules(
    nonterminals: int, terminals: int, *, ambiguity: float = 1.0, min_length: int = 1
) -> int:
    """The fewest binary rules :func:`random_grammar` accepts for these sizes.

    That many rules make the backbone: the start symbol's spine, one rule for each
    nonterminal without words, and the rules that make every nonterminal reachable. It is
    about the larger of 1.5 times the number of nonterminals without words and half the
    number of nonterminals. Every rule beyond it is drawn at random.

    Parameters
    ----------
    nonterminals, terminals : int
        As for :func:`random_grammar`.
    ambiguity : float
        As for :func:`random_grammar`.
    min_length : {1, 2}
        As for :func:`random_grammar`.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        For a bad argument (see :func:`random_grammar`).

    Examples
    --------
    >>> minimum_binary_rules(4000, 1000, ambiguity=2.0)
    3001
    >>> minimum_binary_rules(2, 1), minimum_binary_rules(10, 20, min_length=2)
    (3, 6)
    """
    _check_sizes(nonterminals, terminals, ambiguity, min_length)
    unary = _unary_count(terminals, ambiguity)
    distinct, same = _backbone_sizes(
        nonterminals, _preterminal_count(nonterminals, unary, min_length), min_length
    )
    return distinct + same


# ---------------------------------------------------------------------- checks


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _check_sizes(nonterminals: int, terminals: int, ambiguity: float, min_length: int) -> None:
    for name, value in (("nonterminals", nonterminals), ("terminals", terminals)):
        if not _is_int(value):
            raise ValueError(f"{name} must be an int, got {value!r}")
    if nonterminals < 2:
        raise ValueError(
            f"nonterminals must be >= 2 (the start symbol and at least one more), "
            f"got {nonterminals}"
        )
    if terminals < 1:
        raise ValueError(f"terminals must be >= 1, got {terminals}")
    if min_length not in (1, 2) or not _is_int(min_length):
        raise ValueError(
            f"min_length must be 1 (the start symbol also derives single words) or 2 "
            f"(it derives no single word), got {min_length!r}"
        )
    if not _is_real(ambiguity):
        raise ValueError(f"ambiguity must be a finite real number, got {ambiguity!r}")
    if ambiguity < 1:
        raise ValueError(
            f"ambiguity (the mean number of nonterminals per word) must be >= 1, since every "
            f"word needs a nonterminal; got {ambiguity}"
        )
    eligible = nonterminals if min_length == 1 else nonterminals - 1
    unary = _unary_count(terminals, ambiguity)
    if unary > eligible * terminals:
        which = "nonterminals" if min_length == 1 else "nonterminals other than the start symbol"
        raise ValueError(
            f"ambiguity={ambiguity} asks for {unary} rules A -> 'w' but there are only "
            f"{eligible} {which} to give each of the {terminals} words, so at most "
            f"{eligible * terminals}: pass ambiguity <= {eligible} or more nonterminals"
        )


# ---------------------------------------------------------------------- construction


def _unary_rules(
    rng: random.Random, nonterminals: int, terminals: int, unary: int, min_length: int
) -> tuple[list[tuple[int, int]], list[int]]:
    """The rules ``A -> 'w'`` as (A, w) index pairs, and the preterminals in random order.

    Each word gets ``unary // terminals`` nonterminals or one more (the words with one more
    are drawn at random); the preterminals are as many nonterminals as ``unary`` allows
    (the start symbol is one of them iff ``min_length == 1``), each with one word or more.
    """
    count = _preterminal_count(nonterminals, unary, min_length)
    others = _sample(rng, list(range(1, nonterminals)), count - (min_length == 1))
    preterminals = [0, *others] if min_length == 1 else others
    _shuffle(rng, preterminals)

    base, extra = divmod(unary, terminals)
    words = list(range(terminals))
    _shuffle(rng, words)
    per_word = [base] * terminals
    for w in words[:extra]:
        per_word[w] += 1

    # Cover every preterminal once: deal them, in random order, to random word slots.
    slots = [w for w in range(terminals) for _ in range(per_word[w])]
    _shuffle(rng, slots)
    chosen: list[list[int]] = [[] for _ in range(terminals)]
    for a, w in zip(preterminals, slots, strict=False):
        chosen[w].append(a)
    # Fill every word's other slots with distinct preterminals.
    for w in range(terminals):
        have = chosen[w]
        need = per_word[w] - len(have)
        if need <= 0:
            continue
        free = len(preterminals) - len(have)
        if 2 * need <= free:
            taken = set(have)
            while len(have) < per_word[w]:
                a = preterminals[_below(rng, len(preterminals))]
                if a not in taken:
                    taken.add(a)
                    have.append(a)
        else:
            taken = set(have)
            have.extend(_sample(rng, [a for a in preterminals if a not in taken], need))
    pairs = [(a, w) for w in range(terminals) for a in chosen[w]]
    return pairs, preterminals


def _backbone(
    rng: random.Random, nonterminals: int, preterminals: list[int], min_length: int
) -> list[tuple[int, int, int]]:
    """The spine of the start symbol and the rules making every nonterminal useful.

    The start symbol is nonterminal 0. Rules are (A, B, C) index triples; no two are equal.
    """
    rules: list[tuple[int, int, int]] = []
    is_pre = [False] * nonterminals
    for a in preterminals:
        is_pre[a] = True
    free = [a for a in preterminals if a != 0]  # preterminals not yet anybody's child
    reached = [0]

    # The spine: S derives every length >= min_length.
    if min_length == 1:
        if free:
            x = _pop_random(rng, free)
            rules.append((0, 0, x))
            reached.append(x)
        else:
            rules.append((0, 0, 0))
    else:
        x = _pop_random(rng, free)
        y = _pop_random(rng, free) if free else x
        if rng.random() < 0.5:
            x, y = y, x
        rules += [(0, x, y), (0, 0, x)]
        reached += dict.fromkeys((x, y))

    # Each nonterminal without words gets a rule whose children have words (free ones
    # first), so it derives a sentence of two words. When only one nonterminal has words,
    # S and the nonterminals done before serve as well, so that B != C where possible.
    short = list(preterminals)
    if len(short) < 2 and 0 not in short:
        short.append(0)
    inner = [a for a in range(1, nonterminals) if not is_pre[a]]
    _shuffle(rng, inner)
    children: dict[int, tuple[int, int]] = {}
    for a in inner:
        picked = [_pop_random(rng, free) for _ in range(min(2, len(free)))]
        while len(picked) < 2:
            pool = [c for c in short if c not in picked] or short
            picked.append(pool[_below(rng, len(pool))])
        if rng.random() < 0.5:
            picked.reverse()
        rules.append((a, picked[0], picked[1]))
        children[a] = (picked[0], picked[1])
        if len(short) < 2:
            short.append(a)

    # Attach the nonterminals without a parent, two per rule, below nonterminals already
    # reachable from S (a random recursive tree).
    seen = [False] * nonterminals
    for a in reached:
        seen[a] = True

    def reach(top: int) -> None:
        todo = [top]
        while todo:
            a = todo.pop()
            if not seen[a]:
                seen[a] = True
                reached.append(a)
                todo.extend(children.get(a, ()))

    orphans = inner + free
    _shuffle(rng, orphans)
    taken = set(rules)
    while orphans:
        first = orphans.pop()
        second = orphans.pop() if orphans else None
        while True:  # at most one rule of the backbone can be drawn again: draw anew
            other = second
            if other is None:
                other = _below(rng, nonterminals - 1)
                other += other >= first
            lhs = reached[_below(rng, len(reached))]
            rule = (lhs, first, other) if rng.random() < 0.5 else (lhs, other, first)
            if rule not in taken:
                break
        rules.append(rule)
        taken.add(rule)
        reach(first)
        reach(other)
    return rules


def _draw_rules(
    rng: random.Random,
    count: int,
    pool_size: int,
    draw: Callable[[], tuple[int, int, int]],
    enumerate_pool: Callable[[], list[tuple[int, int, int]]],
    taken: set[tuple[int, int, int]],
) -> list[tuple[int, int, int]]:
    """``count`` rules of a pool not in ``taken`` (which they join), uniformly at random.

    Rejection sampling while the pool is at most half taken, else the untaken rules of
    the pool are listed and sampled.
    """
    if count <= 0:
        return []
    drawn: list[tuple[int, int, int]] = []
    if 2 * (len(taken) + count) <= pool_size:
        while len(drawn) < count:
            rule = draw()
            if rule not in taken:
                taken.add(rule)
                drawn.append(rule)
        return drawn
    drawn = _sample(rng, [r for r in enumerate_pool() if r not in taken], count)
    taken.update(drawn)
    return drawn


def _verify(
    nonterminals: int,
    unary: list[tuple[int, int]],
    binary: list[tuple[int, int, int]],
    min_length: int,
) -> None:
    """Raise RuntimeError unless every nonterminal is useful and S derives every length."""
    # Derivable lengths up to `top` as bitsets (bit L: derives a sentence of L words), one
    # length at a time: a rule derives L from shorter lengths only. rev[C] holds bit top - L
    # for each length L of C, so that B and C derive k and L - k for some k iff
    # lengths[B] & (rev[C] >> (top - L)) is not zero.
    top = CHECKED_LENGTHS
    lengths = [0] * nonterminals
    rev = [0] * nonterminals
    for a, _ in unary:
        lengths[a] = 1 << 1
        rev[a] = 1 << (top - 1)
    for length in range(2, top + 1):
        shift = top - length
        new = [a for a, b, c in binary if lengths[b] & (rev[c] >> shift)]
        for a in new:
            lengths[a] |= 1 << length
            rev[a] |= 1 << shift
    derived = [ln for ln in range(1, top + 1) if lengths[0] >> ln & 1]
    if derived != list(range(min_length, top + 1)):
        raise RuntimeError(
            f"internal error in random_grammar: the start symbol derives lengths {derived} "
            f"up to {top}, not every length from {min_length}; please report this"
        )

    # Every nonterminal derives a sentence of at most two words (three when only one
    # nonterminal has words), so it is productive; and it is reachable from S.
    short = 2 if len({a for a, _ in unary}) >= 2 else 3
    long_only = [a for a in range(nonterminals) if not lengths[a] & ((2 << short) - 1)]
    if long_only:
        raise RuntimeError(
            f"internal error in random_grammar: {len(long_only)} nonterminals derive no "
            f"sentence of at most {short} words (first index {long_only[0]}); please report this"
        )
    reachable = [False] * nonterminals
    reachable[0] = True
    by_lhs: list[list[int]] = [[] for _ in range(nonterminals)]
    for a, b, c in binary:
        by_lhs[a] += (b, c)
    todo = [0]
    while todo:
        for child in by_lhs[todo.pop()]:
            if not reachable[child]:
                reachable[child] = True
                todo.append(child)
    unreachable = [a for a in range(nonterminals) if not reachable[a]]
    if unreachable:
        raise RuntimeError(
            f"internal error in random_grammar: {len(unreachable)} nonterminals are not "
            f"reachable from the start symbol (first index {unreachable[0]}); please report this"
        )


def random_grammar(
    nonterminals: int,
    terminals: int,
    binary_rules: int,
    *,
    ambiguity: float = 1.0,
    same_child: float | None = None,
    min_length: int = 1,
    seed: int | None = 0,
) -> Grammar:
    """A random CNF grammar of the given size, the same one for the same arguments.

    The start symbol is ``S``, the other nonterminals ``N1``, ``N2``, ...; the terminals
    are ``w1``, ``w2``, ... (terminals and nonterminals never collide: they are different
    kinds of symbols).

    Guarantees, for every seed:

    - exactly ``nonterminals`` nonterminals, ``terminals`` words, ``binary_rules`` distinct
      rules ``A -> B C`` and ``round(ambiguity * terminals)`` (halves rounded up) distinct
      rules ``A -> 'w'``;
    - every word has ``floor`` or ``ceil`` of ``ambiguity`` nonterminals (so their mean
      is ``ambiguity`` up to rounding), and as many nonterminals as possible have words
      (all of them when there are at least as many rules ``A -> 'w'`` as nonterminals);
    - the start symbol derives sentences of **every** length ``>= min_length`` (and none of
      length 1 when ``min_length == 2``): it has the rule ``S -> S X``, and ``S -> X Y``
      when it has no words, with X and Y nonterminals that have words;
    - every nonterminal is useful: reachable from ``S``, and deriving a sentence of at most
      two words (three in a grammar where only one nonterminal has words);
    - with ``same_child`` given, exactly ``round(same_child * binary_rules)`` of the binary
      rules are ``A -> B B``.

    The rules needed for these guarantees (the backbone, see :func:`minimum_binary_rules`)
    are drawn first; the others are drawn uniformly at random among all rules not yet
    drawn. The grammar is then checked (lengths up to :data:`CHECKED_LENGTHS`) before it
    is returned. Its rules are sorted by left side (``S`` first), binary rules before rules
    ``A -> 'w'``.

    Parameters
    ----------
    nonterminals : int
        Number of nonterminals, the start symbol included; ``>= 2``.
    terminals : int
        Number of words; ``>= 1``.
    binary_rules : int
        Number of distinct rules ``A -> B C``; between :func:`minimum_binary_rules` and
        ``nonterminals ** 3``.
    ambiguity : float
        Lexical ambiguity: the mean number of nonterminals per word, ``>= 1`` (every word
        has at least one). At most ``nonterminals`` (``nonterminals - 1`` with
        ``min_length=2``).
    same_child : float or None
        The share of the binary rules that are ``A -> B B``, in ``[0, 1]``. None (default)
        puts no constraint: the random rules are drawn uniformly among all rules
        ``A -> B C``, about ``1 / nonterminals`` of which are ``A -> B B``, and the backbone
        has none (except in grammars with a single nonterminal with words).
    min_length : {1, 2}
        The shortest sentence of the start symbol: 1 (default) gives ``S`` rules
        ``S -> 'w'`` as well, 2 gives it none.
    seed : int or None
        Seed of the random draws; the same seed (and arguments) gives the same grammar, in
        any process. None draws fresh entropy.

    Returns
    -------
    Grammar
        A grammar in Chomsky normal form with start symbol ``S``.

    Raises
    ------
    ValueError
        For an argument of the wrong type or out of range, too few binary rules for the
        guarantees, more rules than exist, or a ``same_child`` share the backbone makes
        impossible; the message says which and what to pass instead.

    Examples
    --------
    >>> g = random_grammar(6, 4, 12, ambiguity=1.5, seed=1)
    >>> len(g.nonterminals), len(g.terminals), len(g.binary_rules), len(g.unary_rules)
    (6, 4, 12, 6)
    >>> g == random_grammar(6, 4, 12, ambiguity=1.5, seed=1)
    True
    >>> g.start, g.is_cnf
    ('S', True)
    >>> print(random_grammar(3, 2, 5, seed=0))
    S -> S N2 | 'w2'
    N1 -> S N2 | N2 S
    N2 -> S N1 | N2 N2 | 'w1'
    """
    _check_sizes(nonterminals, terminals, ambiguity, min_length)
    if not _is_int(binary_rules):
        raise ValueError(f"binary_rules must be an int, got {binary_rules!r}")
    if same_child is not None and not (_is_real(same_child) and 0 <= same_child <= 1):
        raise ValueError(
            f"same_child (the share of rules A -> B B) must be None or in [0, 1], "
            f"got {same_child!r}"
        )
    if seed is not None and not _is_int(seed):
        raise ValueError(f"seed must be an int or None, got {seed!r}")

    n = nonterminals
    unary_count = _unary_count(terminals, ambiguity)
    preterminal_count = _preterminal_count(n, unary_count, min_length)
    backbone_distinct, backbone_same = _backbone_sizes(n, preterminal_count, min_length)
    minimum = backbone_distinct + backbone_same
    if binary_rules < minimum:
        raise ValueError(
            f"binary_rules={binary_rules} is too few: for the start symbol to derive every "
            f"length >= {min_length} with all {n} nonterminals reachable and productive "
            f"({preterminal_count} of them with rules A -> 'w'), the grammar needs at least "
            f"{minimum} binary rules; pass binary_rules >= {minimum}, or fewer nonterminals, "
            f"or more rules A -> 'w' (larger terminals or ambiguity)"
        )
    if binary_rules > n**3:
        raise ValueError(
            f"binary_rules={binary_rules} is more than the {n**3} distinct rules A -> B C "
            f"over {n} nonterminals; pass binary_rules <= {n**3}"
        )
    same_target = None
    if same_child is not None:
        same_target = math.floor(same_child * binary_rules + 0.5)
        distinct_target = binary_rules - same_target
        if same_target > n * n:
            raise ValueError(
                f"same_child={same_child} asks for {same_target} rules A -> B B, but only "
                f"{n * n} exist over {n} nonterminals; pass same_child <= "
                f"{n * n / binary_rules:.6g}"
            )
        if distinct_target > n * n * (n - 1):
            raise ValueError(
                f"same_child={same_child} leaves {distinct_target} rules A -> B C with "
                f"B != C, but only {n * n * (n - 1)} exist over {n} nonterminals; pass "
                f"same_child >= {1 - n * n * (n - 1) / binary_rules:.6g}"
            )
        if distinct_target < backbone_distinct:
            raise ValueError(
                f"same_child={same_child} leaves {distinct_target} rules A -> B C with "
                f"B != C, but the start symbol's spine and the rules that make every "
                f"nonterminal useful need {backbone_distinct}; pass same_child <= "
                f"{(binary_rules - backbone_distinct) / binary_rules:.6g} or more binary_rules"
            )
        if same_target < backbone_same:
            raise ValueError(
                f"same_child={same_child} asks for {same_target} rules A -> B B, but with a "
                f"single nonterminal with words the backbone needs {backbone_same}; pass "
                f"same_child >= {backbone_same / binary_rules:.6g}, or larger ambiguity or "
                f"more terminals"
            )

    rng = random.Random(seed)
    unary, preterminals = _unary_rules(rng, n, terminals, unary_count, min_length)
    binary = _backbone(rng, n, preterminals, min_length)
    taken = set(binary)
    same_in_backbone = sum(b == c for _, b, c in binary)
    if len(taken) != len(binary) or len(binary) != minimum or same_in_backbone != backbone_same:
        raise RuntimeError(
            f"internal error in random_grammar: the backbone has {len(binary)} rules "
            f"({same_in_backbone} A -> B B), expected {minimum} ({backbone_same}); "
            "please report this"
        )

    def below() -> int:
        return _below(rng, n)

    def any_rule() -> tuple[int, int, int]:
        return below(), below(), below()

    def same_rule() -> tuple[int, int, int]:
        a, b = below(), below()
        return a, b, b

    def distinct_rule() -> tuple[int, int, int]:
        a, b, c = below(), below(), _below(rng, n - 1)
        return a, b, c + (c >= b)

    every = range(n)
    if same_target is None:
        binary += _draw_rules(
            rng,
            binary_rules - minimum,
            n**3,
            any_rule,
            lambda: [(a, b, c) for a in every for b in every for c in every],
            taken,
        )
    else:
        binary += _draw_rules(
            rng,
            same_target - backbone_same,
            n * n,
            same_rule,
            lambda: [(a, b, b) for a in every for b in every],
            taken,
        )
        binary += _draw_rules(
            rng,
            binary_rules - same_target - backbone_distinct,
            n * n * (n - 1),
            distinct_rule,
            lambda: [(a, b, c) for a in every for b in every for c in every if b != c],
            taken,
        )
    _verify(n, unary, binary, min_length)

    names = [START, *(f"N{k}" for k in range(1, n))]
    words = [f"w{k}" for k in range(1, terminals + 1)]
    binary.sort()
    unary.sort()
    by_lhs: list[list[Rule]] = [[] for _ in range(n)]
    for a, b, c in binary:
        by_lhs[a].append(Rule(names[a], (Symbol(names[b], False), Symbol(names[c], False))))
    for a, w in unary:
        by_lhs[a].append(Rule(names[a], (Symbol(words[w], True),)))
    return Grammar([rule for rules in by_lhs for rule in rules], start=START)
