"""A grammar learned from strings through the D-CYK table: :func:`learn_grammar`, and the
:class:`LearnedGrammar` it returns (docs/learning.md, "Learning a grammar from strings").

- :mod:`.inputs`: the training data, checked before any training;
- :mod:`.model`: the inventory of rules, and soft recognition through the table (or over a
  symbolic chart, the control);
- :mod:`.readoff`: the grammar read off the weights, and its threshold;
- :mod:`.train`: the training loop and its checkpoints (needs PyTorch);
- :mod:`.result`: :class:`LearnedGrammar`.

``import fastdcyk`` imports PyTorch only when :func:`learn_grammar` is first called.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from fastdcyk.learn.result import LearnedGrammar

__all__ = ["LearnedGrammar", "learn_grammar"]


def learn_grammar(
    strings: Sequence[str | Sequence[str]],
    labels: Sequence[bool] | None = None,
    *,
    nonterminals: int,
    start: str = "S",
    brackets: Sequence[Sequence[tuple[int, int]] | None] | None = None,
    seed: int = 0,
    max_steps: int = 600,
    restarts: int = 1,
    method: str = "table",
    gate: str = "sigmoid",
    d: int = 128,
    dtype: str = "float64",
    batch_size: int = 32,
    lr: float = 0.05,
    l1: float = 0.01,
    beta: float | tuple[float, float] | None = None,
    held_out: float = 0.2,
    bracket_weight: float = 1.0,
    progress: bool | float | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> LearnedGrammar:
    """Learn a CNF grammar from strings, by gradient through the D-CYK table.

    The inventory is every rule A -> B C over ``nonterminals`` nonterminals (``start`` and
    fresh names N1, N2, ...) and every A -> w over the words seen. Each rule has a weight,
    the sigmoid of a free parameter, and the weights are the rule weights of a
    :class:`fastdcyk.nn.DCYK` layer (the trace variant with the ``gate``, at ``d``): the
    forward pass is D-CYK, and a string's score is the start symbol's statistic in the top
    cell (against 1/2, times 10, as a logit). Training (docs/learning.md, "Learning a grammar from
    strings"): binary cross-entropy against the labels plus ``l1`` times the mean weight,
    Adam, batches of ``batch_size``; a curriculum by length (the longest string allowed
    rises from 2 words to the longest given over the first 60% of the steps); the gates'
    beta raised geometrically from ``beta[0]`` to ``beta[1]`` in eight stages; every
    parameter started with noise of the seed (nonterminals started alike stay alike). The
    grammar is then read off: the rules whose weight passes the threshold most accurate on
    the held-out strings (symbolic CYK the judge), less the rules that derive no string or
    that the start symbol does not reach, and then, one at a time from the least weighted,
    the rules whose removal loses no accuracy on the strings given (a rule the threshold
    kept may be one the data never needed). With several ``restarts`` the one most accurate
    on the held-out strings is kept (ties: on the training strings, then the fewest rules).

    Parameters
    ----------
    strings : sequence of (str or sequence of str)
        The sentences: lists of words, or strings of whitespace-separated words.
    labels : sequence of bool, optional
        One per sentence: whether it is in the language. Default: all True (then nothing
        tells the grammar what to reject but the ``l1`` penalty).
    nonterminals : int
        How many nonterminals the learned grammar may use, ``start`` among them.
    start : str, default "S"
        The start symbol's name.
    brackets : sequence of (sequence of (int, int) or None), optional
        One entry per sentence: unlabelled spans (i, j), the words i..j-1 (0-based), that a
        parse of it has as phrases (a treebank's brackets without labels); None or () for
        none. Then the loss also asks some nonterminal to span each bracket, and none to
        span a span that crosses one (Pereira and Schabes 1992).
    seed : int, default 0
        Fixes the held-out split, the start weights and the batches: a run is repeatable.
    max_steps : int, default 600
        Training steps per restart.
    restarts : int, default 1
        Independent starts (each of ``max_steps``); the best on the held-out strings wins.
    method : {"table", "chart"}, default "table"
        ``"table"``: through the D-CYK table. ``"chart"``: the same weights and gates over
        an exact symbolic chart (the control: what the table computes without its
        crosstalk; faster on small inventories).
    gate : {"sigmoid", "tanh"}, default "sigmoid"
        What each detection writes, given its statistic s: ``"tanh"``, tanh(beta s) (0
        where no rule derives the nonterminal, slope beta there); ``"sigmoid"``, the trace
        gate's sigma(beta (s - 1/2)), which writes sigma(-beta / 2) > 0 where nothing is
        derived and passes almost no gradient there. Over the exact chart the tanh gate
        learns the arithmetic expressions that the sigmoid gate leaves at chance; through
        the table at d = 256 neither does (docs/results.md, study (m)).
    d : int, default 128
        The table's dimension (``method="table"``). The statistics' crosstalk grows with
        the number of nonterminals over d; d = 64 is too noisy to learn a^n b^n with 4
        nonterminals, 128 and 256 learn it (docs/learning.md).
    dtype : {"float64", "float32"}, default "float64"
        The weights' and the table's dtype.
    batch_size : int, default 32
    lr : float, default 0.05
        Adam's learning rate.
    l1 : float, default 0.01
        The weight of the mean rule weight in the loss: fewer rules kept.
    beta : float or (float, float), optional
        The gates' slope, first and last (one number: fixed). Default: 1 for the tanh
        gate, (3, 20) for the sigmoid gate.
    held_out : float, default 0.2
        The fraction of the strings (of each label) held out to choose the threshold and
        the restart; 0: the training strings choose them.
    bracket_weight : float, default 1.0
        The weight of the bracket terms of the loss.
    progress : bool, float or None, default None
        A progress bar over the steps, with the loss and the held-out accuracy: None, after
        2 s on a terminal; True, always; False, never; a number, after that many seconds.
    checkpoint : path, optional
        A folder where the run's state is written every 10 steps and at every restart's end
        (atomically: a kill loses at most the steps since the last write). Refused if it
        holds a checkpoint already, unless ``resume``.
    resume : bool, default False
        Continue the run whose checkpoint is in ``checkpoint`` (the same data and settings:
        checked): its finished steps are not run again, and a resumed run ends with the
        same grammar as one never interrupted.

    Returns
    -------
    LearnedGrammar
        The grammar read off (``.grammar``), every rule's weight, the threshold, the
        accuracies and the history.

    Raises
    ------
    TypeError, ValueError
        Before any training: strings that are not sentences, labels not booleans or not one
        per string, no string labelled True, brackets that cross or exceed their sentence,
        ``nonterminals`` < 1, a bad setting, a checkpoint folder that holds another run (or
        any run, without ``resume``), ``resume`` without a checkpoint.
    MemoryError
        Before any training, for an inventory that cannot fit in memory.

    Examples
    --------
    >>> import fastdcyk as fd
    >>> pos = [["a"] * n + ["b"] * n for n in range(1, 6)]
    >>> neg = [["a"] * n + ["b"] * (n + 1) for n in range(1, 6)]
    >>> learned = fd.learn_grammar(pos + neg, [True] * 5 + [False] * 5, nonterminals=3,
    ...                            max_steps=20, method="chart", held_out=0, progress=False)
    >>> len(learned.weights)  # 3 ** 3 binary rules and 3 x 2 lexical ones
    33
    """
    try:
        from fastdcyk.learn.train import learn_grammar as run
    except ImportError as e:  # pragma: no cover - torch missing
        if e.name != "torch":
            raise
        raise ImportError(
            "learn_grammar trains through fastdcyk.nn and needs PyTorch: pip install "
            "'fastdcyk[torch]' (on a machine without a GPU, first pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu)"
        ) from e
    return run(  # every argument, by name: the defaults are the ones above
        strings,
        labels,
        nonterminals=nonterminals,
        start=start,
        brackets=brackets,
        seed=seed,
        max_steps=max_steps,
        restarts=restarts,
        method=method,
        gate=gate,
        d=d,
        dtype=dtype,
        batch_size=batch_size,
        lr=lr,
        l1=l1,
        beta=beta,
        held_out=held_out,
        bracket_weight=bracket_weight,
        progress=progress,
        checkpoint=checkpoint,
        resume=resume,
    )
