"""A codebook's file: :meth:`Codebook.save <fastdcyk.hrr.codebook.Codebook.save>` and
:meth:`Codebook.load <fastdcyk.hrr.codebook.Codebook.load>` (a NumPy ``.npz`` archive of the
vectors held, the permutation and, for a codebook drawn from a seed, how it was drawn;
never pickled data). The two methods are those of :class:`CodebookFile`, a base class of
:class:`~fastdcyk.hrr.codebook.Codebook` (documented as the codebook's), and call this
module's :func:`save` and :func:`load`.
"""

from __future__ import annotations

import errno
import json
import os
import warnings
import zipfile
from typing import Any, Self

import numpy as np

from fastdcyk.checks import check_path
from fastdcyk.hrr.fft import FFT
from fastdcyk.signatures import refuses_renamed

__all__ = ["FORMAT_VERSION", "KINDS", "CodebookFile", "load", "save"]

#: The symbol namespaces a file holds (the codebook's).
KINDS = ("terminal", "nonterminal", "index", "right")
#: The version of the file format this fastdcyk writes.
FORMAT_VERSION = 1


def save(codebook: Any, path: str | os.PathLike[str]) -> None:
    """Write ``codebook``'s vectors held and permutation to ``path``, whole or not at all (a
    temporary file renamed into place)."""
    arrays: dict[str, np.ndarray] = {"perm": np.asarray(codebook.perm)}
    keys: dict[str, list[Any]] = {}
    for kind in KINDS:
        syms = codebook.symbols(kind)
        if syms:
            keys[kind] = list(syms)
            arrays[kind] = np.stack([codebook.vector(kind, x) for x in syms])
    meta: dict[str, Any] = {"format": "fastdcyk-codebook", "version": FORMAT_VERSION}
    meta |= {"dtype": codebook.dtype.name, "symbols": keys}
    if not codebook.fixed:  # drawn from a seed: keep how, so that load can draw the rest
        meta["seeded"] = {
            "d": codebook.d,
            "seed": codebook.seed,
            "unitary": codebook.unitary,
            "zero_mean": codebook.zero_mean,
            "index_vectors": codebook.index_vectors,
            "shifted_symbols": [list(key) for key in codebook.shifted_symbols],
        }
    arrays["meta"] = np.array(json.dumps(meta))
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load(cls: Any, path: str | os.PathLike[str], *, fft: Any = "auto", threads: Any = None) -> Any:
    """The codebook of class ``cls`` that :func:`save` wrote to ``path`` (see
    :meth:`Codebook.load <fastdcyk.hrr.codebook.Codebook.load>`)."""
    name = os.fspath(path)
    try:
        meta, found = _read_codebook_file(name)
    except FileNotFoundError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, EOFError, OSError,
            zipfile.BadZipFile) as e:  # fmt: skip
        raise ValueError(
            f"{name!r} is not a codebook file written by Codebook.save ({type(e).__name__}: {e})"
        ) from None
    if meta["version"] > FORMAT_VERSION:
        raise ValueError(
            f"{name!r} was written by a newer fastdcyk (codebook format version "
            f"{meta['version']}): upgrade fastdcyk to read it"
        )
    try:
        maps = {kind: dict(zip(meta["symbols"][kind], found[kind], strict=True))
                for kind in KINDS if kind in meta["symbols"]}  # fmt: skip
        seeded = meta.get("seeded")
        if seeded is not None:
            cb = cls(
                seeded["d"],
                seeded["seed"],
                meta["dtype"],
                unitary=seeded["unitary"],
                zero_mean=seeded["zero_mean"],
                index_vectors=seeded["index_vectors"],
                shifted_symbols=[tuple(key) for key in seeded["shifted_symbols"]],
                fft=fft,
                threads=threads,
            )
            same = np.array_equal(cb.perm, found["perm"]) and all(
                np.array_equal(cb.vector(kind, x), v)
                for kind, vectors in maps.items()
                for x, v in vectors.items()
            )
            if same:
                return cb
            warnings.warn(
                f"{name!r}: its seed no longer draws the vectors it holds (written by "
                "another version of fastdcyk); loaded as a codebook of these vectors, "
                "which cannot draw new symbols",
                stacklevel=4,  # the caller of Codebook.load (through its keyword check)
            )
        return cls.from_vectors(
            terminals=maps.get("terminal"),
            nonterminals=maps.get("nonterminal"),
            indices=maps.get("index"),
            right=maps.get("right"),
            permutation=found["perm"],
            dtype=meta["dtype"],
            fft=fft,
            threads=threads,
        )
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
        raise ValueError(
            f"{name!r} is not a codebook file written by Codebook.save (its contents are "
            f"not what save writes: {type(e).__name__}: {e})"
        ) from None


def _read_codebook_file(path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The metadata and the arrays of a file written by :meth:`Codebook.save`."""
    with np.load(path, allow_pickle=False) as z:
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("a single NumPy array, not an .npz archive")
        meta = json.loads(str(z["meta"]))
        if not isinstance(meta, dict) or meta.get("format") != "fastdcyk-codebook":
            raise ValueError('no "format": "fastdcyk-codebook" in its metadata')
        if not isinstance(meta.get("version"), int) or not isinstance(meta.get("symbols"), dict):
            raise ValueError("its metadata has no version or no symbols")
        found = {k: np.asarray(z[k]) for k in (*KINDS, "perm") if k in z.files}
    return meta, found


class CodebookFile:
    """The base class that gives :class:`~fastdcyk.hrr.codebook.Codebook` its file:
    :meth:`save` and :meth:`load` (this module's :func:`save` and :func:`load`, the
    path checked)."""

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the vectors held and the permutation to ``path`` (a NumPy ``.npz`` file;
        :func:`fastdcyk.hrr.codebook_file.save`).

        A codebook built from vectors (:meth:`from_vectors`, or a learned one:
        :meth:`fastdcyk.nn.DCYK.codebook`) holds all of its vectors; a codebook drawn from a
        seed holds those drawn so far, and its seed and settings, so that :meth:`load` gives
        the same seeded codebook back (it draws the symbols a longer sentence needs).

        Parameters
        ----------
        path : path
            Written whole or not at all (a temporary file renamed into place).

        Raises
        ------
        TypeError
            When ``path`` is not a path.
        IsADirectoryError
            When ``path`` is a folder.
        """
        path = check_path("path", path)
        if path.is_dir():
            raise IsADirectoryError(
                errno.EISDIR, f"path {str(path)!r} is a folder: give a file's path (codebook.npz)"
            )
        save(self, path)  # the module's save, above

    @classmethod
    @refuses_renamed
    def load(
        cls, path: str | os.PathLike[str], *, fft: str | FFT = "auto", threads: int | None = None
    ) -> Self:
        """The codebook written by :meth:`save` (:func:`fastdcyk.hrr.codebook_file.load`).

        A codebook drawn from a seed comes back as that seeded codebook (checked against the
        vectors in the file); one built from vectors, as a codebook of these vectors.

        Raises
        ------
        FileNotFoundError
            When there is no file at ``path``.
        ValueError
            When ``path`` is not a codebook file written by :meth:`save` (not a NumPy
            ``.npz`` file, truncated, corrupted, or with metadata :meth:`save` does not
            write), or was written by a newer fastdcyk.
        """
        return load(cls, check_path("path", path), fft=fft, threads=threads)  # the module's
