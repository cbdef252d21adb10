"""How readable a page's prose is: its lines, characters, and words per sentence.

The README and the tutorials are held to limits (tests/test_readme.py runs this in the
test suite): the README at most 120 lines and 7,000 characters, and both at most 22 words a
sentence on average. Only prose counts: fenced code blocks, tables, headings, images and
HTML comments are left out; a link counts as its text, inline code as one word. A sentence
ends at ".", "!" or "?" followed by a space, or at the end of a paragraph or list item.

Usage::

    python docs/lab/prose_stats.py README.md docs/tutorials/*.md [--max-mean 22]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProseStats", "prose_stats", "sentences"]


@dataclass(frozen=True)
class ProseStats:
    """A page's numbers: ``lines`` and ``chars`` of the whole file, and of its prose the
    ``sentences``, their mean length in words and the longest one."""

    lines: int
    chars: int
    sentences: int
    mean_words: float
    longest: str

    @property
    def longest_words(self) -> int:
        return len(_words(self.longest))


def _words(text: str) -> list[str]:
    return [w for w in text.split() if re.search(r"\w", w)]


def _paragraphs(text: str) -> list[str]:
    """The prose of a Markdown page, one string per paragraph or list item."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    out, current, fenced = [], [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            if current:
                out.append(" ".join(current))
                current = []
            continue
        if fenced:
            continue
        skip = (
            not stripped
            or stripped.startswith(("#", "|", "![", ":::"))
            or re.match(r"[-*] |\d+\. ", stripped)
        )
        if skip and current:
            out.append(" ".join(current))
            current = []
        if not stripped or stripped.startswith(("#", "|", "![", ":::")):
            continue
        current.append(re.sub(r"^([-*]|\d+\.) ", "", stripped))
    if current:
        out.append(" ".join(current))
    return out


def sentences(text: str) -> list[str]:
    """The sentences of a page's prose (links as their text, inline code as one word)."""
    found = []
    for para in _paragraphs(text):
        para = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", para)  # links: their text
        para = re.sub(r"`[^`]*`", "CODE", para)  # inline code: one word
        para = para.replace("*", "")
        for s in re.split(r"(?<=[.!?])\s+(?=\S)", para):
            if _words(s):
                found.append(s.strip())
    return found


def prose_stats(path: str | Path) -> ProseStats:
    """The numbers of one Markdown file."""
    text = Path(path).read_text(encoding="utf-8")
    found = sentences(text)
    counts = [len(_words(s)) for s in found]
    return ProseStats(
        lines=len(text.splitlines()),
        chars=len(text),
        sentences=len(found),
        mean_words=sum(counts) / len(counts) if counts else 0.0,
        longest=max(found, key=lambda s: len(_words(s))) if found else "",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--max-mean", type=float, help="fail above this mean (words a sentence)")
    args = ap.parse_args(argv)
    worst = 0.0
    for f in args.files:
        s = prose_stats(f)
        worst = max(worst, s.mean_words)
        print(
            f"{f}: {s.lines} lines, {s.chars} characters, {s.sentences} sentences, "
            f"{s.mean_words:.1f} words a sentence (longest {s.longest_words})"
        )
    if args.max_mean is not None and worst > args.max_mean:
        print(f"a page is above {args.max_mean} words a sentence", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
