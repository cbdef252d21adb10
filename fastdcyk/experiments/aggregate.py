"""Aggregates of records: micro and macro averages with confidence intervals, tables."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from fastdcyk.experiments.records import (
    _SETTINGS,
    BACKEND_FIELD,
    TREE_FIELDS,
    _record_setting,
    record_backend,
    record_encoding,
    record_order,
    settings_key,
)
from fastdcyk.options import DEFAULT_BETA, VARIANTS

# -- aggregation ----------------------------------------------------------------------------


def _prf(tp: np.ndarray, gold: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, ...]:
    """Vectorised :class:`~fastdcyk.cfg.metrics.Scores` precision, recall and F1."""
    tp, gold, pred = (np.asarray(x, dtype=np.float64) for x in (tp, gold, pred))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(pred > 0, tp / np.where(pred > 0, pred, 1), np.where(gold == 0, 1.0, 0.0))
        r = np.where(gold > 0, tp / np.where(gold > 0, gold, 1), np.where(pred == 0, 1.0, 0.0))
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    return p, r, f


def _t_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    from scipy import stats

    n = values.size
    mean = float(values.mean())
    if n < 2:
        return math.nan, math.nan
    sem = float(values.std(ddof=1)) / math.sqrt(n)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sem
    return max(0.0, mean - half), min(1.0, mean + half)


def _split_by(records: Iterable[dict[str, Any]], name: str) -> bool:
    """Whether groups by variant must name ``name`` ("order" or "encoding").

    True when a variant of ``records`` was parsed with more than one value of it, or with
    another than its own (``VARIANTS[v][name]``; see :func:`record_order` and
    :func:`record_encoding` for records of older files).
    """
    seen: dict[str, set[Any]] = {}
    for r in records:
        seen.setdefault(r["variant"], set()).add(_field(r, name))
    return any(values != {VARIANTS.get(variant, {}).get(name)} for variant, values in seen.items())


def _after_variant(keys: Sequence[str], name: str) -> tuple[str, ...]:
    """``keys`` with ``name`` ("order" or "encoding") just after "variant" (and "order")
    (unchanged when they lack "variant" or already hold ``name``)."""
    keys = tuple(keys)
    if "variant" not in keys or name in keys:
        return keys
    k = keys.index("variant") + 1 + (name == "encoding" and "order" in keys)
    return (*keys[:k], name, *keys[k:])


def _varying_settings(records: Sequence[dict[str, Any]]) -> list[str]:
    """The settings (threshold, dtype, codebooks, sentence sample, read-back) and the
    backend that differ between ``records``: records of results files of other settings
    (:func:`read_results` gives each record its file's) or of the other backend, which
    are not pooled. The read-back is each record's own
    (:func:`~fastdcyk.experiments.records.record_readback`), and varies when one variant was
    read back in more than one way (the cleanup variant's ``"cancel"`` beside the trace
    variant's ``"matched"`` is no reason to split: rows by variant keep them apart)."""
    names = (*_SETTINGS, BACKEND_FIELD)
    return [name for name in names if _varies(records, name)]


def _varies(records: Sequence[dict[str, Any]], name: str) -> bool:
    if name != "readback":
        return len({_field(r, name) for r in records}) > 1
    seen: dict[str, set[Any]] = {}
    for r in records:
        seen.setdefault(r["variant"], set()).add(_field(r, name))
    return any(len(values) > 1 for values in seen.values())


def _field(record: dict[str, Any], name: str) -> Any:
    if name in _SETTINGS:  # normalised; a record without it has the default configuration's
        # (and its own read-back: record_readback)
        get = lambda k: _record_setting(record, k, None)  # noqa: E731
        return settings_key(get)[_SETTINGS.index(name)]
    if name == BACKEND_FIELD:
        return record_backend(record)
    if name == "order":
        return record_order(record)
    if name == "encoding":
        return record_encoding(record)
    return record[name]


def aggregate(
    records: Iterable[dict[str, Any]],
    by: Sequence[str] = ("grammar", "variant", "beta", "d"),
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Micro and macro averages of precision, recall and F1 per group, with intervals.

    Micro: the scores of the pooled counts (sum of tp, gold and predicted over the group's
    records), with a percentile bootstrap interval: ``n_boot`` resamples of the records
    with replacement, drawn from ``numpy.random.default_rng(seed)``. Macro: the mean of the
    per-record scores, with a Student t interval (mean +- t_{n-1} s / sqrt(n), clipped to
    [0, 1]). Each record is one sentence of the sample (repeats count as often as they
    occur), so the intervals describe the sampling of sentences. A group of one record gets
    NaN bounds.

    Parameters
    ----------
    records : iterable of dict
        Records (see :data:`RECORD_FIELDS`).
    by : sequence of str
        The fields that define a group (the rest is pooled: seeds, for instance). When it
        holds "variant" but not "order", and a variant of ``records`` was parsed in more
        than one order (or in another than its own: ``VARIANTS[v]["order"]``), "order" is
        added after "variant", so that two orders are never pooled; otherwise (one order
        per variant, its own) the rows are as without orders. Likewise for "encoding".
        Records of results files with other settings (threshold, dtype, codebooks,
        sentence sample: source, min_len, max_len, sentence_seed, or read-back), or of the
        other backend ("backend"), are never pooled either: each of these that differs between
        ``records`` is added at the end of ``by``. The read-back is each record's own
        (:func:`~fastdcyk.experiments.records.record_readback`: ``"matched"`` for the paper
        and trace variants, whatever their file's configuration names), and is added when
        a variant was read back in more than one way.
    level : float
        Confidence level (default 0.95).
    n_boot : int
        Bootstrap resamples for the micro intervals.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    list of dict
        One row per group, sorted by the ``by`` fields (and "order" when it was added), with
        ``n`` (records), ``distinct`` (distinct sentences), ``mean_length``, ``seconds``
        (mean parse time), and for
        ``m`` in {"micro", "macro"} and ``s`` in {"precision", "recall", "f1"} the keys
        ``f"{m}_{s}"``, ``f"{m}_{s}_lo"`` and ``f"{m}_{s}_hi"``; ``trees`` (the share of
        records whose decoded chart gave a tree) and ``bracket_precision``,
        ``bracket_recall``, ``bracket_f1`` (micro over the records' best trees, each with
        ``_lo`` and ``_hi`` as the cells' micro scores), all NaN when a record lacks the
        tree fields (results files written before they existed).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if isinstance(records, str | bytes | dict) or not isinstance(records, Iterable):
        raise TypeError(
            "records must be an iterable of experiment records (dicts: load_records), got "
            f"{type(records).__name__}"
        )
    records = list(records)
    by = tuple(by)
    for name in ("order", "encoding"):
        if _split_by(records, name):
            by = _after_variant(by, name)
    by += tuple(name for name in _varying_settings(records) if name not in by)
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(tuple(_field(r, k) for k in by), []).append(r)
    rows = []
    for key in sorted(groups, key=lambda k: tuple((str(type(x)), x) for x in k)):
        rs = groups[key]
        tp, gold, pred = (np.array([r[k] for r in rs]) for k in _COUNTS)
        n = len(rs)
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        row["n"] = n
        row["distinct"] = len({r["words"] for r in rs})
        row["mean_length"] = float(np.mean([r["length"] for r in rs]))
        row["seconds"] = float(np.mean([r["seconds"] for r in rs]))
        micro, bounds = _micro(tp, gold, pred, level=level, n_boot=n_boot, seed=seed)
        _tree_scores(row, rs, level=level, n_boot=n_boot, seed=seed)
        per = _prf(tp, gold, pred)
        for k, name in enumerate(("precision", "recall", "f1")):
            row[f"micro_{name}"] = float(micro[k])
            row[f"micro_{name}_lo"] = float(bounds[k][0])
            row[f"micro_{name}_hi"] = float(bounds[k][1])
            row[f"macro_{name}"] = float(per[k].mean())
            lo, hi = _t_interval(per[k], level)
            row[f"macro_{name}_lo"] = lo
            row[f"macro_{name}_hi"] = hi
        rows.append(row)
    return rows


_COUNTS = ("tp", "gold", "predicted")


def _micro(
    tp: np.ndarray, gold: np.ndarray, pred: np.ndarray, *, level: float, n_boot: int, seed: int
) -> tuple[tuple[Any, Any, Any], list[Any]]:
    """Micro precision, recall and F1 of pooled counts (one entry per record), and their
    percentile bootstrap intervals over the records (NaN bounds for fewer than two)."""
    n = len(tp)
    micro = _prf(tp.sum(), gold.sum(), pred.sum())
    if n < 2:
        return micro, [(math.nan, math.nan)] * 3
    rng = np.random.default_rng(seed)
    boot = [np.empty(n_boot) for _ in range(3)]
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        for b, v in zip(
            boot, _prf(tp[idx].sum(1), gold[idx].sum(1), pred[idx].sum(1)), strict=True
        ):
            b[start:stop] = v
    alpha = (1 - level) / 2
    return micro, [np.quantile(b, [alpha, 1 - alpha]) for b in boot]


def _tree_scores(
    row: dict[str, Any], records: Sequence[dict[str, Any]], *, level: float, n_boot: int, seed: int
) -> None:
    """The group's share of sentences with a tree, and its micro bracket P/R/F1 with their
    bootstrap intervals (NaN when a record lacks the tree fields: an older results file)."""
    names = [f"bracket_{k}" for k in ("precision", "recall", "f1")]
    keys = ["trees", *names, *(f"{k}_{e}" for k in names for e in ("lo", "hi"))]
    if not all(all(f in r for f in TREE_FIELDS) for r in records):
        row.update(dict.fromkeys(keys, math.nan))
        return
    tp, gold, pred = (np.array([r[f"bracket_{k}"] for r in records]) for k in _COUNTS)
    micro, bounds = _micro(tp, gold, pred, level=level, n_boot=n_boot, seed=seed)
    row["trees"] = float(np.mean([r["tree"] for r in records]))
    for name, value, (lo, hi) in zip(names, micro, bounds, strict=True):
        row[name] = float(value)
        row[f"{name}_lo"] = float(lo)
        row[f"{name}_hi"] = float(hi)


def study_rows(
    records: Sequence[dict[str, Any]],
    study: str,
    *,
    grammar: str = "G0",
    max_len: int = 7,
    d: int | None = None,
    beta: float | None = None,
    per_length: bool = True,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Aggregates for one of the paper's three studies (docs/results.md).

    Parameters
    ----------
    records : sequence of dict
    study : {"a", "b", "c"}
        ``"a"``: scores against d, on the sentences of length <= ``max_len`` of
        ``grammar`` (groups: variant, d). ``"b"``: scores against sentence length for every
        d, with ``grammar`` (groups: variant, d, length). ``"c"``: scores against sentence
        length for every grammar, at dimension ``d`` (groups: variant, grammar, length).
        Groups by variant are split by order as in :func:`aggregate`.
    grammar : str
        The grammar of studies a and b (default "G0"; when absent, the first grammar of the
        records).
    max_len : int
        Longest sentence of study a (the paper's 7).
    d : int, optional
        Dimension of study c. Default: the one shared by the most grammars (the largest
        such d on a tie).
    beta : float, optional
        Keep only this beta. Default: fastdcyk's DEFAULT_BETA when present, else the
        smallest beta of the records.
    per_length : bool, default True
        Studies b and c: one row per sentence length; False pools the lengths (all of
        them, unlike study a).
    **kwargs
        Passed to :func:`aggregate`.

    Returns
    -------
    list of dict
        As :func:`aggregate`; each row also has ``study`` (and ``d`` for study c).
    """
    if study not in ("a", "b", "c"):
        raise ValueError(f"unknown study {study!r}: choose 'a', 'b' or 'c'")
    if not records:
        return []
    betas = sorted({float(r["beta"]) for r in records})
    if beta is None:
        beta = DEFAULT_BETA if DEFAULT_BETA in betas else betas[0]
    rs = [r for r in records if float(r["beta"]) == float(beta)]
    if study in ("a", "b"):
        names = sorted({r["grammar"] for r in rs})
        g = grammar if grammar in names else (names[0] if names else grammar)
        rs = [r for r in rs if r["grammar"] == g]
        if study == "a":
            rs = [r for r in rs if r["length"] <= max_len]
            rows = aggregate(rs, ("grammar", "variant", "beta", "d"), **kwargs)
        else:
            by = ("grammar", "variant", "beta", "d", "length")
            rows = aggregate(rs, by if per_length else by[:-1], **kwargs)
    else:
        if d is None:
            d = default_study_c_dim(rs)
        rs = [r for r in rs if r["d"] == d]
        by = ("d", "variant", "beta", "grammar", "length")
        rows = aggregate(rs, by if per_length else by[:-1], **kwargs)
    for row in rows:
        row["study"] = study
    return rows


def default_study_c_dim(records: Sequence[dict[str, Any]]) -> int | None:
    """The d shared by the most grammars in ``records`` (the largest such d on a tie)."""
    per_d: dict[int, set[str]] = {}
    for r in records:
        per_d.setdefault(int(r["d"]), set()).add(r["grammar"])
    if not per_d:
        return None
    return max(per_d, key=lambda k: (len(per_d[k]), k))


# -- tables ---------------------------------------------------------------------------------


def _fmt_ci(row: dict[str, Any], name: str) -> str:
    v, lo, hi = row[name], row[f"{name}_lo"], row[f"{name}_hi"]
    if math.isnan(lo):
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def _fmt_share(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def format_table(
    rows: Sequence[dict[str, Any]], keys: Sequence[str], markdown: bool = False
) -> str:
    """A text (or Markdown) table of aggregate rows: the keys, n, micro P/R/F1, macro F1, the
    share of sentences with a tree and the micro bracket F1 ("-" for records without them).

    Intervals are the 95% ones of :func:`aggregate`, written ``value [lo, hi]``. When the
    rows are split by order or encoding (:func:`aggregate` added "order" or "encoding") and
    ``keys`` has "variant", an "order" or "encoding" column follows it; a setting that
    :func:`aggregate` split rows by gets a column at the end of the keys.
    """
    for name in ("order", "encoding"):
        if any(name in row for row in rows):
            keys = _after_variant(keys, name)
    extra = (*_SETTINGS, BACKEND_FIELD)
    keys = (*keys, *(k for k in extra if k not in keys and any(k in row for row in rows)))
    head = [*keys, "n", "micro P", "micro R", "micro F1", "macro F1", "trees", "bracket F1"]
    head.append("s/sentence")
    body = []
    for row in rows:
        body.append(
            [
                *(f"{row[k]:g}" if isinstance(row[k], float) else str(row[k]) for k in keys),
                str(row["n"]),
                _fmt_ci(row, "micro_precision"),
                _fmt_ci(row, "micro_recall"),
                _fmt_ci(row, "micro_f1"),
                _fmt_ci(row, "macro_f1"),
                *(_fmt_share(row.get(k, math.nan)) for k in ("trees", "bracket_f1")),
                f"{row['seconds']:.3f}",
            ]
        )
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*r).rstrip() for r in [head, *body])


def summary_table(records: Sequence[dict[str, Any]], markdown: bool = False) -> str:
    """Per grammar, variant, beta and d, over all sentence lengths: the run's summary.

    A variant run in more than one order (or in another than its own) gets a row per order
    (see :func:`aggregate`).
    """
    keys = ("grammar", "variant", "beta", "d")
    return format_table(aggregate(records, keys), keys, markdown=markdown)
