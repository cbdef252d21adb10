"""What a record of a results file means: its fields, its settings, its key, its grid.

A record is one sentence's parse in one cell of a grid (:class:`ExperimentConfig`): the
fields it writes (:data:`RECORD_FIELDS`; :data:`TREE_FIELDS`, :data:`BACKEND_FIELD`), the
settings of its configuration that its file's header holds for it (threshold, dtype,
codebooks, the sentence sample, the read-back: :func:`settings_key`), how a record of an
older file is read (:func:`record_order`, :func:`record_encoding`, :func:`record_readback`,
:func:`complete_record`), what identifies it (:func:`record_key`) and whether it lies in a
configuration's grid (:func:`grid_mismatch`). The file that holds the records (its format,
lock, appends and repairs) is :mod:`fastdcyk.experiments.store`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastdcyk.experiments.config import ExperimentConfig
from fastdcyk.options import VARIANTS, resolve
from fastdcyk.registry import modes

__all__ = [
    "BACKEND_FIELD",
    "RECORD_FIELDS",
    "TREE_FIELDS",
    "cell_settings",
    "complete_record",
    "grid_mismatch",
    "header_settings",
    "record_backend",
    "record_encoding",
    "record_fault",
    "record_key",
    "record_order",
    "record_readback",
    "settings_key",
]

#: The tree fields of a record (after ``seconds``): whether the decoded chart gave a tree that
#: parses the sentence, and its labelled brackets against the closest tree of symbolic CYK
#: (:func:`fastdcyk.experiments.tasks.tree_fields`). Records of older files lack them.
TREE_FIELDS = ("tree", "bracket_tp", "bracket_gold", "bracket_predicted")

#: The fields of a record, in the order they are written. ``seconds`` is the parse time
#: (D-CYK and its decoder, not symbolic CYK) and the only field that differs between runs.
#: ``order`` is the order the parse used (resolved: never None); records of files written
#: before it existed lack it and are read as their variant's own order. ``encoding`` is the
#: encoding (resolved); records written before it existed lack it and are read as "paper".
#: The tree fields come last (:data:`TREE_FIELDS`).
RECORD_FIELDS = (
    "grammar",
    "variant",
    "order",
    "encoding",
    "beta",
    "d",
    "seed",
    "index",
    "words",
    "length",
    "tp",
    "gold",
    "predicted",
    "precision",
    "recall",
    "f1",
    "seconds",
    *TREE_FIELDS,
)
#: Fields a record may lack (older results files): filled in when the file is read (the tree
#: fields are left out: aggregates of such records have no tree scores).
_OPTIONAL_FIELDS = ("order", "encoding", *TREE_FIELDS)
#: A field after ``seconds`` on the records of the torch backend only: ``"backend":
#: "torch"`` (a record without it was parsed by the numpy backend). In float64 the two
#: backends give the same records; in float32 the paper variant's rounding, amplified by
#: its gates, can change a sentence's chart, so the records say which computed them.
BACKEND_FIELD = "backend"


def record_backend(record: dict[str, Any]) -> str:
    """The backend that parsed a record: ``"torch"`` or ``"numpy"``."""
    return record.get(BACKEND_FIELD, "numpy")


#: Settings of the configuration that a record was produced with and does not write (its
#: file's header holds them): :func:`~fastdcyk.experiments.store.read_results` gives every
#: record those of its header, so that :func:`record_key` tells apart records of files of
#: other thresholds, dtypes, codebooks or sentence samples. The sample is named by its
#: source, lengths and seed, not its size: the first k sentences of a sample are the sample
#: of k sentences.
_SETTINGS = (
    "threshold",
    "dtype",
    "codebooks",
    "source",
    "min_len",
    "max_len",
    "sentence_seed",
    "readback",
)
#: A header's configuration without a setting was written before the setting existed, and
#: is read as the value of that time: ``codebooks`` "plain" (random symbol vectors for every
#: variant), ``readback`` "matched" (the cleanup variant's only read-back then, and the
#: configuration leaves it out); every other setting has always been in the header.
_SETTINGS_BEFORE = {"codebooks": "plain", "readback": "matched"}


def record_order(record: dict[str, Any]) -> str | None:
    """The order a record was parsed in.

    A record of a file written before records named their order lacks ``"order"``: every
    variant was then parsed in the paper's order, so it is read as ``"sequential"``.
    """
    return record.get("order") or "sequential"


def record_encoding(record: dict[str, Any]) -> str:
    """The encoding a record was parsed with: ``"paper"`` for a record of a file written
    before records named it (every variant then used the paper's encoding)."""
    return record.get("encoding") or "paper"


def record_readback(record: dict[str, Any], config: ExperimentConfig | None = None) -> str:
    """The read-back a record was parsed with: its variant's own.

    A results file's header holds one read-back, the configuration's (the cleanup variant's
    choice); it applies to the variants whose mode has a choice of read-back only. The
    others (paper, trace) always read with their matched filters, so their records are
    ``"matched"`` whatever their file's configuration says.

    Parameters
    ----------
    record : dict
        A record: its ``"readback"`` (:func:`~fastdcyk.experiments.store.read_results`
        gives it its file's), else that of ``config``, else ``"matched"``.
    config : ExperimentConfig, optional
        The configuration the record was produced with, for a record that does not hold it.

    Returns
    -------
    str
    """
    if "readback" in record:
        value = record["readback"]
    else:
        value = _setting_default("readback") if config is None else config.readback
    value = str(value or "matched")
    spec = VARIANTS.get(record.get("variant"))  # type: ignore[arg-type]
    if spec is None:
        return value
    return modes.own_readback(spec["gate"], value) or resolve(record["variant"]).readback


def _record_setting(record: dict[str, Any], name: str, config: ExperimentConfig | None) -> Any:
    """A setting (:data:`_SETTINGS`) of a record: its own, else ``config``'s, else the
    default configuration's; the read-back is its variant's own (:func:`record_readback`)."""
    if name == "readback":
        return record_readback(record, config)
    if name in record:
        return record[name]
    return _setting_default(name) if config is None else getattr(config, name)


def cell_settings(config: ExperimentConfig, variant: str) -> tuple:
    """The settings of the records of ``variant`` in the grid of ``config``
    (:func:`settings_key`), as :func:`record_key` gives them."""
    return settings_key(lambda name: _record_setting({"variant": variant}, name, config))


def settings_key(get: Callable[[str], Any]) -> tuple:
    """(threshold, dtype, codebooks, source, min_len, max_len, sentence_seed, readback),
    normalised."""
    return (
        float(get("threshold")),
        str(get("dtype")),
        str(get("codebooks")),
        str(get("source")),
        int(get("min_len")),
        int(get("max_len")),
        int(get("sentence_seed")),
        str(get("readback") or "matched"),
    )


def record_key(record: dict[str, Any], config: ExperimentConfig | None = None) -> tuple:
    """What identifies a record: no two records of one key are kept
    (:func:`~fastdcyk.experiments.store.load_records`).

    The key is (grammar, variant, order, encoding, beta, d, seed, threshold, dtype,
    codebooks, source, min_len, max_len, sentence_seed, readback, index, words): the grid
    cell, the configuration's settings that change a record (the decoder threshold, the
    precision, how unitary codebooks are built, the sentence sample: its source, lengths and
    seed, and the read-back: the cleanup variant's choice, ``"matched"`` for the variants
    that have no other, :func:`record_readback`) and the sentence. Records read from a
    results file hold their file's settings
    (:func:`~fastdcyk.experiments.store.read_results`), so the records of two files of
    other settings never share a key.

    Parameters
    ----------
    record : dict
        A record. One without ``"order"`` (an older file) was parsed in the paper's order
        (:func:`record_order`), one without ``"encoding"`` in the paper's encoding.
    config : ExperimentConfig, optional
        The configuration the record was produced with, for a record that does not hold
        its settings (one straight from :func:`~fastdcyk.experiments.tasks.run_task`).
        Without it, a setting the record lacks is read as the default of
        :class:`ExperimentConfig`.

    Returns
    -------
    tuple
    """

    def setting(name: str) -> Any:
        return _record_setting(record, name, config)

    return (
        record["grammar"],
        record["variant"],
        record_order(record),
        record_encoding(record),
        float(record["beta"]),
        int(record["d"]),
        int(record["seed"]),
        *settings_key(setting),
        int(record["index"]),
        record.get("words"),
    )


def _setting_default(name: str) -> Any:
    return ExperimentConfig.__dataclass_fields__[name].default


#: The type of each record field (the others, and a field a record lacks, are not checked).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("grammar", "variant", "order", "encoding", "words"), (str,)),
    **dict.fromkeys(("d", "seed", "index", "length", "tp", "gold", "predicted"), (int,)),
    **dict.fromkeys(TREE_FIELDS, (int,)),
    **dict.fromkeys(("beta", "precision", "recall", "f1", "seconds"), (int, float)),
}


def _wrong_field(record: dict[str, Any]) -> str | None:
    """What is wrong with a record's field types (bools are not numbers here), or None."""
    for name, types in _FIELD_TYPES.items():
        if name in record:
            value = record[name]
            if isinstance(value, bool) or not isinstance(value, types):
                kind = " or ".join(t.__name__ for t in types)
                return f"field {name!r} is {value!r}, not {kind}"
    return None


def grid_mismatch(record: dict[str, Any], config: ExperimentConfig) -> str | None:
    """Why ``record`` lies outside the grid of ``config``, or None when it lies in it.

    Checked: its grammar, variant, beta, d and codebook seed are among the configuration's,
    and its index is one of the sample's (0 to ``sentences - 1``). Its order, encoding and
    sentence are not: records of older files name orders and encodings that the
    configuration of today resolves otherwise, and the sentences need the grammars.

    Parameters
    ----------
    record : dict
    config : ExperimentConfig
        The configuration of the record's results file (:attr:`ResultsFile.config
        <fastdcyk.experiments.store.ResultsFile.config>`).

    Returns
    -------
    str or None
        Such as ``"d = 999 is not among its dims (16, 32)"``.
    """

    def listed(values: Sequence[Any]) -> str:
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)

    cells = (
        ("grammar", record["grammar"], config.grammars, "grammars"),
        ("variant", record["variant"], config.variants, "variants"),
        ("beta", float(record["beta"]), config.betas, "betas"),
        ("d", int(record["d"]), config.dims, "dims"),
        ("seed", int(record["seed"]), config.seeds, "seeds"),
    )
    for field, value, values, name in cells:
        if value not in values:
            shown = f"{value:g}" if isinstance(value, float) else value
            return f"{field} = {shown} is not among its {name} ({listed(values)})"
    index = int(record["index"])
    if not 0 <= index < config.sentences:
        return f"index {index} is not one of its sample of {config.sentences} sentences"
    return None


def header_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The settings (:data:`_SETTINGS`) that a results file's header gives its records: those
    of its configuration ``config`` (the header's ``"config"``), a setting it lacks read as
    the value of the time before it existed (:data:`_SETTINGS_BEFORE`) or the default."""
    return {
        name: config.get(name, _SETTINGS_BEFORE.get(name, _setting_default(name)))
        for name in _SETTINGS
    }


def record_fault(record: dict[str, Any]) -> str | None:
    """What is wrong with a record read from a file: a field it lacks (the fields older files
    lack aside) or a field of the wrong type; None when nothing is."""
    missing = [f for f in RECORD_FIELDS if f not in record and f not in _OPTIONAL_FIELDS]
    if missing:
        return f"record lacks {missing}"
    wrong = _wrong_field(record)
    if wrong:
        return f"{wrong} (the file was edited or is corrupt)"
    return None


def complete_record(record: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """``record`` (changed in place and returned) with what an older file's records lack: its
    order (:func:`record_order`) and encoding (:func:`record_encoding`), and the ``settings``
    of its file's header (:func:`header_settings`) that it does not write, for
    :func:`record_key`."""
    if "order" not in record:  # written before records named their order
        record["order"] = record_order(record)
    if "encoding" not in record:  # written before records named their encoding
        record["encoding"] = record_encoding(record)
    for name, value in settings.items():  # the header's, for record_key
        record.setdefault(name, value)
    return record
