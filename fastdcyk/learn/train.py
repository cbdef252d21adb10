"""The training loop of :func:`fastdcyk.learn_grammar`, resumable from checkpoints.

Needs PyTorch; :mod:`fastdcyk.learn` imports this module on the first call.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from fastdcyk.checks import check_choice, check_dim, check_int, check_path
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.hrr.memory import available_memory
from fastdcyk.learn import inputs, model, readoff
from fastdcyk.learn.result import LearnedGrammar
from fastdcyk.options import check_beta

__all__ = ["Settings", "learn_grammar"]

#: The gates of the model (:func:`fastdcyk.learn.model.gate`) and their default beta.
GATES = ("tanh", "sigmoid")
DEFAULT_BETA: dict[str, float | tuple[float, float]] = {"tanh": 1.0, "sigmoid": (3.0, 20.0)}
#: The checkpoint's file in the checkpoint folder.
STATE = "state.pt"
#: Bytes per rule of the inventory beyond its spectra: the Rule objects, the grammar's
#: indexes and the read-off (measured order of magnitude: under 1 kB).
RULE_BYTES = 1024


@dataclass(frozen=True)
class Settings:
    """A run's settings (see :func:`fastdcyk.learn_grammar`); with the data, they fix the
    run, and a checkpoint resumes only the run it was written by."""

    nonterminals: int
    start: str
    seed: int
    max_steps: int
    restarts: int
    method: str
    gate: str
    d: int
    dtype: str
    batch_size: int
    lr: float
    l1: float
    beta: tuple[float, float]
    held_out: float
    bracket_weight: float
    init: float = -2.0
    noise: float = 0.5
    slope: float = 10.0
    curriculum: float = 0.6
    stages: int = 8
    eval_every: int = 25
    checkpoint_every: int = 10


def _positive(name: str, value: Any, *, zero: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def _settings(**kw: Any) -> Settings:
    kw["nonterminals"] = check_int("nonterminals", kw["nonterminals"], 1)
    start = kw["start"]
    if not isinstance(start, str) or not start or any(c.isspace() for c in start):
        raise ValueError(f"start must be a nonterminal name (a str without spaces), got {start!r}")
    kw["seed"] = check_int("seed", kw["seed"], 0)
    kw["max_steps"] = check_int("max_steps", kw["max_steps"], 1)
    kw["restarts"] = check_int("restarts", kw["restarts"], 1)
    kw["method"] = check_choice("method", kw["method"], ("table", "chart"))
    kw["gate"] = check_choice("gate", kw["gate"], GATES)
    kw["d"] = check_dim(kw["d"])
    dtype = kw["dtype"]
    names = {torch.float32: "float32", torch.float64: "float64"}
    kw["dtype"] = check_choice("dtype", names.get(dtype, dtype), ("float32", "float64"))
    kw["batch_size"] = check_int("batch_size", kw["batch_size"], 1)
    kw["lr"] = _positive("lr", kw["lr"])
    kw["l1"] = _positive("l1", kw["l1"], zero=True)
    kw["bracket_weight"] = _positive("bracket_weight", kw["bracket_weight"], zero=True)
    beta = DEFAULT_BETA[kw["gate"]] if kw["beta"] is None else kw["beta"]
    pair = (beta, beta) if isinstance(beta, int | float) else tuple(beta)
    if len(pair) != 2:
        raise ValueError(f"beta must be a number or a pair (first, last), got {beta!r}")
    kw["beta"] = (check_beta(pair[0]), check_beta(pair[1]))
    held = kw["held_out"]
    if not isinstance(held, int | float) or isinstance(held, bool) or not 0 <= held < 1:
        raise ValueError(f"held_out must be a fraction in [0, 1), got {held!r}")
    kw["held_out"] = float(held)
    return Settings(**kw)


def _fingerprint(settings: Settings, data: inputs.Data) -> str:
    h = hashlib.sha256(json.dumps(asdict(settings), sort_keys=True).encode())
    h.update(json.dumps([data.strings, data.labels, data.brackets]).encode())
    return h.hexdigest()


def _check_memory(inv_rules: int, settings: Settings) -> None:
    itemsize = 8 if settings.dtype == "float64" else 4
    spectra = (settings.d // 2 + 1) * 2 * itemsize  # one complex row per rule
    need = inv_rules * (RULE_BYTES + (8 * spectra if settings.method == "table" else 64))
    free = available_memory()
    if free is not None and need > free:
        raise MemoryError(
            f"an inventory of {inv_rules:,} rules (every A -> B C over {settings.nonterminals} "
            f"nonterminals, every A -> w over the words) needs about {need / 2**30:.1f} GiB "
            f"at d = {settings.d}, and {free / 2**30:.1f} GiB is free: use fewer nonterminals"
            + (" or a smaller d" if settings.method == "table" else "")
        )


class _Run:
    """One run's state: the restarts finished, the one under way, its optimiser and random
    streams; written to and read from the checkpoint folder."""

    def __init__(self, settings: Settings, inv: model.Inventory, fingerprint: str) -> None:
        self.settings, self.inv, self.fingerprint = settings, inv, fingerprint
        self.dtype = getattr(torch, settings.dtype)
        self.finished: list[dict[str, Any]] = []
        self.history: list[dict[str, Any]] = []
        self.seconds = 0.0
        self.restart = 0
        self.begin(0)

    def begin(self, restart: int) -> None:
        """Fresh parameters for ``restart``: every rule's parameter drawn around its start
        (lexical 0, binary ``init``: weights near sigmoid(-2) = 0.12) with the seed's noise,
        which tells the nonterminals apart (started alike, they stay alike)."""
        s = self.settings
        self.restart, self.step = restart, 0
        gen = torch.Generator().manual_seed(s.seed * 1_000_003 + restart)
        nb, nu = self.inv.n_binary, self.inv.n_unary
        theta_b = s.init + s.noise * torch.randn(nb, generator=gen, dtype=torch.float64)
        theta_u = s.noise * torch.randn(nu, generator=gen, dtype=torch.float64)
        self.theta_b = theta_b.to(self.dtype).requires_grad_()
        self.theta_u = theta_u.to(self.dtype).requires_grad_()
        self.opt = torch.optim.Adam([self.theta_b, self.theta_u], lr=s.lr)
        self.rng = random.Random(f"{s.seed}/{restart}")

    def weights(self) -> list[float]:
        """The weights in the inventory's order (binary, then unary)."""
        with torch.no_grad():
            w = torch.cat([torch.sigmoid(self.theta_b), torch.sigmoid(self.theta_u)])
        return w.double().tolist()

    def state(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "restart": self.restart,
            "step": self.step,
            "theta_b": self.theta_b.detach().clone(),
            "theta_u": self.theta_u.detach().clone(),
            "opt": self.opt.state_dict(),
            "rng": list(self.rng.getstate()[1]),
            "rng_version": self.rng.getstate()[0],
            "finished": self.finished,
            "history": self.history,
            "seconds": self.seconds,
        }

    def save(self, folder: Path) -> None:
        """The state, written atomically (a kill leaves the last whole checkpoint)."""
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (STATE + ".tmp")
        torch.save(self.state(), tmp)
        os.replace(tmp, folder / STATE)

    def load(self, folder: Path) -> None:
        state = torch.load(folder / STATE, weights_only=True)
        if state["fingerprint"] != self.fingerprint:
            raise ValueError(
                f"{folder} holds the checkpoint of another run (other data or settings): "
                "resume with the same strings, labels, brackets and settings, or give an "
                "empty checkpoint folder"
            )
        self.begin(int(state["restart"]))
        self.step = int(state["step"])
        with torch.no_grad():
            self.theta_b.copy_(state["theta_b"])
            self.theta_u.copy_(state["theta_u"])
        self.opt.load_state_dict(state["opt"])
        self.rng.setstate((state["rng_version"], tuple(state["rng"]), None))
        self.finished = list(state["finished"])
        self.history = list(state["history"])
        self.seconds = float(state["seconds"])


def learn_grammar(
    strings: Sequence[str | Sequence[str]],
    labels: Sequence[bool] | None,
    *,
    brackets: Sequence[Sequence[tuple[int, int]] | None] | None,
    progress: bool | float | None,
    checkpoint: str | os.PathLike[str] | None,
    resume: bool,
    **settings: Any,
) -> LearnedGrammar:
    """:func:`fastdcyk.learn_grammar`, which gives every argument (its documentation and
    defaults are there); ``settings`` are :class:`Settings`' first fields."""
    settings = _settings(**settings)
    delay = check_progress(progress)
    folder = None if checkpoint is None else check_path("checkpoint", checkpoint)
    if resume and folder is None:
        raise ValueError("resume=True continues a checkpoint: give checkpoint=FOLDER too")
    if folder is not None and folder.exists() and not folder.is_dir():
        raise ValueError(f"checkpoint {folder} is a file: give a folder (it is created)")
    if folder is not None and (folder / STATE).exists() and not resume:
        raise ValueError(
            f"{folder} holds a checkpoint already: pass resume=True (--resume) to continue "
            "that run, or give an empty folder"
        )
    data = inputs.check_data(strings, labels, brackets)
    inv_size = settings.nonterminals**3 + settings.nonterminals * len(data.words)
    _check_memory(inv_size, settings)
    train, held = inputs.split(data, settings.held_out, settings.seed)
    if not any(train.labels):
        raise ValueError("no string labelled True is left to train on: hold out fewer")
    inv = model.inventory(settings.nonterminals, settings.start, data.words)
    run = _Run(settings, inv, _fingerprint(settings, data))
    if resume and folder is not None and (folder / STATE).exists():
        run.load(folder)
    return _train(run, train, held, delay, folder)


def _beta(s: Settings, step: int) -> float:
    first, last = s.beta
    stage = min(s.stages - 1, step * s.stages // s.max_steps)
    return first * (last / first) ** (stage / max(1, s.stages - 1))


def _longest(s: Settings, step: int, shortest: int, longest: int) -> int:
    begin = max(2, shortest)
    if begin >= longest:
        return longest
    ramp = max(1.0, s.curriculum * s.max_steps)
    return min(longest, begin + int((longest - begin) * step / ramp))


def _loss(s: Settings, cells: model.Cells, labels: list[bool], spans: list) -> torch.Tensor:
    top = cells.top()
    y = torch.tensor(labels, dtype=top.dtype)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(s.slope * (top - 0.5), y)
    if s.bracket_weight and any(spans):
        rows = [b for b, sp in enumerate(spans) for (i, j) in sp if j - i >= 2]
        cells_in = [(i, j) for sp in spans for (i, j) in sp if j - i >= 2]
        tiny = torch.finfo(top.dtype).eps
        if rows:  # some nonterminal spans each bracket
            v = cells.at(rows, cells_in).clamp(0, 1)
            some = 1 - torch.prod(1 - v, dim=-1)
            loss = loss + s.bracket_weight * -torch.log(some + tiny).mean()
        cross = [
            (b, span)
            for b, sp in enumerate(spans)
            if sp
            for span in inputs.crossing_spans(cells.lengths[b], sp)
        ]
        if cross:  # and none spans what crosses one
            v = cells.at([b for b, _ in cross], [c for _, c in cross]).clamp(0, 1 - tiny)
            loss = loss + s.bracket_weight * -torch.log1p(-v).sum(-1).mean()
    return loss


def _train(
    run: _Run, train: inputs.Data, held: inputs.Data, delay: float | None, folder: Path | None
) -> LearnedGrammar:
    s, inv = run.settings, run.inv
    rules = inv.rules()
    lengths = [len(w) for w in train.strings]
    shortest, longest = min(lengths), max(lengths)
    judge = held if len(held) else train  # what chooses the threshold and the restart
    layers: dict[float, Any] = {}

    def cells(strings: list, beta: float, wb: torch.Tensor, wu: torch.Tensor) -> model.Cells:
        if s.method == "chart":
            return model.chart_cells(inv, strings, wu, wb, beta, s.gate)
        layer = layers.get(beta)
        if layer is None:
            layer = layers[beta] = model.table_layer(inv, s.d, s.gate, beta, run.dtype, longest)
        return model.table_cells(layer, strings, wu, wb)

    total = s.restarts * s.max_steps
    bar = progress_bar(delay, total, "learning", "step")
    if bar is not None:
        bar.update(run.restart * s.max_steps + run.step)
    clock = time.perf_counter()
    # a step's phase: 0 between steps; 1 once its batch is drawn (the random stream has
    # moved on: put back, the state is the step's start); 2 once Adam has stepped (the
    # step's end is not yet recorded: the last checkpoint stands)
    phase, drawn_from = 0, run.rng.getstate()
    try:
        while run.restart < s.restarts:
            while run.step < s.max_steps:
                phase, drawn_from = 1, run.rng.getstate()
                step = run.step
                top_len = _longest(s, step, shortest, longest)
                pool = [k for k, n in enumerate(lengths) if n <= top_len]
                batch = run.rng.sample(pool, min(s.batch_size, len(pool)))
                strings = [train.strings[k] for k in batch]
                beta = _beta(s, step)
                wb, wu = torch.sigmoid(run.theta_b), torch.sigmoid(run.theta_u)
                loss = _loss(
                    s,
                    cells(strings, beta, wb, wu),
                    [train.labels[k] for k in batch],
                    [train.brackets[k] for k in batch],
                )
                loss = loss + s.l1 * torch.cat([wb, wu]).mean()
                run.opt.zero_grad()
                loss.backward()
                run.opt.step()
                phase = 2
                run.step += 1
                if step % s.eval_every == 0 or run.step == s.max_steps:
                    g = readoff.read_off(rules, run.weights(), 0.5, inv.start)
                    acc = readoff.accuracy(g, judge.strings, judge.labels)
                    run.history.append(
                        {
                            "restart": run.restart,
                            "step": step,
                            "loss": float(loss.detach()),
                            "held_out": acc,
                            "longest": top_len,
                            "beta": beta,
                        }
                    )
                    if bar is not None:
                        bar.set_postfix(loss=f"{float(loss.detach()):.3f}", held_out=f"{acc:.3f}")
                phase = 0
                if bar is not None:
                    bar.update(1)
                if folder is not None and run.step % s.checkpoint_every == 0:
                    run.seconds += time.perf_counter() - clock
                    clock = time.perf_counter()
                    run.save(folder)
            w = run.weights()
            cut, g, acc = readoff.choose_cut(rules, w, inv.start, judge.strings, judge.labels)
            if all(f["restart"] != run.restart for f in run.finished):  # (a resumed end)
                run.finished.append(
                    {
                        "restart": run.restart,
                        "weights": w,
                        "threshold": cut,
                        "held_out": acc,
                        "train": readoff.accuracy(g, train.strings, train.labels),
                        "rules": 0 if g is None else len(g),
                    }
                )
            if run.restart + 1 < s.restarts:
                run.begin(run.restart + 1)
            else:
                run.restart, run.step = s.restarts, 0
            if folder is not None:
                run.seconds += time.perf_counter() - clock
                clock = time.perf_counter()
                run.save(folder)
    except KeyboardInterrupt:
        if folder is not None and phase < 2:  # no finished step is lost
            if phase == 1:
                run.rng.setstate(drawn_from)
            run.seconds += time.perf_counter() - clock
            run.save(folder)
        raise
    finally:
        if bar is not None:
            bar.close()
    run.seconds += time.perf_counter() - clock
    best = max(run.finished, key=lambda f: (f["held_out"], f["train"], -f["rules"], -f["restart"]))
    g = readoff.read_off(rules, best["weights"], best["threshold"], inv.start)
    weights = {str(r): w for r, w in zip(rules, best["weights"], strict=True)}
    both = (train.strings + held.strings, train.labels + held.labels)
    g = readoff.prune(g, weights, *both)
    config = asdict(s)
    config["words"] = list(inv.words)
    config["restarts_finished"] = [
        {k: v for k, v in f.items() if k != "weights"} for f in run.finished
    ]
    return LearnedGrammar(
        grammar=g,
        weights=weights,
        threshold=best["threshold"],
        held_out_accuracy=readoff.accuracy(g, held.strings, held.labels),
        train_accuracy=readoff.accuracy(g, train.strings, train.labels),
        history=tuple(run.history),
        restart=best["restart"],
        start=inv.start,
        config=config,
        seconds=run.seconds,
    )
