"""The codebook: a random vector per symbol, one fixed permutation, and their spectra.

Every symbol s of the four namespaces (terminals, nonterminals, span indices 0, 1, 2, ...,
and the right-child role vectors X' of the nonterminals, used by ``encoding="roles"``)
gets a vector v_s with i.i.d. entries N(0, 1/d), so that v_s . v_s ~ 1 and v_s . v_t ~ 0.
Its circulant C_s is kept as the real FFT of v_s (C_s x = v_s (*) x, circular convolution),
and the shuffled operators of the paper are

.. math::

    [s]^+ = C_s \\Phi, \\qquad [s]^- = \\Phi^T C_s^T = ([s]^+)^T .

Vectors are drawn lazily and deterministically: each symbol's random stream is derived from
(seed, namespace, symbol) alone, so the same seed gives the same vector whatever order the
symbols are asked in, in any process.

Span indices of a unitary codebook are by default *shifted* (``index_vectors="shifted"``):
index k is one random unitary vector u cyclically shifted by s_k, where s_0, s_1, ... is a
Sidon set modulo d (all differences s_a - s_b, a != b, distinct mod d; :func:`sidon_offsets`).
Then C_a^T C_b is a pure cyclic shift for a != b, with a zero diagonal, and so is
C_a^T C_b C_c^T C_e unless {a, e} = {b, c}: a readout whose terms differ from a true match
only in span indices reads exactly 0 instead of N(0, 1/d) (docs/method.md, section 3).
Indices beyond the Sidon set that fits in d (21 at d = 1024) are drawn at random.

A unitary codebook can give the symbols of a grammar the same structure
(``shifted_symbols``, :meth:`Codebook.for_grammar`; what :func:`fastdcyk.dcyk` builds for
the trace variant): the listed symbols share one random base vector, shifted by the offsets
of a second Sidon set. A pair of superposed terms whose spans cancel and whose symbols
differ from a rule then reads -+1/d instead of N(0, 1/d), the same at every split and cell
where the pair occurs: that value was the trace variant's noise floor on ambiguous
grammars (docs/method.md, section 3). Symbols beyond the set that fits in d are random.

Symbol vectors of a unitary codebook are also *zero-mean* by default (``zero_mean``): their
constant (DC) Fourier coefficient is 0. The all-ones vector is an eigenvector of every
circulant and of every permutation, so without this every superposed pair of a readout,
whatever its symbols and spans, adds the product of its vectors' DC coefficients (+-1 for
unitary vectors) over d, and these terms add up coherently as the chart fills
(docs/method.md, section 3, "The constant direction"). Every term of the accumulators holds
a symbol vector, so span indices keep their constant coefficient.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from fastdcyk.checks import check_choice, check_dim, check_dtype, check_int
from fastdcyk.hrr import buffers
from fastdcyk.hrr import memory as system_memory
from fastdcyk.hrr.buffers import WorkspaceHolder
from fastdcyk.hrr.codebook_file import KINDS, CodebookFile
from fastdcyk.hrr.fft import FFT, get_fft, spectrum_dtype
from fastdcyk.hrr.operators import Operator
from fastdcyk.hrr.sidon import check_shifted_symbols, grammar_symbols, sidon_offsets
from fastdcyk.hrr.streams import normal_rows
from fastdcyk.signatures import refuses_renamed

__all__ = ["INDEX_VECTORS", "KINDS", "Codebook", "grammar_symbols", "sidon_offsets"]

#: Allocations below this many bytes are made without asking how much memory is left.
_CHECKED_BYTES = 64 << 20


_KIND_KEY = {"terminal": 1, "nonterminal": 2, "index": 3, "right": 4}
_PERM_KEY = 0x5EED
_SHIFT_BASE_KEY = 0xBA5E
_SYMBOL_BASE_KEY = 0x5B5E
INDEX_VECTORS = ("random", "shifted")


def _symbol_key(kind: str, sym: Any) -> tuple[int, ...]:
    """Integers that identify a symbol independently of Python's randomised str hash."""
    if kind == "index":
        return (int(sym),)
    digest = hashlib.blake2b(str(sym).encode("utf-8"), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def _check_kind(kind: str) -> str:
    if kind not in _KIND_KEY:
        raise ValueError(f"unknown symbol kind {kind!r}: use one of {KINDS}")
    return kind


def _check_index(sym: Any) -> int:
    if isinstance(sym, bool) or not isinstance(sym, int | np.integer) or sym < 0:
        raise ValueError(f"a span index is an integer >= 0, got {sym!r}")
    return int(sym)


class Codebook(WorkspaceHolder, CodebookFile):
    """Random symbol vectors, their spectra and the fixed permutation Phi, for one d.

    Parameters
    ----------
    d : int
        The dimension (>= 2).
    seed : int, default 0
        Seed of every draw: the permutation and each symbol's vector.
    dtype : {"float32", "float64"}, default "float32"
        Precision of the vectors, spectra (complex64 / complex128) and of every matrix the
        operators are applied to.
    unitary : bool, default False
        Draw unitary vectors (every rfft coefficient scaled to magnitude 1), for which
        ``C_s^T C_s = I`` exactly and [s]- is the exact inverse of [s]+ (on the zero-mean
        vectors when ``zero_mean``).
    shifted_symbols : sequence of (kind, symbol), optional
        Symbols (kinds "terminal", "nonterminal", "right"), in priority order, whose
        vectors are one zero-mean unitary base vector shifted by the k-th offset of a Sidon
        set modulo d and given a random sign, k their position here: then C_a^T C_b and
        C_a^T C_b C_c^T C_e are pure shifts, with zero trace on zero-mean vectors unless
        they cancel, so near matches of symbols read -+1/d exactly. Needs ``unitary``.
        Symbols past the set that fits in d (:func:`sidon_offsets`), and all others, get
        random vectors. Vectors then depend on the seed and the symbol's position in this
        list. :meth:`for_grammar` lists a grammar's symbols (:func:`grammar_symbols`).
    zero_mean : bool, optional
        Set the constant Fourier coefficient of every drawn symbol vector (terminals,
        nonterminals, right-child roles; not span indices) to 0 (default: ``unitary``).
        Then ``C_s^T C_s = I - J/d`` for a unitary vector (J the all-ones matrix): the
        identity on zero-mean vectors, and 0 on the constant direction, which every
        circulant and permutation leaves in place and through which all superposed terms
        of a readout would otherwise add up (see the module's notes).
    index_vectors : {"shifted", "random"}, optional
        How span indices get their vectors. ``"shifted"`` (the default of a unitary codebook,
        and only possible for one): one random unitary vector shifted by a Sidon set of
        offsets, so that distinct indices are exactly orthogonal and span mismatches cancel
        to 0 (see the module's notes); indices beyond the set that fits in d are random.
        ``"random"`` (the default otherwise): a random vector per index, like every symbol.
    fft : {"auto", "scipy", "pyfftw", "numpy"} or FFT, default "auto"
        The FFT library that applies operators to dense matrices
        (:func:`~fastdcyk.hrr.fft.get_fft`; the keyword was ``engine`` before 0.4).
    threads : int, optional
        FFT threads; all cores by default.

    Notes
    -----
    Nothing of size d is allocated until it is needed: the permutation is drawn on first
    use (:attr:`perm`), each vector when its symbol is first asked for. Such a draw that
    cannot fit in the memory left (the system's available memory, bounded by the process's
    ``ulimit -v``) raises a MemoryError that says so, instead of being killed part-way.

    A codebook owns the work buffers its operators use. Calls that use them (applying an
    operator, a parse or a decoding on the numpy backend) hold the codebook's lock, so
    threads sharing one codebook get correct results but take turns; to parse in parallel
    threads, give each its own codebook with the same seed (the same vectors and
    permutation). The torch backend's parses use tensors of their own and take no lock
    (what they keep in the codebook's cache for the next parse is put and replaced whole),
    so they run side by side. A pickled codebook leaves its work buffers behind.

    Examples
    --------
    >>> cb = Codebook(64, seed=1)
    >>> op = cb.plus("terminal", "a") @ cb.minus("terminal", "a")
    >>> op
    Operator(d=64, float32: C)
    """

    @refuses_renamed
    def __init__(
        self,
        d: int,
        seed: int = 0,
        dtype: Any = "float32",
        *,
        unitary: bool = False,
        index_vectors: str | None = None,
        shifted_symbols: Iterable[tuple[str, Any]] = (),
        zero_mean: bool | None = None,
        fft: str | FFT = "auto",
        threads: int | None = None,
    ) -> None:
        slots = check_shifted_symbols(shifted_symbols)
        if slots and not unitary:
            raise ValueError(
                "shifted_symbols needs unitary=True: shifts of a non-unitary vector are not "
                "orthogonal"
            )
        if zero_mean is None:
            zero_mean = unitary
        if not isinstance(zero_mean, bool | np.bool_):
            raise ValueError(f"zero_mean must be True, False or None, got {zero_mean!r}")
        if index_vectors is None:
            index_vectors = "shifted" if unitary else "random"
        check_choice("index_vectors", index_vectors, INDEX_VECTORS)
        if index_vectors == "shifted" and not unitary:
            raise ValueError(
                'index_vectors="shifted" needs unitary=True: shifts of a non-unitary vector '
                "are not orthogonal"
            )
        self.d = check_dim(d)
        self.seed = check_int("seed", seed, 0)
        self.dtype = check_dtype(dtype)
        self.cdtype = spectrum_dtype(self.dtype)
        self.unitary = bool(unitary)
        self.zero_mean = bool(zero_mean)
        self.index_vectors = index_vectors
        self._index_base: np.ndarray | None = None
        self.shifted_symbols = tuple(slots)
        self._symbol_slot = {key: k for k, key in enumerate(slots)}
        self._symbol_base: np.ndarray | None = None
        self.fft = get_fft(fft, threads)
        self._vectors: dict[tuple[str, Any], np.ndarray] = {}
        self._spectra: dict[tuple[str, Any], np.ndarray] = {}
        self._fixed = False  # True for a codebook built from the user's vectors
        self._perm: np.ndarray | None = None  # drawn on first use (see perm)
        self._powers: dict[int, np.ndarray] | None = None
        self.workspace = buffers.Workspace(self.fft.empty)

    @classmethod
    @refuses_renamed
    def for_grammar(cls, grammar: Any, d: int, seed: int = 0, **kwargs: Any) -> Codebook:
        """A unitary codebook whose vectors for ``grammar``'s symbols are shifted.

        ``Codebook(d, seed, unitary=True, shifted_symbols=grammar_symbols(grammar),
        **kwargs)``: the codebook :func:`fastdcyk.dcyk` builds for the trace variant.

        Examples
        --------
        >>> import fastdcyk
        >>> cb = Codebook.for_grammar(fastdcyk.Grammar.builtin("G0"), 256)
        >>> cb
        Codebook(d=256, seed=0, float32, unitary, 13 shifted symbols, fft=scipy)
        """
        kwargs.setdefault("unitary", True)
        return cls(d, seed, shifted_symbols=grammar_symbols(grammar), **kwargs)

    # -- construction from the user's own vectors -------------------------------------------

    @classmethod
    @refuses_renamed
    def from_vectors(
        cls,
        *,
        terminals: Mapping[Any, Any] | None = None,
        nonterminals: Mapping[Any, Any] | None = None,
        indices: Mapping[int, Any] | Iterable[Any] | None = None,
        right: Mapping[Any, Any] | None = None,
        permutation: Any,
        dtype: Any = "float32",
        fft: str | FFT = "auto",
        threads: int | None = None,
    ) -> Codebook:
        """A codebook of the user's own vectors and permutation.

        Parameters
        ----------
        terminals, nonterminals : mapping of symbol to a length-d array
        indices : sequence of length-d arrays (index k is the k-th) or mapping int -> array
        right : mapping of nonterminal to a length-d array, optional
            The right-child role vectors X' (only ``encoding="roles"`` reads them).
        permutation : array of int
            A permutation of ``range(d)``, with the convention ``(Phi x)[k] = x[perm[k]]``.
        dtype : {"float32", "float64"}
            Vectors are converted to it; they must be finite, before and after the
            conversion.

        Raises
        ------
        ValueError
            On a wrong length, a non-finite or non-real value (or one that overflows
            ``dtype``), or a permutation that is not one of ``range(d)``. Asking the codebook
            later for a symbol it does not hold raises a KeyError that names it.
        """
        perm = np.asarray(permutation)
        if perm.ndim != 1 or perm.size < 2:
            raise ValueError("permutation must be a 1-D array of length d >= 2")
        if not np.issubdtype(perm.dtype, np.integer):
            raise ValueError(f"permutation must hold integers, got dtype {perm.dtype}")
        d = perm.size
        if not np.array_equal(np.sort(perm), np.arange(d)):
            raise ValueError(f"permutation is not a permutation of range({d})")
        self = cls.__new__(cls)
        self.d = d
        self.seed = -1
        self.dtype = check_dtype(dtype)
        self.cdtype = spectrum_dtype(self.dtype)
        self.unitary = False
        self.zero_mean = False
        self.index_vectors = "given"
        self.shifted_symbols = ()
        self._symbol_slot = {}
        self._symbol_base = None
        self.fft = get_fft(fft, threads)
        self._vectors = {}
        self._spectra = {}
        self._fixed = True
        self.workspace = buffers.Workspace(self.fft.empty)
        self._perm = None
        self._powers = None
        self._set_permutation(perm.astype(np.intp))
        if isinstance(indices, Mapping):
            index_items = indices.items()
        else:
            index_items = enumerate(indices or ())
        for name, given in (
            ("terminals", terminals),
            ("nonterminals", nonterminals),
            ("right", right),
        ):
            if given is not None and not isinstance(given, Mapping):
                raise TypeError(
                    f"{name} must be a mapping of symbol to a length-d array, got "
                    f"{type(given).__name__}"
                )
        for kind, items in (
            ("terminal", (terminals or {}).items()),
            ("nonterminal", (nonterminals or {}).items()),
            ("index", index_items),
            ("right", (right or {}).items()),
        ):
            for sym, vec in items:
                if kind == "index":
                    sym = _check_index(sym)
                v = np.asarray(vec)
                if v.shape != (d,):
                    raise ValueError(
                        f"{kind} {sym!r}: vector of shape {v.shape}, expected ({d},) "
                        "to match the permutation's length"
                    )
                if not (np.issubdtype(v.dtype, np.floating) or np.issubdtype(v.dtype, np.integer)):
                    raise ValueError(f"{kind} {sym!r}: vector must be real, got dtype {v.dtype}")
                if not np.all(np.isfinite(v)):
                    raise ValueError(f"{kind} {sym!r}: vector has non-finite values")
                with np.errstate(over="ignore"):
                    converted = v.astype(self.dtype)
                if not np.all(np.isfinite(converted)):
                    big = float(np.max(np.abs(v)))
                    raise ValueError(
                        f"{kind} {sym!r}: values overflow {self.dtype} (largest magnitude "
                        f"{big:.3g}, the dtype's limit is {np.finfo(self.dtype).max:.3g}): "
                        'scale the vectors down or pass dtype="float64"'
                    )
                self._vectors[(kind, sym)] = converted
        return self

    def _set_permutation(self, perm: np.ndarray) -> None:
        perm = np.ascontiguousarray(perm, dtype=np.intp)
        perm.setflags(write=False)
        ident = np.arange(self.d)
        inverse = np.empty_like(perm)
        inverse[perm] = ident
        inverse.setflags(write=False)
        ident.setflags(write=False)
        self._powers = {0: ident, 1: perm, -1: inverse}
        self._perm = perm  # last: another thread may read it as soon as it is set

    @property
    def perm(self) -> np.ndarray:
        """The permutation Phi as a read-only index array, ``(Phi x)[k] = x[perm[k]]``.

        Drawn from the seed on first use.

        Raises
        ------
        MemoryError
            When the permutation, its inverse and the identity (three arrays of d integers)
            cannot fit in the memory left.
        """
        perm = self._perm
        if perm is None:
            self._reserve(3 * self.d * np.dtype(np.intp).itemsize, "its permutation")
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(_PERM_KEY,)))
            self._set_permutation(rng.permutation(self.d))
            perm = self._perm
        return perm

    def _reserve(self, nbytes: int, what: str) -> None:
        """Raise MemoryError, before allocating, when ``nbytes`` cannot fit in the memory left.

        Only large allocations are checked (from :data:`_CHECKED_BYTES`): reading what is
        left costs more than a small allocation. ``nbytes`` is a rough peak, so a quarter of
        the memory left is kept free beside it.
        """
        if nbytes < _CHECKED_BYTES:
            return
        avail = system_memory.available_memory()
        if avail is not None and nbytes > 0.75 * avail:
            need, have = system_memory.format_bytes(nbytes), system_memory.format_bytes(avail)
            raise MemoryError(
                f"a codebook of dimension d = {self.d} needs about {need} for {what}, which "
                f"does not fit in the {have} of memory available: use a smaller d"
            )

    # -- symbols ---------------------------------------------------------------------------

    def __repr__(self) -> str:
        src = "from_vectors" if self._fixed else f"seed={self.seed}"
        extra = ", unitary" if self.unitary else ""
        if self.index_vectors == "random" and self.unitary:
            extra += ", index_vectors='random'"
        if self.shifted_symbols:
            extra += f", {len(self.shifted_symbols)} shifted symbols"
        if self.zero_mean != self.unitary:
            extra += f", zero_mean={self.zero_mean}"
        return f"Codebook(d={self.d}, {src}, {self.dtype}{extra}, fft={self.fft.name})"

    def symbols(self, kind: str) -> list[Any]:
        """The symbols of a namespace held (drawn or given) so far."""
        _check_kind(kind)
        return [s for (k, s) in self._vectors if k == kind]

    def vector(self, kind: str, sym: Any) -> np.ndarray:
        """The vector of a symbol (read-only), drawn on first use.

        Raises
        ------
        KeyError
            For a codebook built from vectors that does not hold this symbol.
        """
        _check_kind(kind)
        if kind == "index":
            sym = _check_index(sym)
        key = (kind, sym)
        v = self._vectors.get(key)
        if v is None:
            if self._fixed:
                raise KeyError(
                    f"this codebook was built from vectors and has no {kind} {sym!r}; "
                    f"it holds {'indices' if kind == 'index' else kind + 's'} "
                    f"{self.symbols(kind)!r}"
                )
            v = self._draw(kind, sym)
            self._vectors[key] = v
        return v

    def _draw(self, kind: str, sym: Any) -> np.ndarray:
        if kind == "index" and self.index_vectors == "shifted":
            offsets = sidon_offsets(self.d, sym + 1)
            if sym < len(offsets):
                return self._shifted(sym, offsets[sym])
        slot = self._symbol_slot.get((kind, sym))
        if slot is not None:
            offsets = sidon_offsets(self.d, slot + 1)
            if slot < len(offsets):
                return self._shifted(slot, offsets[slot], symbol=True)
        # span indices keep their constant coefficient (distinct shifted indices stay exactly
        # orthogonal); every superposed term holds a symbol vector, whose zero mean suffices
        zero_mean = self.zero_mean and kind != "index"
        return self._random(_KIND_KEY[kind], *_symbol_key(kind, sym), zero_mean=zero_mean)

    def _shifted(self, k: int, offset: int, symbol: bool = False) -> np.ndarray:
        """Index k's vector (or shifted symbol k's): +-1 (a random sign) times a shared base
        vector, shifted. Indices and symbols have separate bases (the symbols' is zero-mean
        when ``zero_mean``).

        The sign keeps span mismatches zero-mean where a readout meets a product of shifts
        and permutations: such a product is a permutation matrix, whose trace (a count of
        fixed points) is >= 0; without signs those traces would add up.
        """
        key = _SYMBOL_BASE_KEY if symbol else _SHIFT_BASE_KEY
        base = self._symbol_base if symbol else self._index_base
        if base is None:
            base = self._random(key, zero_mean=symbol and self.zero_mean)
            if symbol:
                self._symbol_base = base
            else:
                self._index_base = base
        ss = np.random.SeedSequence(self.seed, spawn_key=(key, k))
        sign = 1.0 if np.random.default_rng(ss).random() < 0.5 else -1.0
        v = (sign * np.roll(base, offset)).astype(self.dtype)
        v.setflags(write=False)
        return v

    def _random(self, *key: int, zero_mean: bool = False) -> np.ndarray:
        return self._random_many([key], zero_mean=zero_mean)[0]

    def _random_many(self, keys: list[tuple[int, ...]], *, zero_mean: bool) -> np.ndarray:
        """The random vectors of ``keys`` (rows, read-only), each from its own stream.

        Drawn in float64 (so that float32 and float64 codebooks of one seed agree to
        rounding) and transformed together: a batched FFT gives each row the bits of its own
        one-row FFT, so a vector does not depend on which others were drawn with it.
        """
        step = max(1, (1 << 22) // self.d)  # rows per block: 32 MB of float64 draws
        # float64 draws and their half spectrum (complex128), a block at a time, beside the
        # vectors themselves
        what = "a symbol vector" if len(keys) == 1 else f"{len(keys)} symbol vectors"
        need = 48 * self.d * min(step, len(keys)) + self.dtype.itemsize * self.d * len(keys)
        self._reserve(need, what)
        out = np.empty((len(keys), self.d), self.dtype)
        for r0 in range(0, len(keys), step):
            block = keys[r0 : r0 + step]
            v = normal_rows(self.seed, block, self.d)  # each row from its own stream
            v /= np.sqrt(self.d)
            if self.unitary or zero_mean:
                f = np.fft.rfft(v, axis=1)
                if self.unitary:  # f / |f| where |f| > 0, else 1
                    mag = np.abs(f)
                    nonzero = mag > 0
                    np.divide(f, mag, out=f, where=nonzero)
                    f[~nonzero] = 1.0
                if zero_mean:
                    f[:, 0] = 0.0
                v = np.fft.irfft(f, n=self.d, axis=1)
            out[r0 : r0 + len(block)] = v
        out.setflags(write=False)
        return out

    def vectors(self, kind: str, syms: Any) -> np.ndarray:
        """The vectors of several symbols of one kind, a new (len(syms), d) array; those
        not drawn yet are drawn together (the same vectors :meth:`vector` gives, faster
        for a grammar's thousands of symbols)."""
        _check_kind(kind)
        syms = [_check_index(x) for x in syms] if kind == "index" else list(syms)
        missing = [x for x in dict.fromkeys(syms) if (kind, x) not in self._vectors]
        plain = [x for x in missing if self._plain(kind, x)]
        if plain and not self._fixed:
            zero_mean = self.zero_mean and kind != "index"
            keys = [(_KIND_KEY[kind], *_symbol_key(kind, x)) for x in plain]
            for x, v in zip(plain, self._random_many(keys, zero_mean=zero_mean), strict=True):
                self._vectors[(kind, x)] = v
        if self._fixed or len(plain) < len(missing):
            for x in missing:
                self.vector(kind, x)  # shifted ones, or a KeyError naming a missing one
        if not syms:
            return np.zeros((0, self.d), self.dtype)
        return np.stack([self._vectors[(kind, x)] for x in syms])

    def spectra(self, kind: str, syms: Any) -> np.ndarray:
        """The spectra of several symbols of one kind, a new (len(syms), d // 2 + 1) array
        (as :meth:`spectrum`, each cached); the missing ones computed together."""
        keys = [int(x) if kind == "index" else x for x in syms]
        missing = [x for x in dict.fromkeys(keys) if (kind, x) not in self._spectra]
        if missing:
            self._reserve(32 * self.d * len(missing), "symbols' spectra")
            vecs = self.vectors(kind, missing).astype(np.float64, copy=False)
            spec = np.fft.rfft(vecs, axis=1).astype(self.cdtype, copy=False)
            spec.setflags(write=False)
            for x, row in zip(missing, spec, strict=True):
                self._spectra[(kind, x)] = row
        if not keys:
            return np.zeros((0, self.d // 2 + 1), self.cdtype)
        return np.stack([self._spectra[(kind, x)] for x in keys])

    def _plain(self, kind: str, sym: Any) -> bool:
        """Whether a symbol's vector is drawn at random (not shifted from a base)."""
        if kind == "index" and self.index_vectors == "shifted":
            if sym < len(sidon_offsets(self.d, sym + 1)):
                return False
        slot = self._symbol_slot.get((kind, sym))
        return slot is None or slot >= len(sidon_offsets(self.d, slot + 1))

    def spectrum(self, kind: str, sym: Any) -> np.ndarray:
        """The rfft (length d // 2 + 1, complex) of a symbol's vector, cached."""
        key = (kind, int(sym) if kind == "index" else sym)
        s = self._spectra.get(key)
        if s is None:
            v = self.vector(kind, sym)
            self._reserve(32 * self.d, "a symbol's spectrum")
            s = np.fft.rfft(v.astype(np.float64)).astype(self.cdtype)
            s.setflags(write=False)
            self._spectra[key] = s
        return s

    # -- the permutation -------------------------------------------------------------------

    def permutation_index(self, k: int) -> np.ndarray:
        """Index array ``idx`` with ``(Phi^k x)[r] = x[idx[r]]`` (k may be negative)."""
        if isinstance(k, bool) or not isinstance(k, int | np.integer):
            raise TypeError(f"the power k of Phi must be an integer, got {k!r}")
        k = int(k)
        if self._powers is None:
            self.perm  # noqa: B018 - draws the permutation and sets the first powers
        idx = self._powers.get(k)
        if idx is None:
            step = 1 if k > 0 else -1
            prev = self.permutation_index(k - step)
            base = self._powers[1 if k > 0 else -1]
            idx = base[prev]
            idx.setflags(write=False)
            self._powers[k] = idx
        return idx

    # -- operators -------------------------------------------------------------------------

    def plus(self, kind: str, sym: Any) -> Operator:
        """The operator [s]+ = C_s Phi, e.g. ``cb.plus("terminal", "a")``."""
        return Operator(self, (self.spectrum(kind, sym), 1))

    def minus(self, kind: str, sym: Any) -> Operator:
        """The operator [s]- = Phi^T C_s^T = ([s]+)^T, e.g. ``cb.minus("index", 3)``."""
        return self.plus(kind, sym).T

    def circulant(self, vector: Any = None, *, spectrum: Any = None) -> Operator:
        """The circulant operator of a length-d vector (or of its rfft spectrum)."""
        if (vector is None) == (spectrum is None):
            raise ValueError("give exactly one of vector= or spectrum=")
        if spectrum is None:
            v = np.asarray(vector, dtype=np.float64)
            if v.shape != (self.d,):
                raise ValueError(f"vector of shape {v.shape}, expected ({self.d},)")
            if not np.all(np.isfinite(v)):
                raise ValueError("vector has non-finite values (NaN or inf)")
            spectrum = np.fft.rfft(v)
        s = np.asarray(spectrum).astype(self.cdtype)
        if s.shape != (self.d // 2 + 1,):
            raise ValueError(f"spectrum of shape {s.shape}, expected ({self.d // 2 + 1},)")
        return Operator(self, (s,))

    def phi(self, power: int = 1) -> Operator:
        """The permutation operator Phi**power (``phi(-1)`` is Phi^T)."""
        if isinstance(power, bool) or not isinstance(power, int | np.integer):
            raise ValueError(f"power must be an integer, got {power!r}")
        return Operator(self, (int(power),))

    def identity(self) -> Operator:
        """The identity operator."""
        return Operator(self, ())

    # -- pickling: without the lock and the work buffers ------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()  # the workspace pickles empty

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "perm" in state:  # pickled before the permutation was drawn lazily
            state["_perm"] = state.pop("perm")
            state.pop("_inverse", None)
        state.setdefault("_perm", None)
        state.setdefault("_powers", None)
        if "workspace" not in state:  # pickled before the workspace had its own class
            state.pop("_workspace", None)
            state["workspace"] = buffers.Workspace(state["fft"].empty)
        self.__dict__.update(state)

    @property
    def engine(self) -> Any:
        """Renamed :attr:`fft` in 0.4 (refused until 0.5)."""
        raise AttributeError(
            "Codebook.engine was renamed Codebook.fft in fastdcyk 0.4 ('engine' names the "
            "package fastdcyk.engine only)"
        )

    @property
    def fixed(self) -> bool:
        """Whether the codebook was built from given vectors (:meth:`from_vectors`): it
        holds those symbols only, where a seeded codebook draws any symbol on demand."""
        return self._fixed

    def symbol_bytes(self) -> int:
        """Bytes held in the symbols' vectors and spectra drawn so far (safe to call while
        another thread's parse draws more: each dict is copied at once, under the GIL)."""
        vectors, spectra = list(self._vectors.values()), list(self._spectra.values())
        # the dicts only grow, in insertion order: sum the symbols added since the last call
        # (a parse asks after every sentence, and a real grammar's codebook holds thousands)
        nv, ns, total = getattr(self, "_bytes_seen", (0, 0, 0))
        if nv > len(vectors) or ns > len(spectra):
            nv, ns, total = 0, 0, 0
        total += sum(a.nbytes for a in vectors[nv:]) + sum(a.nbytes for a in spectra[ns:])
        self._bytes_seen = (len(vectors), len(spectra), total)
        return total
