"""A worked model: an encoder gives each word's preterminal scores, D-CYK with the treebank's
PCFG on top, trained end to end on the Penn Treebank sample (docs/learning.md).

Train on files 0001-0179, test on every sentence of files 0180-0199 of at most 25 words
(unknown words included). Seven parsers, one grammar (``TreebankGrammar.from_trees`` of the
training files), each tree scored with evalb's labelled brackets against the gold tree:

- ``pipeline``: the encoder (word embeddings, a character CNN for the spelling of unknown
  words, a BiLSTM; a softmax over the grammar's preterminals) trained as a tagger
  (cross-entropy), then symbolic Viterbi CKY with the tagger's log probabilities as lexical
  scores (``fd.viterbi(..., lexical=...)``);
- ``e2e``: the pipeline's tagger trained further end to end: it feeds
  :class:`fastdcyk.nn.DCYK` (every tag of probability above 1e-4 is written into the table,
  :func:`dcyk_input`), and the loss adds D-CYK's chart loss against the chart of the gold
  tags, through the table, to the tag loss. Its tree is the most probable tree of the decoded
  chart (Viterbi over it, the tags' log probabilities as lexical scores);
- ``e2e-log``: as ``e2e``, with the log probabilities' gradient passed straight through
  the table's inputs (:func:`dcyk_input`);
- ``e2e-tree``: the pipeline's tagger trained further with a margin on the tags of the tree
  that Viterbi finds in D-CYK's decoded chart (:func:`tree_loss`) beside the tag loss; no
  gradient through the table; parsed as ``e2e`` is;
- ``continued``: the same further training without D-CYK (the control), parsed as the
  pipeline is;
- ``gold-tags``: symbolic Viterbi with the gold tags (the grammar's ceiling);
- ``nltk-tagger``: NLTK's averaged perceptron tagger trained on the same trees, then symbolic
  Viterbi with its tags.

Each trained model is trained for every ``--seed`` given (the encoder's
initialisation and the order of the training sentences); the report pools the seeds.

The tags are the grammar's preterminals (``TreebankGrammar.preterminals_of``): the POS tags,
and the phrase labels whose unary chains end in a word (``NP -> NNP -> 'John'`` is the CNF
rule ``NP -> 'John'``). The treebank sample may not be copied into the project: give its
folder. Checkpoints and a log of the training curves go to ``--out``/seed<N>; the results
to docs/lab/treebank_model.json (run the seeds one after another: each run rewrites it).

Usage (one seed; docs/learning.md uses seeds 0 to 4)::

    python docs/lab/treebank_model.py train --treebank PATH/treebank --model pipeline --seed 0
    python docs/lab/treebank_model.py train --treebank PATH/treebank --model continued --seed 0
    python docs/lab/treebank_model.py train --treebank PATH/treebank --model e2e --seed 0
    python docs/lab/treebank_model.py evaluate --treebank PATH/treebank --seed 0
    python docs/lab/treebank_model.py report          # the tables of docs/learning.md, the figure

On a GPU: add ``--device cuda`` to train and evaluate.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

import fastdcyk as fd
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees
from fastdcyk.nn import DCYK
from fastdcyk.nn import dcyk_input as nn_dcyk_input

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "treebank_model.json"
FIGURE = HERE.parent / "figures" / "treebank_model.png"
MAX_LEN = 25  # the test sentences
SEED = 0
#: A tag whose probability exceeds this is written into D-CYK's table (as present:
#: :func:`dcyk_input`), and is a tag of the pipeline's Viterbi parse
FLOOR = 1e-4
BATCH = 32  # the tag loss's batch
#: The trained models: the pipeline's tagger, the same trained further with the tag loss
#: only (the control), and with D-CYK: its chart loss (e2e, e2e-log) or a margin on the
#: tags of the tree D-CYK's chart gives (e2e-tree)
MODELS = ("pipeline", "continued", "e2e", "e2e-log", "e2e-tree")
#: The models parsed through D-CYK
THROUGH_DCYK = ("e2e", "e2e-log", "e2e-tree")


# -- data ------------------------------------------------------------------------------------


def split(folder: Path) -> tuple[list[Path], list[Path]]:
    files = sorted(Path(folder).glob("wsj_*.mrg"))
    if not files:
        raise SystemExit(f"no wsj_*.mrg files in {folder}: give the treebank sample's folder")
    number = {f: int(f.stem.split("_")[1]) for f in files}
    return [f for f in files if number[f] <= 179], [f for f in files if number[f] >= 180]


class Data:
    """The grammar, the tag set and the sentences of both parts, with their gold tags."""

    def __init__(self, folder: Path) -> None:
        train_files, test_files = split(folder)
        self.tb = TreebankGrammar.from_trees(train_files)
        self.grammar = self.tb.grammar
        self.tags = self.grammar.preterminals
        index = {t: k for k, t in enumerate(self.tags)}
        self.train = []
        for tree in (clean(t) for t in read_trees(train_files)):
            if tree is None:
                continue
            tags = self.tb.preterminals_of(tree)
            if all(t in index for t in tags):  # a chain the CNF grammar folded away: skip
                self.train.append((tuple(tree.leaves()), tuple(index[t] for t in tags)))
        self.test = []
        for tree in (clean(t) for t in read_trees(test_files)):
            if tree is not None and len(tree.leaves()) <= MAX_LEN:
                self.test.append((tree, self.tb.preterminals_of(tree)))
        counts = Counter(w for words, _ in self.train for w in words)
        self.vocab = ["<unk>", *sorted(w for w, c in counts.items() if c >= 2)]
        self.chars = ["<unk>", *sorted({c for words, _ in self.train for w in words for c in w})]


# -- the encoder ---------------------------------------------------------------------------


class Encoder(torch.nn.Module):
    """Word embeddings + a character CNN (the spelling: suffixes, capitals, digits, for the
    words the embeddings never saw) -> a BiLSTM -> one score per preterminal.

    A BiLSTM rather than a transformer: 3,669 training sentences are few for a transformer
    trained from scratch, and the BiLSTM is the usual encoder of CPU-trained constituency
    parsers of this size; its context on both sides is what tagging needs.
    """

    def __init__(self, vocab: list[str], chars: list[str], tags: int) -> None:
        super().__init__()
        self.words = {w: k for k, w in enumerate(vocab)}
        self.char_ids = {c: k for k, c in enumerate(chars)}
        self.embed = torch.nn.Embedding(len(vocab), 100)
        self.char_embed = torch.nn.Embedding(len(chars), 24)
        self.char_cnn = torch.nn.Conv1d(24, 50, 3, padding=1)
        self.lstm = torch.nn.LSTM(150, 128, batch_first=True, bidirectional=True)
        self.drop = torch.nn.Dropout(0.3)
        self.out = torch.nn.Linear(256, tags)

    def forward(self, sentences: list[tuple[str, ...]], word_dropout: float = 0.0) -> torch.Tensor:
        """Logits (B, n, tags) for a batch of sentences (padded to the longest)."""
        dev = self.out.weight.device
        n = max(map(len, sentences))
        ids = torch.zeros(len(sentences), n, dtype=torch.long)
        width = max(len(w) for s in sentences for w in s)
        chars = torch.zeros(len(sentences), n, width, dtype=torch.long)
        for b, s in enumerate(sentences):
            for i, w in enumerate(s):
                k = self.words.get(w, 0)
                if word_dropout and random.random() < word_dropout:
                    k = 0  # so that <unk> is trained: the test has unknown words
                ids[b, i] = k
                for c, ch in enumerate(w):
                    chars[b, i, c] = self.char_ids.get(ch, 0)
        ids, chars = ids.to(dev), chars.to(dev)
        c = self.char_embed(chars.view(-1, width)).transpose(1, 2)  # (B n, 24, width)
        c = torch.relu(self.char_cnn(c)).max(-1).values.view(len(sentences), n, -1)
        x = self.drop(torch.cat((self.embed(ids), c), -1))
        lengths = torch.tensor([len(s) for s in sentences])
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=True, enforce_sorted=False
        )
        h, _ = self.lstm(packed)
        h, _ = torch.nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=n)
        return self.out(self.drop(h))


def make_encoder(data: Data, seed: int = SEED) -> Encoder:
    torch.manual_seed(seed)
    return Encoder(data.vocab, data.chars, len(data.tags))


def run_dir(args: argparse.Namespace) -> Path:
    """The checkpoints and logs of one seed's models."""
    return Path(args.out) / f"seed{args.seed}"


def load_encoder(data: Data, args: argparse.Namespace, model: str, dev: torch.device) -> Encoder:
    """A seed's trained ``model`` (its checkpoint in :func:`run_dir`)."""
    path = run_dir(args) / f"{model}.pt"
    if not path.exists():
        raise SystemExit(f"no {path}: train it first (--model {model} --seed {args.seed})")
    enc = make_encoder(data, args.seed).to(dev)
    enc.load_state_dict(torch.load(path, map_location=dev))
    return enc


def make_layer(data: Data, args: argparse.Namespace, dev: torch.device) -> DCYK:
    """D-CYK with the treebank grammar at ``--dim``, float32, its codebook fixed."""
    return DCYK(
        data.grammar, args.dim, dtype=torch.float32, max_length=MAX_LEN, learn=(), device=dev
    )


def load_record() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def save_record(record: dict) -> None:
    RESULTS.write_text(json.dumps(record, indent=1, sort_keys=True))


# -- training ------------------------------------------------------------------------------


def tag_loss(logits: torch.Tensor, tags: list[tuple[int, ...]]) -> torch.Tensor:
    """Cross-entropy against the gold tags, averaged over the real positions."""
    n = logits.shape[1]
    gold = torch.full((len(tags), n), -1, dtype=torch.long)
    for b, t in enumerate(tags):
        gold[b, : len(t)] = torch.tensor(t)
    gold = gold.to(logits.device)
    keep = gold >= 0
    return torch.nn.functional.cross_entropy(logits[keep], gold[keep])


def dcyk_input(logits: torch.Tensor, log: bool = False) -> torch.Tensor:
    """The preterminal scores D-CYK takes (:func:`fastdcyk.nn.dcyk_input` at
    :data:`FLOOR`): 1 for every tag whose probability exceeds the floor, with the
    probabilities' gradient (or with ``log`` the log probabilities': the ``e2e-log``
    model). Written as they are, probabilities put an unsure tag below the decoder's
    boundary: 58 of 138 test sentences parsed when an earlier run wrote the scores
    themselves."""
    return nn_dcyk_input(logits, FLOOR, log)


def lexical_scores(logits: torch.Tensor, tags: tuple[str, ...]) -> list[dict]:
    """Each position's log probabilities of the tags above :data:`FLOOR`: the lexical
    scores of the trees (``fd.viterbi(..., lexical=...)``)."""
    logp = torch.log_softmax(logits, -1).cpu().numpy()
    floor = math.log(FLOOR)
    return [{tags[k]: float(row[k]) for k in np.flatnonzero(row > floor)} for row in logp]


def parse_tags(data: Data, tree: fd.Tree, words: tuple[str, ...]) -> tuple[str, ...]:
    """Each word's preterminal in a tree of the grammar, read as the gold tags are: the
    tree in the treebank's labels, then ``TreebankGrammar.preterminals_of``."""
    return data.tb.preterminals_of(data.tb.to_treebank(tree, words))


def tree_loss(
    logits: torch.Tensor, layer: DCYK, data: Data, words: tuple[str, ...], tags: tuple
) -> torch.Tensor:
    """The margin loss of one sentence (e2e-tree), a structured-perceptron surrogate of the
    cost-augmented hinge: D-CYK parses the sentence from the encoder's tags (its decoded
    chart; no gradient through the table), Viterbi finds the most probable tree in that
    chart with every wrong tag's lexical score raised by 1 (cost-augmented decoding over
    the tags), and the loss is the log probability of that tree's tags less that of the
    gold tags, over the words where they differ, divided by the sentence's length.

    Its gradient is the hinge's subgradient with respect to the lexical scores: at a word
    whose tags differ, e_a - e_t on the logits (the parse's tag a pushed down, the gold tag
    t up), 0 where the parse's tags are the gold ones or no tree is found. Its value is not
    the hinge's: the rules' log probabilities and the costs, which choose the tree but do
    not depend on the encoder, are left out, so it can be negative; and a gold tag below
    :data:`FLOOR`, absent from the chart, always contributes (log p of it is under
    log 1e-4)."""
    with torch.no_grad():
        out = layer([words], preterminals=dcyk_input(logits))
    gold = [data.tags[t] for t in tags]
    lex = lexical_scores(logits[0].detach(), data.tags)
    lex = [{a: v + (a != g) for a, v in row.items()} for row, g in zip(lex, gold, strict=True)]
    best = fd.viterbi(data.grammar, words, chart=out.charts[0], lexical=lex)
    if best.tree is None:  # no tree in D-CYK's chart: nothing to compare
        return logits.sum() * 0.0
    index = {t: k for k, t in enumerate(data.tags)}
    logp = torch.log_softmax(logits[0], -1)
    terms = [
        logp[i, index[a]] - logp[i, t]
        # the tree's tags as the gold ones were read (TreebankGrammar.preterminals_of)
        for i, (a, t) in enumerate(zip(parse_tags(data, best.tree, words), tags, strict=True))
        if index[a] != t
    ]
    return torch.stack(terms).sum() / len(words) if terms else logits.sum() * 0.0


def gold_chart(data: Data, words: tuple[str, ...], tags: tuple[int, ...]) -> dict:
    """The chart the gold tags give (every item the grammar derives over them)."""
    return fd.cyk(data.grammar, words, tags=[data.tags[t] for t in tags])


def train(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    out = run_dir(args)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    data = Data(args.treebank)
    print(
        f"{data.tb}; {len(data.tags)} tags; {len(data.train)} training sentences "
        f"({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )
    dev = torch.device(args.device)
    if args.model == "pipeline":
        enc = make_encoder(data, args.seed).to(dev)
        log = train_tagger(args, data, enc)
    else:  # the pipeline's tagger, trained further (through D-CYK for e2e)
        enc = load_encoder(data, args, "pipeline", dev)
        log = second_stage(args, data, enc, dev, through_dcyk=args.model in THROUGH_DCYK)
    torch.save(enc.state_dict(), out / f"{args.model}.pt")
    (out / f"{args.model}.log.json").write_text(json.dumps(log, indent=1))
    record = load_record()
    entry = {"log": log, "device": args.device}
    if args.model in THROUGH_DCYK:
        entry["dim"], entry["chart_weight"] = args.dim, args.chart_weight
    record.setdefault(f"seed {args.seed}", {})[f"training/{args.model}"] = entry
    save_record(record)


def train_tagger(args: argparse.Namespace, data: Data, enc: Encoder) -> list[dict]:
    """The pipeline's tagger: ``--epochs`` epochs of cross-entropy, batches of 32, Adam at a
    constant learning rate of 2e-3.

    The rate annealed to 0 over the 20 epochs (cosine) was tried too, and gave the weaker
    tagger: test tag accuracy 0.9361 after 20 epochs (seed 0) against 0.9448, the tag loss
    still falling (its log: "tried: cosine pipeline, seed 0" in docs/lab/treebank_model.json)."""
    opt = torch.optim.Adam(enc.parameters(), lr=2e-3)
    order = list(range(len(data.train)))
    log: list[dict] = []
    for epoch in range(1, args.epochs + 1):
        random.shuffle(order)
        enc.train()
        start, total = time.perf_counter(), 0.0
        for b in tqdm(range(0, len(order), BATCH), desc=f"tags, epoch {epoch}", leave=False):
            batch = [data.train[k] for k in order[b : b + BATCH]]
            opt.zero_grad()
            loss = tag_loss(enc([w for w, _ in batch], 0.1), [t for _, t in batch])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(batch)
        seconds = time.perf_counter() - start
        acc = tag_accuracy(enc, data)
        log.append(
            {
                "stage": "tags",
                "epoch": epoch,
                "loss": total / len(order),
                "test_tag_accuracy": acc,
                "seconds": seconds,
                "peak_device_gb": peak_device_gb(next(enc.parameters()).device),
            }
        )
        print(
            f"epoch {epoch}: tag loss {total / len(order):.4f}, test tag accuracy {acc:.4f}, "
            f"{seconds:.0f} s",
            flush=True,
        )
    return log


def stage_draws(data: Data, args: argparse.Namespace) -> Iterator[tuple[list, tuple]]:
    """The second stage's draws, step after step (endless): a batch of :data:`BATCH`
    training sentences of every length (cycling through the training set, in a new order
    each pass) and one sentence of at most ``--dcyk-length`` words, for D-CYK."""
    rng = random.Random(args.seed)
    short = [s for s in data.train if len(s[0]) <= args.dcyk_length]
    rng.shuffle(short)
    order: list[int] = []
    for step in itertools.count():
        if len(order) < BATCH:
            order += rng.sample(range(len(data.train)), len(data.train))
        yield [data.train[k] for k in order[:BATCH]], short[step % len(short)]
        del order[:BATCH]


def stage_losses(
    enc: Encoder, layer: DCYK | None, data: Data, batch: list, sentence: tuple, model: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """A step's tag loss (the batch's plus the sentence's) and, with a ``layer``, the
    sentence's second loss for ``model``: D-CYK's chart loss against the chart of its gold
    tags (``e2e``; ``e2e-log`` with :func:`dcyk_input`'s log-probability gradient) or its
    :func:`tree_loss` (``e2e-tree``); 0 without a layer."""
    words, tags = sentence
    logits = enc([words], 0.1)
    tag = tag_loss(enc([w for w, _ in batch], 0.1), [t for _, t in batch])
    tag = tag + tag_loss(logits, [tags])
    if layer is None:
        return tag, torch.zeros(())
    if model == "e2e-tree":
        return tag, tree_loss(logits, layer, data, words, tags)
    out = layer([words], preterminals=dcyk_input(logits, model == "e2e-log"))
    # the layer's loss: the mean over every (i, j, A) of the decisions' cross-entropy
    return tag, out.loss([gold_chart(data, words, tags)])


def second_stage(
    args: argparse.Namespace, data: Data, enc: Encoder, dev: torch.device, through_dcyk: bool
) -> list:
    """The pipeline's tagger trained further, ``--stage-steps`` steps, Adam from ``--stage-lr``
    annealed to 0 (cosine). Every step takes a batch of 32 training sentences (all lengths,
    cycling through the training set) and one sentence of at most ``--dcyk-length`` words,
    with the tag loss on both; ``e2e`` and ``e2e-log`` (``through_dcyk``) add D-CYK's chart
    loss on the single sentence against the chart of its gold tags, through the table,
    ``e2e-tree`` its :func:`tree_loss` instead. Without either (``continued``) the stage is
    the same steps, batches and dropout: the control that tells the second loss's effect
    from that of the extra training.

    One D-CYK sentence per step: D-CYK keeps every cell's update for the backward pass (a
    15-word sentence needs about 2.3 GB at d = 1024 in float32). The batches keep the tag
    loss on the whole training set: an earlier stage on the short sentences alone, one per
    step, lowered the test F1 with or without the chart loss (docs/learning.md).
    """
    layer = make_layer(data, args, dev) if through_dcyk else None
    opt = torch.optim.Adam(enc.parameters(), lr=args.stage_lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.stage_steps)
    log, window = [], []
    start = time.perf_counter()
    enc.train()
    name = "end to end" if through_dcyk else "continued (tag loss only)"
    # the second loss's name in the log: the tree margin's fraction of steps with a gradient
    # ("active") beside it
    second = "tree_loss" if args.model == "e2e-tree" else "chart_loss"
    draws = enumerate(itertools.islice(stage_draws(data, args), args.stage_steps), start=1)
    for step, (batch, sentence) in tqdm(draws, desc=name, total=args.stage_steps):
        opt.zero_grad()
        tag, chart = stage_losses(enc, layer, data, batch, sentence, args.model)
        loss = tag + args.chart_weight * chart
        loss.backward()
        # the decoder's sigmoid is steep (beta = 50): a score near its boundary gives a
        # gradient spike, clipped here
        torch.nn.utils.clip_grad_norm_(enc.parameters(), 5.0)
        opt.step()
        schedule.step()
        window.append((float(chart.detach()), float(loss.detach()), float(chart.detach() != 0)))
        if step % 25 == 0 or step == args.stage_steps:
            c, t, active = np.mean(window, axis=0)
            log.append(
                {
                    "stage": "second",
                    "step": step,
                    second: float(c) if layer is not None else None,
                    **({"active": float(active)} if args.model == "e2e-tree" else {}),
                    "loss": float(t),
                    "seconds": time.perf_counter() - start,
                    "peak_rss_gb": peak_rss_gb(),
                    "peak_device_gb": peak_device_gb(dev),
                }
            )
            window = []
    acc = tag_accuracy(enc, data)
    log.append(
        {
            "stage": "second-end",
            "test_tag_accuracy": acc,
            "steps": args.stage_steps,
            "seconds": time.perf_counter() - start,
        }
    )
    print(
        f"{name}: {args.stage_steps} steps, test tag accuracy {acc:.4f}, "
        f"{time.perf_counter() - start:.0f} s, peak {peak_rss_gb():.2f} GB",
        flush=True,
    )
    return log


def gradients(args: argparse.Namespace) -> None:
    """How hard the chart loss pulls beside the tag loss: the norms of their gradients at the
    encoder's parameters, on the first ``--sentences`` sentences the second stage would take
    through D-CYK, with a seed's pipeline tagger (in training mode, as the stage runs it)."""
    torch.set_num_threads(args.threads)
    data = Data(args.treebank)
    dev = torch.device(args.device)
    enc = load_encoder(data, args, "pipeline", dev)
    enc.train()
    layer = make_layer(data, args, dev)
    params = list(enc.parameters())

    def norm(loss: torch.Tensor) -> float:
        grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
        return float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads if g is not None)))

    random.seed(args.seed)
    rows = []
    draws = itertools.islice(stage_draws(data, args), args.sentences)
    for batch, sentence in tqdm(draws, desc="gradients", total=args.sentences):
        model = "e2e-log" if args.log else "e2e"
        tag, chart = stage_losses(enc, layer, data, batch, sentence, model)
        rows.append({"words": len(sentence[0]), "chart": norm(chart), "tag": norm(tag)})
    ratio = np.array([r["chart"] / r["tag"] for r in rows])
    print(
        f"|grad chart loss| / |grad tag loss| at the encoder's parameters "
        f"({'log ' if args.log else ''}probabilities straight through), seed {args.seed}, "
        f"{len(rows)} sentences: median {np.median(ratio):.4f}, largest {ratio.max():.4f}"
    )
    record = load_record()
    key = "gradients, log" if args.log else "gradients"
    record.setdefault(f"seed {args.seed}", {})[key] = {"dim": args.dim, "rows": rows}
    save_record(record)


def peak_rss_gb() -> float:
    """The process's peak resident memory so far (Linux), in GB (10^9 bytes)."""
    try:
        with open("/proc/self/status") as f:
            line = next(x for x in f if x.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024 / 1e9  # VmHWM is in KiB
    except (OSError, StopIteration):
        return float("nan")


def peak_device_gb(dev: torch.device) -> float | None:
    """The peak of torch's allocations on a CUDA device so far, in GB (None on the CPU)."""
    return torch.cuda.max_memory_allocated(dev) / 1e9 if dev.type == "cuda" else None


@torch.no_grad()
def tag_accuracy(enc: Encoder, data: Data) -> float:
    enc.eval()
    index = {t: k for k, t in enumerate(data.tags)}
    right = total = 0
    for k in range(0, len(data.test), 64):
        batch = data.test[k : k + 64]
        pred = enc([tuple(t.leaves()) for t, _ in batch]).argmax(-1).cpu()
        for b, (_, tags) in enumerate(batch):
            for i, t in enumerate(tags):
                right += int(index.get(t, -1) == int(pred[b, i]))
                total += 1
    enc.train()
    return right / total


# -- evaluation ----------------------------------------------------------------------------


def lexical_of(probs: np.ndarray, tags: tuple[str, ...], floor: float = 1e-4) -> list[dict]:
    """A tagger's probabilities as lexical log scores (the tags above ``floor``)."""
    return [
        {tags[k]: math.log(p) for k in np.flatnonzero(row > floor) for p in [row[k]]}
        for row in probs
    ]


def evaluate(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    data = Data(args.treebank)
    g, tb, dev = data.grammar, data.tb, torch.device(args.device)
    earlier = load_record().get(f"seed {args.seed}", {}).get("evaluation")
    if args.only and earlier and (earlier["dim"], earlier["device"]) != (args.dim, args.device):
        raise SystemExit(
            f"--only adds to seed {args.seed}'s evaluation, made at d = {earlier['dim']} on "
            f"{earlier['device']}: give the same --dim and --device, or evaluate every model"
        )
    rows: dict[str, list[dict]] = {}
    encoders = {}
    for model in args.only or MODELS:  # --only: each must exist; otherwise those trained
        if args.only or (run_dir(args) / f"{model}.pt").exists():
            encoders[model] = load_encoder(data, args, model, dev).eval()
    nltk_tagger = None if args.only else train_nltk_tagger(data)
    layer = make_layer(data, args, dev)
    for k, (gold, gold_tags) in enumerate(tqdm(data.test, desc="test sentences")):
        words = tuple(gold.leaves())
        unknown = len(tb.unknown(words))

        def score(name: str, tree, seconds: float, **extra) -> None:
            add_row(rows, name, tb, gold, k, unknown, tree, seconds, **extra)  # noqa: B023

        if nltk_tagger is not None:
            t = time.perf_counter()
            lex = [{a: 0.0} if a in g.preterminals else {} for a in gold_tags]
            score("gold-tags", fd.viterbi(g, words, lexical=lex).tree, time.perf_counter() - t)
            t = time.perf_counter()
            tagged = [tag for _, tag in nltk_tagger.tag(list(words))]
            best = fd.viterbi(g, words, lexical=[{a: 0.0} for a in tagged])
            score("nltk-tagger", best.tree, time.perf_counter() - t)
        with torch.no_grad():
            for model in ("pipeline", "continued"):  # tagger, then symbolic Viterbi
                if model in encoders:
                    t = time.perf_counter()
                    probs = torch.softmax(encoders[model]([words]), -1)[0].cpu().numpy()
                    best = fd.viterbi(g, words, lexical=lexical_of(probs, data.tags))
                    score(model, best.tree, time.perf_counter() - t)
            for model in (m for m in THROUGH_DCYK if m in encoders):
                t = time.perf_counter()
                logits = encoders[model]([words])
                out = layer([words], preterminals=dcyk_input(logits))
                lex = lexical_scores(logits[0], data.tags)
                best = fd.viterbi(g, words, chart=out.charts[0], lexical=lex)
                seconds = time.perf_counter() - t
                # the chart D-CYK decoded against the one its tags give (symbolic CYK)
                given = [set(x) for x in lex]
                cells = fd.cell_scores(fd.cyk(g, words, tags=given), out.charts[0])
                symbolic = fd.viterbi(g, words, lexical=lex)
                same = best.log_prob == symbolic.log_prob or (
                    abs(best.log_prob - symbolic.log_prob) < 1e-9
                )
                score(model, best.tree, seconds, cell_f1=cells.f1, same_as_symbolic=same)
    record = load_record()
    run = record.setdefault(f"seed {args.seed}", {})
    if args.only and "evaluation" in run:  # the other models' rows are kept (checked above)
        run["evaluation"]["rows"].update(rows)
    else:
        run["evaluation"] = {"dim": args.dim, "device": args.device, "rows": rows}
    save_record(record)
    report(argparse.Namespace())


def add_row(
    rows: dict,
    name: str,
    tb: TreebankGrammar,
    gold,
    k: int,
    unknown: int,
    tree,
    seconds: float,
    **extra,
) -> None:
    """One parser's record of one test sentence: its bracket counts and time."""
    words = tuple(gold.leaves())
    s = fd.evalb(gold, tb.to_treebank(tree, words))
    rows.setdefault(name, []).append(
        {
            "sentence": k,
            "words": len(words),
            "unknown": unknown,
            "parsed": tree is not None,
            "tp": s.tp,
            "gold": s.gold,
            "predicted": s.predicted,
            "seconds": seconds,
            **extra,
        }
    )


def train_nltk_tagger(data: Data):
    """NLTK's averaged perceptron tagger, trained on the training trees' tags."""
    from nltk.tag.perceptron import PerceptronTagger

    tagger = PerceptronTagger(load=False)
    random.seed(SEED)
    sents = [list(zip(w, (data.tags[t] for t in tags), strict=True)) for w, tags in data.train]
    tagger.train(sents, nr_iter=5)
    return tagger


# -- the report ----------------------------------------------------------------------------


def _scores(rows: list[dict]) -> fd.Scores:
    return fd.Scores(*(sum(r[k] for r in rows) for k in ("tp", "gold", "predicted")))


def bootstrap(
    a: list[list[dict]], b: list[list[dict]], over_seeds: bool = False, samples: int = 2000
) -> tuple[float, float, float]:
    """F1(a) - F1(b) on the same sentences, and its 95% paired bootstrap interval.

    ``a`` and ``b`` hold one list of sentence rows per seed (the same sentences, in the same
    order, in each). A model's F1 is that of its brackets summed over the sentences and the
    seeds. A resampling draws the test sentences (with replacement); with ``over_seeds`` it
    draws the seeds too (the same draw for both models, which share a seed's pipeline), so
    that the interval covers the training's variation as well as the test sentences'.
    Without it the interval is conditional on the trained models at hand."""
    rng = np.random.default_rng(SEED)

    def counts(runs: list[list[dict]]) -> np.ndarray:  # (seeds, sentences, 3)
        return np.array(
            [[[r["tp"], r["gold"], r["predicted"]] for r in rows] for rows in runs], dtype=float
        )

    for ra, rb in zip(a, b, strict=True):
        if [r["sentence"] for r in ra] != [r["sentence"] for r in rb]:
            raise ValueError("the two models' rows are not of the same sentences")
    ta, tb_ = counts(a), counts(b)
    seeds, n = ta.shape[:2]

    def f1(x: np.ndarray) -> np.ndarray:
        return 2 * x[..., 0] / (x[..., 1] + x[..., 2])

    sent = rng.integers(0, n, size=(samples, 1, n))
    if over_seeds:
        seed = rng.integers(0, seeds, size=(samples, seeds, 1))
    else:
        seed = np.broadcast_to(np.arange(seeds)[None, :, None], (samples, seeds, 1))
    diff = f1(ta[seed, sent].sum((1, 2))) - f1(tb_[seed, sent].sum((1, 2)))
    lo, hi = np.percentile(diff, [2.5, 97.5])
    return float(f1(ta.sum((0, 1))) - f1(tb_.sum((0, 1)))), float(lo), float(hi)


def _seeds(record: dict) -> list[int]:
    return sorted(int(k.split()[1]) for k in record if k.startswith("seed "))


def report(args: argparse.Namespace) -> None:
    """The tables of docs/learning.md: every parser on every seed evaluated, the differences
    with their intervals, per seed and over all seeds; the figure."""
    record = load_record()
    runs = {
        seed: record[f"seed {seed}"]["evaluation"]["rows"]
        for seed in _seeds(record)
        if "evaluation" in record[f"seed {seed}"]
    }
    if runs:
        first = record[f"seed {min(runs)}"]["evaluation"]
        for seed in runs:
            ev = record[f"seed {seed}"]["evaluation"]
            if (ev["dim"], ev["device"]) != (first["dim"], first["device"]):
                print(f"note: seed {seed} was evaluated at d = {ev['dim']} on {ev['device']}")
        seeds = ", ".join(map(str, runs))
        print(f"d = {first['dim']}; seeds {seeds}; P, R and F1 of the brackets of every seed")
        print(f"| parser | parsed | bracket P | bracket R | bracket F1 | F1, seeds {seeds} | s |")
        print("|---|---:|---:|---:|---:|---|---:|")
        for name in (*reversed(MODELS), "gold-tags", "nltk-tagger"):
            per = {seed: rows[name] for seed, rows in runs.items() if name in rows}
            if not per:
                continue
            if name in ("gold-tags", "nltk-tagger"):  # no seed of ours: the same every run
                per = dict(list(per.items())[:1])
            every = [x for r in per.values() for x in r]
            s = _scores(every)
            f1s = ", ".join(f"{_scores(r).f1:.4f}" for r in per.values()) if len(per) > 1 else "-"
            print(
                f"| {name} | {sum(x['parsed'] for x in every)}/{len(every)} | "
                f"{s.precision:.4f} | {s.recall:.4f} | {s.f1:.4f} | {f1s} | "
                f"{sum(x['seconds'] for x in every) / len(every):.2f} |"
            )
        print("\ntest tag accuracy")
        print(f"| seed | {' | '.join(MODELS)} |\n|---:|" + "---:|" * len(MODELS))
        for seed in runs:
            run = record[f"seed {seed}"]
            acc = [
                [
                    e["test_tag_accuracy"]
                    for e in run.get(f"training/{m}", {}).get("log", [])
                    if "test_tag_accuracy" in e
                ]
                for m in MODELS
            ]
            print(f"| {seed} | " + " | ".join(f"{a[-1]:.4f}" if a else "-" for a in acc) + " |")
        print()
        pairs = [("e2e", "pipeline"), ("e2e", "continued"), ("continued", "pipeline")]
        pairs += [("e2e-log", "pipeline"), ("e2e-log", "continued"), ("e2e-log", "e2e")]
        pairs += [("e2e-tree", "pipeline"), ("e2e-tree", "continued"), ("e2e-tree", "e2e")]
        for a, b in pairs:
            both = [seed for seed, rows in runs.items() if a in rows and b in rows]
            for seed in both:
                d, lo, hi = bootstrap([runs[seed][a]], [runs[seed][b]])
                print(
                    f"{a} - {b}, seed {seed}: {100 * d:+.2f} F1 points, 95% paired "
                    f"bootstrap interval [{100 * lo:+.2f}, {100 * hi:+.2f}]"
                )
            if len(both) > 1:
                ra, rb = [runs[x][a] for x in both], [runs[x][b] for x in both]
                d, lo, hi = bootstrap(ra, rb)
                _, lo2, hi2 = bootstrap(ra, rb, over_seeds=True)
                print(
                    f"{a} - {b}, seeds {', '.join(map(str, both))} pooled: {100 * d:+.2f} F1 "
                    f"points, 95% paired bootstrap interval [{100 * lo:+.2f}, {100 * hi:+.2f}] "
                    f"(sentences), [{100 * lo2:+.2f}, {100 * hi2:+.2f}] (seeds and sentences)"
                )
    plot(record)


def plot(record: dict) -> None:
    """Three panels: the tagger's training by seed; the chart loss of the end-to-end stage;
    each seed's test F1 for each trained model (the spread between seeds beside the
    differences between models)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for k, seed in enumerate(_seeds(record)):
        run, colour = record[f"seed {seed}"], f"C{k}"
        tagger = [e for e in run.get("training/pipeline", {}).get("log", []) if "epoch" in e]
        axes[0].plot(
            [e["epoch"] for e in tagger],
            [e["test_tag_accuracy"] for e in tagger],
            ".-",
            color=colour,
            label=f"seed {seed}",
        )
        last = max((e["epoch"] for e in tagger), default=0)
        for model, marker, x in (
            ("continued", "^", last + 0.7),
            ("e2e", "*", last + 1.4),
            ("e2e-log", "P", last + 2.1),
            ("e2e-tree", "X", last + 2.8),
        ):
            log = run.get(f"training/{model}", {}).get("log", [])
            end = [e for e in log if e["stage"] == "second-end"]
            if end:  # after the pipeline's last epoch
                axes[0].plot([x], [end[0]["test_tag_accuracy"]], marker, color=colour)
            steps = [e for e in log if e["stage"] == "second"]
            if model in ("e2e", "e2e-log") and len(steps) >= 4:  # means over 100 steps
                means = [
                    (steps[i + 3]["step"], np.mean([e["chart_loss"] for e in steps[i : i + 4]]))
                    for i in range(0, len(steps) - 3, 4)
                ]
                style = "o-" if model == "e2e" else "P--"
                axes[1].plot(*zip(*means, strict=True), style, color=colour)
        rows = run.get("evaluation", {}).get("rows", {})
        have = [k for k, m in enumerate(MODELS) if m in rows]
        if have:
            axes[2].plot(have, [_scores(rows[MODELS[k]]).f1 for k in have], "o-", color=colour)
    axes[0].set(
        xlabel="epoch (after the last: continued ^, e2e *, e2e-log +, e2e-tree x)",
        ylabel="test tag accuracy",
        title="The tagger, by seed",
        ylim=(0.9, None),
    )
    axes[1].set(
        xlabel="step (one sentence through D-CYK each)",
        ylabel="chart loss (mean over 100 steps; e2e-log dashed)",
        title="End to end through D-CYK",
    )
    axes[2].set_xticks(range(len(MODELS)), MODELS)
    axes[2].set(ylabel="test bracket F1", title="Each seed's models")
    axes[0].legend(fontsize=7)  # a seed's colour is the same in every panel
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    FIGURE.parent.mkdir(exist_ok=True)
    fig.savefig(FIGURE, dpi=120)
    print(f"wrote {FIGURE}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("train", "evaluate", "gradients"):
        p = sub.add_parser(name)
        p.add_argument(
            "--treebank",
            type=Path,
            required=True,
            help="the folder of wsj_0001.mrg .. wsj_0199.mrg",
        )
        p.add_argument(
            "--out",
            default="treebank_model_runs",
            help="checkpoints and training logs, in a folder per seed (default "
            "./treebank_model_runs)",
        )
        p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
        p.add_argument("--dim", type=int, default=1024, help="D-CYK's d (default 1024)")
        p.add_argument("--threads", type=int, default=2)
        p.add_argument(
            "--seed",
            type=int,
            default=SEED,
            help="the encoder's initialisation and the order of the training sentences "
            "(default 0); each seed's models are kept apart",
        )
        if name == "evaluate":
            p.add_argument(
                "--only",
                nargs="+",
                choices=MODELS,
                help="evaluate these models only, adding their rows to the seed's evaluation",
            )
        if name == "gradients":
            p.add_argument(
                "--sentences", type=int, default=20, help="sentences measured (default 20)"
            )
            p.add_argument(
                "--log",
                action="store_true",
                help="the log probabilities' gradient straight through (as e2e-log)",
            )
            p.add_argument(
                "--dcyk-length",
                type=int,
                default=15,
                help="the longest sentence through D-CYK (default 15 words)",
            )
        if name == "train":
            p.add_argument(
                "--model",
                choices=MODELS,
                required=True,
                help="pipeline: the tagger; continued: the tagger trained further with "
                "the tag loss only; e2e: the same steps with D-CYK's chart loss (e2e-log: its "
                "log-probability gradient); e2e-tree: with a margin on the tags of D-CYK's "
                "tree",
            )
            p.add_argument("--epochs", type=int, default=20, help="tag epochs (default 20)")
            p.add_argument(
                "--stage-steps",
                type=int,
                default=600,
                help="steps of the second stage (continued, e2e; default 600)",
            )
            p.add_argument(
                "--dcyk-length",
                type=int,
                default=15,
                help="the longest sentence through D-CYK (default 15 words: memory)",
            )
            p.add_argument(
                "--stage-lr",
                type=float,
                default=2e-4,
                help="Adam's first learning rate in the second stage (default 2e-4)",
            )
            p.add_argument(
                "--chart-weight",
                type=float,
                default=1.0,
                help="the second loss's weight (the chart loss, or e2e-tree's margin) "
                "beside the tag loss (default 1)",
            )
    sub.add_parser("report")
    args = ap.parse_args()
    commands = {"train": train, "evaluate": evaluate, "gradients": gradients, "report": report}
    commands[args.command](args)


if __name__ == "__main__":
    main()
