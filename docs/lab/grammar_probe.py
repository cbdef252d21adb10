"""A first probe of learning a grammar from strings through the D-CYK table (docs/learning.md,
"Learning a grammar from strings: first probe").

    python docs/lab/grammar_probe.py --language anbn --nonterminals 4 --beta 5 \\
        [--beta-end 20] --steps 600 --seed 0 [--record FILE]

The inventory is every rule A -> B C over ``--nonterminals`` fresh nonterminals (``S`` among
them) and every A -> w over the words; each rule's weight is a sigmoid of a free parameter
(the binary ones started near ``--init``), given to ``fastdcyk.nn.DCYK`` (trace variant, the
weights as its rule weights) for every batch. The forward pass is D-CYK at ``--d``: the
start symbol's decoder statistic in the top cell, against 1/2, is the string's logit (times
``--slope``); with ``--beta-end`` the gates' beta rises geometrically from ``--beta`` to it
in eight stages. ``--control``: the same function over a symbolic chart, each item's
amplitude the gate of sum over splits and rules of w(A -> B C) a(B) a(C) (A -> w: of its
weight), with no table; with ``--combine noisy-or``, an item's value is 1 - prod(1 - w a(B)
a(C)) over them (a word's: its rule's weight), and the loss is the cross-entropy of the top
item's value. Loss: binary cross-entropy against the labels, plus ``--l1`` times the mean
weight, plus ``--binarize`` times the mean of w (1 - w); Adam. Training: 2,000 strings of 1
to 10 words (half in the language, half one edit from a member and outside it;
``--same-length``: half of those one substitution), batches of ``--batch``, the longest
length raised from 2 to 10 over the first 60% of the steps. The grammar read off keeps the
rules whose weight passes a cut, the one (among the weights' own values and 1/2) whose
grammar is the most accurate on 400 held-out strings of the training lengths, less the rules
that derive no string or that S does not reach; it is judged by symbolic CYK on those and on
400 strings of 11 to 20 and of 21 to 40 words (half members, half one edit away). The
network's own decisions (the statistic against 1/2, the last weights) are scored on the same
strings. One JSON line a run is appended to the record.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import time
from pathlib import Path

import torch

import fastdcyk as fd
from fastdcyk.cfg.cyk import cyk
from fastdcyk.nn import DCYK


def member(language: str, w: tuple[str, ...]) -> bool:
    if language == "anbn":
        n = len(w) // 2
        return len(w) % 2 == 0 and n > 0 and w == ("a",) * n + ("b",) * n
    if language == "dyck1":
        depth = 0
        for x in w:
            depth += 1 if x == "(" else -1
            if depth < 0:
                return False
        return depth == 0 and len(w) > 0
    raise ValueError(language)


def positives(language: str, lo: int, hi: int, rng: random.Random, k: int) -> list[tuple]:
    out = []
    while len(out) < k:
        n = rng.randint(lo, hi)
        if language == "anbn":
            if n % 2:
                continue
            out.append(("a",) * (n // 2) + ("b",) * (n // 2))
        else:  # dyck1: a random balanced string of n words (n even)
            if n % 2:
                continue
            opens, w, depth = n // 2, [], 0
            for _ in range(n):
                if opens and (depth == 0 or rng.random() < 0.5):
                    w.append("(")
                    opens -= 1
                    depth += 1
                else:
                    w.append(")")
                    depth -= 1
            out.append(tuple(w))
    return out


def negatives(
    language: str, pos: list[tuple], words: list[str], rng: random.Random, kinds: str = "ids"
) -> list:
    """One edit (of ``kinds``: insertion, deletion, substitution) from a member, outside the
    language."""
    out = []
    for w in pos:
        while True:
            w2 = list(w)
            kind = rng.choice(kinds)
            at = rng.randrange(len(w2) + (kind == "i"))
            if kind == "i":
                w2.insert(at, rng.choice(words))
            elif kind == "d" and len(w2) > 1:
                del w2[at]
            else:
                w2[min(at, len(w2) - 1)] = rng.choice(words)
            if w2 and not member(language, tuple(w2)):
                out.append(tuple(w2))
                break
    return out


def inventory(k: int, words: list[str]) -> fd.Grammar:
    names = ["S"] + [f"N{i}" for i in range(1, k)]
    lines = [f"{a} -> {b} {c}" for a, b, c in itertools.product(names, repeat=3)]
    lines += [f"{a} -> '{w}'" for a in names for w in words]
    return fd.Grammar.from_string("\n".join(lines))


def read_off(g: fd.Grammar, ub: torch.Tensor, bb: torch.Tensor, cut: float) -> fd.Grammar | None:
    """The rules whose weight passes ``cut``, less those that derive no string or that the
    start symbol does not reach; None when none is left."""
    unary = [r for r, w in zip(g.unary_rules, ub.tolist(), strict=True) if w > cut]
    binary = [r for r, w in zip(g.binary_rules, bb.tolist(), strict=True) if w > cut]
    productive = {a for a, _ in unary}
    while True:
        more = {a for a, b, c in binary if b in productive and c in productive}
        if more <= productive:
            break
        productive |= more
    binary = [r for r in binary if r[1] in productive and r[2] in productive]
    reachable, todo = {"S"}, ["S"]
    while todo:
        a = todo.pop()
        for lhs, b, c in binary:
            if lhs == a:
                for x in (b, c):
                    if x not in reachable:
                        reachable.add(x)
                        todo.append(x)
    if "S" not in productive:
        return None
    lines = [f"{a} -> {b} {c}" for a, b, c in binary if a in reachable]
    lines += [f"{a} -> '{w}'" for a, w in unary if a in reachable]
    lines.sort(key=lambda line: not line.startswith("S "))  # the first rule's is the start
    return fd.Grammar.from_string("\n".join(lines))


def accuracy(g: fd.Grammar | None, strings: list[tuple], labels: list[bool]) -> float:
    right = 0
    for w, y in zip(strings, labels, strict=True):
        got = False
        if g is not None and set(w) <= g.terminal_set:
            got = g.start in cyk(g, w)[(0, len(w))]
        right += got == y
    return right / len(strings)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--language", default="anbn", choices=["anbn", "dyck1"])
    p.add_argument("--nonterminals", type=int, default=4)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--beta", type=float, default=5.0)
    p.add_argument("--beta-end", type=float, help="raise beta to this by the last eighth")
    p.add_argument("--slope", type=float, default=10.0)
    p.add_argument("--init", type=float, default=-2.0, help="binary rules' initial parameter")
    p.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help="standard deviation of the initial parameters' noise (0: every nonterminal alike)",
    )
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--l1", type=float, default=1e-3)
    p.add_argument(
        "--binarize", type=float, default=0.0, help="times the mean w (1 - w): weights to 0 or 1"
    )
    p.add_argument(
        "--control",
        action="store_true",
        help="the same gates and weights over a symbolic chart, not the D-CYK table",
    )
    p.add_argument(
        "--combine",
        choices=["gate", "noisy-or"],
        default="gate",
        help="with --control: an item's derivations through D-CYK's gate, or by noisy-OR",
    )
    p.add_argument(
        "--same-length",
        action="store_true",
        help="half the training negatives substitutions (the test sets are unchanged)",
    )
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--record",
        type=Path,
        default=Path(__file__).with_name("grammar_probe.jsonl"),
        help="append the run's record here (default: grammar_probe.jsonl beside the script)",
    )
    args = p.parse_args(argv)
    if args.combine != "gate" and not args.control:
        p.error("--combine noisy-or is the symbolic control's (with --control)")
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    words = ["a", "b"] if args.language == "anbn" else ["(", ")"]
    pos = positives(args.language, 1, 10, rng, 1000)
    if args.same_length:  # half the negatives substitutions: the members' lengths
        half = len(pos) // 2
        neg = negatives(args.language, pos[:half], words, rng)
        neg += negatives(args.language, pos[half:], words, rng, kinds="s")
    else:
        neg = negatives(args.language, pos, words, rng)
    train = pos + neg
    labels = [True] * len(pos) + [False] * len(pos)

    def test_set(lo: int, hi: int, k: int) -> tuple[list, list]:
        ps = positives(args.language, lo, hi, rng, k)
        ns = negatives(args.language, ps, words, rng)
        return ps + ns, [True] * len(ps) + [False] * len(ns)

    held = test_set(1, 10, 200)
    mid = test_set(11, 20, 200)
    far = test_set(21, 40, 200)
    g = inventory(args.nonterminals, words)

    def layer_at(beta: float) -> DCYK:
        return DCYK(
            g, args.d, variant="trace", learn=(), beta=beta, dtype=torch.float64, max_length=41
        )

    end = args.beta if args.beta_end is None else args.beta_end
    stages = 8 if end != args.beta else 1  # beta raised geometrically, stage by stage

    def beta_at(step: int) -> float:
        stage = min(stages - 1, step * stages // args.steps)
        return args.beta * (end / args.beta) ** (stage / max(1, stages - 1))

    layers: dict[float, DCYK] = {}
    k_nt, vocab = args.nonterminals, {w: t for t, w in enumerate(words)}

    def symbolic(strings: list, beta: float, ub: torch.Tensor, bb: torch.Tensor) -> torch.Tensor:
        """The control: the same gates and weights over a symbolic chart (no table)."""
        wu = ub.reshape(k_nt, len(words))  # the inventory's order: A -> w by A, then w
        wb = bb.reshape(k_nt, k_nt, k_nt)  # A -> B C by A, B, C
        tops = []
        noisy = args.combine == "noisy-or"
        for w in strings:
            n = len(w)
            if noisy:  # an item's value: its lexical rules' weights
                a = {(i, i + 1): wu[:, vocab[w[i]]] for i in range(n)}
            else:
                a = {(i, i + 1): torch.sigmoid(beta * (wu[:, vocab[w[i]]] - 0.5)) for i in range(n)}
            for span in range(2, n + 1):
                for i in range(n - span + 1):
                    j = i + span
                    if noisy:  # 1 - prod over splits and rules of (1 - w a(B) a(C))
                        miss = sum(
                            torch.log1p(
                                -wb * a[(i, m)][None, :, None] * a[(m, j)][None, None, :]
                            ).sum(dim=(1, 2))
                            for m in range(i + 1, j)
                        )
                        a[(i, j)] = -torch.expm1(miss)
                        continue
                    s_ = sum(
                        torch.einsum("abc,b,c->a", wb, a[(i, m)], a[(m, j)])
                        for m in range(i + 1, j)
                    )
                    a[(i, j)] = torch.sigmoid(beta * (s_ - 0.5))
            tops.append(a[(0, n)][0])  # S, the inventory's first nonterminal
        return torch.stack(tops)

    def top_of(strings: list, beta: float) -> torch.Tensor:
        """The start symbol's statistic over each whole string, by the table or the control."""
        ub, bb = torch.sigmoid(theta_u), torch.sigmoid(theta_b)
        if args.control:
            return symbolic(strings, beta, ub, bb)
        layer = layers.get(beta) or layers.setdefault(beta, layer_at(beta))
        layer.unary_weights, layer.binary_weights = ub, bb
        out = layer(strings)
        return torch.stack([out.scores[b, 0, len(w), start] for b, w in enumerate(strings)])

    theta_u = args.noise * torch.randn(len(g.unary_rules), dtype=torch.float64)
    theta_b = args.init + args.noise * torch.randn(len(g.binary_rules), dtype=torch.float64)
    theta_u.requires_grad_()
    theta_b.requires_grad_()
    opt = torch.optim.Adam([theta_u, theta_b], lr=args.lr)
    start = g.nonterminal_index["S"]
    history = []
    t0 = time.perf_counter()
    for step in range(args.steps):
        longest = min(10, 2 + int(8 * step / max(1, 0.6 * args.steps)))
        pool = [i for i, w in enumerate(train) if len(w) <= longest]
        batch = rng.sample(pool, min(args.batch, len(pool)))
        top = top_of([train[i] for i in batch], beta_at(step))
        y = torch.tensor([float(labels[i]) for i in batch], dtype=torch.float64)
        if args.combine == "noisy-or":  # the top item's value is a probability
            loss = torch.nn.functional.binary_cross_entropy(top.clamp(1e-6, 1 - 1e-6), y)
        else:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(args.slope * (top - 0.5), y)
        weights = torch.cat([torch.sigmoid(theta_u), torch.sigmoid(theta_b)])
        loss = loss + args.l1 * weights.mean() + args.binarize * (weights * (1 - weights)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 or step == args.steps - 1:
            with torch.no_grad():
                got = read_off(g, torch.sigmoid(theta_u), torch.sigmoid(theta_b), 0.5)
            acc = accuracy(got, *held)
            history.append(
                {"step": step, "loss": float(loss.detach()), "held": acc, "longest": longest}
            )
            print(
                f"step {step:4d} loss {float(loss.detach()):.4f} held-out {acc:.3f} "
                f"rules {0 if got is None else len(got)} ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
    with torch.no_grad():
        ub, bb = torch.sigmoid(theta_u), torch.sigmoid(theta_b)
        # the threshold: the one whose grammar is the most accurate on held-out strings of
        # the training lengths, among the weights' own values
        cuts = sorted({0.5, *[float(w) - 1e-9 for w in torch.cat([ub, bb]).tolist()]})
        scored = [(accuracy(read_off(g, ub, bb, c), *held), c) for c in cuts]
        best_acc, cut = max(scored, key=lambda t: (t[0], t[1]))
        got = read_off(g, ub, bb, cut)

        def network(strings: list, labels_: list) -> float:
            right = 0
            for k in range(0, len(strings), 64):
                part = strings[k : k + 64]
                tops = top_of(part, beta_at(args.steps - 1))
                right += sum(
                    bool(t > 0.5) == y for t, y in zip(tops, labels_[k : k + 64], strict=True)
                )
            return right / len(strings)

        net = {"held": network(*held), "11-20": network(*mid), "21-40": network(*far)}
    result = {
        "cut": cut,
        "network": net,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "seconds": time.perf_counter() - t0,
        "held": best_acc,
        "11-20": accuracy(got, *mid),
        "21-40": accuracy(got, *far),
        "grammar": None if got is None else got.to_string(),
        "history": history,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "history"}, indent=1))
    if args.record is not None:  # one JSON line a run
        with args.record.open("a", encoding="utf-8") as f:
            f.write(json.dumps(result) + "\n")
    return result


if __name__ == "__main__":
    main()
