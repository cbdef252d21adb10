"""The model of :func:`fastdcyk.learn_grammar`: one weight per rule of an inventory, and the
soft recognition of a batch of strings through the D-CYK table (or, as the control, over a
symbolic chart with the same gates).

The inventory is every rule A -> B C over the nonterminals and every A -> w over the words.
Each rule's weight is the sigmoid of a free parameter. Through the table
(``method="table"``) the weights are :class:`fastdcyk.nn.DCYK`'s rule weights (the trace
variant, smooth in them: docs/method.md, section 9): the unary step writes
sum_A w(A -> a) [A] for a word a, the binary step scales each rule's contribution by its
weight, and every detection passes the gate: tanh(beta s) (the tanh gate) or
sigma(beta (s - 1/2)) (the trace gate's sigmoid). The string's score is the start symbol's
statistic in the top cell. Over the symbolic chart (``method="chart"``) an item's value is
the same gate of the same sum, sum over splits and rules of w(A -> B C) v(B) v(C), computed
exactly: what the table computes without its crosstalk.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.symbols import Rule, Symbol
from fastdcyk.learn.inputs import Span
from fastdcyk.nn import DCYK

__all__ = ["Cells", "Inventory", "chart_cells", "gate", "inventory", "table_cells", "table_layer"]


@dataclass(frozen=True)
class Inventory:
    """Every rule over ``names`` (the start first) and ``words``, as one grammar whose rule
    order is the weights' order: A -> B C by (A, B, C), then A -> w by (A, w)."""

    names: tuple[str, ...]
    words: tuple[str, ...]
    grammar: Grammar

    @property
    def start(self) -> str:
        return self.names[0]

    @property
    def n_binary(self) -> int:
        return len(self.names) ** 3

    @property
    def n_unary(self) -> int:
        return len(self.names) * len(self.words)

    def rules(self) -> list[Rule]:
        """The rules in the weights' order: binary, then unary."""
        n = self.grammar.rules
        return [r for r in n if r.is_binary] + [r for r in n if r.is_unary]


def nonterminal_names(count: int, start: str) -> tuple[str, ...]:
    """``start`` and ``count - 1`` fresh names N1, N2, ... (none equal to ``start``)."""
    names = [start]
    k = 1
    while len(names) < count:
        if f"N{k}" != start:
            names.append(f"N{k}")
        k += 1
    return tuple(names)


def inventory(count: int, start: str, words: Sequence[str]) -> Inventory:
    """The inventory over ``count`` nonterminals (``start`` among them) and ``words``."""
    names = nonterminal_names(count, start)
    rules = [
        Rule(a, (Symbol(b, False), Symbol(c, False)))
        for a, b, c in itertools.product(names, repeat=3)
    ]
    rules += [Rule(a, (Symbol(w, True),)) for a in names for w in words]
    g = Grammar(rules, start=start)
    # the weights are reshaped as (A, B, C) and (A, w): the grammar must keep this order
    assert g.binary_rules == tuple(itertools.product(names, repeat=3))
    assert g.unary_rules == tuple((a, w) for a in names for w in words)
    return Inventory(names, tuple(words), g)


class Cells:
    """The values of a batch's cells, whichever way they were computed: ``top()`` the
    start symbol's in each whole string, ``at(rows, spans)`` every nonterminal's in the
    given cells, (K, N)."""

    def __init__(self, get, lengths: Sequence[int], start: int) -> None:
        self._get, self.lengths, self.start = get, list(lengths), start

    def top(self) -> torch.Tensor:
        rows = list(range(len(self.lengths)))
        return self._get(rows, [(0, n) for n in self.lengths])[:, self.start]

    def at(self, rows: Sequence[int], spans: Sequence[Span]) -> torch.Tensor:
        return self._get(list(rows), list(spans))


def table_layer(
    inv: Inventory, d: int, gate_name: str, beta: float, dtype: torch.dtype, max_length: int
) -> DCYK:
    """The :class:`fastdcyk.nn.DCYK` layer of the inventory that :func:`table_cells` runs:
    the trace variant with the gate ``gate_name`` (``"sigmoid"``, the trace gate's; or
    ``"tanh"``), its rule weights given at each call, nothing else learned."""
    return DCYK(
        inv.grammar,
        d,
        variant="trace",
        gate="trace" if gate_name == "sigmoid" else gate_name,
        learn=(),
        beta=beta,
        dtype=dtype,
        max_length=max_length,
    )


def table_cells(layer, strings: Sequence[Sequence[str]], wu, wb) -> Cells:
    """The cells of ``strings`` through the D-CYK table: ``layer`` a
    :class:`fastdcyk.nn.DCYK` of the inventory (trace variant), given the weights (binary
    ``wb`` and unary ``wu``, in the inventory's order, as the layer's rule weights)."""
    layer.unary_weights, layer.binary_weights = wu, wb
    out = layer(strings)
    scores = out.scores  # (B, n, n + 1, N)

    def get(rows: list[int], spans: list[Span]) -> torch.Tensor:
        i = torch.tensor([s[0] for s in spans])
        j = torch.tensor([s[1] for s in spans])
        return scores[torch.tensor(rows), i, j]

    return Cells(get, [len(s) for s in strings], list(out.nonterminals).index(layer.grammar.start))


def gate(name: str, s: torch.Tensor, beta: float) -> torch.Tensor:
    """The gate ``name`` of the sums ``s``: ``"tanh"``, tanh(beta s); ``"sigmoid"``,
    sigma(beta (s - 1/2))."""
    if name == "tanh":
        return torch.tanh(beta * s)
    return torch.sigmoid(beta * (s - 0.5))


def chart_cells(
    inv: Inventory,
    strings: Sequence[Sequence[str]],
    wu,
    wb,
    beta: float,
    gate_name: str = "sigmoid",
) -> Cells:
    """The same cells over a symbolic chart: each item the gate (:func:`gate`) of its sum s
    over splits and rules of w(A -> B C) v(B) v(C); a word's items the gate of their rules'
    weights. Exact (no table), vectorised over the batch and each width's cells."""
    k = len(inv.names)
    vocab = {w: t for t, w in enumerate(inv.words)}
    lengths = [len(s) for s in strings]
    n = max(lengths)
    ids = torch.tensor([[vocab[w] for w in s] + [0] * (n - len(s)) for s in strings])
    unary = wu.reshape(k, len(inv.words))
    binary = wb.reshape(k, k, k)
    width = {1: gate(gate_name, unary[:, ids].permute(1, 2, 0), beta)}  # (B, n, N)
    for s in range(2, n + 1):
        m = n - s + 1  # the cells of width s: starts 0..m-1
        left = torch.stack([width[q][:, :m] for q in range(1, s)], 1)  # (B, s-1, m, N)
        right = torch.stack([width[s - q][:, q : q + m] for q in range(1, s)], 1)
        total = torch.einsum("bkmx,bkmy,zxy->bmz", left, right, binary)
        width[s] = gate(gate_name, total, beta)

    def get(rows: list[int], spans: list[Span]) -> torch.Tensor:
        return torch.stack([width[j - i][b, i] for b, (i, j) in zip(rows, spans, strict=True)])

    return Cells(get, lengths, 0)
