"""An experiment grid: :class:`ExperimentConfig`, its validation and its hash."""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError
from fastdcyk.checks import check_choice, check_dtype
from fastdcyk.options import (
    CODEBOOKS,
    DEFAULT_BETA,
    DEFAULT_THRESHOLD,
    ENCODINGS,
    ORDERS,
    READBACKS,
    VARIANTS,
    check_beta,
    check_threshold,
    resolve,
)

#: The paper's dimensions (its experiments section; docs/results.md).
PAPER_DIMS = (100, 1000, 2000, 3000, 4000, 5000, 6000)
#: The paper's two variants (the faithful one and its improved form): the default grid
#: compares them; ``--variants cleanup`` adds the variant for real grammars.
PAPER_VARIANTS = ("paper", "trace")
#: The paper's grammars, as reconstructed in fastdcyk/grammars (docs/grammars.md).
PAPER_GRAMMARS = ("G0", "G1", "G2", "G3", "G4")
#: Core-hours of the paper's whole grid (the defaults of :class:`ExperimentConfig`, each
#: variant in its own order), one thread per worker: docs/results.md, "Cost". Quoted by
#: ``fastdcyk experiment --help``, ``fastdcyk demo``, the tutorial and the Dask guide
#: (tests check they agree).
PAPER_GRID_CORE_HOURS = 30

# -- configuration --------------------------------------------------------------------------

#: ExperimentConfig.orders by default: each variant in its own order.
_DEFAULT_ORDERS: tuple[str | None, ...] = (None,)

#: The variants' own orders when grid files began to be written (the trace variant's was
#: "cell" until study (j) of docs/results.md made it "width"): a grid that runs a variant
#: in an own order other than this names the order in its hash (:meth:`to_dict`).
_FIRST_OWN_ORDERS = {"paper": "sequential", "trace": "cell", "cleanup": "cell"}


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _int_tuple(name: str, values: Iterable[Any], low: int) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
            raise ValueError(f"{name} must hold integers >= {low}, got {v!r}")
        out.append(int(v))
    if not out:
        raise ValueError(f"{name} must not be empty")
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class ExperimentConfig:
    """A grid of D-CYK runs over one sample of generated sentences.

    The defaults are the paper's grid (docs/results.md): 2,000 sentences generated from G0,
    of 2 to 7 words (the paper's study (a) reads sentences of length <= 7; its other
    studies give no bound, and the records of docs/results.md use the same sample for all
    three), the grammars G0..G4, d in {100, 1000, ..., 6000}, and the paper's two
    variants, each in its own order. Lists are normalised (sorted, without
    repeats; a single value is a list of one), so the same grid always has the same hash.

    Parameters
    ----------
    grammars : sequence of str
        Builtin names or grammar files, each parsed for every sentence. Every word of the
        sample must be a terminal of each of them.
    dims : sequence of int
        Dimensions d (>= 2).
    variants : sequence of str
        Keys of :data:`fastdcyk.options.VARIANTS` ("paper", "trace"); each uses its own
        codebook choice (``VARIANTS[v]["unitary"]``).
    orders : sequence of {None, "sequential", "cell", "width"}
        Orders of the updates in a cell (:data:`fastdcyk.options.ORDERS`), each crossed with
        every variant; None is each variant's own (``VARIANTS[v]["order"]``: paper
        "sequential", trace "width", cleanup "cell"). A pair that two entries resolve to is
        run once. With None, :meth:`to_dict` names the own orders that differ from those
        grid files began with (the trace variant's was "cell"), so that a file parsed in
        the earlier order has another hash and is not resumed in the new one.
    betas : sequence of float
        Sigmoid slopes (default: :data:`~fastdcyk.options.DEFAULT_BETA` only).
    seeds : sequence of int
        Codebook seeds (default: 0 only).
    sentences : int
        Size of the sample.
    source : str
        Grammar the sentences are generated from.
    min_len, max_len : int
        Sentence lengths, inclusive (see :func:`fastdcyk.cfg.generate`).
    sentence_seed : int
        Seed of the sentence generator.
    threshold : float
        Decoder threshold on sigma (the paper's 0.99).
    dtype : {"float32", "float64"}
        Precision of the codebooks and accumulators.
    encoding : {None, "paper", "roles"}
        The encoding of every parse (:data:`fastdcyk.options.ENCODINGS`); None (the default)
        is each variant's own (``VARIANTS[v]["encoding"]``: paper "paper", trace "roles").
    codebooks : {"grammar", "plain"}
        How the codebooks of unitary variants (trace) are built: ``"grammar"`` (the default,
        what :func:`fastdcyk.dcyk` builds) gives the grammar's symbols shifted vectors
        (:meth:`fastdcyk.Codebook.for_grammar`), ``"plain"`` random ones
        (``Codebook(d, seed, unitary=True)``). Always in :meth:`to_dict`: files written
        before the codebooks changed are refused, not resumed with other codebooks.
    grammar_encoding : str
        Encoding of grammar files (default "utf-8"; "latin-1" for NLTK's ATIS grammar).
    to_cnf : bool
        Convert grammars that are not in Chomsky normal form (:meth:`Grammar.to_cnf`)
        instead of refusing them.
    readback : {None, "lstsq", "cancel", "matched"}
        The cleanup variant's read-back (:data:`fastdcyk.options.READBACKS`); None (the
        default) is its own, ``"cancel"`` (``"lstsq"`` before 0.4). Normalised to
        ``"matched"`` when the grid has no cleanup variant (the other variants read with
        their decoders). In :meth:`to_dict` only when it is not ``"matched"``: files of the
        cleanup variant written before the least-squares read-back existed read as
        ``"matched"``, which they were.

    Raises
    ------
    ValueError
        On an empty list, d < 2, an unknown variant, order or encoding, a bad beta, threshold, dtype
        or length.
    """

    grammars: tuple[str, ...] = PAPER_GRAMMARS
    dims: tuple[int, ...] = PAPER_DIMS
    variants: tuple[str, ...] = PAPER_VARIANTS
    betas: tuple[float, ...] = (DEFAULT_BETA,)
    seeds: tuple[int, ...] = (0,)
    sentences: int = 2000
    source: str = "G0"
    min_len: int = 2
    max_len: int = 7
    sentence_seed: int = 0
    threshold: float = DEFAULT_THRESHOLD
    dtype: str = "float32"
    orders: tuple[str | None, ...] = (None,)
    encoding: str | None = None
    codebooks: str = "grammar"
    grammar_encoding: str = "utf-8"
    to_cnf: bool = False
    readback: str | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in ("grammars", "dims", "variants", "betas", "seeds", "orders"):
            value = getattr(self, name)
            if value is None or isinstance(value, str | int | float | os.PathLike):
                put(name, (value,))  # one value, not a list
        grammars = tuple(dict.fromkeys(os.fspath(g) for g in self.grammars))
        if not grammars:
            raise ValueError("grammars must not be empty")
        put("grammars", tuple(sorted(grammars)))
        put("dims", _int_tuple("dims", self.dims, 2))
        variants = tuple(dict.fromkeys(self.variants))
        if not variants:
            raise ValueError("variants must not be empty")
        for v in variants:
            check_choice("variant", v, VARIANTS)
        put("variants", tuple(v for v in VARIANTS if v in variants))
        orders = tuple(dict.fromkeys(self.orders))
        if not orders:
            raise ValueError("orders must not be empty (None: each variant's own order)")
        for o in orders:
            check_choice("order", o, ORDERS, none="each variant's own")
        put("orders", tuple(o for o in (None, *ORDERS) if o in orders))
        betas = [check_beta(b) for b in self.betas]
        if not betas:
            raise ValueError("betas must not be empty")
        put("betas", tuple(sorted(set(betas))))
        put("seeds", _int_tuple("seeds", self.seeds, 0))
        for name in ("sentences", "min_len", "max_len", "sentence_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(f"{name} must be an integer, got {value!r}")
            put(name, int(value))
        if self.sentences < 1:
            raise ValueError(f"sentences must be >= 1, got {self.sentences}")
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(
                f"need 1 <= min_len <= max_len, got min_len={self.min_len}, max_len={self.max_len}"
            )
        put("threshold", check_threshold(self.threshold))
        put("dtype", check_dtype(self.dtype).name)
        put("source", str(self.source))
        check_choice("encoding", self.encoding, ENCODINGS, none="each variant's own")
        check_choice("codebooks", self.codebooks, CODEBOOKS)
        try:
            codecs.lookup(self.grammar_encoding)
        except (LookupError, TypeError):
            raise ValueError(
                f"unknown grammar_encoding {self.grammar_encoding!r}: give a Python codec name "
                "such as 'utf-8' or 'latin-1'"
            ) from None
        if not isinstance(self.to_cnf, bool | np.bool_):
            raise ValueError(f"to_cnf must be True or False, got {self.to_cnf!r}")
        put("to_cnf", bool(self.to_cnf))
        check_choice("readback", self.readback, READBACKS, none="the cleanup variant's own")
        # the read-back applies to the variants whose mode has a choice of one
        own = [resolve(v).mode for v in self.variants]
        choosing = [mode.readbacks for mode in own if mode.chooses_readback]
        if choosing:
            put("readback", self.readback or choosing[0][0])
        elif self.readback not in (None, own[0].readbacks[0]):
            able = [v for v in VARIANTS if resolve(v).mode.chooses_readback]
            raise ValueError(
                f"readback={self.readback!r} applies to the {' and '.join(able)} variant only: "
                "add it to the variants, or leave readback out"
            )
        else:
            put("readback", own[0].readbacks[0])

    # -- serialisation ------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON types.

        ``orders``, ``encoding`` and ``codebooks`` are always there, so that a configuration
        differs in hash from those written before they existed: their trace records were
        parsed with another order, encoding or codebook than the trace variant's of today,
        and a run must not add records of the new default to such a file (it refuses the
        file instead).
        """
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        # how grammar files are read: left out at their defaults, so that the hash of every
        # grid that reads UTF-8 files in CNF is the one it had before these options existed
        # (the hash covers the grammars' text as read in any case)
        for name, default in (
            ("grammar_encoding", "utf-8"),
            ("to_cnf", False),
            ("readback", "matched"),
        ):
            if out[name] == default:
                del out[name]
        # a variant run in an own order other than the one grid files began with (the trace
        # variant's "width"): named, so that a file of the earlier order is refused, not
        # resumed in another order
        if None in self.orders:
            moved = {
                v: VARIANTS[v]["order"]
                for v in self.variants
                if VARIANTS[v]["order"] != _FIRST_OWN_ORDERS.get(v, VARIANTS[v]["order"])
            }
            if moved:
                out["own_orders"] = moved
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExperimentConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error, a missing one takes its
        default (``orders``: each variant's own order)."""
        known = set(cls.__dataclass_fields__)
        data = dict(data)
        own = data.pop("own_orders", None)  # derived from the variants (to_dict)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown configuration keys: {sorted(unknown)}")
        data = {"readback": "matched", **data}  # to_dict leaves "matched" out
        if own is not None:
            config = cls.from_dict(data)
            if config.to_dict().get("own_orders") != own:
                raise ValueError(
                    f"the configuration ran its variants in their own orders of then, {own}; "
                    "this version's are "
                    + ", ".join(f"{v} {VARIANTS[v]['order']}" for v in config.variants)
                    + ": name the orders (orders=...) to rerun it"
                )
            return config
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    def load_grammars(self) -> dict[str, Grammar]:
        """Every grammar of the grid and the source, by its spec.

        Raises
        ------
        GrammarError
            For an unknown builtin name, a missing file or an invalid grammar.
        """
        out = {}
        cnf = "convert" if self.to_cnf else "allow"
        for spec in (*self.grammars, self.source):
            if spec not in out:
                grammar = Grammar.load(spec, cnf=cnf, encoding=self.grammar_encoding)
                if not grammar.is_cnf:
                    raise GrammarError(
                        f"grammar {spec!r} is not in Chomsky normal form: convert it with "
                        "to_cnf=True (fastdcyk experiment --to-cnf)"
                    )
                out[spec] = grammar
        return out

    def hash(self, grammars: dict[str, Grammar] | None = None) -> str:
        """sha256 of the canonical JSON of the configuration and of its grammars' text.

        Hashing the text, not just the name, means that editing a grammar file (or a
        builtin grammar changing between releases) gives another configuration.
        """
        texts = self.grammar_hashes(grammars)
        return _sha256(_canonical({"config": self.to_dict(), "grammar_sha256": texts}))

    def grammar_hashes(self, grammars: dict[str, Grammar] | None = None) -> dict[str, str]:
        """sha256 of the text of each grammar of the grid (and of the source), by its spec.

        A results file's header keeps them (``grammar_sha256``), so that a run refused
        after a grammar was edited can say which grammar changed.
        """
        grammars = self.load_grammars() if grammars is None else grammars
        return {spec: _sha256(grammars[spec].to_string()) for spec in sorted(grammars)}

    def sample(self, grammars: dict[str, Grammar] | None = None) -> list[tuple[str, ...]]:
        """The generated sentences, in index order."""
        grammars = self.load_grammars() if grammars is None else grammars
        return generate(
            grammars[self.source],
            self.sentences,
            min_len=self.min_len,
            max_len=self.max_len,
            seed=self.sentence_seed,
        )

    def variant_orders(self) -> tuple[tuple[str, str], ...]:
        """The (variant, order) pairs of the grid, orders resolved, each once.

        Ordered by variant, then as in :attr:`orders` (None, the variant's own, first).
        """
        pairs = {}
        for v in self.variants:
            for o in self.orders:
                pairs[v, VARIANTS[v]["order"] if o is None else o] = None
        return tuple(pairs)

    def grid_size(self) -> int:
        """Records of the complete grid."""
        return (
            len(self.grammars)
            * len(self.variant_orders())
            * len(self.betas)
            * len(self.dims)
            * len(self.seeds)
            * self.sentences
        )
