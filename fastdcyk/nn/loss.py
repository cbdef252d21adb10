"""The training signal of the D-CYK layer: the decoder's decisions against gold charts.

:func:`chart_loss` (what :meth:`DCYKOutput.loss <fastdcyk.nn.output.DCYKOutput.loss>` gives)
and its targets, :func:`gold_targets`; apart from the output's views of its charts and trees
(:mod:`fastdcyk.nn.output`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from fastdcyk.cfg.cyk import cyk
from fastdcyk.cfg.weights import check_chart

__all__ = ["chart_loss", "gold_targets"]


def gold_targets(output: Any, gold_charts: Sequence[dict] | None = None) -> torch.Tensor:
    """The targets of :func:`chart_loss` as a (B, n, n + 1, N) tensor of 0 and 1.

    ``output``: a :class:`~fastdcyk.nn.output.DCYKOutput`. ``gold_charts``: one chart per
    sentence (``{(i, j): set of nonterminals}``); None (the default) is symbolic CYK's
    (:func:`fastdcyk.cfg.cyk`) of the words, and must be given for soft inputs
    (``fd.cyk(grammar, words, tags=...)`` is the chart of given tags).
    """
    if not (hasattr(output, "scores") and hasattr(output, "sentences")):
        raise TypeError(
            f"output must be a DCYKOutput (what the layer returns), got {type(output).__name__}"
        )
    if gold_charts is not None:
        if isinstance(gold_charts, str | Mapping) or not isinstance(gold_charts, Sequence):
            hint = " (one chart: [chart])" if isinstance(gold_charts, Mapping) else ""
            raise TypeError(
                f"gold_charts must be a sequence of charts, one per sentence, got "
                f"{type(gold_charts).__name__}{hint}"
            )
        for b, chart in enumerate(gold_charts):
            if chart is None:
                raise TypeError(f"gold_charts[{b}] is None: give a chart per sentence")
            check_chart(f"gold_charts[{b}]", chart)
    if gold_charts is None and output.lexical is not None:
        raise ValueError(
            "soft inputs have no words for symbolic CYK to parse: give gold_charts "
            "(fd.cyk(grammar, words) of the true words, or fd.cyk(grammar, words, "
            "tags=...) of the true tags)"
        )
    if gold_charts is None:
        gold_charts = [cyk(output.grammar, words) for words in output.sentences]
    if len(gold_charts) != len(output.sentences):
        raise ValueError(
            f"gold_charts has {len(gold_charts)} charts for {len(output.sentences)} sentences"
        )
    pos = {a: k for k, a in enumerate(output.nonterminals)}
    target = np.zeros(tuple(output.scores.shape), dtype=np.float64)
    for b, chart in enumerate(gold_charts):
        n = len(output.sentences[b])
        for (i, j), cell in chart.items():
            if not (0 <= i < j <= n):
                raise ValueError(f"gold chart {b} has cell ({i}, {j}) outside 0..{n}")
            for a in cell:
                if a not in pos:
                    raise ValueError(f"gold chart {b} names {a!r}, not a nonterminal")
                target[b, i, j, pos[a]] = 1.0
    return torch.as_tensor(target, dtype=output.scores.dtype, device=output.scores.device)


def chart_loss(
    output: Any, gold_charts: Sequence[dict] | None = None, *, pos_weight: float | None = None
) -> torch.Tensor:
    """Binary cross-entropy of the decoder's decisions against gold charts.

    Each (i, j, A) of each sentence's chart is one binary decision, taken by the
    decoder when sigma(score) > threshold, that is when score > ``boundary``
    (0.5 + logit(threshold) / beta). The loss gives it the probability
    1 / (1 + exp(-(score - boundary) beta)): the decoder's sigmoid, centred on its
    decision boundary, so that the loss's 0.5 and the decoder's threshold are one
    boundary (centred at 0.5 instead, as sigma itself, scores between 0.5 and the
    boundary would count as present for the loss and absent for the decoder, and
    minimising the loss then lowered F1: measured in docs/learning.md). The loss is the
    mean over every triple of every sentence (cells outside a sentence left out).

    Parameters
    ----------
    output : DCYKOutput
        The layer's output.
    gold_charts : sequence of dict, optional
        One chart per sentence; default symbolic CYK's.
    pos_weight : float, optional
        Weight of the positive triples (few in a chart), a finite number > 0: ``torch``'s
        ``pos_weight`` of :func:`torch.nn.functional.binary_cross_entropy_with_logits`.

    Returns
    -------
    Tensor
        A scalar.
    """
    if pos_weight is not None:
        ok = isinstance(pos_weight, int | float | np.integer | np.floating)
        if not (ok and not isinstance(pos_weight, bool) and math.isfinite(pos_weight)):
            raise ValueError(f"pos_weight must be a finite number > 0 or None, got {pos_weight!r}")
        if pos_weight <= 0:
            raise ValueError(
                f"pos_weight must be a finite number > 0 or None, got {pos_weight!r} (0 or "
                "less would leave the positive triples out or reward missing them)"
            )
    target = gold_targets(output, gold_charts)
    keep = output.mask[..., None].expand_as(output.scores)
    logits = (output.scores - output.boundary) * output.beta
    pw = None
    if pos_weight is not None:
        pw = torch.as_tensor(float(pos_weight), dtype=logits.dtype, device=logits.device)
    return torch.nn.functional.binary_cross_entropy_with_logits(
        logits[keep], target[keep], pos_weight=pw
    )
