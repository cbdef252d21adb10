"""Writing figures to files: the formats, the style figures are drawn and written in, and
writes that are whole or nothing.

A figure is first written in full to a temporary file beside its target (PNG with a
256-colour palette, SVG with stable ids and no date, or PDF), flushed and fsync'ed, and
renamed into place; :func:`write_figures` renames a set of figures only once all of them are
written, and on a failure removes the temporary files (and a folder it created), raising
:class:`FigureWriteError`. :func:`save_figure` writes one figure, :func:`check_figures_folder`
refuses a folder that is a file before anything is drawn.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastdcyk.checks import check_int, check_path

__all__ = [
    "FIGURE_FORMATS",
    "STYLE",
    "FigureWriteError",
    "check_figures_folder",
    "figure_format",
    "save_figure",
    "write_figures",
]


class FigureWriteError(OSError):
    """The figures could not be written (a full disk, an unusable folder).

    Nothing half written is left; the message names the path, the cause and what was kept.
    """


#: The formats a figure is written in.
FIGURE_FORMATS = ("png", "svg", "pdf")

#: The matplotlib settings every figure is drawn and written in.
STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text: smaller SVG files
    "svg.hashsalt": "fastdcyk",  # stable ids: the same data gives the same SVG
}


def _save_png(fig: Any, fh: Any, dpi: int) -> None:
    """PNG with a 256-colour palette: a third of the size of RGBA, and the same picture."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    with Image.open(buf) as im:
        quantized = im.convert("RGB").quantize(256, dither=Image.Dither.NONE)
        quantized.save(fh, format="PNG", optimize=True)


def _save(fig: Any, fmt: str, path: Path, dpi: int) -> None:
    """Write ``fig`` in format ``fmt`` to the new file ``path`` (created here), durably."""
    from matplotlib import rc_context

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as fh, rc_context(STYLE):  # svg.* settings are read on save
        if fmt == "png":
            _save_png(fig, fh, dpi)
        else:
            fig.savefig(fh, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
        fh.flush()
        os.fsync(fh.fileno())


def check_figures_folder(out_dir: str | os.PathLike[str]) -> Path:
    """Refuse a figures folder that is a file, or lies under one, before anything is drawn.

    Returns
    -------
    Path
        ``out_dir``.

    Raises
    ------
    FigureWriteError
        When ``out_dir``, or a folder above it, is a file (errno ``ENOTDIR``).
    TypeError
        When ``out_dir`` is not a path.
    """
    out = check_path("out_dir", out_dir)
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                where = (
                    f"cannot write figures into {str(out)!r}: it"
                    if folder == out
                    else f"cannot create the figures folder {str(out)!r}: {str(folder)!r}"
                )
                raise FigureWriteError(
                    errno.ENOTDIR,
                    f"{where} is a file, not a folder; choose a folder (it is created if "
                    "absent, and figures in it are replaced)",
                )
            break
    return out


def _make_folder(out: Path) -> list[Path]:
    """Create ``out`` and its missing parents (:func:`check_figures_folder` has passed);
    returns those created, deepest last."""
    created = []
    for folder in (*reversed(out.parents), out):
        if not folder.exists():
            created.append(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_folders(created)
        raise FigureWriteError(
            exc.errno,
            f"cannot create the figures folder {str(out)!r}: {exc.strerror or exc}; choose "
            "a folder that can be written",
        ) from exc
    return created


def _remove_folders(folders: list[Path]) -> None:
    for folder in reversed(folders):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return


def figure_format(path: str | os.PathLike[str]) -> str:
    """The format of a figure file, from its suffix (one of :data:`FIGURE_FORMATS`).

    Raises
    ------
    ValueError
        On another suffix.
    TypeError
        When ``path`` is not a path.
    """
    fmt = check_path("path", path).suffix.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"{os.fspath(path)!r}: give a file ending in .png, .svg or .pdf")
    return fmt


def save_figure(fig: Any, path: str | os.PathLike[str], *, dpi: int = 110) -> Path:
    """Write a figure to ``path`` in the format its suffix names (.png, .svg, .pdf), whole or
    not at all (a temporary file renamed into place).

    Raises
    ------
    ValueError
        On another suffix, or ``dpi`` not an integer >= 1.
    TypeError
        When ``fig`` is not a figure or ``path`` not a path.
    FigureWriteError
        When the file cannot be written (the message names it and the cause).
    """
    if not callable(getattr(fig, "savefig", None)):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    path = check_path("path", path)
    fmt = figure_format(path)
    dpi = check_int("dpi", dpi, 1)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        _save(fig, fmt, tmp, dpi)
        os.replace(tmp, path)
    except OSError as exc:
        raise FigureWriteError(
            exc.errno, f"cannot write the figure {str(path)!r}: {exc.strerror or exc}"
        ) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return path


def write_figures(
    figures: Sequence[tuple[str, Any]], out: Path, formats: Sequence[str], dpi: int
) -> list[Path]:
    """Write each of ``figures`` (pairs of a file stem and a figure) in each of ``formats``
    into the folder ``out`` (created if absent, :func:`check_figures_folder` having passed),
    all or nothing: every file is written in full to a temporary file first, and they
    replace their files only once all are written. Returns the paths written.

    Raises
    ------
    FigureWriteError
        When ``out`` cannot be created or a figure cannot be written: the temporary files
        are removed, and so is a folder created here when no figure replaced its file.
    """
    created = _make_folder(out)
    pending: list[tuple[Path, Path]] = []  # (temporary file, its final path)
    written: list[Path] = []
    path = out
    try:
        for stem, fig in figures:
            for f in formats:
                path = out / f"{stem}.{f}"
                tmp = out / f".{path.name}.{secrets.token_hex(4)}.tmp"
                pending.append((tmp, path))
                _save(fig, f, tmp, dpi)
        for tmp, path in pending:
            os.replace(tmp, path)
            written.append(path)
    except BaseException as exc:
        for tmp, _ in pending:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
        if not written:
            _remove_folders(created)
        if isinstance(exc, OSError):
            done = (
                f"only {', '.join(p.name for p in written)} replaced"
                if written
                else "no figure was written"
            )
            raise FigureWriteError(
                exc.errno,
                f"cannot write the figure {str(path)!r}: {exc.strerror or exc}; {done} (free "
                "some space, or choose another folder, and draw again)",
            ) from exc
        raise
    return written
