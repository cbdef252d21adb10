"""Lazy holographic operators: products of circulants and powers of one permutation.

An :class:`Operator` is ``scale * F_1 F_2 ... F_m`` where each factor is either a circulant
(kept as the rfft of its first column, its *spectrum*) or a power ``Phi^k`` of the
codebook's permutation. Nothing d x d is formed: composition only concatenates factor lists
and simplifies them eagerly,

- neighbouring permutation powers add (``Phi Phi^T`` cancels: ``Phi^1 Phi^-1 = Phi^0 = I``),
- neighbouring circulants merge (their spectra multiply),
- a transpose reverses the factors, conjugates each spectrum and negates each power,
- operators with at most one circulant and the same permutations around it add by adding
  spectra (so ``sum_a [a]+`` and ``sum [B]+ [C]-`` are single factors).

Applying an operator to a dense matrix costs one batched real FFT round trip per circulant
(along axis 0 from the left, axis 1 from the right) and one gather per permutation power.
With the default FFT library the whole chain runs on one cache-sized block of columns (rows) at a
time, spread over threads, with a few block-sized work buffers per thread
(:mod:`fastdcyk.hrr.blocks`); the numpy and pyfftw libraries make one pass over the matrix per
step, with at most one real and one complex work buffer of the matrix's size. Work buffers
belong to the codebook and are reused across calls.
"""

from __future__ import annotations

import numbers
from typing import Any, Protocol

import numpy as np

from fastdcyk.hrr import blocks, buffers, kernels
from fastdcyk.hrr.buffers import Workspace
from fastdcyk.hrr.fft import FFT

__all__ = ["Operator", "OperatorSpace"]


class OperatorSpace(Protocol):
    """What an operator needs of its codebook (:class:`fastdcyk.hrr.codebook.Codebook`): the
    dimension and dtypes, the FFT library, the permutation's powers and the work buffers
    (:class:`~fastdcyk.hrr.buffers.Workspace`, whose lock a chain holds)."""

    d: int
    dtype: np.dtype
    cdtype: np.dtype
    fft: FFT
    workspace: Workspace

    def permutation_index(self, k: int) -> np.ndarray: ...


# Factor = np.ndarray (a spectrum, 1-D complex) | int (a nonzero power of Phi)


def _is_circ(f: Any) -> bool:
    return isinstance(f, np.ndarray)


def _simplify(factors: list) -> list:
    """Canonical form: no zero power, no two neighbouring powers, no two neighbouring spectra."""
    out: list = []
    for f in factors:
        if out and _is_circ(f) and _is_circ(out[-1]):
            out[-1] = out[-1] * f
        elif out and not _is_circ(f) and not _is_circ(out[-1]):
            out[-1] += f
            if out[-1] == 0:
                out.pop()  # Phi^k Phi^-k = I: the circulants on either side now meet
        elif _is_circ(f) or f != 0:
            out.append(f)
    if any(_is_circ(a) and _is_circ(b) for a, b in zip(out, out[1:], strict=False)):
        return _simplify(out)
    return out


class Operator:
    """A d x d linear operator ``scale * F_1 ... F_m`` over one :class:`Codebook`.

    Build operators from a codebook (``cb.plus``, ``cb.minus``, ``cb.phi``, ``cb.circulant``,
    ``cb.identity``) and combine them with ``@``, ``.T``, ``+``, ``-`` and scalars.
    ``op @ X`` and ``X @ op`` apply the operator to a dense ``(d, k)`` / ``(k, d)`` array (or a
    length-d vector) of the codebook's dtype by FFT and return a new array; :meth:`apply` can
    write into a given output instead.

    Attributes
    ----------
    codebook : Codebook
        Or anything with the attributes of :class:`OperatorSpace`.
    factors : tuple
        The simplified factors, leftmost first: 1-D complex spectra and nonzero ints
        (powers of Phi).
    scale : float
    """

    __slots__ = ("codebook", "factors", "scale")
    __array_ufunc__ = None  # so that ndarray @ Operator defers to Operator.__rmatmul__

    def __init__(self, codebook: OperatorSpace, factors: tuple = (), scale: float = 1.0) -> None:
        self.codebook = codebook
        self.factors = tuple(_simplify(list(factors)))
        self.scale = float(scale)

    # -- description -----------------------------------------------------------------------

    @property
    def d(self) -> int:
        return self.codebook.d

    @property
    def shape(self) -> tuple[int, int]:
        return (self.codebook.d, self.codebook.d)

    @property
    def dtype(self) -> np.dtype:
        return self.codebook.dtype

    @property
    def n_circulants(self) -> int:
        return sum(1 for f in self.factors if _is_circ(f))

    def skeleton(self) -> str:
        """The factor pattern, e.g. ``"C Phi C Phi^-1"``."""
        parts = []
        for f in self.factors:
            if _is_circ(f):
                parts.append("C")
            else:
                parts.append("Phi" if f == 1 else f"Phi^{f}")
        return " ".join(parts) if parts else "I"

    def __repr__(self) -> str:
        sc = "" if self.scale == 1.0 else f"{self.scale:g} * "
        return f"Operator(d={self.d}, {self.dtype}: {sc}{self.skeleton()})"

    # -- algebra ---------------------------------------------------------------------------

    def _check_same(self, other: Operator) -> None:
        if other.codebook is not self.codebook:
            raise ValueError(
                "operators from different codebooks cannot be combined: their symbols and "
                "permutation differ"
            )

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, Operator):
            self._check_same(other)
            return Operator(self.codebook, self.factors + other.factors, self.scale * other.scale)
        if isinstance(other, np.ndarray):
            return self.apply(other, side="left")
        return NotImplemented

    def __rmatmul__(self, other: Any) -> Any:
        if isinstance(other, np.ndarray):
            return self.apply(other, side="right")
        return NotImplemented

    @property
    def T(self) -> Operator:  # noqa: N802 - the numpy spelling
        """The transpose: factors reversed, spectra conjugated, powers negated."""
        fs = tuple(np.conj(f) if _is_circ(f) else -f for f in reversed(self.factors))
        return Operator(self.codebook, fs, self.scale)

    def __mul__(self, c: Any) -> Operator:
        if isinstance(c, numbers.Real):
            return Operator(self.codebook, self.factors, self.scale * float(c))
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, c: Any) -> Operator:
        if isinstance(c, numbers.Real):
            return Operator(self.codebook, self.factors, self.scale / float(c))
        return NotImplemented

    def __neg__(self) -> Operator:
        return Operator(self.codebook, self.factors, -self.scale)

    def _single_form(self) -> tuple[int, np.ndarray | None, int]:
        """(pre, spectrum or None, post) for ``Phi^pre C Phi^post``; ValueError otherwise."""
        fs = list(self.factors)
        if self.n_circulants > 1:
            raise ValueError(
                f"cannot add an operator with {self.n_circulants} circulants ({self.skeleton()}): "
                "a sum is one operator only when each term has at most one circulant and the "
                "same permutations around it"
            )
        pre = fs.pop(0) if fs and not _is_circ(fs[0]) else 0
        spec = fs.pop(0) if fs and _is_circ(fs[0]) else None
        post = fs.pop(0) if fs else 0
        return pre, spec, post

    def __add__(self, other: Any) -> Operator:
        if isinstance(other, numbers.Real) and other == 0:
            return self  # so that sum(ops) works
        if not isinstance(other, Operator):
            return NotImplemented
        self._check_same(other)
        pa, sa, qa = self._single_form()
        pb, sb, qb = other._single_form()
        # The identity circulant commutes with everything: a pure Phi^k fits any
        # Phi^pre C Phi^post with pre + post == k.
        if sa is None and sb is not None and pa == pb + qb:
            pa, qa = pb, qb
        if sb is None and sa is not None and pb == pa + qa:
            pb, qb = pa, qa
        if (pa, qa) != (pb, qb):
            raise ValueError(
                f"cannot add {self.skeleton()} and {other.skeleton()}: a sum is one operator "
                "only when the permutations around the circulant are the same"
            )
        if sa is None and sb is None:
            return Operator(self.codebook, (pa,), self.scale + other.scale)
        c = self.codebook.cdtype.type
        one = np.ones(self.d // 2 + 1, dtype=self.codebook.cdtype)
        spec = (sa if sa is not None else one) * c(self.scale) + (
            sb if sb is not None else one
        ) * c(other.scale)
        return Operator(self.codebook, (pa, spec, qa), 1.0)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Operator:
        if not isinstance(other, Operator):
            return NotImplemented
        return self + (-other)

    # -- application -----------------------------------------------------------------------

    def _check_array(self, x: np.ndarray, side: str) -> None:
        d = self.d
        if x.dtype != self.dtype:
            raise TypeError(
                f"array of dtype {x.dtype} given to an operator of a {self.dtype} codebook: "
                f"convert it with .astype({str(self.dtype)!r}) (fastdcyk never converts a "
                "matrix silently)"
            )
        if x.ndim == 1:
            ok = x.shape[0] == d
        elif x.ndim == 2:
            ok = x.shape[0 if side == "left" else 1] == d
        else:
            ok = False
        if not ok:
            want = "(d,) or (d, k)" if side == "left" else "(d,) or (k, d)"
            raise ValueError(f"shape {x.shape} does not fit a d = {d} operator: expected {want}")

    def apply(self, x: np.ndarray, side: str = "left", out: np.ndarray | None = None) -> np.ndarray:
        """``op @ x`` (side="left") or ``x @ op`` (side="right"), by FFT.

        Parameters
        ----------
        x : ndarray
            ``(d,)``, ``(d, k)`` for the left or ``(k, d)`` for the right, of the codebook's
            dtype. It is never modified.
        side : {"left", "right"}
        out : ndarray, optional
            Where to write the result: same shape and dtype as ``x``, not overlapping it,
            except ``out is x`` (in place) when the first factor to act on ``x`` is a
            circulant.

        Returns
        -------
        ndarray
            ``out`` or a new array.
        """
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {side!r}")
        self._check_array(x, side)
        if out is None:
            out = np.empty(x.shape, self.dtype)
        elif not isinstance(out, np.ndarray) or out.shape != x.shape or out.dtype != x.dtype:
            got = f"{out.shape} {out.dtype}" if isinstance(out, np.ndarray) else type(out).__name__
            raise ValueError(f"out must have shape {x.shape} and dtype {x.dtype}, got {got}")
        elif np.may_share_memory(out, x) and not (out is x and self._first_is_circ(side)):
            raise ValueError(
                "out must not overlap the input array (in place works only when the first "
                "factor applied is a circulant)"
            )
        if x.ndim == 1:  # a (d, 1) column; from the right, x @ op = op.T @ x
            op, axis = (self if side == "left" else self.T), 0
            x2 = x.reshape(-1, 1)
            out2 = x2 if out is x else out.reshape(-1, 1)
        else:
            op, axis = self, (0 if side == "left" else 1)
            x2, out2 = x, out
        with self.codebook.workspace.lock:  # the work buffers are the codebook's
            op._apply(x2, out2, axis=axis, factors=op.factors[::-1] if axis == 0 else op.factors)
        return out

    def _first_is_circ(self, side: str) -> bool:
        if not self.factors:
            return True
        return _is_circ(self.factors[-1] if side == "left" else self.factors[0])

    def times_diag(self, p: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``op @ diag(p)`` for a length-d vector ``p``.

        The rightmost ``Phi^a C Phi^b`` of the operator meets the diagonal in O(d^2) without
        an FFT (column c of ``C diag(p)`` is ``p[c]`` times the circulant's column c); the
        remaining factors are applied by FFT in place in ``out``.
        """
        return self._meet_diagonal(p, out, diag_on_right=True)

    def diag_times(self, p: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``diag(p) @ op`` for a length-d vector ``p``: the transpose of
        ``op.T.times_diag(p)``.

        The leftmost ``Phi^a C Phi^b`` of the operator meets the diagonal in O(d^2) without
        an FFT; the remaining factors are applied from the right, by FFT along axis 1, in
        place in ``out``.
        """
        return self._meet_diagonal(p, out, diag_on_right=False)

    def _meet_diagonal(self, p: np.ndarray, out: np.ndarray | None, diag_on_right: bool):
        with self.codebook.workspace.lock:  # the work buffers are the codebook's
            return self._meet_diagonal_locked(p, out, diag_on_right)

    def _meet_diagonal_locked(self, p: np.ndarray, out: np.ndarray | None, diag_on_right: bool):
        p = np.asarray(p)
        if p.dtype != self.dtype:
            raise TypeError(f"p has dtype {p.dtype} but the operator's codebook is {self.dtype}")
        if p.shape != (self.d,):
            raise ValueError(f"p must have shape ({self.d},), got {p.shape}")
        if out is None:
            out = np.empty((self.d, self.d), self.dtype)
        cb = self.codebook
        # Walk in from the end that meets the diagonal: Phi^near C Phi^far (each optional).
        fs = list(self.factors) if diag_on_right else list(reversed(self.factors))
        near = fs.pop() if fs and not _is_circ(fs[-1]) else 0
        if fs and _is_circ(fs[-1]):
            v = np.fft.irfft(fs.pop().astype(np.complex128), n=self.d).astype(self.dtype)
        else:  # no circulant at all: the identity's first column
            v = np.zeros(self.d, self.dtype)
            v[0] = 1
        far = fs.pop() if fs and not _is_circ(fs[-1]) else 0
        if diag_on_right:  # (Phi^far C Phi^near diag(p))[r, c]
            rowidx, shift = cb.permutation_index(far), cb.permutation_index(-near)
            kernels.circulant_times_diag(v, p, rowidx, shift, out)
            rest = Operator(cb, tuple(fs), self.scale)
            return rest._apply(out, out, axis=0, factors=rest.factors[::-1])
        # (diag(p) Phi^near C Phi^far)[r, c]
        rowidx, shift = cb.permutation_index(near), cb.permutation_index(-far)
        kernels.diag_times_circulant(v, p, rowidx, shift, out)
        rest = Operator(cb, tuple(reversed(fs)), self.scale)
        return rest._apply(out, out, axis=1, factors=rest.factors)

    def _steps(self, axis: int, factors: tuple) -> tuple[list[tuple[bool, np.ndarray]], float]:
        """The factors as steps along ``axis``, in the order they act, and the scale left over.

        A circulant is ``(True, spectrum)`` (conjugated from the right, the operator's scale
        folded into the first one), a power of Phi ``(False, index)``, the gather index of
        ``Phi^k`` from the left and of ``Phi^-k`` from the right. The scale is left over
        only when there is no circulant.
        """
        cb = self.codebook
        steps: list[tuple[bool, np.ndarray]] = []
        scale = self.scale
        for f in factors:
            if _is_circ(f):
                spec = f if axis == 0 else np.conj(f)
                if scale != 1.0:
                    spec = spec * cb.cdtype.type(scale)
                    scale = 1.0
                steps.append((True, spec))
            else:
                steps.append((False, cb.permutation_index(f if axis == 0 else -f)))
        return steps, scale

    def _apply(self, x: np.ndarray, out: np.ndarray, axis: int, factors: tuple) -> np.ndarray:
        cb = self.codebook
        if not factors:
            np.multiply(x, self.dtype.type(self.scale), out=out)
            return out
        steps, scale_left = self._steps(axis, factors)
        if blocks.ENABLED and cb.fft.blockwise and any(c for c, _ in steps):
            # The chain on one cache-sized block of lines at a time (fastdcyk.hrr.blocks); the
            # scale is folded into the first circulant.
            return blocks.apply_chain(steps, x, out, axis, cb.fft, cb.workspace.get)
        # Destinations, chosen backwards so that the last step writes into `out`: a gather
        # needs a different buffer from its source, a circulant can go back where it came
        # from (its FFT has already consumed the source).
        dest: list[np.ndarray] = [out] * len(steps)
        tmp = None
        for s in range(len(steps) - 1, 0, -1):
            if steps[s][0]:
                dest[s - 1] = dest[s]
            else:
                if tmp is None:
                    tmp = buffers.APPLY_REAL.get(cb, x.shape)
                dest[s - 1] = tmp if dest[s] is out else out
        spec_shape = list(x.shape)
        spec_shape[axis] = x.shape[axis] // 2 + 1
        mul = kernels.spec_mul_axis0 if axis == 0 else kernels.spec_mul_axis1
        gather = kernels.gather_rows if axis == 0 else kernels.gather_cols
        cur = x
        for (is_circ, arg), dst in zip(steps, dest, strict=True):
            if is_circ:
                s = buffers.SPECTRUM.get(cb, tuple(spec_shape))
                cb.fft.rfft(cur, axis, out=s)
                mul(s, arg)
                cb.fft.irfft(s, x.shape[axis], axis, out=dst)
            else:
                gather(cur, arg, dst)
            cur = dst
        if scale_left != 1.0:
            np.multiply(out, self.dtype.type(scale_left), out=out)
        return out

    def to_dense(self) -> np.ndarray:
        """The d x d matrix (for tests and small d: it costs d^2 memory)."""
        return self.apply(np.eye(self.d, dtype=self.dtype))

    # -- reductions without a d x d product ------------------------------------------------

    def row(self, i: int = 0) -> np.ndarray:
        """Row ``i`` of the operator, in O(d log d) per factor (op^T applied to e_i)."""
        e = np.zeros(self.d, dtype=self.dtype)
        e[i] = 1
        return self.T.apply(e)

    def entry00(self, x: np.ndarray) -> float:
        """``(op @ x)[0, 0]`` in O(d log d): row 0 of the operator against column 0 of x."""
        self._check_array(x, "left")
        col = x if x.ndim == 1 else x[:, 0]
        return float(np.dot(self.row(0).astype(np.float64), col.astype(np.float64)))

    def trace(self, x: np.ndarray) -> float:
        """``tr(op @ x)`` for a d x d ``x``, without forming the product.

        An operator ``Phi^a C Phi^b`` costs O(d^2): tr(Phi^a C Phi^b X) = tr(C Z) with
        Z = Phi^b X Phi^a, and tr(C Z) = sum_m c[m] sum_k Z[k, (k + m) mod d]. Longer chains
        first apply all but their leading ``Phi^a C`` to ``x`` by FFT.
        """
        self._check_array(x, "left")
        if x.ndim != 2 or x.shape[1] != self.d:
            raise ValueError(f"trace needs a square (d, d) array, got shape {x.shape}")
        fs = list(self.factors)
        lead: list = []
        while fs and not _is_circ(fs[0]):
            lead.append(fs.pop(0))
        if not fs:  # a pure permutation: tr(Phi^k X) = sum_r X[idx[r], r]
            k = lead[0] if lead else 0
            idx = self.codebook.permutation_index(k)
            return self.scale * float(x[idx, np.arange(self.d)].sum(dtype=np.float64))
        spec = fs.pop(0)
        rest = Operator(self.codebook, tuple(fs))
        post = 0
        if rest.n_circulants == 0:
            post = fs[0] if fs else 0
            z = x
        else:
            z = rest.apply(x)
        pre = lead[0] if lead else 0
        return self.scale * _trace_circ(self.codebook, spec, z, post, pre)

    def diag_of_product(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``diag(op @ x @ y)`` in O(d^2 log d): ``op @ x`` by FFT, then row sums of
        ``(op @ x) * y^T``; no d x d by d x d product."""
        self._check_array(x, "left")
        if x.ndim != 2:
            raise ValueError(f"diag_of_product needs a 2-D x, got shape {x.shape}")
        y = np.asarray(y)
        if y.dtype != self.dtype:
            raise TypeError(
                f"y has dtype {y.dtype} but the operator's codebook is {self.dtype}: convert it "
                f"with .astype({str(self.dtype)!r})"
            )
        if y.shape != (x.shape[1], self.d):
            raise ValueError(f"y must have shape {(x.shape[1], self.d)}, got {y.shape}")
        z = self.apply(x)
        out = np.empty(z.shape[0], dtype=np.float64)
        return kernels.diag_of_product(z, y, out)


def _trace_circ(cb: OperatorSpace, spec: np.ndarray, x: np.ndarray, post: int, pre: int) -> float:
    """tr(Phi^pre C Phi^post x) = tr(C Z), Z = Phi^post x Phi^pre, in O(d^2)."""
    d = cb.d
    rowidx = cb.permutation_index(post)
    colidx = cb.permutation_index(-pre)
    sums = np.empty(d, dtype=np.float64)
    kernels.wrapped_diag_sums(x, rowidx, colidx, sums)
    col = np.fft.irfft(spec.astype(np.complex128), n=d)
    return float(np.dot(col, sums))
