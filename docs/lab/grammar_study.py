"""Study (m): a grammar learned from strings through the D-CYK table, against its symbolic
control and two unstructured networks (docs/results.md, study (m); the protocol in
docs/learning.md, "Learning a grammar from strings").

    python docs/lab/grammar_study.py [--languages anbn dyck2 ...] [--models table chart ...]
        [--seeds 0 1 2 3 4] [--brackets] [--gate tanh] [--select] [--restarts K]
        [--record FILE]
    python docs/lab/grammar_study.py --summary      # the record as docs/results.md's table

One JSON line a run (language, model, seed, brackets) is appended to the record
(default: grammar_study.jsonl beside this script); a run already recorded is skipped, so
the command resumes. Per language and seed: 2,000 training strings of 1 to 10 words, half
members (fastdcyk.generate: length uniform, then tree uniform), half one edit (insertion,
deletion, substitution) from a member and outside the language; tests of 500 members and
500 such negatives in each band, 11 to 20 and 21 to 40 words, and a third test of 21 to 40
words whose negatives keep the members' length (one substitution, or two neighbouring
words swapped); symbolic CYK over the generating grammar the judge. Accuracy is balanced
(the mean over members and negatives): the built-in grammars' languages are left by few
edits, and their bands hold fewer negatives (counted in the record). Models:

- ``table``: :func:`fastdcyk.learn_grammar` (through the D-CYK table, its defaults; d = 128
  up to 6 nonterminals, 256 above), the learned grammar judged by symbolic CYK;
- ``chart``: the same with ``method="chart"`` (the same gates over a symbolic chart);
  both with the sigmoid gate (the protocol's runs), or with ``--gate tanh`` the tanh gate
  (docs/method.md, section 4.7; the record's ``gate``);
- ``torch-struct``: the same with ``method="chart"`` and the chart's cells computed by
  torch-struct's CKY (``torch_struct.CKY``, log semiring) from one score per rule of the
  same inventory (the log of its weight): the string's value is 1 - exp(-Z), Z the sum
  over its trees of the product of their rules' weights (no gate), trained and read off as
  the others (without brackets);
- ``lstm``, ``transformer``: classifiers (one LSTM layer; one Transformer encoder layer
  with learned positions) of about the D-CYK model's parameter count (within 2x), trained
  on the same strings, batches and number of steps (600 of 32) with Adam, their own
  decisions judged. The learning rate is 0.01, or with ``--select`` chosen per run among
  0.001, 0.003, 0.01 and 0.03 on a validation split (a fifth of the training strings, the
  same lengths), the model trained on the other four fifths.

With ``--brackets`` the members carry the unlabelled brackets of one parse (the first
derivation symbolic CYK finds). The learned grammar's language is compared with the
generator's on every string of up to L words, L the longest length whose strings number at
most 100,000 in all. Each model gets the generator's nonterminal count plus one (plus
``--extra``). The tries of the second round: ``--gate tanh``, ``--extra 3``, ``--l1
0.001``, ``--dim 256``, ``--restarts 4``; each is recorded in the run's line and names its
rows in ``--summary``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import time
from pathlib import Path
from unittest import mock

import torch

import fastdcyk as fd
import fastdcyk.learn.model

LANGUAGES = {
    "anbn": """S -> A B | A X
X -> S B
A -> 'a'
B -> 'b'""",
    "dyck2": """S -> S S | L1 R1 | L1 X1 | L2 R2 | L2 X2
X1 -> S R1
X2 -> S R2
L1 -> '('
R1 -> ')'
L2 -> '['
R2 -> ']'""",
    "palindrome": """S -> A Y | B Z | 'c'
Y -> S A
Z -> S B
A -> 'a'
B -> 'b'""",
    "arith": """E -> E X | T Y | L Z | '1'
X -> PL T
T -> T Y | L Z | '1'
Y -> MU F
F -> L Z | '1'
Z -> E RP
PL -> '+'
MU -> '*'
L -> '('
RP -> ')'""",
    "G1": "G1",
    "G2": "G2",
    "G3": "G3",
    "G4": "G4",
}

#: Strings enumerated at most, in all, for the comparison of languages.
ENUMERATE = 100_000


def generator(name: str) -> fd.Grammar:
    text = LANGUAGES[name]
    return fd.Grammar.builtin(text) if text.startswith("G") else fd.Grammar.from_string(text)


def edit(w, words, rng: random.Random, kinds: str) -> tuple[str, ...] | None:
    """``w`` changed by one edit of ``kinds`` (i: insertion, d: deletion, s: substitution,
    t: two neighbours swapped); None where the edit does not apply."""
    w2 = list(w)
    kind = rng.choice(kinds)
    if kind == "t":
        if len(w2) < 2:
            return None
        at = rng.randrange(len(w2) - 1)
        w2[at], w2[at + 1] = w2[at + 1], w2[at]
    elif kind == "i":
        w2.insert(rng.randrange(len(w2) + 1), rng.choice(words))
    elif kind == "d":
        if len(w2) < 2:
            return None
        del w2[rng.randrange(len(w2))]
    else:
        w2[rng.randrange(len(w2))] = rng.choice(words)
    return tuple(w2) if tuple(w2) != tuple(w) else None


def one_edit(g: fd.Grammar, lo: int, hi: int, k: int, rng, seed: int, kinds: str = "ids"):
    """``k`` strings of ``lo`` to ``hi`` words, each one edit (of ``kinds``) from a member
    (members drawn as the positives are) and outside the language: up to 10 edits are tried
    per member, and up to 4 k members (a language that few edits leave, as the built-in
    grammars', gets fewer: the count is recorded)."""
    words, out = list(g.terminals), []
    members = fd.generate(g, 4 * k, min_len=lo, max_len=hi, seed=seed)
    for w in members:
        for _ in range(10):
            w2 = edit(w, words, rng, kinds)
            if w2 is not None and lo <= len(w2) <= hi and not fd.recognizes(g, w2):
                out.append(w2)
                break
        if len(out) == k:
            break
    return out


def first_parse_spans(g: fd.Grammar, w) -> list[tuple[int, int]]:
    """The spans of two or more words of one parse (the first derivation found)."""
    chart = fd.cyk(g, w)
    spans: list[tuple[int, int]] = []

    def walk(a: str, i: int, j: int) -> None:
        if j - i == 1:
            return
        spans.append((i, j))
        for k in range(i + 1, j):
            for b, c in g.binary_by_lhs[a]:
                if b in chart[(i, k)] and c in chart[(k, j)]:
                    walk(b, i, k)
                    walk(c, k, j)
                    return

    walk(g.start, 0, len(w))
    return spans


def data(g: fd.Grammar, seed: int):
    rng = random.Random(seed)

    def band(lo: int, hi: int, k: int, s: int, kinds: str = "ids"):
        pos = fd.generate(g, k, min_len=lo, max_len=hi, seed=s)
        neg = one_edit(g, max(1, lo - 1), hi + 1, k, rng, s + 500, kinds)
        return pos + neg, [True] * len(pos) + [False] * len(neg)

    return {
        "train": band(1, 10, 1000, seed),
        "mid": band(11, 20, 500, seed + 1000),
        "far": band(21, 40, 500, seed + 2000),
        # negatives of the members' length: one substitution or two neighbours swapped
        "same": band(21, 40, 500, seed + 3000, "st"),
    }


def enumerate_length(g: fd.Grammar) -> int:
    v, total, length = len(g.terminals), 0, 0
    while total + v ** (length + 1) <= ENUMERATE and length < 8:
        length += 1
        total += v**length
    return length


def same_language(learned: fd.Grammar | None, g: fd.Grammar, length: int) -> int:
    """How many strings of up to ``length`` words the two grammars disagree on."""
    bad = 0
    for n in range(1, length + 1):
        for w in itertools.product(g.terminals, repeat=n):
            got = learned is not None and fd.recognizes(learned, w)
            bad += got != fd.recognizes(g, w)
    return bad


def balanced(got, labels) -> float:
    """The mean of the accuracies on the members and on the negatives (a band of a
    language that few edits leave has fewer negatives than members)."""
    rates = []
    for side in (True, False):
        rows = [g == y for g, y in zip(got, labels, strict=True) if y is side]
        if rows:
            rates.append(sum(rows) / len(rows))
    return sum(rates) / len(rates)


def grammar_accuracy(learned, strings, labels) -> float:
    got = [learned is not None and fd.recognizes(learned, w) for w in strings]
    return balanced(got, labels)


class Peer(torch.nn.Module):
    """A sequence classifier: an LSTM, or a Transformer encoder layer with learned
    positions; the logit from the mean of the last layer's states."""

    def __init__(self, kind: str, vocab: int, width: int, max_len: int = 41) -> None:
        super().__init__()
        self.kind = kind
        self.embed = torch.nn.Embedding(vocab + 1, width, padding_idx=vocab)
        if kind == "lstm":
            self.body = torch.nn.LSTM(width, width, batch_first=True)
        else:
            self.pos = torch.nn.Embedding(max_len, width)
            self.body = torch.nn.TransformerEncoderLayer(
                width, 1, dim_feedforward=2 * width, dropout=0.0, batch_first=True
            )
        self.out = torch.nn.Linear(width, 1)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        x = self.embed(ids)
        if self.kind == "lstm":
            h, _ = self.body(x)
        else:
            x = x + self.pos(torch.arange(ids.shape[1]))[None]
            h = self.body(x, src_key_padding_mask=~mask)
        h = (h * mask[..., None]).sum(1) / lengths[:, None]
        return self.out(h)[:, 0]


def parameters(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def struct_cells(inv, strings, wu, wb, beta, gate=None):
    """The start symbol's value in each whole string by torch-struct's CKY (log
    semiring) over the inventory: 1 - exp(-Z), Z the sum over the string's trees of the
    product of their rules' weights (``beta`` and ``gate`` unused: no gate).
    torch-struct's preterminals are a twin of each nonterminal (a twin covers one word, a
    nonterminal two or more), as in benchmarks/bench_peer.py; a one-word string's Z is its
    rule's weight."""
    import torch_struct

    k, n_words = len(inv.names), len(inv.words)
    vocab = {w: t for t, w in enumerate(inv.words)}
    lengths = [len(s) for s in strings]
    n = max(lengths)
    log_u = torch.log(wu.reshape(k, n_words))  # (A, w)
    log_b = torch.log(wb.reshape(k, k, k))  # (A, B, C)
    ids = torch.tensor([[vocab[w] for w in s] + [0] * (n - len(s)) for s in strings])
    terms = log_u[:, ids].permute(1, 2, 0).contiguous()  # (batch, n, T = k twins)
    rules = log_b.repeat(1, 2, 2)  # B and C over the nonterminals and their twins
    rules = rules.expand(len(strings), *rules.shape)
    roots = torch.full((len(strings), k), -1e9, dtype=wb.dtype)
    roots[:, 0] = 0.0  # the start is the inventory's first name
    log_z = torch.zeros(len(strings), dtype=wb.dtype)
    long = [b for b, m in enumerate(lengths) if m >= 2]
    if long:
        got, _ = torch_struct.CKY(torch_struct.LogSemiring).logpartition(
            (terms[long], rules[long], roots[long]),
            lengths=torch.tensor([lengths[b] for b in long]),
        )
        log_z = log_z.index_put((torch.tensor(long),), got[0])
    short = [b for b, m in enumerate(lengths) if m == 1]
    if short:
        log_z = log_z.index_put((torch.tensor(short),), terms[short, 0, 0])
    value = -torch.expm1(-torch.exp(log_z))

    def get(rows, spans):
        if any(i != 0 or j != lengths[b] for b, (i, j) in zip(rows, spans, strict=True)):
            raise ValueError("the torch-struct control gives whole strings' values only")
        return value[torch.tensor(rows)][:, None]

    return fastdcyk.learn.model.Cells(get, lengths, 0)


#: The learning rates a peer chooses among with --select.
PEER_RATES = (0.001, 0.003, 0.01, 0.03)


def peer_run(kind, g, sets, seed, budget, steps=600, batch=32, select=False):
    """A peer trained at lr 0.01 on the training strings, or (``select``) at the rate of
    :data:`PEER_RATES` best on a validation fifth of them, trained on the rest."""
    if not select:
        return peer_fit(kind, g, sets, seed, budget, 0.01, steps, batch)
    strings, labels = sets["train"]
    rows = list(range(len(strings)))
    random.Random(f"validation/{seed}").shuffle(rows)
    cut = len(rows) // 5
    fit = dict(sets, train=([strings[k] for k in rows[cut:]], [labels[k] for k in rows[cut:]]))
    fit["validation"] = ([strings[k] for k in rows[:cut]], [labels[k] for k in rows[:cut]])
    runs = [peer_fit(kind, g, fit, seed, budget, lr, steps, batch) for lr in PEER_RATES]
    best = max(runs, key=lambda r: (r["validation"], -r["lr"]))
    best["validation by lr"] = {str(r["lr"]): r["validation"] for r in runs}
    return best


def peer_fit(kind, g, sets, seed, budget, lr, steps, batch):
    torch.manual_seed(seed)
    vocab = {w: t for t, w in enumerate(g.terminals)}
    width = 2
    while parameters(Peer(kind, len(vocab), width + 1)) <= budget:
        width += 1
    model = Peer(kind, len(vocab), width)
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def tensors(strings):
        n = max(len(w) for w in strings)
        ids = torch.tensor([[vocab.get(x, len(vocab)) for x in w] + [len(vocab)] * (n - len(w))
                            for w in strings])  # fmt: skip
        return ids, torch.tensor([len(w) for w in strings], dtype=torch.float32)

    strings, labels = sets["train"]
    rng = random.Random(seed)
    for _ in range(steps):
        rows = rng.sample(range(len(strings)), batch)
        ids, lengths = tensors([strings[k] for k in rows])
        y = torch.tensor([float(labels[k]) for k in rows])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(ids, lengths), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def accuracy(strings, labels):
        with torch.no_grad():
            ids, lengths = tensors(strings)
            got = (model(ids, lengths) > 0).tolist()
        return balanced(got, labels)

    out = {
        "parameters": parameters(model),
        "width": width,
        "lr": lr,
        "train": accuracy(*sets["train"]),
        "11-20": accuracy(*sets["mid"]),
        "21-40": accuracy(*sets["far"]),
        "21-40 same length": accuracy(*sets["same"]),
    }
    if "validation" in sets:
        out["validation"] = accuracy(*sets["validation"])
    return out


#: Student's t at 0.975 for 1 to 4 degrees of freedom (the 95% interval of a mean).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}


def summary(path: Path) -> str:
    """The record's runs as a Markdown table: per language, model and brackets, the
    seeds run, the mean accuracy on each band (with the 95% interval over seeds where
    there are two or more), the runs whose grammar equals the generator's language on
    every string enumerated, and the longest run's seconds."""
    groups: dict = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        kind = r["model"]
        if r.get("restarts", 1) > 1:
            kind += f", {r['restarts']} restarts"
        if r.get("select"):
            kind += ", lr chosen on validation"
        if r.get("gate", "sigmoid") != "sigmoid":
            kind += f", {r['gate']} gate"
        if r.get("dim"):
            kind += f", d = {r['dim']}"
        if r.get("extra", 1) != 1:
            kind += f", {r['extra']} extra nonterminals"
        if r.get("l1") is not None:
            kind += f", l1 = {r['l1']}"
        groups.setdefault((r["language"], r["brackets"], kind), []).append(r)

    def mean(rs, key):
        xs = [r[key] for r in rs]
        m = sum(xs) / len(xs)
        if len(xs) < 2:
            return f"{m:.3f}"
        sd = (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5
        return f"{m:.3f} ± {T975[min(4, len(xs) - 1)] * sd / len(xs) ** 0.5:.3f}"

    order = {"table": 0, "chart": 1, "torch-struct": 2, "lstm": 3, "transformer": 4}
    rows = [
        "| language | brackets | model | seeds | 11-20 | 21-40 | 21-40, same length | "
        "exact up to L words | longest run (s) |",
        "|---|---|---|---|---|---|---|---|---:|",
    ]

    def place(key):
        lang, br, kind = key
        return list(LANGUAGES).index(lang), br, order[kind.split(",")[0]], kind

    for (lang, br, kind), rs in sorted(groups.items(), key=lambda kv: place(kv[0])):
        rs.sort(key=lambda r: r["seed"])
        exact = "" if "disagree" not in rs[0] else (
            f"{sum(r['disagree'] == 0 for r in rs)} of {len(rs)} (L = {rs[0]['enumerated']})"
        )  # fmt: skip
        rows.append(
            f"| {lang} | {'yes' if br else 'no'} | {kind} | "
            f"{', '.join(str(r['seed']) for r in rs)} | {mean(rs, '11-20')} | "
            f"{mean(rs, '21-40')} | {mean(rs, '21-40 same length')} | {exact} | "
            f"{max(r['seconds'] for r in rs):.0f} |"
        )
    return "\n".join(rows)


def settings(args: argparse.Namespace, kind: str) -> dict:
    """The run's settings as its record holds them, each left out at its default: the
    brackets; for a peer whether its rate was chosen on validation; for the others the
    restarts, and the tries (the gate of the table and the chart, the table's d, extra
    nonterminals, l1)."""
    out: dict = {"brackets": args.brackets}
    if kind in ("lstm", "transformer"):
        if args.select:
            out["select"] = True
        return out
    out["restarts"] = args.restarts
    if kind in ("table", "chart") and args.gate != "sigmoid":
        out["gate"] = args.gate
    if kind == "table" and args.dim is not None:
        out["dim"] = args.dim
    if args.extra != 1:
        out["extra"] = args.extra
    if args.l1 is not None:
        out["l1"] = args.l1
    return out


def run_key(record: dict) -> tuple:
    """What makes a run (a record) the same run: a run whose key is recorded is skipped."""
    return (
        record["language"], record["model"], record["seed"], record["brackets"],
        record.get("restarts", 1), record.get("select", False), record.get("gate", "sigmoid"),
        record.get("dim"), record.get("extra", 1), record.get("l1"),
    )  # fmt: skip


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--languages", nargs="+", default=list(LANGUAGES), choices=list(LANGUAGES))
    p.add_argument(
        "--models", nargs="+", default=["table", "chart", "lstm", "transformer"],
        choices=["table", "chart", "torch-struct", "lstm", "transformer"],
    )  # fmt: skip
    p.add_argument(
        "--select", action="store_true",
        help="the peers' learning rate chosen on a validation split (lstm, transformer)",
    )  # fmt: skip
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--brackets", action="store_true")
    p.add_argument(
        "--extra", type=int, default=1,
        help="nonterminals beyond the generator's (table, chart, torch-struct; default 1)",
    )  # fmt: skip
    p.add_argument(
        "--l1", type=float, default=None,
        help="learn_grammar's l1 (table, chart, torch-struct; default: its default, 0.01)",
    )  # fmt: skip
    p.add_argument(
        "--dim", type=int, default=None,
        help="the table's d (default: 128 up to 6 nonterminals, 256 above)",
    )  # fmt: skip
    p.add_argument(
        "--gate", choices=["sigmoid", "tanh"], default="sigmoid",
        help="learn_grammar's gate (table and chart; the study's protocol ran sigmoid)",
    )  # fmt: skip
    p.add_argument(
        "--restarts", type=int, default=1, help="learn_grammar's restarts (table and chart)"
    )
    p.add_argument("--record", type=Path, default=Path(__file__).with_name("grammar_study.jsonl"))
    p.add_argument("--summary", action="store_true", help="print the record's table and stop")
    args = p.parse_args(argv)
    if args.summary:
        print(summary(args.record))
        return
    done = set()
    if args.record.exists():
        for line in args.record.read_text(encoding="utf-8").splitlines():
            done.add(run_key(json.loads(line)))
    for seed in args.seeds:
        for name in args.languages:
            g = generator(name)
            sets = None
            for kind in args.models:
                peer = kind in ("lstm", "transformer")
                record = {"language": name, "model": kind, "seed": seed, **settings(args, kind)}
                if run_key(record) in done or (peer and (args.brackets or args.restarts > 1)):
                    continue
                if kind == "torch-struct" and args.brackets:
                    continue
                sets = sets or data(g, seed)
                k = len(g.nonterminals) + record.get("extra", 1)
                n_rules = k**3 + k * len(g.terminals)
                t0 = time.perf_counter()
                if kind in ("table", "chart", "torch-struct"):
                    strings, labels = sets["train"]
                    brackets = None
                    if args.brackets:
                        brackets = [first_parse_spans(g, w) if y else None
                                    for w, y in zip(strings, labels, strict=True)]  # fmt: skip
                    control = kind == "torch-struct"
                    with (
                        mock.patch.object(fastdcyk.learn.model, "chart_cells", struct_cells)
                        if control
                        else contextlib.nullcontext()
                    ):
                        learned = fd.learn_grammar(
                            strings, labels, nonterminals=k, brackets=brackets,
                            method="chart" if control else kind,
                            gate=record.get("gate", "sigmoid"),
                            d=record.get("dim") or (128 if k <= 6 else 256), seed=seed,
                            progress=False, restarts=args.restarts,
                            **({} if args.l1 is None else {"l1": args.l1}),
                        )  # fmt: skip
                    seconds = time.perf_counter() - t0
                    lg = learned.grammar
                    length = enumerate_length(g)
                    record.update(
                        parameters=n_rules,
                        held=learned.held_out_accuracy,
                        train=learned.train_accuracy,
                        **{"11-20": grammar_accuracy(lg, *sets["mid"])},
                        **{"21-40": grammar_accuracy(lg, *sets["far"])},
                        **{"21-40 same length": grammar_accuracy(lg, *sets["same"])},
                        enumerated=length,
                        disagree=same_language(lg, g, length),
                        rules=0 if lg is None else len(lg),
                        grammar=None if lg is None else lg.to_string(),
                        seconds=seconds,
                    )
                else:
                    record.update(
                        peer_run(kind, g, sets, seed, budget=2 * n_rules, select=args.select)
                    )
                    record["seconds"] = time.perf_counter() - t0
                # the trivial rule "of even length" beside the models (a^n b^n, Dyck, ...)
                for band, where in (("mid", "11-20"), ("far", "21-40"), ("same", "same")):
                    record[f"negatives {where}"] = sets[band][1].count(False)
                for band in ("far", "same"):
                    strings, labels = sets[band]
                    record[f"even length, {band}"] = balanced(
                        [len(w) % 2 == 0 for w in strings], labels
                    )
                print(json.dumps({k_: v for k_, v in record.items() if k_ != "grammar"}),
                      flush=True)  # fmt: skip
                with args.record.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
