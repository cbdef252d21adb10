"""What the D-CYK layer returns: :class:`DCYKOutput`, its scores and its views of them (the
decoded charts, their trees, the most probable trees). The loss against gold charts is
:mod:`fastdcyk.nn.loss`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fastdcyk.cfg.forest import Forest
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.viterbi import ViterbiParse, viterbi
from fastdcyk.checks import check_int
from fastdcyk.engine.core.decode import item_scores
from fastdcyk.nn.loss import chart_loss, gold_targets

__all__ = ["DCYKOutput"]


@dataclass
class DCYKOutput:
    """What :class:`DCYK` returns for a batch of B sentences of at most n words.

    Attributes
    ----------
    scores : Tensor, (B, n, n + 1, N)
        The decoder's statistic of every (i, j, A): ``scores[b, i, j, a]`` is ~1 when A is
        in cell (i, j) of sentence b and ~0 otherwise (the trace decoder's
        tr([A]+ [j]+ [i]+ P_left) / d, or the entry decoder's entry (0, 0)). Differentiable;
        0 outside each sentence's chart (see ``mask``).
    readouts : Tensor, (B, n, n + 1, N)
        The detections' gate arguments during the parse (0 where none ran).
    mask : Tensor of bool, (B, n, n + 1)
        The cells (i, j), 0 <= i < j <= n_b, of each sentence.
    sentences : list of tuple of str
    nonterminals : tuple of str
        The last axis of ``scores``.
    boundary : float
        The statistic above which a triple is decoded as present,
        ``0.5 + logit(threshold) / beta``.
    beta : float
    grammar : Grammar
    lexical : list of list of dict, or None
        With soft inputs: per sentence and position, the preterminals that may stand over
        the word and their log scores (the preterminal scores' logs; with terminal
        weights p, log sum_a p_a P(A -> a)), which take the place of the grammar's rules
        A -> word in the trees (:class:`~fastdcyk.cfg.forest.Forest`,
        :func:`~fastdcyk.cfg.viterbi.viterbi`); None for words.
    """

    scores: torch.Tensor
    readouts: torch.Tensor
    mask: torch.Tensor
    sentences: list[tuple[str, ...]]
    nonterminals: tuple[str, ...]
    boundary: float
    beta: float
    grammar: Grammar
    lexical: list[list[dict[str, float]]] | None = None

    def _lexical_of(self, b: int) -> list[dict[str, float]] | None:
        return None if self.lexical is None else self.lexical[b]

    @property
    def charts(self) -> list[dict[tuple[int, int], frozenset[str]]]:
        """The decoded charts, ``{(i, j): frozenset}`` per sentence, as :func:`fastdcyk.cfg.cyk`."""
        present = (self.scores.detach() > self.boundary).cpu().numpy()
        out = []
        for b, words in enumerate(self.sentences):
            n = len(words)
            chart = {}
            for i in range(n):
                for j in range(i + 1, n + 1):
                    chart[i, j] = frozenset(
                        a for a, on in zip(self.nonterminals, present[b, i, j], strict=True) if on
                    )
            out.append(chart)
        return out

    @property
    def forests(self) -> list[Forest]:
        """The trees each decoded chart admits (:class:`~fastdcyk.cfg.forest.Forest`), scored
        as :meth:`fastdcyk.engine.DCYKResult.scored_trees` scores them: on a weighted grammar a
        tree's log probability (its lexical part from :attr:`lexical` with soft inputs),
        otherwise the sum of its items' log decoder gate values
        (:func:`~fastdcyk.engine.core.decode.item_scores`; plus the lexical scores with soft
        inputs). Computed from the detached scores on each call."""
        scores = self.scores.detach().cpu().numpy()
        pos = {a: k for k, a in enumerate(self.nonterminals)}
        out = []
        for b, (words, chart) in enumerate(zip(self.sentences, self.charts, strict=True)):
            item = None
            if not self.grammar.is_weighted:
                stats = {
                    (i, j, a): scores[b, i, j, pos[a]]
                    for (i, j), cell in chart.items()
                    for a in cell
                }
                item = item_scores(stats, chart, beta=self.beta)
            out.append(Forest(self.grammar, words, chart, item, lexical=self._lexical_of(b)))
        return out

    def best_parses(self, *, cnf: bool = False) -> list[ViterbiParse]:
        """On a weighted grammar, each sentence's most probable tree among those its
        decoded chart admits, and its log probability (Viterbi CKY restricted to the chart,
        :func:`~fastdcyk.cfg.viterbi.viterbi`, with :attr:`lexical` for soft inputs):
        ``(None, -inf)`` where the chart has none.

        The log probability is the tree's score as the tree was chosen: the log
        probabilities of its binary rules, plus each position's lexical score. With words
        (or ``terminals=``) that is the grammar's rule A -> a (a mixture's, with soft
        terminals): the tree's probability under the PCFG. With ``preterminals=`` the
        tagger's scores take the place of the rules A -> a: the score adds the log of the
        tagger's score of each preterminal (near 0 for a confident tagger) instead of the
        grammar's lexical probabilities, so it is not the PCFG's probability of the tree
        (where the words are the grammar's terminals, ``Forest(grammar, words).score(tree)``
        of the CNF tree gives that: :meth:`Forest.score
        <fastdcyk.cfg.forest.Forest.score>`).

        Raises
        ------
        ValueError
            When the grammar has no probabilities.
        """
        if not self.grammar.is_weighted:
            raise ValueError(
                "the grammar has no probabilities: trees() gives the first trees of each "
                "chart's forest; a PCFG gives the most probable ones"
            )
        return [
            viterbi(self.grammar, words, chart=chart, cnf=cnf, lexical=self._lexical_of(b))
            for b, (words, chart) in enumerate(zip(self.sentences, self.charts, strict=True))
        ]

    def trees(self, k: int | None = None, *, cnf: bool = False) -> list[Any]:
        """Each sentence's tree (None where its decoded chart has none), or with ``k`` the
        list of ``k`` of them, as :meth:`fastdcyk.engine.DCYKResult.tree` chooses: on a
        weighted grammar the most probable, best first (:meth:`best_parses`); otherwise the
        first of each chart's forest in its fixed order (:meth:`Forest.first
        <fastdcyk.cfg.forest.Forest.first>`: equal charts, equal trees). In the grammar the
        user wrote when the layer's grammar came from ``to_cnf``, unless ``cnf=True``.

        Examples
        --------
        >>> import fastdcyk as fd
        >>> from fastdcyk.nn import DCYK
        >>> out = DCYK(fd.Grammar.builtin("example"), 256, seed=0)(["a a b"])
        >>> print(out.trees()[0])
        (S (D a) (S (D a) (E b)))
        """
        if k is None:
            if self.grammar.is_weighted:
                return [p.tree for p in self.best_parses(cnf=cnf)]
            return [next(iter(f.first(1, cnf=cnf)), None) for f in self.forests]
        k = check_int("k", k, 1)
        if self.grammar.is_weighted:
            return [[tree for _, tree in f.kbest(k, cnf=cnf)] for f in self.forests]
        return [f.first(k, cnf=cnf) for f in self.forests]

    # -- the training signal (fastdcyk.nn.loss) ------------------------------------------

    def gold(self, gold_charts: Sequence[dict] | None = None) -> torch.Tensor:
        """The targets of :meth:`loss` (:func:`fastdcyk.nn.loss.gold_targets`)."""
        return gold_targets(self, gold_charts)

    def loss(
        self, gold_charts: Sequence[dict] | None = None, *, pos_weight: float | None = None
    ) -> torch.Tensor:
        """Binary cross-entropy of the decoder's decisions against gold charts
        (:func:`fastdcyk.nn.loss.chart_loss`, whose documentation says how each decision is
        scored); ``gold_charts`` default to symbolic CYK's, ``pos_weight`` weighs the
        positive triples."""
        return chart_loss(self, gold_charts, pos_weight=pos_weight)
