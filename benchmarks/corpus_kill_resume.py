"""A corpus run killed at random moments and resumed: every line written once, the trees those
of an uninterrupted run (docs/performance.md, "A corpus in, trees out").

    python benchmarks/corpus_kill_resume.py --grammar PATH/atis.cfg \\
        --sentences PATH/atis_sentences.txt [--runs 20] [--seed 0]

The corpus is the ATIS test sentences (as in ``corpus_rates.py``: NLTK's large_grammars data,
the 70 the grammar parses, of 2 to 30 words), written twice over (140 lines). First one
uninterrupted run of ``fastdcyk parse --input`` (1 worker). Then ``--runs`` runs, each
killed with SIGKILL (``kill -9``) at a moment drawn uniformly between 0.3 s and the
uninterrupted run's time (its start-up included, so that some die before their first line),
then resumed with ``--resume``; a resumed run is killed again at a random moment one time in
three (its own resume then finishes it). Runs alternate between 1 and 2 workers. After each
run: the output holds every input index exactly once, in input order, with the
uninterrupted run's status and tree, and nothing else.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_rates import atis_test_sentences  # noqa: E402


def command(grammar: Path, corpus: Path, out: Path, workers: int, resume: bool) -> list[str]:
    cmd = [sys.executable, "-m", "fastdcyk", "parse", "--grammar", str(grammar), "--to-cnf"]
    cmd += ["--input", str(corpus), "--output", str(out), "--workers", str(workers)]
    cmd += ["--no-progress"] + (["--resume"] if resume else [])
    return cmd


def killed_at(cmd: list[str], moment: float) -> bool:
    """Run ``cmd``, SIGKILL it after ``moment`` seconds; whether it was still running."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        proc.wait(timeout=moment)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()}")
    return False


def records(path: Path) -> list[dict]:
    """The records of a finished log (its header, which has no index, left out)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if "index" in r]


def whole_lines(path: Path) -> int:
    """The records a killed run left (its last line may be torn)."""
    if not path.exists():
        return 0
    text = path.read_bytes()
    return max(0, text[: text.rfind(b"\n") + 1].count(b"\n") - 1)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grammar", type=Path, required=True, help="NLTK's atis.cfg")
    p.add_argument("--sentences", type=Path, required=True, help="NLTK's atis_sentences.txt")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(atis_test_sentences(args.sentences) * 2) + "\n")
        lines = len(corpus.read_text().splitlines())
        whole = Path(tmp) / "whole.jsonl"
        t0 = time.perf_counter()
        subprocess.run(command(args.grammar, corpus, whole, 1, False), check=True)
        span = time.perf_counter() - t0
        expected = {r["index"]: (r["status"], r["tree"]) for r in records(whole)}
        assert sorted(expected) == list(range(lines))
        print(f"uninterrupted: {lines} lines in {span:.1f} s", flush=True)
        failures = 0
        for run in range(args.runs):
            workers = 1 + run % 2
            out = Path(tmp) / f"run{run}.jsonl"
            moment = rng.uniform(0.3, span)
            kills = int(killed_at(command(args.grammar, corpus, out, workers, False), moment))
            written = whole_lines(out)
            again = kills and rng.random() < 1 / 3
            if again:  # the resumed run killed too
                kills += killed_at(
                    command(args.grammar, corpus, out, workers, True), rng.uniform(0.3, span)
                )
            subprocess.run(
                command(args.grammar, corpus, out, workers, True),
                check=True,
                stdout=subprocess.DEVNULL,
            )
            got = records(out)
            indices = [r["index"] for r in got]
            same = sum((r["status"], r["tree"]) == expected[r["index"]] for r in got)
            ok = indices == list(range(lines)) and same == lines
            failures += not ok
            print(
                f"run {run + 1:2d}: {workers} worker{'s' if workers > 1 else ' '}, killed "
                f"{kills}x (first at {moment:4.1f} s, {written:3d} lines written then), "
                f"resumed: {len(got)} records, indices once each in order: "
                f"{indices == list(range(lines))}, trees as uninterrupted: {same}/{lines}",
                flush=True,
            )
        print(f"{args.runs - failures} of {args.runs} runs whole and equal")


if __name__ == "__main__":
    main()
