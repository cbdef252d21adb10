"""A parse prepared for any backend: :class:`Plan`, what a backend's driver is given.

:func:`fastdcyk.engine.prepare.prepare` makes one (everything checked, the codebook built);
each backend's driver (:mod:`fastdcyk.registry.backends`) parses its sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.core.rules import RuleStructure, rule_structure
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = ["Plan"]


@dataclass(frozen=True, eq=False)
class Plan:
    """A parse prepared for any backend: everything checked, nothing of size d allocated
    beyond the codebook.

    Attributes
    ----------
    grammar : Grammar
        In CNF.
    sentences : list of tuple of str
        Each sentence's words, terminals of the grammar (Unicode NFC).
    options : DCYKOptions
        Resolved and checked.
    codebook : Codebook
        Holds every symbol the sentences need.
    """

    grammar: Grammar
    sentences: list[tuple[str, ...]]
    options: DCYKOptions
    codebook: Codebook

    @property
    def structure(self) -> RuleStructure:
        """The grammar's rules as index arrays (shared by every backend)."""
        return rule_structure(self.grammar)

    @property
    def longest(self) -> int:
        return max((len(ws) for ws in self.sentences), default=1)
