"""The D-CYK layer: :class:`DCYK`, a :class:`torch.nn.Module` over the torch backend.

Its parse is prepared as :func:`fastdcyk.dcyk` prepares one
(:func:`fastdcyk.engine.prepare.prepare`, with ``autograd=True``: the backend must compute under
autograd and the mode be differentiable), and each batch's memory checked by the same check
(:func:`fastdcyk.engine.memory.check_memory`); the parse itself is the torch backend's
differentiable core (:func:`fastdcyk.engine.backends.torch.driver.parse_tensors`) over the
module's own tensors. :mod:`fastdcyk.nn` exports it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError("fastdcyk.nn needs PyTorch: pip install torch") from exc

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.checks import check_choice, check_dim, check_int
from fastdcyk.engine import auto, memory
from fastdcyk.engine.api import choose_dimension
from fastdcyk.engine.backends.torch import driver as torch_backend
from fastdcyk.engine.backends.torch.device import check_device
from fastdcyk.engine.core.decode import decision_boundary
from fastdcyk.engine.core.soft import SUM_SLACK, lexical_scores
from fastdcyk.engine.prepare import prepare, words_of
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.nn.output import DCYKOutput
from fastdcyk.options import DEFAULT_VARIANT, documented, takes_options
from fastdcyk.registry import backends, modes

__all__ = ["BACKEND", "DCYK", "LEARNABLE"]

#: The backend the layer computes with: the one whose parse runs under autograd.
BACKEND = "torch"

#: What :class:`DCYK` can learn: the symbol vectors of terminals, nonterminals and
#: right-child roles ("vectors"), the span index vectors ("indices"), and one weight per
#: rule ("rules").
LEARNABLE = ("vectors", "indices", "rules")

_DTYPES = {torch.float32: "float32", torch.float64: "float64"}


class DCYK(torch.nn.Module):
    """D-CYK over a batch of sentences, differentiable in its codebook (and rule weights).

    Parameters
    ----------
    grammar : Grammar or str
        A CNF grammar (or the name of a built-in one).
    d : int or "auto"
        The dimension. ``"auto"``: the d that ``fastdcyk.dcyk(..., d="auto")`` needs for
        every sentence of ``sample`` (:func:`fastdcyk.choose_dimension`: the numpy
        backend's parses, at construction), which :attr:`d` then holds.
    variant : {"cleanup", "trace", "paper"}, default "cleanup"
        As for :func:`fastdcyk.dcyk` (:data:`fastdcyk.options.DEFAULT_VARIANT`); the other
        options are the keywords below. ``prune`` defaults to 0 here (every update is
        applied); pass the dtype's epsilon to prune as :func:`dcyk` does. The output is
        smooth in the vectors with the trace
        variant, and piecewise smooth with the default's least-squares read-back: the
        candidates of a cell (its detections above ``candidate_level``) are a discrete
        choice, as pruning is, and the scores are differentiable between its changes
        (through the solve; docs/method.md, section 7).
    learn : sequence of {"vectors", "indices", "rules"}, default ("vectors",)
        What becomes a :class:`torch.nn.Parameter`: the symbol vectors (terminals,
        nonterminals, right-child roles), the span index vectors 0..``max_length``, one
        weight per rule (all 1 at the start). The rest is held as buffers.
    dtype : torch.float32 or torch.float64, default torch.float32
        Or its name, ``"float32"`` or ``"float64"``, as :func:`fastdcyk.dcyk` takes it.
    device : torch.device or str, optional
    codebook : Codebook, optional
        The initial vectors and the permutation; default the codebook :func:`fastdcyk.dcyk`
        builds for the variant (:func:`fastdcyk.engine.default_codebook`) from ``seed``.
    seed : int, optional
        The seed of the codebook built here (default 0); with a codebook, leave it out or
        give the codebook's, as for :func:`fastdcyk.dcyk`.
    max_length : int, default 32
        The longest sentence the module parses (it holds index vectors 0..max_length).
    sample : sequence of sentences, optional
        With ``d="auto"`` (and only then): sentences like those the layer will parse.
    max_d : int, optional
        With ``d="auto"``: the largest d to try (as for :func:`fastdcyk.dcyk`).
    {options}

    Attributes
    ----------
    terminal, nonterminal, right, index : Tensor
        The vectors, one row per symbol of ``structure`` (``right`` is None with the
        paper's encoding).
    unary_weights, binary_weights : Tensor
        One weight per rule A -> a and A -> B C, in grammar order.
    options : DCYKOptions
    structure : RuleStructure
        The grammar's symbols and rules, in the row order of the vectors.

    Notes
    -----
    Memory: under autograd the torch backend keeps every cell's updates of the accumulators
    for the backward pass. Measured (docs/learning.md): a length-10 G4 sentence at d = 1024,
    trace variant, float32, forward and backward peak at 1.7 GB of process memory (3.2 GB in
    float64), within 4 GB without recomputation. On Linux the process can hold more than its
    arrays at the peak: under autograd the accumulators (and, where the index vectors are
    learned, the cancelling read-back's residual table) are new arrays of about d^2 / 2
    complex numbers at every update, and once glibc's dynamic mmap threshold has risen
    above their size they fragment its heap. ``MALLOC_MMAP_THRESHOLD_=131072`` in the
    environment of the process fixes the threshold (a 10-word G4 sentence at d = 1024,
    cleanup variant, ``"lstsq"``: peak 0.94 GB instead of 1.33 GB; docs/performance.md).
    With fixed index vectors the residual table is updated in place (peak 1.48 GB with
    ``readback="cancel"`` against 1.37 GB with ``"lstsq"``, glibc's default).
    """

    @takes_options(
        exclude=("variant",),
        refused={
            "beam": "the layer has no weighted table (weights='table' is the numpy backend's)"
        },
        notes={
            "prune": """Default 0 here: every update is applied (pass the dtype's machine
            epsilon to prune as :func:`fastdcyk.dcyk` does).""",
            "weights": """``"chart"`` only (the default): the layer has no weighted table; a
            PCFG's probabilities rank the trees of its decoded charts
            (:meth:`DCYKOutput.best_parses`).""",
        },
    )
    def __init__(
        self,
        grammar: Grammar | str,
        d: int | str,
        *,
        variant: str = DEFAULT_VARIANT,
        learn: Sequence[str] = ("vectors",),
        dtype: torch.dtype = torch.float32,
        device: Any = None,
        codebook: Codebook | None = None,
        seed: int | None = None,
        max_length: int = 32,
        sample: Sequence[Any] | None = None,
        max_d: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if isinstance(dtype, str) and dtype in _DTYPES.values():  # as dcyk names it
            dtype = getattr(torch, dtype)
        if dtype not in _DTYPES:
            raise ValueError(
                f"dtype must be torch.float32 or torch.float64 ('float32' or 'float64'), got "
                f"{dtype!r}"
            )
        if auto.is_auto(d):
            if sample is None:
                raise ValueError(
                    "d='auto' chooses d from sentences like those the layer will parse: "
                    "pass sample=[...] with it, or pass d"
                )
            if codebook is not None:
                raise ValueError(f"d='auto' and a codebook (d = {codebook.d}): leave one out")
            given = {k: v for k, v in options.items() if v is not None}
            d = choose_dimension(
                grammar,
                sample,
                seed=0 if seed is None else seed,
                dtype=_DTYPES[dtype],
                max_d=max_d,
                variant=variant,
                **given,
            )
        elif sample is not None or max_d is not None:
            raise ValueError(
                "sample and max_d apply to d='auto' only: leave them out, or pass d='auto'"
            )
        d = check_dim(d)  # 2.5 or "64" are refused, not truncated or parsed
        if isinstance(learn, str):
            learn = (learn,)
        if not isinstance(learn, Iterable):
            raise TypeError(
                f"learn must be a sequence of {LEARNABLE} (or () to learn nothing), got "
                f"{type(learn).__name__}"
            )
        learn = tuple(check_choice("learn", x, LEARNABLE) for x in learn)
        self.max_length = check_int("max_length", max_length, 1)
        options = {k: v for k, v in options.items() if v is not None}
        options.setdefault("prune", 0.0)
        # the checks of every front door (fastdcyk.dcyk's): the backend and device, the
        # options and their mode (differentiable, on the backend), the codebook (the one
        # dcyk builds for the variant, or the one given, checked against d and dtype)
        plan = prepare(
            grammar,
            [],
            codebook,
            d=d,
            seed=seed,
            dtype=None if codebook is not None else _DTYPES[dtype],  # the tensors' dtype
            unitary=None,
            fft="auto",
            check_memory=True,
            backend=BACKEND,
            device=device,
            options={"variant": variant, **options},
            autograd=True,
        )
        self.options, codebook = plan.options, plan.codebook
        self.grammar = plan.grammar
        self.learn = learn
        device = check_device(device)
        self.structure = plan.structure
        vec = torch_backend.symbol_vectors(
            codebook,
            self.structure,
            self.max_length,
            encoding=self.options.encoding,
            device=device,
            dtype=dtype,
        )

        def hold(name: str, value: torch.Tensor | None, learnable: bool) -> None:
            if value is None:
                setattr(self, name, None)
            elif learnable:
                self.register_parameter(name, torch.nn.Parameter(value.clone()))
            else:
                self.register_buffer(name, value.clone())

        vectors = "vectors" in learn
        hold("terminal", vec.terminal, vectors)
        hold("nonterminal", vec.nonterminal, vectors)
        hold("right", vec.right, vectors)
        hold("index", vec.index, "indices" in learn)
        self.register_buffer("perm", vec.perm.clone())
        rules = "rules" in learn
        ones = {"dtype": dtype, "device": vec.device}
        hold("unary_weights", torch.ones(self.structure.n_unary_rules, **ones), rules)
        hold("binary_weights", torch.ones(self.structure.n_binary_rules, **ones), rules)

    @property
    def d(self) -> int:
        return int(self.perm.shape[0])

    def extra_repr(self) -> str:
        o = self.options
        return (
            f"d={self.d}, variant={o.variant!r}, gate={o.gate!r}, decoder={o.decoder!r}, "
            f"encoding={o.encoding!r}, learn={self.learn}, "
            f"nonterminals={len(self.structure.nonterminals)}, max_length={self.max_length}"
        )

    def _vectors(self, n: int) -> torch_backend.SymbolVectors:
        """The vectors for sentences of at most n words (span indices 0..n)."""
        return torch_backend.SymbolVectors(
            self.terminal, self.nonterminal, self.right, self.index[: n + 1], self.perm
        )

    @property
    def terminals(self) -> tuple[str, ...]:
        """The grammar's terminals: the last axis of ``terminals=`` inputs."""
        return self.structure.terminals

    @property
    def preterminals(self) -> tuple[str, ...]:
        """The nonterminals with a rule A -> a: the last axis of ``preterminals=`` inputs."""
        return self.grammar.preterminals

    def forward(
        self,
        sentences: Sequence[str | Sequence[str]] | None = None,
        *,
        terminals: torch.Tensor | None = None,
        preterminals: torch.Tensor | None = None,
        lengths: Sequence[int] | torch.Tensor | None = None,
    ) -> DCYKOutput:
        """Parse a batch of sentences: given as words, or as soft inputs from a network.

        Parameters
        ----------
        sentences : sequence of (str or sequence of str), optional
            The sentences (each a str of words or a sequence of words): terminals of the
            grammar, unless ``preterminals`` is given, where they are any tokens (the leaves
            of the trees; their lengths are the sentences').
        terminals : Tensor, (B, n, T), optional
            Soft terminals (docs/method.md, section 11): per sentence and position, a
            weight per terminal of :attr:`terminals` (a distribution, typically: a
            softmax); the unary step writes their mixture sum_a p_a [a]-. One-hot rows
            parse as the words do. The layer's dtype and device; gradients reach it.
        preterminals : Tensor, (B, n, P), optional
            Soft preterminals (clean-up gate only): per sentence and position, a score in
            [0, 1] per nonterminal of :attr:`preterminals` (a tagger's probabilities, from a
            sigmoid), taken as the unary step's detection and gate: the scores above
            ``candidate_level`` are written with the score as amplitude and read back as any
            cell. The words are not written; a word need not be a terminal. Gradients reach
            it.
        lengths : sequence of int or Tensor, optional
            With ``terminals`` or ``preterminals`` and no ``sentences``: each sentence's
            length (default: all n).

        Returns
        -------
        DCYKOutput
            Its ``sentences`` are the words given; for ``terminals`` without them, each
            position's most weighted terminal; for ``preterminals`` without them, "_".

        Raises
        ------
        ValueError
            For an empty batch or sentence, a sentence longer than ``max_length``, a word
            that is not a terminal of the grammar, soft inputs of the wrong shape, dtype or
            device, or inputs that disagree.

        Examples
        --------
        >>> import torch, fastdcyk as fd
        >>> layer = DCYK(fd.Grammar.builtin("example"), 256, dtype=torch.float64)
        >>> layer.terminals
        ('a', 'b')
        >>> probs = torch.tensor([[[0.9, 0.1], [0.8, 0.2], [0.1, 0.9]]], dtype=torch.float64)
        >>> out = layer(terminals=probs.requires_grad_())
        >>> out.sentences
        [('a', 'a', 'b')]
        >>> out.loss([fd.cyk(layer.grammar, "a a b")]).backward()
        >>> probs.grad.shape
        torch.Size([1, 3, 2])
        """
        if isinstance(sentences, str):
            raise TypeError("sentences must be a sequence of sentences, not one str")
        if sentences is not None:
            if not isinstance(sentences, Iterable) or isinstance(sentences, Mapping):
                raise TypeError(
                    f"sentences must be a sequence of sentences (each a str or a sequence of "
                    f"str), got {type(sentences).__name__}"
                )
            sentences = list(sentences)
            for k, sentence in enumerate(sentences):
                if not isinstance(sentence, str | Iterable) or isinstance(sentence, bytes):
                    raise TypeError(
                        f"sentences[{k}] is {type(sentence).__name__}: a sentence is a str of "
                        "words or a sequence of str"
                    )
        soft = terminals if terminals is not None else preterminals
        if terminals is not None and preterminals is not None:
            raise ValueError("give terminals= or preterminals=, not both")
        mode = self.options.mode
        if preterminals is not None and not mode.soft_preterminals:
            able = [m for m in modes.MODES.values() if m.soft_preterminals]
            raise ValueError(
                f"preterminals= needs a layer whose mode takes preterminal scores "
                f"({' or '.join(m.describe() for m in able)}); this layer has "
                f"{mode.describe()}: build it with variant='cleanup', or give terminals="
            )
        if soft is None:
            if sentences is None:
                raise TypeError("nothing to parse: give sentences, terminals= or preterminals=")
            if lengths is not None:
                raise ValueError("lengths= goes with terminals= or preterminals=")
            words = [words_of(self.grammar, s) for s in sentences]
        else:
            if terminals is not None and sentences is not None:
                raise ValueError(
                    "give sentences or terminals=, not both (the terminals' weights are "
                    "the sentence)"
                )
            name = "terminals" if terminals is not None else "preterminals"
            self._check_soft(name, soft)
            if isinstance(soft, torch.Tensor) and soft.numel():
                values = soft.detach()
                low, high, most = torch.stack(  # one sync
                    (*torch.aminmax(values), values.sum(-1).amax().to(values.dtype))
                ).tolist()
                if not (math.isfinite(low) and math.isfinite(high)):
                    raise ValueError(
                        f"{name}= holds NaN or infinite values: its weights and scores are "
                        "probabilities in [0, 1]"
                    )
                if not 0 <= low <= high <= 1:
                    raise ValueError(
                        f"{name}= holds values from {low:g} to {high:g}: its weights and "
                        "scores are probabilities in [0, 1] (a softmax for terminals=, a "
                        "sigmoid for preterminals=)"
                    )
                if terminals is not None and most > 1 + SUM_SLACK:
                    raise ValueError(
                        f"terminals= has a position whose weights sum to {most:g}: each "
                        "position's weights are a distribution over the terminals (at most 1 "
                        "in all): normalise them, with a softmax over the last axis"
                    )
            words = self._soft_words(soft, sentences, lengths, terminals is not None)
        if not words:
            raise ValueError("no sentences to parse")
        longest = max(len(w) for w in words)
        if longest > self.max_length:
            raise ValueError(
                f"a sentence of {longest} words is longer than max_length = "
                f"{self.max_length}: build the module with a larger max_length"
            )
        self._check_tensors()
        memory.check_memory(  # the tables of the batch on the layer's device
            backends.get(BACKEND),
            self.d,
            _DTYPES[self.nonterminal.dtype],
            None,
            self.options,
            longest,
            sentences=len(words),
            device=self.nonterminal.device,
        )
        if soft is None:
            ids = [self.structure.terminal_ids(w) for w in words]
        else:
            ids = [[0] * len(w) for w in words]
            soft = soft[:, :longest]
        res = torch_backend.parse_tensors(
            self._vectors(longest),
            self.structure,
            ids,
            self.options,
            unary_weights=self.unary_weights,
            binary_weights=self.binary_weights,
            terminal_weights=soft if terminals is not None else None,
            preterminal_scores=soft if preterminals is not None else None,
        )
        return DCYKOutput(
            scores=res.statistics,
            readouts=res.readouts,
            mask=res.mask,
            sentences=words,
            nonterminals=self.structure.nonterminals,
            boundary=decision_boundary(self.options.beta, self.options.threshold),
            beta=self.options.beta,
            grammar=self.grammar,
            lexical=self._lexical(words, terminals, preterminals),
        )

    def _soft_words(
        self,
        soft: torch.Tensor,
        sentences: Sequence[str | Sequence[str]] | None,
        lengths: Sequence[int] | torch.Tensor | None,
        is_terminals: bool,
    ) -> list[tuple[str, ...]]:
        """The words of a soft batch: the given tokens, the most weighted terminals, or
        "_"; their lengths checked against the input's."""
        name = "terminals" if is_terminals else "preterminals"
        width = len(self.terminals) if is_terminals else len(self.preterminals)
        if not isinstance(soft, torch.Tensor) or soft.dim() != 3 or soft.shape[-1] != width:
            shape = tuple(soft.shape) if isinstance(soft, torch.Tensor) else type(soft).__name__
            raise ValueError(
                f"{name}= must be a (sentences, positions, {width}) tensor, one row per "
                f"position over layer.{name}; got {shape}"
            )
        b, n = int(soft.shape[0]), int(soft.shape[1])
        if sentences is not None:
            if lengths is not None:
                raise ValueError("give sentences or lengths=, not both")
            toks = [tuple(s.split()) if isinstance(s, str) else tuple(s) for s in sentences]
            if len(toks) != b:
                raise ValueError(f"{len(toks)} sentences for {name}= of {b} sentences")
            lens = [len(t) for t in toks]
        elif lengths is None:
            lens = [n] * b
        else:
            if isinstance(lengths, torch.Tensor):
                if lengths.dim() != 1:
                    raise ValueError(
                        f"lengths= must be a 1-D tensor (one length per sentence), got shape "
                        f"{tuple(lengths.shape)}"
                    )
                lengths = lengths.tolist()
            if isinstance(lengths, str) or not isinstance(lengths, Sequence):
                raise TypeError(
                    f"lengths= must be a sequence of int or a 1-D tensor (one length per "
                    f"sentence), got {type(lengths).__name__}"
                )
            lens = [check_int("lengths", x, 1) for x in lengths]
            if len(lens) != b:
                raise ValueError(f"{len(lens)} lengths for {name}= of {b} sentences")
        if lens and (min(lens) < 1 or max(lens) > n):
            raise ValueError(
                f"sentence lengths must lie in 1..{n} ({name}= holds {n} positions); got "
                f"{min(lens)}..{max(lens)}"
            )
        if sentences is not None:
            return [tuple(str(w) for w in t) for t in toks]
        if not is_terminals:
            return [("_",) * m for m in lens]
        top = soft.detach().argmax(-1).cpu().numpy()
        return [tuple(self.terminals[k] for k in top[s, :m]) for s, m in enumerate(lens)]

    def _lexical(
        self,
        words: list[tuple[str, ...]],
        terminals: torch.Tensor | None,
        preterminals: torch.Tensor | None,
    ) -> list[list[dict[str, float]]] | None:
        """Each position's preterminals and their log scores for the trees: with
        preterminal scores, their logs; with terminal weights, log sum_a p_a P(A -> a)
        (P = 1 for an unweighted grammar's rules), which one-hot weights make the words'."""
        if terminals is None and preterminals is None:
            return None
        if terminals is not None:
            weights = terminals.detach().to(torch.float64).cpu().numpy()
            return [
                lexical_scores(self.grammar, weights[b, : len(ws)]) for b, ws in enumerate(words)
            ]
        pre = self.preterminals
        x = preterminals.detach().to(torch.float64).cpu().numpy()
        with np.errstate(divide="ignore"):
            logs = np.log(np.clip(x, 0.0, None))
        return [
            [
                {a: float(v) for a, v in zip(pre, logs[b, i], strict=True) if v > -np.inf}
                for i in range(len(ws))
            ]
            for b, ws in enumerate(words)
        ]

    def _check_soft(self, name: str, soft: Any) -> None:
        """A soft input: a floating-point tensor of the layer's dtype and device."""
        if not isinstance(soft, torch.Tensor):
            return  # its shape check says what it should be (_soft_words)
        if not soft.is_floating_point():
            raise ValueError(
                f"{name}= is a {soft.dtype} tensor: give probabilities as a floating-point "
                f"tensor of the layer's dtype ({self.nonterminal.dtype})"
            )
        dtype, device = self.nonterminal.dtype, self.nonterminal.device
        if soft.dtype != dtype or soft.device != device:
            raise ValueError(
                f"{name}= is {soft.dtype} on {soft.device}, the layer {dtype} on {device}: "
                f"convert it with {name}.to(dtype=..., device=...)"
            )

    def _check_tensors(self) -> None:
        """One dtype and one device for every vector and weight (a user may have replaced
        or cast some of them), and finite values; a clear error instead of torch's."""
        named = [(n, t) for n, t in self.named_parameters()]
        named += [(n, t) for n, t in self.named_buffers() if t.is_floating_point()]
        kinds = {(t.dtype, t.device) for _, t in named}
        if len(kinds) > 1:
            found = ", ".join(f"{n}: {t.dtype} on {t.device}" for n, t in named)
            raise ValueError(
                f"the layer's tensors have different dtypes or devices ({found}): move them "
                "together, with layer.to(dtype) or layer.to(device)"
            )
        if bool(torch.stack([torch.isfinite(t).all() for _, t in named]).all()):
            return  # one device synchronisation for all of them
        for n, t in named:
            if not torch.isfinite(t).all():
                raise ValueError(
                    f"the layer's {n} holds NaN or infinite values (a diverged optimisation "
                    "step?): lower the learning rate, clip the gradients, or reload a codebook"
                )

    def codebook(self) -> Codebook:
        """The module's vectors as a :class:`~fastdcyk.Codebook` (copies), for
        :func:`fastdcyk.dcyk`, :meth:`Codebook.save` and the numpy backend.

        Rule weights are not part of a codebook: a learned codebook reproduces the module's
        parses with ``learn`` without "rules" (or with weights still 1).
        """
        st = self.structure

        def rows(t: torch.Tensor, keys: Sequence[Any]) -> dict[Any, np.ndarray]:
            values = t.detach().cpu().numpy()
            return {k: values[r] for r, k in enumerate(keys)}

        return Codebook.from_vectors(
            terminals=rows(self.terminal, st.terminals),
            nonterminals=rows(self.nonterminal, st.nonterminals),
            right=None if self.right is None else rows(self.right, st.nonterminals),
            indices=rows(self.index, range(self.max_length + 1)),
            permutation=self.perm.cpu().numpy(),
            dtype=_DTYPES[self.nonterminal.dtype],
        )


DCYK.__doc__ = documented(DCYK.__doc__, DCYK.__init__.option_names, DCYK.__init__.option_notes)
