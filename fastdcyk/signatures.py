"""Keyword options in signatures: a function's ``**options`` made into declared keywords.

A front door that takes the options (``dcyk(grammar, words, **options)``) shows them in its
signature (``inspect.signature``, ``help()``), documents them in its docstring and refuses
any other keyword with a TypeError worded as Python's, naming the closest keywords it takes
or a renamed keyword's new name (:data:`RENAMED`). :class:`Keywords` does this for the
options declared as the fields of a dataclass, each field's metadata holding its numpydoc
``kind`` and its ``doc``; :mod:`fastdcyk.options` makes the one of its declarations,
:class:`~fastdcyk.options.DCYKOptions`, and gives its methods as
:func:`~fastdcyk.options.takes_options` and :func:`~fastdcyk.options.documented` (this
module imports nothing of the package, so that :func:`fastdcyk.options.resolve` takes the
options too). :func:`check_keywords` and :func:`refuses_renamed` are the keyword checks
alone.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

__all__ = ["RENAMED", "Keywords", "check_keywords", "refuses_renamed"]

#: Keywords renamed in 0.4, refused until 0.5 with a message naming the new one.
RENAMED = {"engine": "fft"}


def check_keywords(
    given: Mapping[str, Any],
    where: str,
    allowed: Sequence[str],
    refused: Mapping[str, str] | None = None,
) -> None:
    """A TypeError for a keyword of ``given`` that is not in ``allowed``, as Python words it
    (``where``: the callable's name), naming the keyword's new name where it was renamed
    (:data:`RENAMED`) to an allowed one, the reason where ``refused`` gives one, or the
    closest allowed ones."""
    refused = refused or {}
    for key in given:
        if key in allowed:
            continue
        if key in RENAMED and RENAMED[key] in allowed:
            raise TypeError(
                f"{where}() got the keyword {key}=, renamed {RENAMED[key]}= in fastdcyk 0.4 "
                f"(the FFT library: 'auto', 'scipy', 'pyfftw' or 'numpy'): write "
                f"{RENAMED[key]}={given[key]!r}"
            )
        if key in refused:
            raise TypeError(f"{where}() does not take {key}=: {refused[key]}")
        near = difflib.get_close_matches(key, allowed, n=2)
        hint = f" (did you mean {' or '.join(near)}?)" if near else ""
        raise TypeError(f"{where}() got an unexpected keyword argument {key!r}{hint}")


def refuses_renamed(func: Any) -> Any:
    """``func`` refusing a keyword of :data:`RENAMED` with a message naming its new name
    (where Python would only say it is unexpected)."""

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        for key in kwargs:
            if key in RENAMED:
                where = func.__qualname__.removesuffix(".__init__")
                check_keywords({key: kwargs[key]}, where, tuple(RENAMED.values()))
        return func(*args, **kwargs)

    return call


class Keywords:
    """The option keywords that ``declarations`` declares, given to functions and documented.

    Parameters
    ----------
    declarations : dataclass type
        Its fields are the options, in order; each field's metadata holds ``"kind"`` (its
        numpydoc type) and ``"doc"`` (its documentation), as
        :func:`fastdcyk.options.declaration` makes them.

    Attributes
    ----------
    names : tuple of str
        The options, in declaration order.
    """

    def __init__(self, declarations: type) -> None:
        self.declarations = declarations
        self.names: tuple[str, ...] = tuple(f.name for f in fields(declarations))

    def documentation(
        self,
        names: Sequence[str] | None = None,
        indent: int = 4,
        notes: Mapping[str, str] | None = None,
    ) -> str:
        """The numpydoc entries of the options ``names`` (default: all of them), as keywords
        (each optional); ``notes`` gives a function's own documentation of some of them, in
        place of the declaration's."""
        pad = " " * indent
        out = []
        for name in self.names if names is None else names:
            meta = self.declarations.__dataclass_fields__[name].metadata
            out.append(f"{pad}{name} : {meta['kind']}, optional")
            doc = (notes or {}).get(name) or meta["doc"]
            words, line = " ".join(doc.split()).split(), ""
            for word in words:  # wrapped at 92 columns
                if line and len(pad) + 4 + len(line) + 1 + len(word) > 92:
                    out.append(f"{pad}    {line}")
                    line = word
                else:
                    line = f"{line} {word}" if line else word
            out.append(f"{pad}    {line}")
        return "\n".join(out)

    def takes_options(
        self,
        *,
        exclude: Sequence[str] = (),
        refused: Mapping[str, str] | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> Callable[[Any], Any]:
        """Give a function the option keywords: its ``**options`` catch-all becomes the
        declared options (keyword-only, default None) in its signature, the line
        ``{options}`` of its docstring their documentation (:meth:`documentation`), and a
        call with any other keyword a TypeError (:func:`check_keywords`).

        Parameters
        ----------
        exclude : sequence of str
            Options the function does not take (its own parameters are left out too).
        refused : mapping of str to str
            Options it does not take, each with the reason its TypeError gives.
        notes : mapping of str to str
            Its own documentation of some options, in place of the declarations'.
        """
        refused = dict(refused or {})

        def wrap(func: Any) -> Any:
            sig = inspect.signature(func)
            own = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
            left_out = (*exclude, *refused)
            names = [n for n in self.names if n not in left_out and n not in sig.parameters]
            keyword = inspect.Parameter.KEYWORD_ONLY
            extra = [inspect.Parameter(n, keyword, default=None) for n in names]
            positional = [p for p in own if p.kind is not keyword]
            keywords = [p for p in own if p.kind is keyword]
            allowed = tuple(p.name for p in own if p.kind is not p.VAR_POSITIONAL) + tuple(names)
            where = func.__qualname__.removesuffix(".__init__")

            @functools.wraps(func)
            def call(*args: Any, **kwargs: Any) -> Any:
                check_keywords(kwargs, where, allowed, refused)
                return func(*args, **kwargs)

            # the option keywords after the function's own, but before an ``options=`` object
            last = [p for p in keywords if p.name == "options"]
            first = [p for p in keywords if p.name != "options"]
            call.__signature__ = sig.replace(parameters=[*positional, *first, *extra, *last])
            call.__doc__ = self.documented(func.__doc__ or "", names, notes)
            call.option_names = tuple(names)
            call.option_notes = dict(notes or {})
            return call

        return wrap

    def documented(
        self, doc: str, names: Sequence[str], notes: Mapping[str, str] | None = None
    ) -> str:
        """``doc`` with its line ``{options}`` replaced by the documentation of the options
        ``names`` (:meth:`documentation`, at that line's indent, with ``notes``): for a
        docstring that :meth:`takes_options` does not reach (a class's, whose ``__init__``
        takes them)."""
        lines = doc.split("\n")
        for k, line in enumerate(lines):
            if line.strip() == "{options}":
                lines[k] = self.documentation(names, len(line) - len(line.lstrip()), notes)
        return "\n".join(lines)
