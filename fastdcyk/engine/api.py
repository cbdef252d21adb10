"""The front doors of D-CYK: :func:`dcyk` parses a sentence, :func:`decode` reads a table
back, :func:`parse_plan` parses a prepared plan with a backend's driver.

The table P is kept as two dense matrices (docs/method.md, section 1),

.. math::

    P_{left} = \\sum_{(i,j,X)} [i]^- [j]^- [X]^- D_{ijX}, \\qquad
    P_{right} = \\sum_{(i,j,X)} [X]^+ [i]^+ [j]^+ D_{ijX},

and filled by the paper's Algorithms 2 (unary) and 3 (binary) with the two corrections of
docs/method.md, section 2 (binary rules encoded as [B]+ [C]-, span check [j]- [i]+). Every
operator is an implicit :class:`~fastdcyk.hrr.operators.Operator`; P_left and P_right are the
only d x d matrices that live through the parse, beside a few work buffers held by the
codebook and reused from one parse to the next.

The options (``variant="cleanup"``, the default, parses real grammars; ``variant="paper"``
is the faithful algorithm, ``variant="trace"`` its improved form) are declared in
:mod:`fastdcyk.options`; the detection modes they select, in :mod:`fastdcyk.registry.modes`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from fastdcyk.cfg.generate import clear_cache as clear_generate_cache
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.checks import check_choice, check_dtype, check_int
from fastdcyk.engine import auto, beam
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.decode import chart_from_statistics, check_matrix, decode_statistics
from fastdcyk.engine.core.plan import Plan
from fastdcyk.engine.core.result import DCYKResult, DimensionChoice
from fastdcyk.engine.core.schedule import detections
from fastdcyk.engine.cost import slow_parse_note
from fastdcyk.engine.prepare import (
    clear_codebooks,
    cnf_grammar,
    map_unknown,
    option_keywords,
    prepare,
    trim_codebooks,
    words_of,
)
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import (
    DEFAULT_VARIANT,
    DCYKOptions,
    check_backend,
    check_beta_threshold,
    choices,
    resolve,
    takes_options,
)
from fastdcyk.registry import backends, modes
from fastdcyk.registry.backends import Backend

__all__ = [
    "choose_dimension",
    "clear_caches",
    "dcyk",
    "decode",
    "name_given_d",
    "parse_plan",
    "sample_dimension",
]


def clear_caches() -> None:
    """Forget what parses keep for the next one: the codebooks :func:`dcyk` built (with
    their symbols' vectors, rule tables and work buffers), and the index matrices kept per
    codebook by the numpy backend and the torch backend. The next parse builds them again
    (the results are the same).

    Sentence generation keeps the derivation counts of its last few grammars too
    (:func:`fastdcyk.generate`); they go as well.

    Examples
    --------
    >>> import fastdcyk as fd
    >>> fd.clear_caches()
    """
    clear_codebooks()
    auto.clear()  # the d that worked per grammar and length
    clear_generate_cache()
    for record in backends.BACKENDS.values():  # what each keeps per codebook (no import)
        record.release_caches()


def parse_plan(
    plan: Plan,
    backend: str,
    *,
    device: Any = None,
    decode: bool = True,
    dense: bool = True,
    record: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> list[DCYKResult]:
    """Parse every sentence of a prepared plan with a backend: one result per sentence.

    The backend's record (:mod:`fastdcyk.registry.backends`) names its driver: the numpy
    backend parses the sentences one at a time, the torch backend as one batch. A
    weighted table with ``beam="auto"`` widens each sentence's beam until the parse shows
    that it cut nothing that mattered (:mod:`fastdcyk.engine.beam`). ``dense=False`` leaves
    P_left and P_right out of the results. ``on_progress`` is called with the number of
    detections made, as they are made (a progress bar).
    """
    driver = check_backend(backend)
    kw = {"device": device, "decode": decode, "dense": dense, "record": record}
    kw["on_progress"] = on_progress
    opt = plan.options
    if not (beam.is_auto(opt.beam) and opt.mode.writes_probabilities):
        return _given_d(driver.parse(plan, **kw))
    out = []
    for ws in plan.sentences:  # beam="auto": each sentence widens its own beam

        def parse_at(b: float, ws: tuple[str, ...] = ws) -> DCYKResult:
            one = Plan(plan.grammar, [ws], replace(opt, beam=b), plan.codebook)
            return driver.parse(one, **kw)[0]

        # every beam's parse to its end: a wider beam's chart may be sure where the first
        # beam's has a suspect cell (d="auto" stops its tries at one otherwise)
        with schedule.stopping_at_suspect(False):
            result, result.beam = beam.choose(parse_at)
        out.append(result)
    return _given_d(out)


def name_given_d(results: list[DCYKResult], d: Any, codebook: Codebook | None) -> None:
    """Say where a d not chosen by ``d="auto"`` came from: the codebook's, the default
    (1024, where the parse gives no certificate) or ``"given"``."""
    if codebook is not None:
        reason = "the codebook's"
    elif d is None:
        reason = f"the default, {results[0].codebook.d}" if results else "given"
    else:
        return
    for r in results:
        if r.dimension is not None and r.dimension.reason == "given":
            r.dimension = replace(r.dimension, reason=reason)


def _given_d(results: list[DCYKResult]) -> list[DCYKResult]:
    """``results``, each with its :attr:`~DCYKResult.dimension`: the d it was parsed at,
    given (``d="auto"`` replaces it with its own choice)."""
    for r in results:
        if r.dimension is None:
            d, seconds = r.codebook.d, float(sum(r.timings.values()))
            r.dimension = DimensionChoice(d, (d,), r.sure, d, "given", seconds)
    return results


@takes_options()
def dcyk(
    grammar: Grammar | str,
    words: str | Sequence[str],
    codebook: Codebook | None = None,
    *,
    d: int | str | None = None,
    seed: int | None = None,
    dtype: Any = None,
    unitary: bool | None = None,
    fft: Any = "auto",
    decode: bool = True,
    check_memory: bool = True,
    progress: bool | float | None = None,
    record: bool = False,
    backend: str | None = None,
    device: Any = None,
    options: DCYKOptions | None = None,
    max_d: int | None = None,
    unknown: str = "refuse",
    **keywords: Any,
) -> DCYKResult:
    """Parse a sentence with D-CYK (the paper's Algorithms 2, 3 and 4).

    Parameters
    ----------
    grammar : Grammar or str
        A CNF grammar, or a built-in name / file path for :meth:`Grammar.load`.
    words : str or sequence of (str or mapping)
        The sentence (a str is split on whitespace). A position may be a mapping
        ``{terminal: weight}`` instead of a word: soft terminals, whose mixture the unary
        step writes (docs/method.md, section 11; :mod:`fastdcyk.engine.core.soft`).
    codebook : Codebook, optional
        Symbol vectors and permutation. Default: :func:`default_codebook` (for unitary
        vectors, ``Codebook.for_grammar(grammar, d, seed, dtype=dtype, fft=fft)``,
        otherwise ``Codebook(d, seed, dtype, fft=fft)``), kept for the next parse
        with the same grammar, d, seed, dtype, vectors and FFT library (its symbols, rule
        tables and work buffers are reused; :func:`clear_caches` forgets it). Parses that
        share a codebook take turns on its work buffers: to parse in parallel threads, give
        each thread its own codebook.
    d : int or "auto", optional
        Dimension; must match the codebook's if both are given. ``"auto"``: parse at
        d = 128 and double d while the certificate flags a cell, up to ``max_d``
        (:mod:`fastdcyk.engine.auto`; ``result.dimension`` says which d and why). Default:
        ``"auto"`` where the parse gives a certificate (the cleanup variant with a
        least-squares read-back, the default, numpy backend, no codebook given), 1024
        otherwise (the torch backend's parse gives no certificate: for many sentences,
        :func:`fastdcyk.dcyk_batch` chooses each one's d by the numpy backend's).
    seed : int, optional
        Codebook seed (default 0); with a codebook, leave it out or give the codebook's.
    dtype : {"float32", "float64"}, optional
        Default float32; must match the codebook's if both are given.
    {options}
    unitary : bool, optional
        Unitary zero-mean symbol vectors, with the grammar's symbols and the span indices
        shifted by Sidon sets (when the codebook is built here; see :class:`Codebook` and
        :func:`default_codebook`; with a codebook, leave it out or give the codebook's).
        Default: the variant's choice (see :data:`VARIANTS`).
    fft : {"auto", "scipy", "pyfftw", "numpy"}, default "auto"
        The FFT library (only when the codebook is built here; the keyword was ``engine``
        before 0.4, refused with a message until 0.5).
    decode : bool, default True
        Decode the chart (Algorithm 4) after parsing.
    check_memory : bool, default True
        Refuse with MemoryError, before allocating anything of size d (the codebook built
        here included), when the accumulators and work buffers would not fit in the memory
        available (the system's, bounded by the process's ``ulimit -v``).
    unknown : {"refuse", "class"}, default "refuse"
        A word that is not a terminal of the grammar: ``"refuse"`` raises ValueError naming
        the word and its position; ``"class"`` replaces it by the grammar's most specific
        unknown-word class (a terminal such as ``'UNK-LC-ing'`` or ``'UNK'``, as a grammar
        from :meth:`TreebankGrammar.from_trees` has; refused when the grammar has none).
        ``result.words`` are then the terminals parsed.
    progress : bool, float or None, default None
        Show a progress bar over the parse's detections (tqdm.auto: a widget in
        notebooks). None: once the parse has run 2 seconds, and only when the standard
        error is a terminal (tqdm's convention: nothing is printed otherwise); a number:
        once the parse has run that many seconds; True: at once; False: never. On a
        terminal or with True, a parse the cost model predicts to take over 30 seconds
        first prints one line with its estimate and the default variant's
        (:func:`fastdcyk.engine.cost.slow_parse_note`).
    record : bool, default False
        Keep a log of every detection in ``result.log``: the step, the cell (i, j), the
        nonterminal, the mean of P_A's diagonal (how much of I the gate let through), P_A's
        largest entry and whether the update was applied or pruned.
    backend : {"numpy", "torch"} or a registered backend's name, optional
        Default: ``"numpy"``, or ``"torch"`` when a ``device`` is given
        (:func:`fastdcyk.registry.backends.for_device`). ``"torch"``: the same algorithm,
        options and codebook in PyTorch (:mod:`fastdcyk.engine.backends.torch.driver`;
        needs ``pip install torch``), for the modes that have a torch parser
        (:mod:`fastdcyk.registry.modes`). In float64 its accumulators equal the numpy
        backend's to rounding; the result is the same type.
    device : torch.device or str, optional
        Where the torch backend computes (default the CPU); giving one selects the torch
        backend, and is refused with a backend that takes none.
    options : DCYKOptions, optional
        The options as one object (``variant`` to ``beam``), instead of the keywords;
        giving both is refused.
    max_d : int, optional
        With ``d="auto"``: the largest d tried (default 8192, lowered to the largest
        power of two that fits in the memory available); checked against the memory
        before the first parse.

    Returns
    -------
    DCYKResult
        ``.p_left``, ``.p_right``, ``.chart``, ``.statistics``, ``.counts``, ``.timings``;
        with ``d="auto"``, ``.dimension``. When the certificate still flags a cell at
        ``max_d``, the parse there is returned with a
        :class:`~fastdcyk.engine.auto.DimensionWarning`.

    Raises
    ------
    ValueError
        Unknown word (named, with its position), empty sentence, d < 2, a codebook whose d
        or dtype disagree with the arguments, unknown variant/gate/decoder/readback, a
        readback or decoder the gate does not have, bad beta, threshold or candidate level,
        unknown backend, a device with a backend that takes none.
    ImportError
        ``backend="torch"`` without PyTorch installed.
    MemoryError
        When the parse would not fit in memory: the message gives the memory needed and
        available, and the largest d that fits; with ``d="auto"``, when ``max_d`` does
        not fit.
    FloatingPointError
        When non-finite values appear in the accumulators.

    Examples
    --------
    >>> import fastdcyk
    >>> g = fastdcyk.Grammar.builtin("example")
    >>> r = fastdcyk.dcyk(g, "a a b", d=512, variant="trace")
    >>> sorted(r.chart[(0, 3)])
    ['S']
    >>> r = fastdcyk.dcyk(g, "a a b")   # d chosen by the certificate
    >>> r.codebook.d, r.sure, r.dimension.tried
    (128, True, (128,))
    """
    delay = check_progress(progress)
    if not isinstance(record, bool | np.bool_):
        raise ValueError(f"record must be True or False, got {record!r}")
    if unknown != "refuse":  # the grammar read once, for the mapping and the parse
        grammar = cnf_grammar(grammar)
        words = map_unknown(grammar, words, unknown)
    driver = check_backend(backends.for_device(device) if backend is None else backend, device)
    backend = driver.name
    opt = _chosen_d_options(d, codebook, driver, dtype, max_d, option_keywords(options, keywords))
    if opt is not None:
        g = cnf_grammar(grammar)
        ws = words_of(g, words)
        dt = check_dtype(dtype)
        if check_memory:
            cap, note = auto.dimension_cap(max_d, dt, fft, opt, len(ws))
        else:
            cap, note = (auto.MAX_D if max_d is None else max_d), None
        seed = 0 if seed is None else seed
        key = (g, opt, seed, dt.name, unitary, repr(fft))

        def parse_at(size: int) -> DCYKResult:
            return dcyk(
                g,
                ws,
                d=size,
                seed=seed,
                dtype=dt,
                unitary=unitary,
                fft=fft,
                decode=decode,
                check_memory=check_memory,
                progress=progress,
                record=record,
                backend=backend,
                device=device,
                options=opt,
            )

        result, choice = auto.choose(parse_at, key, len(ws), cap, note)
        result.dimension = choice
        return result
    plan = prepare(
        grammar,
        [words],
        codebook,
        d=d,
        seed=seed,
        dtype=dtype,
        unitary=unitary,
        fft=fft,
        check_memory=check_memory,
        backend=backend,
        device=device,
        options=option_keywords(options, keywords),
    )
    (ws,) = plan.sentences
    if progress is True or (progress is None and delay is not None):  # asked, or a terminal
        note = slow_parse_note(plan.grammar, len(ws), plan.codebook.d, plan.options)
        if note is not None:
            print(f"fastdcyk: {note}", file=sys.stderr, flush=True)
    st = plan.structure
    total = detections(len(ws), len(st.unary), len(st.binary))
    bar = progress_bar(delay, total, f"D-CYK d={plan.codebook.d} ({backend})", "detection")
    try:
        on_progress = None if bar is None else bar.update
        kw = {"device": device, "decode": decode, "record": record, "on_progress": on_progress}
        (result,) = parse_plan(plan, backend, **kw)
        name_given_d([result], d, codebook)
        return result
    finally:
        if bar is not None:
            bar.close()
        trim_codebooks()  # the kept codebooks' work buffers now count too


@takes_options()
def choose_dimension(
    grammar: Grammar | str,
    sentences: Sequence[str | Sequence[str]],
    *,
    seed: int = 0,
    dtype: Any = None,
    unitary: bool | None = None,
    fft: Any = "auto",
    max_d: int | None = None,
    progress: bool | None = None,
    options: DCYKOptions | None = None,
    **keywords: Any,
) -> int:
    """The d that ``d="auto"`` needs for every sentence of a sample: the largest d it
    chose (:func:`dcyk` with ``d="auto"``, numpy backend), for the torch backend and
    :class:`fastdcyk.nn.DCYK`, whose batches share one d.

    Parameters
    ----------
    grammar : Grammar or str
    sentences : sequence of str or of sequence of str
        The sample (at least one sentence), as for :func:`dcyk`.
    seed, dtype, unitary, fft, max_d
        As for :func:`dcyk`.
    progress : bool, optional
        A progress bar over the sample (default: on a terminal, for over 2 seconds).
    {options}
    options : DCYKOptions, optional
        The options as one object, instead of the keywords.

    Returns
    -------
    int
        The largest d chosen; ``max_d`` (with a
        :class:`~fastdcyk.engine.auto.DimensionWarning`) where a sentence is not sure there.

    Examples
    --------
    >>> import fastdcyk as fd
    >>> fd.choose_dimension("G0", ["fish swim", "fish swim near fish"])
    128
    """
    kw = {"seed": seed, "dtype": dtype, "unitary": unitary, "fft": fft, "max_d": max_d}
    opts = option_keywords(options, keywords)
    return sample_dimension(grammar, sentences, progress, opts, kw)[0]


def sample_dimension(
    grammar: Grammar | str,
    sentences: Sequence[str | Sequence[str]],
    progress: bool | None,
    opts: dict[str, Any],
    kw: dict[str, Any],
) -> tuple[int, bool]:
    """:func:`choose_dimension`'s d (``opts``: the option keywords; ``kw``: seed, dtype,
    unitary, fft and max_d), and whether the certificate was sure of every sentence there."""
    if not isinstance(sentences, str) and not hasattr(sentences, "__len__"):
        raise TypeError(
            "sentences must be a sequence of sentences (each a str or a sequence of words), "
            f"got {type(sentences).__name__}"
        )
    if isinstance(sentences, str) or not len(sentences):
        raise ValueError(
            "sentences must be a non-empty sequence of sentences (a str is one sentence: "
            "pass [sentence])"
        )
    delay = check_progress(progress)
    bar = progress_bar(delay, len(sentences), "choosing d", "sentence")
    best, sure = 0, True
    try:
        with auto.needed():  # the largest d a sentence needed, no probe's
            for words in sentences:
                r = dcyk(grammar, words, d="auto", decode=False, progress=False, **kw, **opts)
                best, sure = max(best, r.codebook.d), sure and r.sure
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return best, sure


def _chosen_d_options(
    d: Any, codebook: Any, backend: Backend, dtype: Any, max_d: Any, opts: dict[str, Any]
) -> DCYKOptions | None:
    """The parse's options, resolved, when d is chosen by :mod:`fastdcyk.engine.auto`
    (``d="auto"``, or d left out where the parse gives a certificate); None otherwise."""
    asked = auto.is_auto(d)
    opt = None
    if asked or (d is None and codebook is None and backend.certificate):
        opt = resolve(dtype=check_dtype(dtype), **opts)
        if asked:
            auto.check_auto(codebook, backend, opt)
        elif not auto.certified(opt):
            opt = None
    if max_d is not None and opt is None:
        given = f", and d = {d!r} was given" if d is not None else ": pass d='auto' with it"
        raise ValueError(f"max_d applies to d='auto' only{given}")
    return opt


def decode(
    result_or_p_left: Any,
    grammar: Grammar | None = None,
    n: int | None = None,
    codebook: Codebook | None = None,
    *,
    words: str | Sequence[str] | None = None,
    decoder: str | None = None,
    readback: str | None = None,
    beta: float | None = None,
    threshold: float | None = None,
    candidate_level: float | None = None,
) -> dict[tuple[int, int], frozenset[str]]:
    """Decode a chart from a parse, or from any P_left, at any threshold.

    Two ways to read a table back:

    - the decoders of the paper's Algorithm 4 (``readback="matched"``): every nonterminal
      of every cell read with its own readout of P_left, ``decoder="entry"`` (entry (0, 0),
      the paper's) or ``"trace"`` (the mean diagonal);
    - the least-squares read-back of the cleanup variant (``readback="lstsq"``,
      docs/method.md, section 7): bottom-up from the words, each cell's candidates (the
      nonterminals the grammar's rules propose over the cells read before it) read together
      by least squares over their vectors. It needs the words and the grammar, and decodes a
      P_left made elsewhere (by a network) to a chart. ``readback="cancel"`` reads the same
      way from a copy of P_left from which every read (each word, then each cell's
      candidates with their amplitudes as read) is subtracted, so that a cell's read is not
      blurred by the cells read before it, then reads every cell again twice without the
      cells above it either (docs/method.md, section 7).

    Parameters
    ----------
    result_or_p_left : DCYKResult or ndarray
        A :func:`fastdcyk.dcyk` result (its grammar, words, codebook and options are used
        unless given here), or a P_left matrix (then grammar and codebook are required, and
        n or words).
    grammar, n, codebook : optional
        Needed with a bare P_left. With a result, each one given here replaces the
        result's own: the result's P_left is then decoded again with them (the statistics
        the result keeps are reused only when the grammar, length, codebook, decoder and
        read-back are its own).
    words : str or sequence of str, optional
        The sentence: needed by the least-squares read-backs with a bare P_left (its length
        is n).
    decoder : {"entry", "trace"}, optional
        With ``readback="matched"``. Default: the result's decoder, else "entry".
    readback : {"matched", "lstsq", "cancel"}, optional
        Default: the result's, else "matched".
    beta, threshold, candidate_level : float, optional
        Default: the result's, else the library defaults.

    Returns
    -------
    dict
        ``{(i, j): frozenset of nonterminals}`` for every 0 <= i < j <= n.

    Raises
    ------
    ValueError
        A bare P_left without grammar or codebook (or without n and words); the
        least-squares read-back without words, or with a decoder; words that are not
        terminals of the grammar.

    Examples
    --------
    >>> import fastdcyk
    >>> g = fastdcyk.Grammar.builtin("example")
    >>> r = fastdcyk.dcyk(g, "a a b", d=256, variant="trace")
    >>> decode(r, threshold=0.9) == r.chart_at(threshold=0.9)
    True
    >>> c = fastdcyk.dcyk(g, "a a b", d=256, variant="cleanup")
    >>> decode(c.p_left, g, codebook=c.codebook, words="a a b", readback="lstsq") == c.chart
    True
    """
    if words is not None:
        words = Grammar.normalize_words(words.split() if isinstance(words, str) else words)
        if n is not None and n != len(words):
            raise ValueError(f"n = {n} but the sentence has {len(words)} words: give one")
    # a result's p_left may be made on access (engine/core/deferred.py): not asked of it here
    if isinstance(result_or_p_left, DCYKResult) or (
        hasattr(result_or_p_left, "options") and hasattr(result_or_p_left, "p_left")
    ):
        r = result_or_p_left
        o = r.options
        asked = {"decoder": decoder, "readback": readback, "candidate_level": candidate_level}
        own = (
            (grammar is None or grammar is r.grammar or grammar == r.grammar)
            and (n is None or n == len(r.words))
            and (codebook is None or codebook is r.codebook)
            and all(v is None or v == getattr(o, k) for k, v in asked.items())
            and (words is None or words == r.words)
        )
        grammar = r.grammar if grammar is None else grammar
        codebook = r.codebook if codebook is None else codebook
        if words is None and n is None:
            words = r.words
        if n is not None and isinstance(n, int) and n > len(r.words):
            raise ValueError(
                f"n = {n}, but the result's sentence has {len(r.words)} words: its table "
                "holds no longer span (leave n out, or give at most that)"
            )
        n = len(r.words if words is None else words) if n is None else n
        readback = readback or o.readback
        decoder = decoder or (o.decoder if modes.reader_of(readback) is None else None)
        beta = o.beta if beta is None else beta
        threshold = o.threshold if threshold is None else threshold
        if candidate_level is None:
            candidate_level = o.candidate_level
        if own and r.statistics is not None:
            return chart_from_statistics(r.statistics, n, beta=beta, threshold=threshold)
        p_left = r.p_left
    else:
        p_left = np.asarray(result_or_p_left)
        if grammar is None or codebook is None or (n is None and words is None):
            raise ValueError(
                "decoding a bare P_left needs grammar= and codebook=, and n= (or words=)"
            )
    readback = check_choice("readback", readback or "matched", choices("readback"))
    beta, threshold = check_beta_threshold(beta, threshold)
    if n is not None:
        n = check_int("n", n, 1)
    mode = modes.reader_of(readback)
    if mode is None:  # the decoders read any P_left
        n = len(words) if n is None else n
        stats = decode_statistics(p_left, grammar, n, codebook, decoder=decoder or "entry")
        return chart_from_statistics(stats, n, beta=beta, threshold=threshold)
    if words is None:
        raise ValueError(
            f"readback={readback!r} reads the table bottom-up from the words: pass words= (the "
            "sentence whose table P_left holds)"
        )
    grammar = cnf_grammar(grammar)
    ws = words_of(grammar, words)
    opt = resolve(  # a decoder other than the trace one is refused here
        DEFAULT_VARIANT,
        gate=mode.gate,
        weights=mode.weights,
        decoder=decoder,
        readback=readback,
        beta=beta,
        threshold=threshold,
        candidate_level=candidate_level,
        dtype=codebook.dtype,
    )
    check_matrix(p_left, codebook)
    with codebook.lock:  # the read-back uses the codebook's work buffers
        stats = mode.part("reader")(p_left, grammar, ws, codebook, opt)
    return chart_from_statistics(stats, len(ws), beta=beta, threshold=threshold)
