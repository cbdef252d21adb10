"""What :func:`fastdcyk.learn_grammar` returns: the grammar read off, the weights it was read
from, and the training's history; saved as the grammar's text with the rest in a comment."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastdcyk.cfg.cyk import recognizes
from fastdcyk.cfg.grammar import Grammar

__all__ = ["LearnedGrammar"]

#: The comment line of a saved grammar that holds the weights and the history.
HEADER = "# fastdcyk-learned "


@dataclass(frozen=True)
class LearnedGrammar:
    """A grammar learned from strings by :func:`fastdcyk.learn_grammar`.

    Attributes
    ----------
    grammar : Grammar or None
        The CNF grammar read off the weights: the rules whose weight passes
        :attr:`threshold`, less those that derive no string or that the start symbol does
        not reach, and the rules whose removal loses no accuracy on the strings given
        (:func:`fastdcyk.learn.readoff.prune`). None when no rule of the start symbol
        survives (the learned language is empty).
    weights : dict of str to float
        Every rule of the inventory (its text, ``"A -> B C"`` or ``"A -> 'w'"``) and its
        learned weight in [0, 1], in the inventory's order.
    threshold : float
        The weight a rule must pass to be kept, chosen on the held-out strings.
    held_out_accuracy, train_accuracy : float
        The grammar's accuracy (symbolic CYK) on the held-out and the training strings
        (NaN where there were none).
    history : tuple of dict
        Per evaluation: ``restart``, ``step``, ``loss`` (the training loss of that step),
        ``held_out`` (the accuracy of the grammar read off at 1/2 on the held-out
        strings), ``longest`` (the curriculum's longest string) and ``beta``.
    restart : int
        The restart whose weights these are (the most accurate on the held-out strings).
    start : str
        The start symbol.
    config : dict
        The settings of the run (method, d, steps, seed, ...).
    seconds : float
        The training's time (summed over sessions when resumed).
    """

    grammar: Grammar | None
    weights: dict[str, float]
    threshold: float
    held_out_accuracy: float
    train_accuracy: float
    history: tuple[dict[str, Any], ...] = ()
    restart: int = 0
    start: str = "S"
    config: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def accepts(self, sentence: str | Sequence[str]) -> bool:
        """Whether the learned grammar derives ``sentence`` (symbolic CYK; a word it has
        never seen makes it False)."""
        return self.grammar is not None and recognizes(self.grammar, sentence)

    def __repr__(self) -> str:
        rules = 0 if self.grammar is None else len(self.grammar)
        return (
            f"LearnedGrammar({rules} rules, threshold={self.threshold:.3g}, "
            f"held_out_accuracy={self.held_out_accuracy:.3f}, restart={self.restart})"
        )

    def to_string(self) -> str:
        """The grammar's text (:meth:`Grammar.to_string`) after a comment line that holds
        the weights, threshold, accuracies, history and settings as JSON."""
        meta = {
            "threshold": self.threshold,
            "held_out_accuracy": self.held_out_accuracy,
            "train_accuracy": self.train_accuracy,
            "restart": self.restart,
            "start": self.start,
            "seconds": self.seconds,
            "config": self.config,
            "weights": self.weights,
            "history": list(self.history),
        }
        lines = [
            "# A grammar learned from strings by fastdcyk.learn_grammar; its rules below, the",
            "# inventory's weights and the training's history on the next line (JSON).",
            HEADER + json.dumps(meta, allow_nan=True),
        ]
        if self.grammar is None:
            lines.append("# (no rule survived: the learned language is empty)")
        else:
            lines.append(self.grammar.to_string())
        return "\n".join(lines) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_string` to ``path`` (UTF-8); ``Grammar.from_file(path)`` reads the
        grammar, :meth:`load` the whole. Returns the path."""
        path = Path(path)
        path.write_text(self.to_string(), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LearnedGrammar:
        """Read a file written by :meth:`save`.

        Raises
        ------
        ValueError
            When the file has no ``# fastdcyk-learned`` line (a plain grammar file: read it
            with :meth:`Grammar.from_file`).
        """
        text = Path(path).read_text(encoding="utf-8")
        meta: Mapping[str, Any] | None = None
        for line in text.splitlines():
            if line.startswith(HEADER):
                meta = json.loads(line[len(HEADER) :])
                break
        if meta is None:
            raise ValueError(
                f"{path} has no '{HEADER.strip()}' line: it was not written by "
                "LearnedGrammar.save (read a plain grammar with Grammar.from_file)"
            )
        has_rules = any(
            line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()
        )
        grammar = Grammar.from_string(text) if has_rules else None  # its start rules first
        return cls(
            grammar=grammar,
            weights=dict(meta["weights"]),
            threshold=float(meta["threshold"]),
            held_out_accuracy=float(meta["held_out_accuracy"]),
            train_accuracy=float(meta["train_accuracy"]),
            history=tuple(meta["history"]),
            restart=int(meta["restart"]),
            start=meta["start"],
            config=dict(meta["config"]),
            seconds=float(meta["seconds"]),
        )
