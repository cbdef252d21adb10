"""How a parse is prepared: the grammar, the sentences, the options and the codebook,
checked once.

:func:`prepare` is what :func:`fastdcyk.dcyk`, :func:`fastdcyk.dcyk_batch` and
:class:`fastdcyk.nn.DCYK` do before any backend runs: the grammar is loaded and checked to
be in CNF, the words checked against its terminals, the options resolved
(:func:`fastdcyk.options.resolve`) and their mode asked whether the backend has it
(:mod:`fastdcyk.registry.modes`), the memory checked before anything of size d is allocated,
and the codebook built or checked. Every backend takes the resulting :class:`Plan`; the rule
structure of its grammar (:mod:`fastdcyk.engine.core.rules`) is shared by all of them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar, as_grammar
from fastdcyk.cfg.treebank import unknown_to_classes
from fastdcyk.checks import check_dim, check_dtype, check_int
from fastdcyk.engine import memory
from fastdcyk.engine.core.plan import Plan
from fastdcyk.engine.core.soft import SoftWord, soft_word
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.fft import get_fft
from fastdcyk.options import NAMES, VARIANTS, DCYKOptions, check_backend, resolve
from fastdcyk.registry import backends
from fastdcyk.registry.backends import Backend
from fastdcyk.registry.modes import Mode

__all__ = [
    "check_autograd",
    "check_symbols",
    "clear_codebooks",
    "cnf_grammar",
    "trim_codebooks",
    "default_codebook",
    "option_keywords",
    "prepare",
    "resolve_codebook",
    "words_of",
]


def _iterable(x: Any) -> bool:
    try:
        iter(x)
    except TypeError:
        return False
    return True


def words_of(
    grammar: Grammar, words: str | Sequence[str], unknown: str = "refuse"
) -> tuple[str, ...]:
    if isinstance(words, bytes | bytearray | memoryview):
        raise TypeError(
            "the sentence is bytes: decode it to a str first (for example "
            "data.decode('utf-8')), or give a sequence of str"
        )
    if not isinstance(words, str | Sequence) and not _iterable(words):
        raise TypeError(
            "a sentence must be a str (split on whitespace) or a sequence of words, got "
            f"{type(words).__name__}"
        )
    ws = tuple(words.split()) if isinstance(words, str) else tuple(words)
    if not ws:
        raise ValueError("empty sentence: D-CYK needs at least one word")
    soft = {}
    for pos, w in enumerate(ws):
        if isinstance(w, SoftWord):
            w = dict(w.weights)
        if isinstance(w, Mapping):  # soft terminals: {terminal: weight}
            for k in w:
                if not isinstance(k, str):
                    raise TypeError(
                        f"position {pos}: the weights' keys must be terminals, not {k!r}"
                    )
            keys = grammar.normalize_words(list(w))
            if len(set(keys)) < len(keys):
                same = [k for k, n in zip(w, keys, strict=True) if keys.count(n) > 1]
                raise ValueError(
                    f"position {pos}: the keys {same!r} are one terminal in Unicode NFC "
                    "(the form terminals are kept in): give its weight once"
                )
            soft[pos] = soft_word(dict(zip(keys, w.values(), strict=True)), grammar.terminals, pos)
        elif not isinstance(w, str):
            raise TypeError(f"word {pos} is {w!r}, not a str (or a mapping {{terminal: weight}})")
    ws = tuple(soft.get(pos, w) for pos, w in enumerate(ws))
    ws = grammar.normalize_words(ws)  # terminals are kept in Unicode NFC
    ws = tuple(soft.get(pos, w) for pos, w in enumerate(ws))
    if unknown == "class":  # each word the grammar lacks as its unknown-word class
        ws = unknown_to_classes(grammar, ws)
    known = grammar.terminal_set
    for pos, w in enumerate(ws):
        if w not in known:
            some = ", ".join(repr(t) for t in list(grammar.terminals)[:12])
            nfc = "" if w.isascii() else " (words and terminals compared in Unicode NFC)"
            if len(w.split()) > 1:  # a whole sentence given as one word (one CLI argument)
                nfc += " (it holds spaces: give the sentence one word per argument)"
            hint = ""
            if "UNK" in known:  # a grammar induced from trees (TreebankGrammar): classes
                hint = (
                    "; the grammar has unknown-word classes ('UNK', ...): pass "
                    "unknown='class' to parse the word as its class (or map the sentence "
                    "with TreebankGrammar.words of the treebank grammar it came from)"
                )
            like = grammar.terminal_like(w)
            if like is not None:  # another case, or punctuation around it
                nfc += f" (did you mean {like!r}? words are matched exactly)"
            raise ValueError(
                f"word {w!r} at position {pos} (0-based) is not a terminal of the grammar{nfc}; "
                f"its terminals are {some}{' ...' if len(known) > 12 else ''}{hint}"
            )
    return ws


#: What a word that is not a terminal of the grammar does (``unknown=``).
UNKNOWN = ("refuse", "class")


def map_unknown(grammar: Grammar, words: Any, unknown: str) -> Any:
    """The sentence as :func:`fastdcyk.dcyk` reads it under ``unknown``: as given
    (``"refuse"``: :func:`words_of` then names an unknown word and its position), or with
    each unknown word replaced by the grammar's unknown-word class (``"class"``: the
    sentence checked by :func:`words_of`, which maps them with
    :func:`fastdcyk.cfg.treebank.unknown_to_classes`)."""
    if unknown not in UNKNOWN:
        raise ValueError(f"unknown must be 'refuse' or 'class', got {unknown!r}")
    return words if unknown == "refuse" else words_of(grammar, words, unknown)


def default_codebook(
    grammar: Grammar, d: int, seed: int = 0, dtype: Any = "float32", *, unitary: bool, **kwargs
) -> Codebook:
    """The codebook :func:`fastdcyk.dcyk` builds when given none.

    Unitary: :meth:`Codebook.for_grammar` (the grammar's symbols shifted, span indices
    shifted, zero-mean symbol vectors); otherwise Gaussian vectors, as in the paper.
    ``kwargs`` go to :class:`Codebook` (``fft``, ``threads``).
    """
    if unitary:
        return Codebook.for_grammar(grammar, int(d), seed=seed, dtype=dtype, **kwargs)
    return Codebook(int(d), seed=seed, dtype=dtype, unitary=False, **kwargs)


#: The codebooks :func:`resolve_codebook` built, kept for the next parse with the same
#: grammar, d, seed, dtype, vectors and FFT library (their symbols' vectors and spectra,
#: rule tables and work buffers are reused): at most :data:`CODEBOOK_CACHE_SIZE`, and within
#: :data:`CODEBOOK_CACHE_BYTES` together; :func:`clear_codebooks` empties it.
_CODEBOOKS: OrderedDict[tuple, Codebook] = OrderedDict()
_CODEBOOKS_LOCK = threading.Lock()
CODEBOOK_CACHE_SIZE = 4
CODEBOOK_CACHE_BYTES = 1 << 30


def clear_codebooks() -> None:
    """Forget the codebooks kept by :func:`resolve_codebook`."""
    with _CODEBOOKS_LOCK:
        _CODEBOOKS.clear()


def _keep(key: tuple, cb: Codebook) -> None:
    """Keep ``cb`` under ``key``, the least recently used dropped beyond the bounds."""
    with _CODEBOOKS_LOCK:
        _CODEBOOKS[key] = cb
        _CODEBOOKS.move_to_end(key)
    trim_codebooks()


def trim_codebooks() -> None:
    """Drop the least recently used kept codebooks beyond :data:`CODEBOOK_CACHE_SIZE`, and
    beyond :data:`CODEBOOK_CACHE_BYTES` together (their symbols and work buffers as they
    are now: called again after a parse, whose buffers count then), but the last."""

    def size(c: Codebook) -> int:
        return c.symbol_bytes() + c.buffer_bytes()

    with _CODEBOOKS_LOCK:
        while len(_CODEBOOKS) > CODEBOOK_CACHE_SIZE or (
            len(_CODEBOOKS) > 1 and sum(size(c) for c in _CODEBOOKS.values()) > CODEBOOK_CACHE_BYTES
        ):
            _CODEBOOKS.popitem(last=False)


def resolve_codebook(
    codebook: Codebook | None,
    d: int | None,
    seed: int | None,
    dtype: Any,
    unitary: bool,
    fft: Any,
    grammar: Grammar,
    before_build: Any = None,
) -> Codebook:
    """The codebook of a parse: ``codebook`` (a Codebook; :func:`check_given_codebook`
    checks ``d``, ``dtype`` and the rest against it), or the one
    :func:`default_codebook` builds (kept for the next parse with the same grammar, d, seed
    (None: 0), dtype, vectors and FFT library: :data:`_CODEBOOKS`). ``before_build(d,
    dtype, fft)`` runs before a codebook is built (the memory check), with the FFT it will
    use."""
    if codebook is None:
        if d is None:
            d = 1024
        d = check_dim(d)
        dtype = check_dtype(dtype)
        fft = get_fft(fft)
        seed = check_int("seed", 0 if seed is None else seed, 0)
        key = (grammar, int(d), seed, dtype.name, bool(unitary), fft.name, fft.threads)
        with _CODEBOOKS_LOCK:
            cb = _CODEBOOKS.get(key)
        if cb is None:
            if before_build is not None:
                before_build(int(d), dtype, fft)
            cb = default_codebook(grammar, int(d), seed, dtype, unitary=unitary, fft=fft)
        _keep(key, cb)
        return cb
    if not isinstance(codebook, Codebook):
        raise TypeError(f"codebook must be a fastdcyk.Codebook, got {type(codebook).__name__}")
    return codebook  # what was asked of it: checked in prepare (check_given_codebook)


def check_given_codebook(
    codebook: Any,
    d: int | None,
    dtype: Any,
    seed: int | None,
    unitary: bool | None,
    fft: Any = "auto",
) -> None:
    """A ``d``, ``dtype``, ``seed``, ``unitary`` or ``fft`` (None, or ``"auto"`` for
    ``fft``: not given) given with a codebook must be the codebook's own: its dimension
    and dtype are fixed, its vectors drawn and its FFT library chosen already, and a parse
    cannot change them."""
    if not isinstance(codebook, Codebook):
        return
    if d is not None and d != codebook.d:
        raise ValueError(
            f"d = {d} disagrees with the codebook's dimension {codebook.d}: "
            "leave d out when passing a codebook"
        )
    if dtype is not None and np.dtype(dtype) != codebook.dtype:
        raise ValueError(
            f"dtype {np.dtype(dtype)} disagrees with the codebook's dtype {codebook.dtype}: "
            "leave dtype out when passing a codebook"
        )
    if not (isinstance(fft, str) and fft == "auto"):
        name = get_fft(fft).name
        if name != codebook.fft.name:
            raise ValueError(
                f"fft={fft!r} disagrees with the codebook's FFT library {codebook.fft.name!r}: "
                "leave fft out when passing a codebook, or build the codebook with "
                f"fft={name!r}"
            )
    if seed is not None and seed != codebook.seed:
        has = "vectors given, not drawn" if codebook.seed < 0 else f"seed {codebook.seed}"
        raise ValueError(
            f"seed={seed!r} disagrees with the codebook's {has}: leave seed out when passing "
            "a codebook (its vectors are drawn already), or build one with that seed"
        )
    if unitary is not None and bool(unitary) != codebook.unitary:
        raise ValueError(
            f"unitary={unitary!r} disagrees with the codebook, whose vectors are "
            f"{'' if codebook.unitary else 'not '}unitary: leave unitary out when passing a "
            "codebook, or build one with the vectors you want (Codebook.for_grammar for "
            "unitary ones)"
        )


def cnf_grammar(grammar: Grammar | str) -> Grammar:
    """``grammar`` (or the built-in or file it names), checked to be a CNF Grammar."""
    grammar = as_grammar(grammar)
    if not grammar.is_cnf:
        raise ValueError("D-CYK needs a grammar in Chomsky normal form: use grammar.to_cnf()")
    return grammar


def option_keywords(options: DCYKOptions | None, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a parse as keywords, from ``options=`` or from the option keywords
    ``given`` (:data:`fastdcyk.options.NAMES`; None where not given).

    ``options`` (a :class:`DCYKOptions`) and the keywords are two ways to say the same
    thing: giving both, with a keyword other than None, is refused.
    """
    given = {k: v for k, v in given.items() if v is not None}
    if options is None:
        return given
    if not isinstance(options, DCYKOptions):
        raise TypeError(f"options must be a fastdcyk.DCYKOptions, got {type(options).__name__}")
    if given:
        raise ValueError(
            f"options= and the keyword options {list(given)} were both given: pass the options "
            "either as a DCYKOptions or as keywords (dataclasses.replace(options, ...) "
            "changes one)"
        )
    return {name: getattr(options, name) for name in NAMES}


def prepare(
    grammar: Grammar | str,
    sentences: Sequence[str | Sequence[str]],
    codebook: Codebook | None,
    *,
    d: int | None,
    seed: int | None,
    dtype: Any,
    unitary: bool | None,
    fft: Any,
    check_memory: bool,
    backend: str,
    device: Any,
    options: Mapping[str, Any],
    autograd: bool = False,
) -> Plan:
    """What :func:`fastdcyk.dcyk`, :func:`fastdcyk.dcyk_batch` and :class:`fastdcyk.nn.DCYK`
    check before parsing.

    Everything is checked before the codebook is built (and the memory before anything of
    size d): the backend and device (:mod:`fastdcyk.registry.backends`), the grammar (CNF),
    the words, the options (``options``: the keyword form, :func:`option_keywords`) and
    whether their mode has the backend and the grammar it needs
    (:mod:`fastdcyk.registry.modes`), the memory where the backend computes
    (:func:`fastdcyk.engine.memory.check_memory`), the codebook and the symbols it must hold.
    ``autograd``: the parse runs under autograd (the layer), which needs a backend that
    computes under it and a differentiable mode (:func:`check_autograd`). ``sentences`` may
    be empty (the layer's, prepared before its batches).
    """
    record = check_backend(backend, device)
    device = record.check_device(device)  # one message for every entry point
    grammar = cnf_grammar(grammar)
    all_words = [words_of(grammar, s) for s in sentences]
    check_given_codebook(codebook, d, dtype, seed, unitary, fft)
    opt_dtype = codebook.dtype if isinstance(codebook, Codebook) else check_dtype(dtype)
    opt = resolve(dtype=opt_dtype, **options)
    if unitary is None:  # the variant's codebook
        unitary = VARIANTS[opt.variant]["unitary"]
    mode = opt.mode
    if autograd:
        check_autograd(record, mode)
    mode.parser(backend)  # a backend that lacks the mode is refused, naming those that have it
    if mode.writes_probabilities and not grammar.is_weighted:
        raise ValueError(
            f"{mode.describe()} writes the rules' probabilities into the table, and the "
            "grammar has none: read a PCFG (rules written 'A -> B C [0.5]') or induce "
            "one from trees (fastdcyk.cfg.treebank)"
        )
    longest = max((len(ws) for ws in all_words), default=1)

    built = []

    def before_build(d: int, dtype: np.dtype, fft_library: Any) -> None:
        # before the codebook draws anything of size d (its permutation, its vectors)
        built.append(True)
        if check_memory:
            fit(d, dtype, fft_library)

    def fit(d: int, dtype: np.dtype, fft_library: Any, held: int = 0) -> None:
        kw = {"sentences": len(all_words), "device": device, "held": held}
        memory.check_memory(record, d, dtype, fft_library, opt, longest, **kw)

    cb = resolve_codebook(codebook, d, seed, dtype, bool(unitary), fft, grammar, before_build)
    if check_memory and not built:  # a codebook given, or kept: its buffers are reused
        fit(cb.d, cb.dtype, cb.fft, cb.buffer_bytes())
    for ws in all_words:
        check_symbols(cb, grammar, ws, opt.encoding)
    return Plan(grammar, all_words, opt, cb)


def check_autograd(backend: Backend, mode: Mode) -> None:
    """Refuse a parse under autograd (:class:`fastdcyk.nn.DCYK`) with a backend that does
    not compute under it, or a mode that is not differentiable or has no parser on the
    backend, saying what the layer can use."""
    if not backend.autograd:
        able = " or ".join(repr(b.name) for b in backends.BACKENDS.values() if b.autograd)
        raise ValueError(
            f"{backend.describe()} does not compute under autograd: the layer needs a backend "
            f"that does ({able})"
        )
    try:
        mode.parser(backend.name)
    except ValueError as exc:
        raise ValueError(
            f"{exc} (fastdcyk.dcyk); the layer needs a {backend.name} parser, and a PCFG's "
            "probabilities rank the trees of its decoded charts (DCYKOutput.best_parses)"
        ) from None
    if not mode.differentiable:
        raise ValueError(f"{mode.describe()} is not differentiable: the layer cannot use it")


def check_symbols(
    cb: Codebook, grammar: Grammar, words: tuple[str, ...], encoding: str = "paper"
) -> None:
    """Fail before any allocation when a codebook built from vectors lacks a symbol (a
    seeded codebook draws every symbol it is asked for)."""
    if not cb.fixed:
        return
    held = set(cb.symbols("index"))
    if any(k not in held for k in range(len(words) + 1)):
        raise ValueError(
            f"a sentence of {len(words)} words needs the span indices 0 to {len(words)}, and "
            f"this codebook, built from vectors, holds indices {min(held, default=0)} to "
            f"{max(held, default=-1)} only: parse sentences of at most {len(held) - 1} "
            "words with it, or give it index vectors for longer ones (a layer's codebook: "
            "build the layer with a larger max_length)"
        )
    needed = [("nonterminal", a) for a in grammar.nonterminals]
    if encoding == "roles":
        needed += [("right", a) for a in grammar.nonterminals]
    needed += [("terminal", t) for t in dict.fromkeys(words)]
    needed += [("terminal", t) for w in words if isinstance(w, SoftWord) for t, _ in w.weights]
    needed += [("terminal", t) for _, t in grammar.unary_rules]
    for kind, sym in needed:
        cb.vector(kind, sym)  # raises a KeyError naming the symbol
