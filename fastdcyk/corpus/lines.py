"""A corpus's lines: each input line as a sentence to parse, or as why it is not one.

:func:`read_lines` takes what :func:`fastdcyk.parse_corpus` takes (a file's path, a file's
bytes, or an iterable of str or word lists) and gives one :class:`Line` per input line,
indexed from 0: its words, or the status ``"bad line"`` and why (an empty line, bytes that are
not the encoding's). Nothing is refused here: a bad line is a line of the output.
"""

from __future__ import annotations

import codecs
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Line", "input_digest", "read_lines"]


@dataclass(frozen=True)
class Line:
    """One input line.

    Attributes
    ----------
    index : int
        Its position in the input, from 0.
    words : tuple of str or None
        Its words (whitespace-separated: none for an empty line); None for a line that is
        not the encoding's text.
    message : str or None
        Why it is a bad line (None for a sentence).
    """

    index: int
    words: tuple[str, ...] | None
    message: str | None = None


def _bad_bytes(raw: bytes, encoding: str, exc: UnicodeDecodeError) -> str:
    """Which bytes of a line are not ``encoding``'s, as a reader would look for them."""
    bad = raw[exc.start : min(exc.end, exc.start + 8)]
    return (
        f"the bytes {bad!r} at byte {exc.start} are not {encoding} text ({exc.reason}): the line "
        "is left out; pass the file's encoding (encoding='latin-1', --input-encoding latin-1) if "
        "it has another"
    )


def _line(index: int, text: str) -> Line:
    words = tuple(text.split())
    if not words:
        return Line(index, (), "an empty line: no words to parse")
    return Line(index, words)


def read_lines(source: Any, encoding: str = "utf-8") -> list[Line]:
    """The lines of a corpus, one :class:`Line` each, in input order.

    Parameters
    ----------
    source : path, bytes or iterable
        The path of a text file (one sentence a line, whitespace-separated words); its
        bytes; or an iterable of sentences, each a str or a sequence of words.
    encoding : str, default "utf-8"
        The encoding of a file's lines; a line that is not valid in it is a bad line (its
        bytes named), the other lines are read.

    Returns
    -------
    list of Line

    Raises
    ------
    ValueError
        When ``encoding`` is not a codec's name.
    TypeError
        When ``source`` is none of the above, or a sentence is neither a str nor a
        sequence of str.
    OSError
        When the file cannot be read.
    """
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(
            f"unknown encoding {encoding!r}: give a Python codec name such as 'utf-8' or 'latin-1'"
        ) from None
    if isinstance(source, str | os.PathLike) and not (isinstance(source, str) and "\n" in source):
        source = Path(source).read_bytes()
    if isinstance(source, bytes | bytearray):
        out = []
        raw_lines = bytes(source).split(b"\n")
        if raw_lines and raw_lines[-1] == b"":  # the newline that ends the last line
            raw_lines.pop()
        for index, raw in enumerate(raw_lines):
            raw = raw[:-1] if raw.endswith(b"\r") else raw
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                out.append(Line(index, None, _bad_bytes(raw, encoding, exc)))
                continue
            out.append(_line(index, text))
        return out
    if isinstance(source, str):  # one text of several lines
        return [_line(k, t) for k, t in enumerate(source.splitlines())]
    if not isinstance(source, Iterable):
        raise TypeError(
            "sentences must be a file's path, its bytes, or an iterable of sentences (each a "
            f"str or a sequence of words), got {type(source).__name__}"
        )
    out = []
    for index, sentence in enumerate(source):
        if isinstance(sentence, str):
            out.append(_line(index, sentence))
        elif isinstance(sentence, Sequence) and all(isinstance(w, str) for w in sentence):
            words = tuple(w for token in sentence for w in token.split())
            out.append(Line(index, words) if words else _line(index, ""))
        else:
            raise TypeError(
                f"sentence {index} is {type(sentence).__name__}: a sentence is a str of words "
                "or a sequence of str"
            )
    return out


def input_digest(lines: list[Line]) -> str:
    """A hash of the lines as read (words and bad lines), so that a resumed run is known to
    read the same input."""
    h = hashlib.sha256()
    for line in lines:
        h.update(("\t".join(line.words) if line.message is None else "\0bad").encode())
        h.update(b"\n")
    return h.hexdigest()
