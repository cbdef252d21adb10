"""What an encoder hands to the layer: a tagger's logits as the preterminal scores D-CYK
reads (``DCYK(..., preterminals=...)``)."""

from __future__ import annotations

import torch

__all__ = ["TAG_FLOOR", "dcyk_input"]

#: The probability above which a tag counts as present in :func:`dcyk_input`.
TAG_FLOOR = 1e-4


def dcyk_input(logits: torch.Tensor, floor: float = TAG_FLOOR, log: bool = False) -> torch.Tensor:
    """Preterminal scores from a tagger's logits: 1 for a likely tag, 0 for the others.

    Written as they are, probabilities put an unsure tag (two tags of 0.4 each) below the
    decoder's decision boundary, and the sentence loses its parse. Here every tag whose
    probability exceeds ``floor`` is written as present, so that D-CYK builds the chart
    over every plausible tag; the probabilities then rank the trees. The gradient is the
    probabilities' own (a straight-through estimator).

    Parameters
    ----------
    logits : torch.Tensor
        (B, n, P) or (n, P): per position, the logits of the grammar's preterminals, in the
        order of ``grammar.preterminals``; float32 or float64.
    floor : float
        The probability (softmax over the last axis) above which a tag is present, in
        (0, 1). The default, 1e-4, keeps every tag a trained tagger gives any weight.
    log : bool
        Pass the log probabilities' gradient instead of the probabilities': a logit then
        gets the table's gradient times 1 - p instead of p (1 - p), so that unlikely tags,
        where a chart's false items come from, are pulled too.

    Returns
    -------
    torch.Tensor
        The scores, of the logits' shape and dtype: values 0 or 1, gradient that of the
        probabilities (or log probabilities).

    Examples
    --------
    >>> import torch
    >>> from fastdcyk.nn import dcyk_input
    >>> x = dcyk_input(torch.tensor([[4.0, 4.0, -20.0]], requires_grad=True))
    >>> x.tolist()
    [[1.0, 1.0, 0.0]]
    """
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if logits.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"logits must be float32 or float64, got {logits.dtype}")
    if logits.dim() not in (2, 3) or logits.shape[-1] == 0:
        raise ValueError(
            "logits must be (n, P) or (B, n, P) with at least one preterminal, got shape "
            f"{tuple(logits.shape)}"
        )
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 < floor < 1:
        raise ValueError(f"floor must be a probability in (0, 1), got {floor!r}")
    if not isinstance(log, bool):
        raise ValueError(f"log must be True or False, got {log!r}")
    p = torch.softmax(logits, -1)
    hard = (p > floor).to(p.dtype)
    g = torch.log_softmax(logits, -1) if log else p
    return hard + g - g.detach()
