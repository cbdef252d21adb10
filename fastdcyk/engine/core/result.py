"""What a D-CYK parse returns: :class:`DCYKResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastdcyk.cfg.forest import Forest
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.trees import Tree, un_cnf
from fastdcyk.cfg.viterbi import ViterbiParse, tree_from_scores, viterbi
from fastdcyk.engine.core.certificate import Certificate
from fastdcyk.engine.core.decode import Statistics, chart_from_statistics, item_scores
from fastdcyk.engine.core.deferred import DeferredArray
from fastdcyk.engine.core.soft import lexical_of
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = ["BeamChoice", "DCYKResult", "DimensionChoice"]


@dataclass(frozen=True)
class DimensionChoice:
    """How a parse's d was chosen (``DCYKResult.dimension``): by ``d="auto"``
    (:mod:`fastdcyk.engine.auto`), or not (``tried`` is then the one d and ``reason``
    ``"given"``, ``"the codebook's"`` for a codebook given, or ``"the default, 1024"`` where
    the parse gives no certificate to choose d by: :attr:`chosen` is False).

    Attributes
    ----------
    d : int
        The d of the result.
    tried : tuple of int
        Every d parsed at, in order (the last is ``d``).
    sure : bool or None
        Whether the certificate is sure of the chart at ``d``; with ``d="auto"`` False only
        when ``d`` is ``max_d`` (a :class:`~fastdcyk.engine.auto.DimensionWarning` said so).
        None where the parse has no certificate (a d given, with options or a backend that
        give none).
    max_d : int
        The largest d it could try: the ``max_d`` asked for, or the largest power of two
        below it that fits in the memory available; ``d`` for a d given.
    reason : str
        Why ``d``, in a sentence.
    seconds : float
        The time of all the tries together.
    """

    d: int
    tried: tuple[int, ...]
    sure: bool | None
    max_d: int
    reason: str
    seconds: float

    @property
    def chosen(self) -> bool:
        """Whether ``d="auto"`` chose ``d`` (False: given, the codebook's or the default)."""
        return not (
            self.reason in ("given", "the codebook's") or self.reason.startswith("the default")
        )


@dataclass(frozen=True)
class BeamChoice:
    """What ``beam="auto"`` did (``DCYKResult.beam``; :mod:`fastdcyk.engine.beam`).

    Attributes
    ----------
    beam : float
        The beam of the parse returned (nats).
    tried : tuple of float
        Every beam parsed at, in order.
    capped : bool
        The last beam still showed a sign of a cut that mattered (a
        :class:`~fastdcyk.engine.beam.BeamWarning` was given): the tree may not be the most
        probable, or a parseable sentence may read as not recognized.
    reason : str
        Why the last beam was kept (or, when capped, what it still showed).
    seconds : float
        Time of all the parses.
    """

    beam: float
    tried: tuple[float, ...]
    capped: bool
    reason: str
    seconds: float


@dataclass
class DCYKResult:
    """What :func:`dcyk` returns.

    Attributes
    ----------
    words : tuple of str
    grammar : Grammar
    codebook : Codebook
    options : DCYKOptions
    p_left, p_right : ndarray, (d, d)
        The accumulators, in the codebook's dtype. Where the chart came from the table's
        spectra (the numpy backend's trace and clean-up parsers), P_left (and P_right where
        never written) is made when first accessed, not by the parse: the spectrum is kept
        till then (the same memory). Pickling, ``==`` and ``dataclasses.replace`` make it.
    statistics : Statistics or None
        The decoder statistic of every (i, j, A) (None when ``decode=False``): a mapping
        ``{(i, j, A): float}`` over an (n, n + 1, N) array (``statistics.array``,
        ``statistics.cell(i, j)``; :class:`~fastdcyk.engine.core.decode.Statistics`).
    chart : dict or None
        ``{(i, j): frozenset of nonterminals}`` for every 0 <= i < j <= n, as :func:`cyk`.
    counts : dict
        Detections, updates applied and updates pruned.
    timings : dict
        Seconds spent in the unary step, the binary step and the decoder.
    log : list of dict or None
        Every detection, when the parse ran with ``record=True``.
    table_scores : dict or None
        With ``weights="table"``: ``{(i, j, A): score}``, the Viterbi score (log
        probability of the best subtree) of every present item as read: its cell's best
        score (kept outside the table) less the offset read back from P_left
        (docs/method.md, section 10); None otherwise.
    certificate : Certificate or None
        With the least-squares read-backs (``readback="cancel"`` or ``"lstsq"``, numpy
        backend): how far each cell's read can be trusted
        (:class:`~fastdcyk.engine.core.certificate.Certificate`, docs/method.md, section 7);
        :attr:`confidence`, :attr:`sure` and :meth:`suspect_cells` read it. None otherwise.
    dimension : DimensionChoice
        How d was chosen (:class:`DimensionChoice`): with ``d="auto"`` the d parsed at,
        every d tried, why, and the time of all the tries; otherwise the one d, given, the
        codebook's or the default (:attr:`DimensionChoice.chosen` False).
        None only for a result made by hand.
    beam : BeamChoice or None
        With ``weights="table"`` and ``beam="auto"`` (the default): the beam parsed with,
        every beam tried, why, and whether the widest still showed a cut that mattered
        (:class:`BeamChoice`); None otherwise.
    """

    words: tuple[str, ...]
    grammar: Grammar
    codebook: Codebook
    options: DCYKOptions
    p_left: np.ndarray
    p_right: np.ndarray
    statistics: Statistics | None
    chart: dict[tuple[int, int], frozenset[str]] | None
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    log: list[dict[str, Any]] | None = None
    table_scores: dict[tuple[int, int, str], float] | None = None
    certificate: Certificate | None = None
    dimension: DimensionChoice | None = None
    beam: BeamChoice | None = None

    # -- how far the chart can be trusted ----------------------------------------------------

    @property
    def confidence(self) -> float | None:
        """A lower bound on the probability that every decision of the chart is right,
        under the reads' noise model (docs/method.md, section 7, "A certificate per cell");
        None when the parse has no :attr:`certificate` (only the least-squares read-backs
        of the cleanup variant, on the numpy backend, give one)."""
        return None if self.certificate is None else self.certificate.confidence

    @property
    def sure(self) -> bool | None:
        """Whether no cell is suspect: the chart's error bound is within the
        certificate's alpha (:data:`~fastdcyk.engine.core.certificate.ALPHA`); None when the
        parse has no :attr:`certificate` (the paper and trace variants, the matched
        read-back, the torch backend): nothing then says whether the chart is right.

        Examples
        --------
        >>> import fastdcyk as fd
        >>> r = fd.dcyk(fd.Grammar.builtin("G0"), "fish swim near fish", d=256)
        >>> r.sure, r.suspect_cells()
        (True, [])
        >>> print(fd.dcyk(fd.Grammar.builtin("G0"), "fish swim", d=256, variant="trace").sure)
        None
        """
        return None if self.certificate is None else self.certificate.sure

    def suspect_cells(self) -> list[tuple[int, int]] | None:
        """The cells whose read may be wrong, and the cells above them (their candidates
        came from it), by span then start; empty when the chart is :attr:`sure`, None when
        the parse has no :attr:`certificate`."""
        return None if self.certificate is None else self.certificate.suspect_cells()

    def chart_at(
        self, threshold: float | None = None, beta: float | None = None
    ) -> dict[tuple[int, int], frozenset[str]]:
        """The chart decoded at another threshold (and beta), from the kept statistics."""
        if self.statistics is None:
            raise ValueError("this parse was not decoded (decode=False): use fastdcyk.decode")
        return chart_from_statistics(
            self.statistics,
            len(self.words),
            beta=self.options.beta if beta is None else beta,
            threshold=self.options.threshold if threshold is None else threshold,
        )

    # -- trees ------------------------------------------------------------------------------

    def item_scores(self) -> dict[tuple[int, int, str], float]:
        """The score of every item (i, j, A) of the decoded chart
        (:func:`~fastdcyk.engine.core.decode.item_scores`): the log of its gate value
        ``sigma(beta (s - 1/2))``. A tree's score is the sum over its items."""
        if self.statistics is None or self.chart is None:
            raise ValueError("this parse was not decoded (decode=False): it has no trees")
        return item_scores(self.statistics, self.chart, beta=self.options.beta)

    @property
    def forest(self) -> Forest:
        """The trees of the decoded chart (:class:`~fastdcyk.cfg.forest.Forest`), scored.

        Built once, on first use. Its trees use rules of the grammar and items of the
        decoded chart only, so each one is a parse of the sentence. On a weighted grammar
        a tree's score is its log probability; otherwise the sum of its :meth:`item_scores`.
        """
        cached = self.__dict__.get("_forest")
        if cached is None:
            if self.chart is None:
                raise ValueError("this parse was not decoded (decode=False): it has no trees")
            # the item scores, computed when a score is first needed (the first tree needs none)
            scores = None if self.grammar.is_weighted else self.item_scores
            lexical = lexical_of(self.grammar, self.words)
            cached = Forest(self.grammar, self.words, self.chart, scores, lexical=lexical)
            self.__dict__["_forest"] = cached
        return cached

    @property
    def recognized(self) -> bool:
        """Whether the start symbol derives the whole sentence within the decoded chart."""
        return self.forest.recognized

    @property
    def tree_count(self) -> int:
        """How many (CNF) trees the decoded chart admits."""
        return self.forest.count

    def tree(self, *, cnf: bool = False) -> Tree | None:
        """The tree of the decoded chart; None when the sentence is not recognized.

        On a weighted grammar (a PCFG), the most probable tree among those the decoded
        chart admits (Viterbi CKY restricted to the chart,
        :func:`~fastdcyk.cfg.viterbi.viterbi`; :meth:`best_parse` gives its log
        probability). Otherwise the first tree of the chart's forest in its fixed order
        (:meth:`Forest.first <fastdcyk.cfg.forest.Forest.first>`: at each item its
        derivations by split point, then by the grammar's order of the children), a tree
        that depends on the chart and the grammar only: equal charts give equal trees,
        whatever d, seed or backend parsed them (docs/method.md, section 9;
        :meth:`scored_trees` ranks the trees by the decoder's scores instead). In the
        grammar the user wrote when the parse's grammar came from ``to_cnf``, unless
        ``cnf=True``.

        Examples
        --------
        >>> import fastdcyk as fd
        >>> r = fd.dcyk(fd.Grammar.builtin("example"), "a a b", d=256, variant="trace")
        >>> print(r.tree())
        (S (D a) (S (D a) (E b)))
        """
        if self.grammar.is_weighted:
            return self.best_parse(cnf=cnf).tree
        first = self.forest.first(1, cnf=cnf)
        return first[0] if first else None

    def best_parse(self, *, cnf: bool = False) -> ViterbiParse:
        """On a weighted grammar, the most probable tree of the decoded chart and its log
        probability: ``(tree, log_prob)``, ``(None, -inf)`` when there is none.

        Raises
        ------
        ValueError
            When the grammar has no probabilities, or the parse was not decoded.
        """
        if self.chart is None:
            raise ValueError("this parse was not decoded (decode=False): it has no trees")
        if not self.grammar.is_weighted:
            raise ValueError(
                "the grammar has no probabilities: tree() gives the first tree of the "
                "decoded chart's forest; read a PCFG for the most probable tree"
            )
        key = "_best_cnf" if cnf else "_best"
        cached = self.__dict__.get(key)
        if cached is None:
            lexical = lexical_of(self.grammar, self.words)
            cached = viterbi(self.grammar, self.words, chart=self.chart, cnf=cnf, lexical=lexical)
            self.__dict__[key] = cached
        return cached

    def table_parse(self, *, cnf: bool = False) -> ViterbiParse:
        """With ``weights="table"``, the most probable tree as the table gives it: read top
        down from the start symbol over the sentence, each item's split and rule chosen by
        the read scores of its children (:attr:`table_scores`) and the rule's log
        probability (:func:`~fastdcyk.cfg.viterbi.tree_from_scores`). The log
        probability returned is the tree's own; ``(None, -inf)`` when the start symbol was
        not read over the sentence.

        Raises
        ------
        ValueError
            When the parse did not write the weights into the table.
        """
        if self.table_scores is None:
            raise ValueError(
                "this parse did not write weights into the table: parse a PCFG with "
                "weights='table' (best_parse() ranks the decoded chart's trees instead)"
            )
        found = self.__dict__.get("_table_cnf")  # beam="auto" read it already
        if found is None:
            found = tree_from_scores(self.grammar, self.words, self.table_scores, cnf=True)
            self.__dict__["_table_cnf"] = found
        if cnf or found.tree is None:
            return found
        return ViterbiParse(un_cnf(found.tree, self.grammar), found.log_prob)

    def trees(self, k: int, *, cnf: bool = False) -> list[Tree]:
        """``k`` trees of the decoded chart (fewer when it admits fewer), as :meth:`tree`
        chooses its one: on a weighted grammar the ``k`` most probable, best first;
        otherwise the first ``k`` of the forest's fixed order."""
        if self.grammar.is_weighted:
            return [tree for _, tree in self.forest.kbest(k, cnf=cnf)]
        return self.forest.first(k, cnf=cnf)

    def scored_trees(self, k: int, *, cnf: bool = False) -> list[tuple[float, Tree]]:
        """The ``k`` trees of the largest scores, best first, with their scores: on a
        weighted grammar each tree's log probability (the trees of :meth:`trees`),
        otherwise its sum of :meth:`item_scores`, the decoder's own ranking (which moves
        with the noise of the reads: :meth:`tree` does not use it)."""
        return self.forest.kbest(k, cnf=cnf)

    def __repr__(self) -> str:
        o = self.options
        mode = o.mode
        beam = self.beam.beam if self.beam is not None else o.beam
        beam_text = f"{beam:g}" if isinstance(beam, float) else repr(beam)
        table = f", weights={o.weights!r}, beam={beam_text}" if mode.writes_probabilities else ""
        read = f", readback={o.readback!r}" if mode.chooses_readback else ""
        return (
            f"DCYKResult({' '.join(self.words)!r}, d={self.codebook.d}, {self.codebook.dtype}, "
            f"variant={o.variant!r}, gate={o.gate!r}, decoder={o.decoder!r}{read}, "
            f"order={o.order!r}, encoding={o.encoding!r}, beta={o.beta:g}{table})"
        )


def _made_on_access(name: str) -> property:
    """The accumulator ``name`` of a result: the array, made on first access where the parse
    deferred it (a :class:`~fastdcyk.engine.core.deferred.DeferredArray`), then kept."""
    key = "_" + name

    def get(self: DCYKResult) -> np.ndarray:
        value = self.__dict__[key]
        if isinstance(value, DeferredArray):
            value = self.__dict__[key] = value.get()
        return value

    def set(self: DCYKResult, value: Any) -> None:
        self.__dict__[key] = value

    return property(get, set, doc=f"{name} as a d x d array of the codebook's dtype.")


# after the dataclass: its __init__ assigns through these
DCYKResult.p_left = _made_on_access("p_left")  # type: ignore[assignment]
DCYKResult.p_right = _made_on_access("p_right")  # type: ignore[assignment]
